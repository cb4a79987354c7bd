// The frontier against real Redis: the wake protocol (producers of new URLs
// skip waking a host only while its workflow is consuming the frontier) and
// the claim order (priority, then depth, then discovery), including entries
// written by releases before priorities existed.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { hostsWithFrontier } from '../../activities/redis-recovery';
import { enqueueSeeds, groupSeeds } from '../../activities/seeds';
import { frontierPriority, resolveCampaignSettings } from '../../src/config/campaign';
import { saveCampaignSettings } from '../../src/redis/campaign-store';
import { createRedis } from '../../src/redis/client';
import { encodeEntry, Frontier, frontierScoreBase, SessionSupersededError, type EnqueueItem } from '../../src/redis/frontier';
import { hostKeys } from '../../src/redis/keys';
import { RevisitSchedule } from '../../src/redis/revisit';
import { urlFingerprint } from '../../src/url/fingerprint';
import type { CampaignInput } from '../../src/config/campaign';
import { createHarness, launch, pageRequests, type Harness } from '../support/harness';

// The priority suite's beforeAll starts a worker: seconds on a loaded machine, past jest's 5 s default.
jest.setTimeout(120_000);

const item = (url: string, depth = 1, priority?: number): EnqueueItem => ({ url, fp: urlFingerprint(url), depth, referrer: null, ...(priority === undefined ? {} : { priority }) });

/** Claims and commits until the frontier is empty; the URLs in claim order. */
async function drain(f: Frontier): Promise<string[]> {
  const order: string[] = [];
  for (let c = await f.claim(); c; c = await f.claim()) {
    order.push(c.entry.url);
    await f.commit(c.member, 'fetched', 0, []);
  }
  return order;
}

