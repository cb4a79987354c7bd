// Redis Cluster runs a Lua script only when every key it is given lives in
// one hash slot (else CROSSSLOT). The crawler's real call sites are driven
// here against an ioredis client that never connects: each EVALSHA they
// send is captured, and ioredis's own key extraction (what Cluster routes
// by) gives the KEYS that would reach Redis. All of one call's keys must
// share a slot, and that slot must be the one of the documented hash tag,
// so a key that loses its tag fails here rather than on a cluster.
import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import { compactPrefix } from '../../src/dedup/compact-store';
import { ContentIndex } from '../../src/dedup/content-index';
import { forgetContentFormats } from '../../src/dedup/content-format';
import { addressKeys, campaignKeys, contentKeys, hostKeys, sharedHostKeys } from '../../src/redis/keys';
import { robotsCacheKey } from '../../src/robots/robots-store';
import { AddressSlots } from '../../src/redis/address-slots';
import { campaignKeyNames, campaignKeyPatterns, campaignOwnKeysAtEnd, hostKeyNames } from '../../src/redis/retention';
import { hostKeysAtEnd } from '../../src/redis/retained-keys';
import { reserveBudget } from '../../src/redis/campaign-store';
import { CampaignHosts, type HostRecord } from '../../src/redis/campaign-hosts';
import { Frontier, type EnqueueItem } from '../../src/redis/frontier';
import { agedSegments, registerSegment, restoreSegment, unlockSpill } from '../../src/redis/frontier-spill';
import { HostClock } from '../../src/redis/host-clock';
import { landSeedChunk, REGISTER_HOSTS_A_CALL, registerSeedBlock } from '../../src/redis/seed-segments';
import { RevisitSchedule } from '../../src/redis/revisit';
import { WorkerRegistry } from '../../src/redis/worker-registry';
import { defineScripts, SCRIPTS } from '../../src/redis/scripts';
import { urlFingerprint } from '../../src/url/fingerprint';
import { hostKey, normalizeUrl } from '../../src/url/normalize';

// The slot function ioredis's Cluster routes with (installed as its dependency; it ships no types).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const calculateSlot = require('cluster-key-slot') as ((key: string) => number) & { generateMulti(keys: string[]): number };

// Campaign keys as the campaign workflow makes them (`${campaignId}.${runId8}`), plus stranger ones.
const CAMPAIGN_KEYS = ['c.1a2b3c4d', 'my.campaign-2024_v2.deadbeef', 'x'.repeat(80) + '.00000000', '9', 'a:b:c', 'a.b|c'];
// Politeness keys as the crawler derives them from URLs: ports, IPv6, punycode.
const TAGGED_HOSTS = [
  'http://example.com/',
  'http://Bücher.example:8080/x',
  'http://例え.テスト/',
  'http://[::1]:8443/',
  'http://127.0.0.1:3000/',
  'http://a.b.c.d.e.f.example/',
  'http://sub-domain.xn--80ak6aa92e.com:65535/',
].map((u) => hostKey(normalizeUrl(u)));
// WHATWG URLs allow braces in hosts: `}` ends the hash tag early, so only
// "one call, one slot" is promised for these, not the slot of the full tag.
const BRACE_HOSTS = ['http://a{b}.com/', 'http://a}b.com/', 'http://{x}/', 'http://%7B%7D.example/'].map((u) => hostKey(normalizeUrl(u)));

interface Captured {
  script: string;
  keys: string[];
}

/** What the content index's format marker reads as: null (format 1) or '2'; the frontier layout's marker (another field of the same hash) too. */
let contentFormatReply: string | null = null;

