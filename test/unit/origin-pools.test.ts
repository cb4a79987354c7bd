// The per-origin pools' waiting queue: undici's preallocated FixedQueue
// swapped for a LightQueue, which must keep its order and answer every request.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { LightQueue, OriginPools, withLightQueue } from '../../src/http/origin-pools';

describe('LightQueue', () => {
  it('gives items back first in, first out, and null when empty, across compactions', () => {
    const q = new LightQueue<number>();
    expect(q.isEmpty()).toBe(true);
    expect(q.shift()).toBeNull();
    let next = 0;
    let expected = 0;
    // Pushes run ahead of shifts by up to 3,000, so the array is compacted while it holds items.
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 3000; i++) q.push(next++);
      for (let i = 0; i < 2500; i++) expect(q.shift()).toBe(expected++);
    }
    while (!q.isEmpty()) expect(q.shift()).toBe(expected++);
    expect(expected).toBe(next);
    expect(q.shift()).toBeNull();
  });
});

describe('origin pools', () => {
  let server: http.Server;
  let origin: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => setTimeout(() => res.end(req.url), 2));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it("swaps a new pool's queue for a LightQueue, as undici names and shapes it today", async () => {
    const pool = withLightQueue(new Pool(origin));
    try {
      // Fails when an undici upgrade renames or reshapes the queue: the swap would then be skipped silently.
      const queues = Object.getOwnPropertySymbols(pool)
        .filter((k) => k.description === 'queue')
        .map((k) => (pool as unknown as Record<symbol, unknown>)[k]);
      expect(queues).toHaveLength(1);
      expect(queues[0]).toBeInstanceOf(LightQueue);
    } finally {
      await pool.close();
    }
  });

  it('answers every request waiting for a one-connection pool, in the order they were made', async () => {
    const pools = new OriginPools((o) => new Pool(o, { connections: 1 }));
    try {
      const pool = pools.for(origin);
      const answered: string[] = [];
      const paths = Array.from({ length: 200 }, (_, i) => `/p${i}`);
      await Promise.all(
        paths.map(async (p) => {
          const res = await pool.request({ path: p, method: 'GET' });
          answered.push(await res.body.text());
        }),
      );
      expect(answered).toEqual(paths);
    } finally {
      await pools.close();
    }
  });
});