describe('frontier on Redis', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('reports a host asleep until a claim finds work, and asleep again once a claim finds it empty', async () => {
    const f = new Frontier(redis, `t-${randomUUID()}`, 'a.test');
    expect(await f.enqueue([item('http://a.test/1')])).toEqual({ added: 1, awake: false, queued: 1 });
    const first = await f.claim();
    expect(first?.entry.url).toBe('http://a.test/1');
    // Awake: the next claim will see this URL without a wake.
    expect(await f.enqueue([item('http://a.test/2')])).toEqual({ added: 1, awake: true, queued: 2 });
    await f.commit(first!.member, 'fetched', 0, []);
    const second = await f.claim();
    expect(second?.entry.url).toBe('http://a.test/2');
    await f.commit(second!.member, 'fetched', 0, []);
    expect(await f.claim()).toBeNull();
    // The empty claim cleared the flag: this producer must wake the host.
    const r = await f.enqueue([item('http://a.test/3')]);
    expect(r).toEqual({ added: 1, awake: false, queued: 1 });
    expect(Frontier.needsWake(r)).toBe(true);
    // Already-seen URLs add nothing, but a producer re-run after dying
    // between enqueue and wake must still be told to wake the host.
    const again = await f.enqueue([item('http://a.test/1'), item('http://a.test/3')]);
    expect(again).toEqual({ added: 0, awake: false, queued: 1 });
    expect(Frontier.needsWake(again)).toBe(true);
    const c = await f.claim();
    expect(Frontier.needsWake(await f.enqueue([item('http://a.test/1')]))).toBe(false);
    await f.commit(c!.member, 'fetched', 0, []);
    expect(await f.claim()).toBeNull();
    // Empty and asleep: nothing to wake it for.
    expect(Frontier.needsWake(await f.enqueue([item('http://a.test/1')]))).toBe(false);
  });

  it('keeps a claimed entry sticky until it is committed, and orders by depth then discovery', async () => {
    const f = new Frontier(redis, `t-${randomUUID()}`, 'b.test');
    await f.enqueue([item('http://b.test/deep', 2), item('http://b.test/x', 1), item('http://b.test/y', 1)]);
    const c1 = await f.claim();
    expect(c1?.entry.url).toBe('http://b.test/x');
    expect((await f.claim())?.member).toBe(c1!.member);
    await f.commit(c1!.member, 'fetched', 10, [item('http://b.test/z', 1)]);
    const order: string[] = [];
    for (let c = await f.claim(); c; c = await f.claim()) {
      order.push(c.entry.url);
      await f.commit(c.member, 'fetched', 0, []);
    }
    expect(order).toEqual(['http://b.test/y', 'http://b.test/z', 'http://b.test/deep']);
    expect(await f.stats()).toMatchObject({ fetched: 4, bytes: 10 });
  });

  it('orders by depth then discovery when no priority is given, and the same URLs by priority first when one is', async () => {
    const urls: [string, number][] = [
      ['http://c.test/', 0],
      ['http://c.test/blog/1', 1],
      ['http://c.test/products/1', 1],
      ['http://c.test/blog/2', 2],
      ['http://c.test/products/2', 2],
      ['http://c.test/list?sort=asc', 1],
    ];
    const plain = new Frontier(redis, `t-${randomUUID()}`, 'c.test');
    await plain.enqueue(urls.map(([u, d]) => item(u, d)));
    expect(await drain(plain)).toEqual([
      'http://c.test/',
      'http://c.test/blog/1',
      'http://c.test/products/1',
      'http://c.test/list?sort=asc',
      'http://c.test/blog/2',
      'http://c.test/products/2',
    ]);

    // The same discovery sequence with the campaign's rules applied the way
    // the enqueue call sites apply them (frontierPriority of the URL).
    const settings = resolveCampaignSettings(
      {
        seeds: ['http://c.test/'],
        frontier: {
          priorities: [
            { pattern: '/products/', priority: 5 },
            { pattern: '[?&]sort=', priority: -2 },
          ],
        },
      },
      'c',
    );
    const ranked = new Frontier(redis, `t-${randomUUID()}`, 'c.test');
    await ranked.enqueue(urls.map(([u, d]) => item(u, d, frontierPriority(u, settings))));
    expect(await drain(ranked)).toEqual([
      // priority 5, by depth
      'http://c.test/products/1',
      'http://c.test/products/2',
      // priority 0, breadth-first
      'http://c.test/',
      'http://c.test/blog/1',
      'http://c.test/blog/2',
      // priority -2
      'http://c.test/list?sort=asc',
    ]);
  });

  it("keeps discovery order within a priority and depth, and priority across a commit's links", async () => {
    const f = new Frontier(redis, `t-${randomUUID()}`, 'd.test');
    await f.enqueue([item('http://d.test/', 0), item('http://d.test/a', 1, 1), item('http://d.test/b', 1, 1)]);
    const first = await f.claim();
    expect(first?.entry.url).toBe('http://d.test/a');
    // Links committed with the page: a high-priority one jumps the queue, a default one waits its turn.
    await f.commit(first!.member, 'fetched', 0, [item('http://d.test/c', 2, 0), item('http://d.test/urgent', 3, 8)]);
    expect(await drain(f)).toEqual(['http://d.test/urgent', 'http://d.test/b', 'http://d.test/', 'http://d.test/c']);
  });

  it('queues a URL named twice in one batch once, skips those already seen, and numbers the new ones in the order given', async () => {
    const campaign = `t-${randomUUID()}`;
    const f = new Frontier(redis, campaign, 'g.test');
    const u = (p: string) => `http://g.test/${p}`;
    expect((await f.enqueue([item(u('a')), item(u('b'))])).added).toBe(2);
    // The seen-set is asked once for the whole batch: a URL repeated in it is still new to that answer.
    expect((await f.enqueue([item(u('b')), item(u('c')), item(u('c')), item(u('d')), item(u('a')), item(u('e'))])).added).toBe(3);
    const head = await f.claim();
    expect(head?.entry.url).toBe(u('a'));
    // A commit's links likewise: one already queued, one twice, one new.
    const c = await f.commit(head!.member, 'fetched', 0, [item(u('f')), item(u('d')), item(u('f')), item(u('g'))]);
    expect(c).toEqual({ removed: true, added: 2, remaining: 6 });
    expect(await drain(f)).toEqual(['b', 'c', 'd', 'e', 'f', 'g'].map(u));
    // Seven discovery numbers, one per URL queued (five by the enqueues, two by the commit): none skipped, none reused.
    expect(await redis.get(hostKeys(campaign, 'g.test').seq)).toBe('7');
  });

  it('stores scores exactly at the extremes of priority, depth and discovery counter', async () => {
    const campaignKey = `t-${randomUUID()}`;
    const k = hostKeys(campaignKey, 'e.test');
    const f = new Frontier(redis, campaignKey, 'e.test');
    // A discovery counter near its 1e12 budget: the largest seq the layout allows.
    await redis.set(k.seq, String(1e12 - 10));
    const cases = [
      { url: 'http://e.test/top', depth: 999, priority: -8 },
      { url: 'http://e.test/bottom', depth: 0, priority: 8 },
      { url: 'http://e.test/deep', depth: 4_000, priority: 0 },
    ];
    await f.enqueue(cases.map((c) => item(c.url, c.depth, c.priority)));
    const withScores = await redis.zrange(k.frontier, 0, -1, 'WITHSCORES');
    const scores = new Map<string, string>();
    for (let i = 0; i < withScores.length; i += 2) scores.set(withScores[i], withScores[i + 1]);
    cases.forEach((c, i) => {
      const expected = BigInt(frontierScoreBase(c.priority, c.depth)) + BigInt(1e12 - 10 + i + 1);
      expect({ url: c.url, score: scores.get(encodeEntry({ url: c.url, depth: c.depth, referrer: null }, 'e.test', 1)) }).toEqual({ url: c.url, score: expected.toString() });
    });
    expect(await drain(f)).toEqual(['http://e.test/bottom', 'http://e.test/deep', 'http://e.test/top']);
  });

  it('places entries an older release wrote (no priority, depth × 1e12 + seq) among new default-priority ones', async () => {
    const campaignKey = `t-${randomUUID()}`;
    const k = hostKeys(campaignKey, 'f.test');
    const f = new Frontier(redis, campaignKey, 'f.test');
    // What the previous enqueue script left behind: three-field members, old scores, the counter.
    const legacy = [
      { url: 'http://f.test/old-1', depth: 1, seq: 1 },
      { url: 'http://f.test/old-2', depth: 2, seq: 2 },
    ];
    for (const l of legacy) {
      await redis.sadd(k.seen, urlFingerprint(l.url));
      await redis.zadd(k.frontier, l.depth * 1e12 + l.seq, `${l.depth}\t${l.url}\thttp://f.test/`);
    }
    await redis.set(k.seq, '2');
    await f.enqueue([item('http://f.test/new-1', 1), item('http://f.test/new-2', 2), item('http://f.test/hot', 2, 1)]);
    const head = await f.claim();
    expect(head?.entry).toEqual({ url: 'http://f.test/hot', depth: 2, referrer: null });
    await f.commit(head!.member, 'fetched', 0, []);
    const rest: { url: string; depth: number; referrer: string | null }[] = [];
    for (let c = await f.claim(); c; c = await f.claim()) {
      rest.push(c.entry);
      await f.commit(c.member, 'fetched', 0, []);
    }
    expect(rest).toEqual([
      { url: 'http://f.test/old-1', depth: 1, referrer: 'http://f.test/' },
      { url: 'http://f.test/new-1', depth: 1, referrer: null },
      { url: 'http://f.test/old-2', depth: 2, referrer: 'http://f.test/' },
      { url: 'http://f.test/new-2', depth: 2, referrer: null },
    ]);
  });

  it('moves due revisits of both member forms into the frontier at their depth, and claims them as they were', async () => {
    const ck = `t-${randomUUID()}`;
    const k = hostKeys(ck, 'r.test');
    const f = new Frontier(redis, ck, 'r.test');
    // The script serves both layouts (src/redis/frontier-layout.ts): a member of a layout-1 campaign's schedule (tab-separated, the referrer's URL), beside a compact one.
    const legacy = '3\thttp://r.test/old\thttp://r.test/\t\t\tdetail\tLLL';
    const compact = encodeEntry({ url: 'https://r.test/new?q=1', depth: 12, referrer: 'https://r.test/', label: 'x', hops: 'LLLLLLLLLLLR' }, 'r.test', 2);
    await redis.zadd(k.revisit, 0, legacy, 0, compact);
    expect((await new RevisitSchedule(redis, ck, 'r.test').moveDue()).moved).toBe(2);
    const scores = await redis.zrange(k.frontier, 0, -1, 'WITHSCORES');
    expect([Math.floor(Number(scores[1]) / 1e12), Math.floor(Number(scores[3]) / 1e12)]).toEqual([3, 12]);
    const first = (await f.claim())!;
    expect(first.entry).toEqual({ url: 'http://r.test/old', depth: 3, referrer: 'http://r.test/', label: 'detail', hops: 'LLL' });
    await f.commit(first.member, 'fetched', 0, []);
    expect((await f.claim())!.entry).toEqual({
      url: 'https://r.test/new?q=1',
      depth: 12,
      referrer: 'https://r.test/',
      label: 'x',
      hops: 'LLLLLLLLLLLR',
    });
  });

  // Attempt ids as tests name them (kept as text) and as newAttemptId makes them (8 base64url
  // characters, kept in 6 bytes: src/redis/sealing-state.ts), one of them a tab and a newline in binary.
  const binaryId = (...bytes: number[]) => Buffer.from(bytes).toString('base64url');
  it.each([
    ['text', ['ida', 'idb', 'idb2', 'idr']],
    ['compact', [binaryId(9, 9, 10, 9, 0, 9), 'AAAAAAAA', binaryId(0, 10, 9, 92, 116, 9), '-_-_-_-_']],
  ])('undoes a bucket commit whose line a seal did not find: the URL is back at its place, its counters and committed id gone, once (%s ids)', async (_, [ida, idb, idb2, idr]) => {
    const ck = `t-${randomUUID()}`;
    const f = new Frontier(redis, ck, 'u.test');
    await f.enqueue([item('http://u.test/a'), item('http://u.test/b'), item('http://u.test/c', 2), item('http://u.test/folder', 1)]);
    const fpOf = (u: string) => urlFingerprint(u);
    // a and b committed for a bucket output; c for a folder (no undo record); folder stays queued.
    const a = (await f.claim())!;
    await f.commit(a.member, 'fetched', 100, [], { fp: fpOf('http://u.test/a'), id: ida, keepUndo: true });
    const b = (await f.claim())!;
    await f.commit(b.member, 'failed', 7, [], { fp: fpOf('http://u.test/b'), id: idb, keepUndo: true });
    const pending: string[] = [];
    for await (const fps of f.unsealed()) pending.push(...fps);
    expect(pending.sort()).toEqual([fpOf('http://u.test/a'), fpOf('http://u.test/b')].sort());
    // A seal found a's line in the bucket: a is never undone. b's line was lost.
    await f.sealed([fpOf('http://u.test/a')]);
    const before = await f.stats();
    expect(before).toMatchObject({ fetched: 1, failed: 1, bytes: 107 });
    const r = await f.uncommit([fpOf('http://u.test/a'), fpOf('http://u.test/b')]);
    expect(r).toEqual({ undone: 1, queued: 3 });
    expect(await f.stats()).toMatchObject({ fetched: 1, failed: 0, bytes: 100 });
    expect(await f.committedAttempts([fpOf('http://u.test/a'), fpOf('http://u.test/b')])).toEqual([ida, null]);
    // Back ahead of the later depth-1 entry it was discovered before, as it was.
    expect((await f.peek())?.url).toBe('http://u.test/b');
    // A retry changes nothing.
    expect(await f.uncommit([fpOf('http://u.test/b')])).toEqual({ undone: 0, queued: 3 });
    expect(await f.stats()).toMatchObject({ failed: 0, bytes: 100 });
    // Fetched again: the new commit counts and replaces the undo record, which a seal then clears.
    const again = (await f.claim())!;
    expect(again.entry.url).toBe('http://u.test/b');
    expect((await f.commit(again.member, 'fetched', 9, [], { fp: fpOf('http://u.test/b'), id: idb2, keepUndo: true })).removed).toBe(true);
    expect(await f.committedAttempts([fpOf('http://u.test/b')])).toEqual([idb2]);
    expect(await f.stats()).toMatchObject({ fetched: 2, failed: 0, bytes: 109 });
    expect(await f.uncommit([fpOf('http://u.test/b')])).toEqual({ undone: 1, queued: 3 });
    // A folder commit keeps nothing to undo.
    const rest = (await f.claim())!;
    await f.commit(rest.member, 'fetched', 1, [], { fp: fpOf(rest.entry.url), id: idr });
    const left: string[] = [];
    for await (const fps of f.unsealed()) left.push(...fps);
    expect(left).toEqual([fpOf('http://u.test/b')]);
  });

  it('reads the sealing state a commit of the release before wrote (text fingerprints and ids), mid-campaign', async () => {
    const ck = `t-${randomUUID()}`;
    const f = new Frontier(redis, ck, 'o.test');
    const k = hostKeys(ck, 'o.test');
    await f.enqueue([item('http://o.test/a'), item('http://o.test/b'), item('http://o.test/c')]);
    const [fa, fb, fc] = ['a', 'b', 'c'].map((p) => urlFingerprint(`http://o.test/${p}`));
    // a and b committed as the release before did: its crawlCommit with the fingerprint and id as text.
    for (const [fp, id] of [
      [fa, 'oldIdAAA'],
      [fb, 'oldIdBBB'],
    ]) {
      const c = (await f.claim())!;
      await redis.crawlCommit(k.seen, k.frontier, k.seq, k.current, k.stats, k.attempts, k.committed, k.session, k.unsealed, c.member, 'fetched', 5, fp, id, '', '1', -1, -1);
    }
    expect(await redis.hexists(k.committed, fa)).toBe(1);
    // c by this release, in the compact form.
    const c = (await f.claim())!;
    await f.commit(c.member, 'fetched', 5, [], { fp: fc, id: 'newIdCCC', keepUndo: true });
    expect(await redis.hexists(k.committed, fc)).toBe(0);
    expect(await f.committedAttempts([fa, fb, fc, urlFingerprint('http://o.test/none')])).toEqual(['oldIdAAA', 'oldIdBBB', 'newIdCCC', null]);
    const pending: string[] = [];
    for await (const fps of f.unsealed()) pending.push(...fps);
    expect(pending.sort()).toEqual([fa, fb, fc].sort());
    // a sealed; b and c lost with a disk: both undone, whichever release committed them.
    await f.sealed([fa]);
    expect(await f.uncommit([fb, fc])).toEqual({ undone: 2, queued: 2 });
    expect(await f.committedAttempts([fa, fb, fc])).toEqual(['oldIdAAA', null, null]);
    expect(await f.stats()).toMatchObject({ fetched: 1, bytes: 5 });
  });

  it('fences a session attempt once a newer one took the host over: its commit, retry note and claim are refused and change nothing', async () => {
    const ck = `t-${randomUUID()}`;
    const k = hostKeys(ck, 'f.test');
    const older = new Frontier(redis, ck, 'f.test');
    const newer = new Frontier(redis, ck, 'f.test');
    await older.enqueue([item('http://f.test/1'), item('http://f.test/2')]);
    expect(await older.takeOver('run/1/1/local-a')).toBe(1);
    const claimed = (await older.claim())!;
    expect(claimed.entry.url).toBe('http://f.test/1');
    // The older attempt was presumed dead (its workflow task timed out) and the session runs again.
    expect(await newer.takeOver('run/1/1/local-b')).toBe(2);
    expect(await redis.get(k.session)).toBe('2/run/1/1/local-b');
    const fp = urlFingerprint('http://f.test/1');
    await expect(older.commit(claimed.member, 'fetched', 10, [item('http://f.test/3')], { fp, id: 'older-attempt' })).rejects.toThrow(SessionSupersededError);
    await expect(older.noteRetry(claimed.member)).rejects.toThrow(SessionSupersededError);
    await expect(older.assertOwner()).rejects.toThrow(SessionSupersededError);
    await expect(older.claim()).rejects.toThrow(SessionSupersededError);
    // Nothing of it counted: the entry is still there and current, no attempt recorded as committed, its link not seen.
    expect(await older.size()).toBe(2);
    expect(await older.committedAttempts([fp])).toEqual([null]);
    expect(await older.stats()).toEqual({});
    // The newer attempt retries the same URL (its claims so far: two, none a retry) and its commit is the one that counts.
    await newer.assertOwner();
    expect(await newer.claim()).toMatchObject({ member: claimed.member, attempts: 2, retried: 0 });
    expect(await newer.commit(claimed.member, 'fetched', 10, [item('http://f.test/3')], { fp, id: 'newer-attempt' })).toEqual({ removed: true, added: 1, remaining: 2 });
    expect(await newer.committedAttempts([fp])).toEqual(['newer-attempt']);
  });

  it('keeps the unfenced writes of before fencing: a frontier without a takeover, and a host an older release took over', async () => {
    const ck = `t-${randomUUID()}`;
    const k = hostKeys(ck, 'g.test');
    const fenced = new Frontier(redis, ck, 'g.test');
    await fenced.enqueue([item('http://g.test/1')]);
    await fenced.takeOver('new-release');
    // A worker of an older release takes the host over as it did: its bare token, no fencing number.
    await redis.set(k.session, 'old-release/1/1', 'PX', 60_000);
    await expect(fenced.claim()).rejects.toThrow(SessionSupersededError);
    // Callers with no takeover (the older release's writes, tools) go on as before.
    const plain = new Frontier(redis, ck, 'g.test');
    const c = (await plain.claim())!;
    await plain.noteRetry(c.member);
    expect(await plain.claim()).toMatchObject({ attempts: 2, retried: 1 });
    expect((await plain.commit(c.member, 'fetched', 0, [])).removed).toBe(true);
    // The counter goes on from where it was: a later attempt of the new release is newer than every earlier one.
    expect(await fenced.takeOver('new-release-2')).toBe(2);
    expect(await fenced.takeOver('new-release-3', 10)).toBe(11);
  });

  it('enqueues seeds at their priority, from the settings given or from the stored ones', async () => {
    const seeds = ['http://g.test/', 'http://g.test/sale/', 'http://g.test/archive/'];
    const input = {
      seeds,
      frontier: {
        priorities: [
          { pattern: '/sale/', priority: 4 },
          { pattern: '/archive/', priority: -4 },
        ],
      },
    };
    const settings = resolveCampaignSettings(input, 'g');
    const given = `t-${randomUUID()}`;
    await enqueueSeeds(redis, given, groupSeeds(seeds).byHost, settings);
    expect(await drain(new Frontier(redis, given, 'g.test'))).toEqual(['http://g.test/sale/', 'http://g.test/', 'http://g.test/archive/']);

    // Operator-added seeds (addCampaignSeeds) pass no settings: the campaign's stored ones apply.
    const stored = `t-${randomUUID()}`;
    await saveCampaignSettings(redis, stored, 1, settings);
    await enqueueSeeds(redis, stored, groupSeeds([...seeds].reverse()).byHost);
    expect(await drain(new Frontier(redis, stored, 'g.test'))).toEqual(['http://g.test/sale/', 'http://g.test/', 'http://g.test/archive/']);
  });
});