/** An ioredis client whose commands are captured and answered here instead of by a server. */
function capturingRedis() {
  const redis = new Redis({ lazyConnect: true });
  defineScripts(redis);
  const byShaName = new Map(Object.entries(SCRIPTS).map(([name, def]) => [createHash('sha1').update(def.lua).digest('hex'), name]));
  const calls: Captured[] = [];
  let reply: unknown = null;
  (redis as unknown as { sendCommand: unknown }).sendCommand = (cmd: {
    name: string;
    args: unknown[];
    getKeys(): (string | Buffer)[];
    resolve(v: unknown): void;
    promise: Promise<unknown>;
  }) => {
    // The content index's format marker (src/dedup/content-format.ts) and the frontier layout's (src/redis/frontier-layout.ts), read before
    // their scripts: answered, not captured. Both layouts name the same keys.
    if (cmd.name.toLowerCase() === 'hget' && String(cmd.args[0]).endsWith(':content:meta')) {
      cmd.resolve(contentFormatReply);
      return cmd.promise;
    }
    // The seen set's mode (layout and filter markers, src/redis/frontier-layout.ts): one HMGET of the same hash.
    if (cmd.name.toLowerCase() === 'hmget' && String(cmd.args[0]).endsWith(':content:meta')) {
      cmd.resolve(cmd.args.slice(1).map(() => contentFormatReply));
      return cmd.promise;
    }
    if (cmd.name.toLowerCase() !== 'evalsha') throw new Error(`unexpected ${cmd.name}: scripts only`);
    const sha = String(cmd.args[0]);
    calls.push({ script: byShaName.get(sha) ?? `other:${sha.slice(0, 8)}`, keys: cmd.getKeys().map(String) });
    cmd.resolve(reply);
    return cmd.promise;
  };
  return {
    redis,
    /** Runs one call site with the given fake reply; returns the keys it sent. */
    async capture(fakeReply: unknown, call: () => Promise<unknown>): Promise<Captured> {
      reply = fakeReply;
      const before = calls.length;
      await call();
      expect(calls.length).toBe(before + 1);
      return calls[calls.length - 1];
    },
    /** What every script call is answered with from now on (for call sites that make many). */
    answer(fakeReply: unknown): void {
      reply = fakeReply;
    },
    calls,
  };
}

const slotOf = (key: string) => calculateSlot(key);

/** One slot for the whole call, and (when given) the slot the documented tag content hashes to. */
function expectOneSlot(c: Captured, tagContent?: string): void {
  expect(c.keys.length).toBeGreaterThan(0);
  const slots = [...new Set(c.keys.map(slotOf))];
  expect({ script: c.script, keys: c.keys, slots: slots.length }).toEqual({ script: c.script, keys: c.keys, slots: 1 });
  expect(calculateSlot.generateMulti(c.keys)).toBe(slots[0]);
  if (tagContent !== undefined) {
    for (const k of c.keys) expect({ key: k, slot: slotOf(k) }).toEqual({ key: k, slot: slotOf(tagContent) });
  }
}

const item = (host: string, path: string, depth = 1): EnqueueItem => {
  const url = normalizeUrl(`http://${host}${path}`);
  return { url, fp: urlFingerprint(url), depth, referrer: `http://${host}/` };
};

