// politeness.maxInFlightPerAddress: hosts that are all one address (wildcard
// subdomains of one server) each have their own politeness clock, but the
// server that answers them all never sees more requests at once than the
// cap, over all workers. The semaphore itself (src/redis/address-slots.ts)
// is checked first against the real Redis.
import type { ServerResponse } from 'node:http';
import Redis from 'ioredis';
import { AddressSlots } from '../../src/redis/address-slots';
import { createHarness, fetchedUrls, launch, outputOf, pageRequests, type Harness } from '../support/harness';

const HOSTS = 40;
const CAP = 3;
/** How long the server takes over each response: long enough for requests to pile up. */
const SLOW_MS = 150;

describe('AddressSlots (the Redis semaphore)', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL!);
  });
  afterAll(() => redis.disconnect());
  const address = () => `192.0.2.${Math.floor(Math.random() * 250)}-${process.pid}-${Date.now()}`;
  const never = new AbortController().signal;

  test('at most `limit` holders; a release lets a waiter in; two clients (two workers) share the count', async () => {
    const other = new Redis(process.env.REDIS_URL!);
    try {
      const ip = address();
      const a = new AddressSlots(redis, { limit: 2, leaseMs: 60_000 });
      const b = new AddressSlots(other, { limit: 2, leaseMs: 60_000 });
      const first = await a.acquire(ip, never);
      await b.acquire(ip, never);
      expect(await a.inFlight(ip)).toBe(2);
      let third = false;
      const waiting = a.acquire(ip, never).then((release) => ((third = true), release));
      await new Promise((r) => setTimeout(r, 200));
      expect(third).toBe(false);
      await first();
      await first(); // a second call changes nothing
      await waiting;
      expect(third).toBe(true);
      expect(await b.inFlight(ip)).toBe(2);
    } finally {
      other.disconnect();
    }
  });

  test('a holder that never gives its slot back (its worker died) loses it when its lease ends', async () => {
    const ip = address();
    const slots = new AddressSlots(redis, { limit: 1, leaseMs: 300 });
    await slots.acquire(ip, never);
    const release = await slots.acquire(ip, AbortSignal.timeout(10_000));
    await release();
    expect(await slots.inFlight(ip)).toBe(0);
  });

  test('an abort ends the wait with its reason and takes no slot', async () => {
    const ip = address();
    const slots = new AddressSlots(redis, { limit: 1, leaseMs: 60_000 });
    const held = await slots.acquire(ip, never);
    const abort = new AbortController();
    const waiting = slots.acquire(ip, abort.signal);
    setTimeout(() => abort.abort(new Error('stop')), 100);
    await expect(waiting).rejects.toThrow('stop');
    expect(await slots.inFlight(ip)).toBe(1);
    await held();
    expect(await slots.inFlight(ip)).toBe(0);
  });
});

describe('a campaign over many hosts of one address', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness('address-cap', { workers: 2 });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  test(`${HOSTS} hosts on 127.0.0.1 with no delay: never more than ${CAP} requests at the server at once, every page stored`, async () => {
    let inFlight = 0;
    let most = 0;
    const hold = (_path: string, res: ServerResponse) => {
      inFlight++;
      most = Math.max(most, inFlight);
      res.on('close', () => inFlight--);
      return new Promise((r) => setTimeout(r, SLOW_MS));
    };
    const hosts = Array.from({ length: HOSTS }, (_, i) => `s${i}.wildcard.test`);
    for (const host of hosts) h.web.addSite({ host, pages: 1, fanOut: 0, holdUntil: hold });
    const handle = await launch(h, {
      seeds: hosts.map((host) => h.web.url(host, '/')),
      scope: { mode: 'any' },
      politeness: { minDelayMs: 0, maxInFlightPerAddress: CAP },
      sitemaps: 'off',
    });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.pages).toBe(HOSTS);
    // robots.txt of every host and every page came, all through the gate.
    expect(pageRequests(h.web.requests()).length).toBe(HOSTS);
    expect(h.web.requests().length).toBeGreaterThanOrEqual(2 * HOSTS);
    expect(most).toBeLessThanOrEqual(CAP);
    // The cap is what held them back: requests did pile up to it.
    expect(most).toBe(CAP);
    const stored = fetchedUrls(await outputOf(h, handle.workflowId).index());
    expect(new Set(stored)).toEqual(new Set(hosts.map((host) => h.web.url(host, '/'))));
  }, 240_000);
});