describe('after a Redis restart', () => {
  it('the sweep finds every host of the campaign with URLs left in its frontier, and none of another campaign', async () => {
    const redis = createRedis(process.env.REDIS_URL!) as Redis;
    try {
      // Glob characters in the campaign ID are matched literally.
      const mine = `t-[*?]-${randomUUID()}`;
      const other = `t-${randomUUID()}`;
      await new Frontier(redis, mine, 'a.test:80').enqueue([item('http://a.test/1')]);
      await new Frontier(redis, mine, 'b.test').enqueue([item('http://b.test/1'), item('http://b.test/2')]);
      const drained = new Frontier(redis, mine, 'c.test');
      await drained.enqueue([item('http://c.test/1')]);
      await drain(drained);
      await new Frontier(redis, other, 'd.test').enqueue([item('http://d.test/1')]);
      await new Frontier(redis, `${mine}x`, 'e.test').enqueue([item('http://e.test/1')]);
      expect(await hostsWithFrontier(redis, mine)).toEqual(['a.test:80', 'b.test']);
      // Revisit schedules too: what the sweep after a Redis loss puts back in line (a lost park).
      await redis.zadd(hostKeys(mine, 'f.test').revisit, Date.now() + 60_000, 'due-later');
      expect(await hostsWithFrontier(redis, mine, 'revisit')).toEqual(['f.test']);
    } finally {
      await redis.quit();
    }
  });
});