describe('every Lua script keeps its keys in one hash slot', () => {
  const cap = capturingRedis();
  afterAll(() => cap.redis.disconnect());

  it("registers a chunk of many hosts' seed blocks several hosts a call, each call's hosts of one slot", async () => {
    const ck = CAMPAIGN_KEYS[0]!;
    const hosts = Array.from({ length: 40_000 }, (_, i) => `www.seed${i}.test:80`);
    const chunk = hosts.map((host) => ({ host, seeds: [{ url: `http://${host}/s`, fp: urlFingerprint(`http://${host}/s`), priority: 0 }] }));
    // The object's write is not what this test is about: a store that takes it.
    const store = { putBytes: () => Promise.resolve() } as unknown as Parameters<typeof landSeedChunk>[1];
    cap.answer(new Array(6 * REGISTER_HOSTS_A_CALL).fill(0));
    const before = cap.calls.length;
    await landSeedChunk(cap.redis, store, ck, '2', chunk);
    const calls = cap.calls.slice(before);
    // One expect for all ~14,000 calls (one each took 4 s): the calls that break a rule, none expected.
    const broken = calls.filter((c) => {
      const slot = slotOf(c.keys[0]!);
      return (
        c.script !== 'crawlSeedRegister' ||
        c.keys.length % 6 !== 0 ||
        c.keys.length / 6 > REGISTER_HOSTS_A_CALL ||
        c.keys.some((k) => slotOf(k) !== slot) ||
        calculateSlot.generateMulti(c.keys) !== slot
      );
    });
    expect(broken.map((c) => ({ script: c.script, keys: c.keys, slots: [...new Set(c.keys.map(slotOf))] }))).toEqual([]);
    // Every host's keys once, and far fewer calls than hosts (40,000 hosts over 16,384 slots).
    const registered = calls.flatMap((c) => c.keys.filter((_, i) => i % 6 === 0));
    expect(registered.sort()).toEqual(hosts.map((h) => hostKeys(ck, h).seen).sort());
    expect(calls.length).toBeLessThan(hosts.length / 2);
    // A minute, not Jest's 5 s: 40,000 hosts' blocks take about 3 s alone, and 19 s once beside the
    // suite's other files on a machine still installing Chromium.
  }, 60_000);

  const hostCases = CAMPAIGN_KEYS.flatMap((ck) => [...TAGGED_HOSTS.map((h) => [ck, h, true] as const), ...BRACE_HOSTS.map((h) => [ck, h, false] as const)]);

  it.each(hostCases)('frontier scripts: campaign %j, host %j', async (ck, host, tagged) => {
    const f = new Frontier(cap.redis, ck, host);
    const tag = tagged ? `${ck}|${host}` : undefined;
    const enq = await cap.capture([2, 1, 2], () => f.enqueue([item(host, '/a'), item(host, '/b', 0)]));
    expect(enq.script).toBe('crawlEnqueue');
    expect(enq.keys).toHaveLength(SCRIPTS.crawlEnqueue.numberOfKeys);
    expectOneSlot(enq, tag);

    // A session attempt takes the host over (its fencing number and owner value), then claims, commits and notes retries fenced.
    const take = await cap.capture([1, '1/attempt'], () => f.takeOver('attempt'));
    expect(take.script).toBe('crawlTakeOver');
    expect(take.keys).toHaveLength(SCRIPTS.crawlTakeOver.numberOfKeys);
    expectOneSlot(take, tag);

    const claim = await cap.capture(['1\thttp://x/\t', 1], () => f.claim());
    expect(claim.script).toBe('crawlClaim');
    expect(claim.keys).toHaveLength(SCRIPTS.crawlClaim.numberOfKeys);
    expectOneSlot(claim, tag);

    const commit = await cap.capture([1, 1, 0], () => f.commit('1\thttp://x/\t', 'fetched', 123, [item(host, '/c', 2)]));
    expect(commit.script).toBe('crawlCommit');
    expect(commit.keys).toHaveLength(SCRIPTS.crawlCommit.numberOfKeys);
    expectOneSlot(commit, tag);

    // The spilled tail (src/redis/frontier-spill.ts): out, back and its lock, on the host's keys.
    const hk = hostKeys(ck, host);
    const spill = await cap.capture(1, () => registerSegment(cap.redis, hk, 'seg', [['5', '1\thttp://x/z']]));
    expect(spill.script).toBe('crawlSpill');
    expect(spill.keys).toHaveLength(SCRIPTS.crawlSpill.numberOfKeys);
    expectOneSlot(spill, tag);
    const refill = await cap.capture(1, () => restoreSegment(cap.redis, hk, 'seg', [['5', '1\thttp://x/z']]));
    expect(refill.script).toBe('crawlRefill');
    expect(refill.keys).toHaveLength(SCRIPTS.crawlRefill.numberOfKeys);
    expectOneSlot(refill, tag);
    const aged = await cap.capture([[], -1], () => agedSegments(cap.redis, hk, 3000));
    expect(aged.script).toBe('crawlSpillAged');
    expectOneSlot(aged, tag);
    const unlock = await cap.capture(1, () => unlockSpill(cap.redis, hk, 'token'));
    expect(unlock.script).toBe('crawlUnlock');
    expectOneSlot(unlock, tag);
    // A shared seed segment's block registered with its host (src/redis/seed-segments.ts).
    const seeded = await cap.capture([1, 0, 1], () =>
      registerSeedBlock(cap.redis, ck, '2', '0123abcd', { host, start: 0, length: 10, entries: [{ fp: urlFingerprint('http://x/s'), base: 0 }] }),
    );
    expect(seeded.script).toBe('crawlSeedRegister');
    // Six keys a host (the script's KEYS, one host here).
    expect(seeded.keys).toHaveLength(6);
    expectOneSlot(seeded, tag);

    const retry = await cap.capture(1, () => f.noteRetry('1\thttp://x/\t'));
    expect(retry.script).toBe('crawlNoteRetry');
    expect(retry.keys).toHaveLength(SCRIPTS.crawlNoteRetry.numberOfKeys);
    expectOneSlot(retry, tag);

    // The seen set is marked and asked on the host's own key (src/redis/seen-set.ts).
    const mark = await cap.capture(1, () => f.markSeen(['fp1']));
    expect(mark.script).toBe('crawlSeenAdd');
    expect(mark.keys).toHaveLength(SCRIPTS.crawlSeenAdd.numberOfKeys);
    expectOneSlot(mark, tag);
    const ask = await cap.capture([1], () => f.hasSeen(['fp1']));
    expect(ask.script).toBe('crawlSeenTest');
    expect(ask.keys).toHaveLength(SCRIPTS.crawlSeenTest.numberOfKeys);
    expectOneSlot(ask, tag);

    // A bucket commit a seal found no line for is undone on the host's own keys.
    const uncommit = await cap.capture([1, 1], () => f.uncommit(['fp1']));
    expect(uncommit.script).toBe('crawlUncommit');
    expect(uncommit.keys).toHaveLength(SCRIPTS.crawlUncommit.numberOfKeys);
    expectOneSlot(uncommit, tag);

    // The revisit schedule moves due URLs into this frontier and counts in its stats: same slot.
    const rs = new RevisitSchedule(cap.redis, ck, host);
    const due = await cap.capture([1, 500, 1, 2, 3], () => rs.moveDue());
    expect(due.script).toBe('crawlRevisitDue');
    expect(due.keys).toHaveLength(SCRIPTS.crawlRevisitDue.numberOfKeys);
    expectOneSlot(due, tag);
    const set = await cap.capture(1, () => rs.set('1\thttp://x/\t', 'fp', 1000, { i: 1000 }, 'unchanged'));
    expect(set.script).toBe('crawlRevisitSet');
    expect(set.keys).toHaveLength(SCRIPTS.crawlRevisitSet.numberOfKeys);
    expectOneSlot(set, tag);

    // The frontier's keys also share the slot of the host's other per-campaign
    // keys that activities read on their own (stats, refused).
    const k = hostKeys(ck, host);
    expect(new Set([k.stats, k.refused, ...take.keys, ...enq.keys, ...commit.keys, ...retry.keys, ...due.keys, ...set.keys].map(slotOf)).size).toBe(1);
  });

  it.each([...TAGGED_HOSTS.map((h) => [h, true] as const), ...BRACE_HOSTS.map((h) => [h, false] as const)])('host clock scripts: host %j', async (host, tagged) => {
    const clock = new HostClock(cap.redis, host, 'attempt', 3);
    const acq = await cap.capture(0, () => clock.acquire('owner-1', 30_000, 500));
    expect(acq.script).toBe('crawlClockAcquire');
    // The clock and its owners' newest fencing numbers: one slot.
    expect(acq.keys).toEqual([sharedHostKeys(host).clock, sharedHostKeys(host).clockFence]);
    expectOneSlot(acq, tagged ? host : undefined);
    const stamp = await cap.capture(1, () => clock.stamp('owner-1', 30_000));
    expect(stamp.script).toBe('crawlClockStamp');
    expect(stamp.keys).toEqual(acq.keys);
    const fence = await cap.capture(3, () => clock.register('owner-1'));
    expect(fence.script).toBe('crawlClockFence');
    expect(fence.keys).toEqual([sharedHostKeys(host).clockFence]);
    expectOneSlot(fence, tagged ? host : undefined);
    const rel = await cap.capture(1, () => clock.release('owner-1', 500));
    expect(rel.script).toBe('crawlClockRelease');
    expect(rel.keys).toEqual([sharedHostKeys(host).clock]);
    const ab = await cap.capture(1, () => clock.abandon('owner-1'));
    expect(ab.script).toBe('crawlClockAbandon');
    expect(ab.keys).toEqual([sharedHostKeys(host).clock]);
    // The robots cache of a host sits with its clock, whatever its scheme and address pin.
    for (const pinnedAddress of [null, '127.0.0.1', '::1']) {
      expect(slotOf(robotsCacheKey({ scheme: 'https', host, port: 443, pinnedAddress }))).toBe(slotOf(acq.keys[0]));
    }
  });

  it.each(['192.0.2.7', '2001:db8::1', '::ffff:10.0.0.1'])('address slot scripts: address %j', async (address) => {
    const slots = new AddressSlots(cap.redis, { limit: 2, leaseMs: 1000 });
    let release: () => Promise<void> = async () => undefined;
    // The acquire script's reply when the slot is won: minus the holders' count (this one alone).
    const acq = await cap.capture(-1, async () => {
      release = await slots.acquire(address, new AbortController().signal);
    });
    expect(acq.keys).toEqual([addressKeys(address).slots]);
    expectOneSlot(acq, address);
    const rel = await cap.capture(1, () => release());
    expect(rel.keys).toEqual(acq.keys);
  });

  it.each(CAMPAIGN_KEYS)('budget script: campaign %j', async (ck) => {
    const c = await cap.capture(1, () => reserveBudget(cap.redis, ck, urlFingerprint('http://example.com/'), 100));
    expect(c.script).toBe('crawlBudgetReserve');
    expect(c.keys).toEqual([campaignKeys(ck).budget]);
    expectOneSlot(c, ck);
    expect(slotOf(campaignKeys(ck).config)).toBe(slotOf(ck));
  });

  it.each(CAMPAIGN_KEYS)('campaign host bookkeeping scripts: campaign %j', async (ck) => {
    const hosts = new CampaignHosts(cap.redis, ck);
    const record: HostRecord = {
      state: 'crawling',
      fetched: 1,
      failed: 0,
      skipped: 0,
      bytes: 1,
      frontier: 2,
      delayMs: 1000,
      reason: 'x',
      lastUrl: null,
      lastStatus: null,
      nextWakeAt: null,
      updatedAt: '',
    };
    for (const [script, reply, call] of [
      ['crawlMarkReady', 2, () => hosts.markReady(['a.test', 'b.test:8080'])],
      ['crawlDispatched', 1, () => hosts.dispatched('a.test', '7', 3)],
      ['crawlLockRenew', 1, () => hosts.renewDispatch('token', 6_000)],
      ['crawlRelease', [1, 0, 0], () => hosts.release('a.test', 3)],
      ['crawlPark', [1, 0, 1], () => hosts.park('a.test', 3, 60_000, true)],
      ['crawlParkIfIdle', 1, () => hosts.parkIfIdle('a.test', 1_800_000_000_000)],
      ['crawlUnpark', 1, () => hosts.unparkDue()],
      ['crawlHostRecord', 1, () => hosts.record('a.test', record)],
      ['crawlSessionControl', ['2', '0', null, null, null, 0, null, null, 0], () => hosts.sessionControl('a.test:8080')],
    ] as const) {
      const c = await cap.capture(reply, call);
      expect(c.script).toBe(script);
      expect(c.keys).toHaveLength(SCRIPTS[script].numberOfKeys);
      expectOneSlot(c, ck);
    }
  });

  // The workers' liveness: a worker's lease, its cleanup claim and its sessions in one slot, whatever its id.
  it.each(['', 'test-group'])('worker registry scripts: group %j', async (group) => {
    const reg = new WorkerRegistry(cap.redis, group);
    const tag = group ? `workers:${group}` : 'workers';
    const session = { workflowId: 'c/a.test', runId: 'r', session: 2, campaignWorkflowId: 'c' };
    for (const id of ['host-1-ab12', 'a{b}c', 'x'.repeat(80)]) {
      for (const [script, reply, call] of [
        ['crawlWorkerJoin', 1, () => reg.join(id, 3_000)],
        ['crawlWorkerBeat', [1, []], () => reg.beat(id, 3_000, 10)],
        ['crawlWorkerRegister', 1, () => reg.register(id, session)],
        ['crawlWorkerClaim', [], () => reg.claim(id, 'other', 10_000)],
        ['crawlWorkerReaped', 1, () => reg.reaped(id, 'other')],
        ['crawlWorkerLeave', 1, () => reg.leave(id)],
      ] as const) {
        const c = await cap.capture(reply, call);
        expect(c.script).toBe(script);
        expect(c.keys).toHaveLength(SCRIPTS[script].numberOfKeys);
        expectOneSlot(c, tag);
      }
    }
  });

  // The band count, hence the key count, follows maxDistance: 2 + (maxDistance + 1) keys.
  it.each(CAMPAIGN_KEYS.flatMap((ck) => [0, 3, 15].map((d) => [ck, d] as const)))('content-dedup script: campaign %j, maxDistance %d', async (ck, maxDistance) => {
    forgetContentFormats();
    contentFormatReply = null;
    const index = new ContentIndex(cap.redis, ck, { maxDistance });
    for (const simhash of [0xdeadbeefcafef00dn, null]) {
      const c = await cap.capture('u', () => index.check({ url: 'http://a.example/p', exactHash: 'e3b0c442', simhash }));
      expect(c.script).toMatch(/^other:/); // defined by ContentIndex, not SCRIPTS
      expect(c.keys).toHaveLength(2 + maxDistance + 1);
      expectOneSlot(c, ck);
    }
    // The compact layout: its meta hash is the one key named; every bucket it makes starts with the prefix it is given, in the same slot.
    for (const format of ['2', '3']) {
      forgetContentFormats();
      contentFormatReply = format;
      for (const simhash of [0xdeadbeefcafef00dn, null]) {
        const c = await cap.capture('u', () => index.check({ url: 'http://a.example/p', exactHash: 'sha256:e3b0c442', simhash }));
        expect(c.keys).toEqual([contentKeys(ck, maxDistance).meta]);
        expectOneSlot(c, ck);
      }
    }
    // Format 3's origin table and map and its SimHash table too.
    for (const map of ['v', 'x', 'p', 'u', 'h', 'o', 's', `k${maxDistance}b${maxDistance}`]) {
      expect(slotOf(`${compactPrefix(ck)}${map}:12345`)).toBe(slotOf(contentKeys(ck, maxDistance).meta));
      expect(contentKeys(ck, maxDistance).bucket(map, 12345)).toBe(`${compactPrefix(ck)}${map}:12345`);
    }
    forgetContentFormats();
    contentFormatReply = null;
  });

  // The retention script is given one host's keys, or the campaign's own, per call (src/redis/retention.ts).
  it.each(CAMPAIGN_KEYS)('retention script: campaign %j', async (ck) => {
    for (const host of TAGGED_HOSTS) {
      const names = hostKeyNames(ck, host);
      const c = await cap.capture(3, () => cap.redis.crawlExpireKeys(names.length, ...names, 60_000));
      expect(c.script).toBe('crawlExpireKeys');
      expect(c.keys).toEqual(names);
      expectOneSlot(c, `${ck}|${host}`);
    }
    const own = campaignKeyNames(ck);
    const c = await cap.capture(9, () => cap.redis.crawlExpireKeys(own.length, ...own, 60_000));
    expect(c.keys).toEqual(own);
    expectOneSlot(c, ck);
    // Every key the campaign's code names is among them: a key added to keys.ts is expired and purged too.
    expect(own).toEqual(
      expect.arrayContaining([...Object.values(campaignKeys(ck)), ...[0, 3, 15].flatMap((d) => Object.values(contentKeys(ck, d)).filter((v) => typeof v === 'string'))]),
    );
    expect(own).toEqual(expect.arrayContaining(Array.from({ length: 16 }, (_, i) => contentKeys(ck, 15).band(i))));
  });

  // retention.keep summary: one host's keys, or the campaign's own, per call, and every key named is either deleted or kept.
  it.each(CAMPAIGN_KEYS)('summary retention script: campaign %j', async (ck) => {
    for (const host of TAGGED_HOSTS) {
      const { drop, keep } = hostKeysAtEnd(ck, host);
      expect([...drop, ...keep].sort()).toEqual(hostKeyNames(ck, host).sort());
      const c = await cap.capture(drop.length, () => cap.redis.crawlRetainKeys(drop.length + keep.length, ...drop, ...keep, drop.length, 60_000));
      expect(c.script).toBe('crawlRetainKeys');
      expect(c.keys).toEqual([...drop, ...keep]);
      expectOneSlot(c, `${ck}|${host}`);
    }
    const own = campaignOwnKeysAtEnd(ck);
    expect([...own.drop, ...own.keep].sort()).toEqual(campaignKeyNames(ck).sort());
    const c = await cap.capture(own.drop.length, () => cap.redis.crawlRetainKeys(own.drop.length + own.keep.length, ...own.drop, ...own.keep, own.drop.length, 60_000));
    expect(c.keys).toEqual([...own.drop, ...own.keep]);
    expectOneSlot(c, ck);
  });

  // Runs last: a script added to SCRIPTS without a call site above fails here.
  it('covered every script in SCRIPTS', () => {
    expect([...new Set(cap.calls.map((c) => c.script))].filter((s) => s in SCRIPTS).sort()).toEqual(Object.keys(SCRIPTS).sort());
  });
});

