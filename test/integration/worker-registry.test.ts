// The worker registry's scripts against real Redis (src/redis/worker-registry.ts): leases kept by
// the Redis clock, sessions recorded under a live lease only, one live worker taking a dead one's
// cleanup, and a worker whose lease ran out never renewing it. Each test uses a registry of its
// own (a key group), so the workers of other test files never see these made-up workers.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { createRedis } from '../../src/redis/client';
import { workerKeys } from '../../src/redis/keys';
import { parseSessionRecord, WorkerRegistry, type SessionRecord } from '../../src/redis/worker-registry';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Long enough not to run out during a test step; short leases run out by a sleep past them. A short
 * lease still has to outlast the few Redis calls made under it: at 30 ms, three registrations
 * in a row outran it on a loaded machine (load 15: the third was refused as dead).
 */
const LONG = 60_000;
const SHORT = 250;

const record = (n: number, runId = 'run-1'): SessionRecord => ({ workflowId: `domain-${n}`, runId, session: n, campaignWorkflowId: 'campaign-1' });

describe('worker registry on Redis', () => {
  let redis: Redis;
  let group: string;
  let reg: WorkerRegistry;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  afterAll(async () => {
    await redis.quit();
  });
  beforeEach(() => {
    group = randomUUID();
    reg = new WorkerRegistry(redis, group);
  });

  test('a live worker renews its lease and records its sessions; nobody can claim it', async () => {
    await reg.join('a', LONG);
    await reg.join('b', LONG);
    expect(await reg.beat('a', LONG, 10)).toEqual({ live: true, expired: [] });
    expect(await reg.register('a', record(1))).toBe(true);
    expect(await reg.register('a', record(2))).toBe(true);
    expect(await reg.claim('a', 'b', LONG)).toBeNull();
    await reg.unregister('a', record(1));
    expect(await redis.hkeys(workerKeys(group).sessions('a'))).toEqual(['run-1|2']);
  });

  test("a lease that ran out: listed by the others' beats, never renewed, no session recorded under it", async () => {
    await reg.join('dead', SHORT);
    await reg.join('live', LONG);
    expect(await reg.register('dead', record(1))).toBe(true);
    await sleep(SHORT * 3);
    expect(await reg.beat('live', LONG, 10)).toEqual({ live: true, expired: ['dead'] });
    // Woken up (a frozen process): it is dead for good and must join again under another id.
    expect((await reg.beat('dead', LONG, 10)).live).toBe(false);
    expect(await reg.register('dead', record(2))).toBe(false);
    // Still listed as expired for a live worker to clean up: the beat did not renew it.
    expect((await reg.beat('live', LONG, 10)).expired).toEqual(['dead']);
  });

  test('a silence of every worker (Redis away) runs out no lease; one worker silent while the others beat is dead', async () => {
    // Longer than SHORT: `a` alone beating must never look like everyone's silence, even on a loaded machine.
    const lease = 400;
    await reg.join('a', lease);
    await reg.join('b', lease);
    expect(await reg.beat('a', lease, 10)).toEqual({ live: true, expired: [] });
    // Nobody beat for several leases: Redis was unreachable, not the workers dead.
    await sleep(lease * 3);
    expect(await reg.beat('b', lease, 10)).toEqual({ live: true, expired: [] });
    expect(await reg.beat('a', lease, 10)).toEqual({ live: true, expired: [] });
    // Now `a` keeps beating and `b` does not: `b` runs out.
    const until = Date.now() + lease * 3;
    while (Date.now() < until) {
      await sleep(lease / 8);
      expect((await reg.beat('a', lease, 10)).live).toBe(true);
    }
    expect(await reg.beat('a', lease, 10)).toEqual({ live: true, expired: ['b'] });
    expect((await reg.beat('b', lease, 10)).live).toBe(false);
  });

  test('a silence of every worker shorter than a lease runs out no lease either, though it outlasts the lease of the worker that beat first', async () => {
    const lease = 1_000;
    await reg.join('a', lease);
    await reg.join('b', lease);
    expect((await reg.beat('a', lease, 10)).live).toBe(true);
    await sleep(lease * 0.4);
    expect((await reg.beat('b', lease, 10)).live).toBe(true);
    // Redis away for 0.8 of a lease after b's beat: a's lease (renewed 0.4 before) would have run out.
    await sleep(lease * 0.8);
    expect(await reg.beat('b', lease, 10)).toEqual({ live: true, expired: [] });
    expect(await reg.beat('a', lease, 10)).toEqual({ live: true, expired: [] });
  });

  test("one live worker takes a dead worker's cleanup, gets its sessions, and removes its lease and records", async () => {
    await reg.join('dead', SHORT);
    for (const n of [1, 2, 3]) expect(await reg.register('dead', record(n, `run-${n}`))).toBe(true);
    await sleep(SHORT * 3);
    const claimed = await reg.claim('dead', 'x', LONG);
    expect(claimed?.sort((p, q) => p.session - q.session)).toEqual([1, 2, 3].map((n) => record(n, `run-${n}`)));
    // Another live worker finds the cleanup taken.
    expect(await reg.claim('dead', 'y', LONG)).toBeNull();
    // Only the claimer finishes it.
    expect(await reg.reaped('dead', 'y')).toBe(false);
    expect(await reg.reaped('dead', 'x')).toBe(true);
    const k = workerKeys(group);
    expect(await redis.zscore(k.leases, 'dead')).toBeNull();
    expect(await redis.exists(k.sessions('dead'), k.reaping('dead'))).toBe(0);
    expect((await reg.beat('dead', LONG, 10)).live).toBe(false);
  });

  test('a claim whose claimer died runs out, and another live worker takes the cleanup', async () => {
    await reg.join('dead', SHORT);
    expect(await reg.register('dead', record(7))).toBe(true);
    await sleep(SHORT * 3);
    expect(await reg.claim('dead', 'x', SHORT)).toEqual([record(7)]);
    await sleep(SHORT * 3);
    expect(await reg.claim('dead', 'y', LONG)).toEqual([record(7)]);
    // x's claim ran out: its late finish does nothing.
    expect(await reg.reaped('dead', 'x')).toBe(false);
    expect(await reg.reaped('dead', 'y')).toBe(true);
  });

  test('a worker leaves only with no session recorded: else its lease runs out and its hosts are told', async () => {
    await reg.join('w', LONG);
    expect(await reg.register('w', record(1))).toBe(true);
    expect(await reg.leave('w')).toBe(false);
    expect(await redis.zscore(workerKeys(group).leases, 'w')).not.toBeNull();
    await reg.unregister('w', record(1));
    expect(await reg.leave('w')).toBe(true);
    expect(await redis.zscore(workerKeys(group).leases, 'w')).toBeNull();
  });

  test('records this release does not understand are skipped', () => {
    expect(parseSessionRecord('run-1|3', JSON.stringify({ w: 'domain-3', c: 'c' }))).toEqual({ workflowId: 'domain-3', runId: 'run-1', session: 3, campaignWorkflowId: 'c' });
    expect(parseSessionRecord('no-number', JSON.stringify({ w: 'x', c: 'c' }))).toBeNull();
    expect(parseSessionRecord('run|x', JSON.stringify({ w: 'x', c: 'c' }))).toBeNull();
    expect(parseSessionRecord('run|1', '{not json')).toBeNull();
    expect(parseSessionRecord('run|1', JSON.stringify({ w: 1 }))).toBeNull();
  });
});