describe('a crawl follows priority rules for the links it discovers', () => {
  let h: Harness;
  // One host, one fetch at a time, so the request log is the claim order.
  const PAGES: Record<string, string[]> = {
    '/': ['/a1', '/a2', '/a3'],
    '/a1': ['/deep/x', '/b1'],
    '/a2': [],
    '/a3': [],
    '/deep/x': [],
    '/b1': [],
  };
  beforeAll(async () => {
    h = await createHarness('priority', { workers: 1 });
    h.web.addSite({
      host: 'prio.frontier.test',
      pages: 1,
      fanOut: 0,
      handler: (ctx) => {
        const links = PAGES[ctx.path];
        if (!links) return false;
        ctx.send(200, 'text/html; charset=utf-8', `<html><body>${links.map((l) => `<a href="${l}">${l}</a>`).join(' ')}</body></html>`);
        return true;
      },
    });
  });
  afterAll(() => h?.close());

  const order = async (frontier?: CampaignInput['frontier']) => {
    const before = h.web.requests().length;
    const r = await (await launch(h, { seeds: [h.web.url('prio.frontier.test', '/')], politeness: { minDelayMs: 0 }, ...(frontier ? { frontier } : {}) })).result();
    expect(r.status).toBe('completed');
    return pageRequests(h.web.requests().slice(before)).map((q) => q.path);
  };

  it('breadth-first without rules; a deep link matching a rule jumps ahead of shallower pages', async () => {
    expect(await order()).toEqual(['/', '/a1', '/a2', '/a3', '/deep/x', '/b1']);
    expect(await order({ priorities: [{ pattern: '/deep/', priority: 5 }] })).toEqual(['/', '/a1', '/deep/x', '/a2', '/a3', '/b1']);
  });
});