// The purge's SCAN patterns: every key of the campaign, and no key of a campaign whose key starts the same.
test.each(CAMPAIGN_KEYS.filter((ck) => !/[|]/.test(ck)))('purge patterns match campaign %j exactly', (ck) => {
  const glob = (pattern: string) =>
    new RegExp(
      `^${pattern.replace(/\\(.)|([*])|([^\\*]+)/g, (_m, esc: string, star: string, lit: string) => (star ? '.*' : (esc ?? lit).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))}$`,
    );
  const match = (key: string) => campaignKeyPatterns(ck).some((p) => glob(p).test(key));
  for (const k of [...campaignKeyNames(ck), ...TAGGED_HOSTS.flatMap((h) => hostKeyNames(ck, h))]) expect({ k, matched: match(k) }).toEqual({ k, matched: true });
  for (const other of [`${ck}.0badf00d`, `${ck}x`, `x${ck}`]) {
    for (const k of [...campaignKeyNames(other), ...hostKeyNames(other, 'example.com')]) expect({ k, matched: match(k) }).toEqual({ k, matched: false });
  }
  for (const k of [...Object.values(sharedHostKeys('example.com')), robotsCacheKey({ scheme: 'http', host: 'example.com', port: 80, pinnedAddress: null })]) {
    expect(match(k)).toBe(false);
  }
});

describe('the slot check itself', () => {
  it('tells a key that lost its hash tag from one that kept it', () => {
    // What a careless edit of keys.ts would produce: same names, braces gone.
    for (const ck of CAMPAIGN_KEYS) {
      for (const host of TAGGED_HOSTS) {
        const k = hostKeys(ck, host);
        const untagged = k.seq.replace(/[{}]/g, '');
        expect(calculateSlot.generateMulti([k.seen, k.frontier, untagged, k.awake])).toBe(-1);
      }
    }
  });

  it('agrees with the slots Redis documents', () => {
    // The CLUSTER KEYSLOT examples of the Redis documentation.
    expect(slotOf('somekey')).toBe(11058);
    expect(slotOf('foo{hash_tag}')).toBe(2515);
    expect(slotOf('foo{hash_tag}')).toBe(slotOf('hash_tag'));
  });
});
