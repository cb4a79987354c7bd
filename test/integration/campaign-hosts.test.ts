// The campaign's host table on real Redis: what `crawler status` lists while
// hosts start. A session writes its host's first record 2 s in or at its end
// (issue 27), so a host that holds a slot without a record of this run must
// still show, as 'starting': it may be making requests (a pause is not taken
// until every live host says 'paused').
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { CampaignHosts, DISPATCH_HOLD_MS, type HostRecord } from '../../src/redis/campaign-hosts';
import { campaignKeys } from '../../src/redis/keys';
import { createRedis } from '../../src/redis/client';
import { Frontier } from '../../src/redis/frontier';
import { urlFingerprint } from '../../src/url/fingerprint';
import { requeueLost } from '../../activities/requeue-lost';

const record = (state: HostRecord['state'], fetched: number): HostRecord => ({
  state,
  fetched,
  failed: 0,
  skipped: 0,
  bytes: 100 * fetched,
  frontier: 0,
  delayMs: 300,
  reason: 'settings',
  lastUrl: null,
  lastStatus: 200,
  nextWakeAt: null,
  updatedAt: new Date().toISOString(),
});

describe('the host table', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  afterAll(async () => {
    await redis.quit();
  });

  test('a host holding a slot shows as starting until its session writes a record; one re-dispatched after it ended shows starting with its counts', async () => {
    const hosts = new CampaignHosts(redis, `hosts-${randomUUID()}`);
    const states = async () => Object.fromEntries((await hosts.page(0, 50)).map((x) => [x.host, { state: x.state, fetched: x.fetched }]));

    // Dispatched, no record yet: listed as starting, nothing counted.
    await hosts.markReady(['a.test', 'b.test']);
    for (const b of await hosts.readyBatch(10)) await hosts.dispatched(b.host, b.seq, await hosts.nextGens(1));
    expect(await states()).toEqual({ 'a.test': { state: 'starting', fetched: 0 }, 'b.test': { state: 'starting', fetched: 0 } });

    // Its session's record replaces that.
    await hosts.record('a.test', record('crawling', 3));
    expect((await states())['a.test']).toEqual({ state: 'crawling', fetched: 3 });

    // A host whose run ended (slot released, record 'done') shows done...
    await hosts.record('b.test', record('done', 5));
    const gen = (await hosts.slotGens(['b.test']))[0]!;
    expect((await hosts.release('b.test', gen)).released).toBe(true);
    expect((await states())['b.test']).toEqual({ state: 'done', fetched: 5 });
    // ...and once dispatched again, starting, its counts kept (they agree with the totals).
    await hosts.markReady(['b.test']);
    for (const b of await hosts.readyBatch(10)) await hosts.dispatched(b.host, b.seq, await hosts.nextGens(1));
    expect((await states())['b.test']).toEqual({ state: 'starting', fetched: 5 });
    expect((await hosts.totals()).fetched).toBe(8);

    // Later pages list records only: the starting hosts are on the first.
    expect(await hosts.page(50, 50)).toEqual([]);
  });

  test('pages a seal found no line for go back in their frontiers and their hosts become ready; a retry changes nothing, a host with all its lines stays as it is', async () => {
    const ck = `lost-${randomUUID()}`;
    const hosts = new CampaignHosts(redis, ck);
    const commitAll = async (host: string, n: number) => {
      const f = new Frontier(redis, ck, host);
      const urls = Array.from({ length: n }, (_, i) => `http://${host}/${i}`);
      await f.enqueue(urls.map((url) => ({ url, fp: urlFingerprint(url), depth: 1, referrer: null })));
      for (let c = await f.claim(); c; c = await f.claim())
        await f.commit(c.member, 'fetched', 10, [], { fp: urlFingerprint(c.entry.url), id: `i-${c.entry.url}`, keepUndo: true });
      await hosts.record(host, record('done', n));
      return { f, urls };
    };
    const a = await commitAll('a.test', 4);
    const b = await commitAll('b.test', 3);
    // The seal kept every line of b and the first two of a: a's last two were on the lost disk.
    await b.f.sealed(b.urls.map(urlFingerprint));
    await a.f.sealed(a.urls.slice(0, 2).map(urlFingerprint));
    expect((await hosts.counts()).ready).toBe(0);

    expect(await requeueLost(redis, ck)).toEqual({ requeued: 2, hosts: 1 });
    expect(await hosts.readyBatch(10)).toEqual([expect.objectContaining({ host: 'a.test' })]);
    expect(await a.f.size()).toBe(2);
    expect(await a.f.stats()).toMatchObject({ fetched: 2, bytes: 20 });
    expect(await b.f.size()).toBe(0);
    // Retried (the first try died after undoing): nothing undone twice, the host still ready.
    expect(await requeueLost(redis, ck)).toEqual({ requeued: 0, hosts: 1 });
    expect(await a.f.stats()).toMatchObject({ fetched: 2, bytes: 20 });
    expect((await hosts.counts()).ready).toBe(1);
  });
});

describe('the dispatch lock', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  afterAll(async () => {
    await redis.quit();
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  test('a round longer than the lock keeps it (renewed): the next round runs after it, never beside it', async () => {
    const key = `lock-${randomUUID()}`;
    const a = new CampaignHosts(redis, key);
    const b = new CampaignHosts(redis, key);
    const order: string[] = [];
    // A 1 s lock renewed every 333 ms, a round of 2.5 s: a renewal late by up to 600 ms (a loaded machine's event loop;
    // with a 300 ms lock one ran late at load 15 and b ran beside a) still finds the lock a's.
    const first = a.exclusiveDispatch(
      async () => {
        order.push('a starts');
        await sleep(2_500);
        order.push('a ends');
      },
      10_000,
      1_000,
    );
    await sleep(50);
    await b.exclusiveDispatch(async () => void order.push('b runs'), 10_000, 1_000);
    await first;
    expect(order).toEqual(['a starts', 'a ends', 'b runs']);
  });

  test('a round holds the lock only a few seconds past its last renewal, so a holder that dies mid-round does not hold every later round back', async () => {
    const key = `lock-${randomUUID()}`;
    const hosts = new CampaignHosts(redis, key);
    const lock = campaignKeys(key).dispatching;
    let ttl = -1;
    await hosts.exclusiveDispatch(async () => {
      await sleep(DISPATCH_HOLD_MS / 2);
      ttl = await redis.pttl(lock);
    });
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(DISPATCH_HOLD_MS);
    // Released at the end.
    expect(await redis.exists(lock)).toBe(0);
  });
});
