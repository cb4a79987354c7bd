// The shared content index against real Redis: first writer wins, verdicts
// are final per URL, and the pigeonhole bands find every near-duplicate
// within maxDistance and nothing beyond it. Every case runs on both layouts:
// format 1 (campaigns created before the compact one, unmarked), format 2
// (src/dedup/compact-store.ts) and format 3 (format 2 with numbered origins,
// a SimHash table and 5-byte band records: what new campaigns get).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { createRedis } from '../../src/redis/client';
import { bandValues, ContentIndex, contentKeys } from '../../src/dedup/content-index';
import { hammingDistance, simhash64 } from '../../src/dedup/simhash';
import { PayloadIndex } from '../../src/dedup/payload-index';
import { BAND_LOAD, BAND_LOAD3, compactKeyNames, MAP_LOAD, SIM_SLOTS } from '../../src/dedup/compact-store';
import { responseRecordId } from '../../src/storage/warc-writer';
import { expireCampaign } from '../../src/redis/retention';
import { defineScripts, type RedisLike } from '../../src/redis/scripts';
import { CONTENT_FORMAT, type ContentFormat, contentFormat, forgetContentFormats, markContentFormat } from '../../src/dedup/content-format';

const random64 = () => randomBytes(8).readBigUInt64BE();
/** Flips the given bit positions (0 = least significant). */
const flip = (h: bigint, bits: number[]) => bits.reduce((x, b) => x ^ (1n << BigInt(b)), h);
const hash = () => randomUUID();
const ck = () => `t-${randomUUID()}`;
const FORMATS: ContentFormat[] = [1, 2, 3];
// Not Jest's 5 s: the 3,000-page test below is a few thousand Redis scripts, which a loaded machine
// (load 15, four test files at a time) took past 5 s; what it checks is what they find, not how fast.
jest.setTimeout(60_000);

// With the default maxDistance 3 the bands are 16 bits each: [63..48] [47..32] [31..16] [15..0].
const BAND_BITS = [60, 40, 20, 5];

describe.each(FORMATS)('content index, format %d', (format) => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  /** A new campaign's key, marked with the layout under test. */
  const key = async () => {
    const k = ck();
    if (format !== 1) await markContentFormat(redis, k, format);
    return k;
  };
  afterAll(async () => {
    await redis.quit();
  });

  it('reports an exact duplicate with the first URL, with or without a simhash', async () => {
    const idx = new ContentIndex(redis, await key());
    const h = hash();
    expect(await idx.check({ url: 'http://a.test/1', exactHash: h, simhash: random64() })).toEqual({ kind: 'unique' });
    expect(await idx.check({ url: 'http://a.test/2', exactHash: h, simhash: random64() })).toEqual({ kind: 'exact-duplicate', of: 'http://a.test/1' });
    expect(await idx.check({ url: 'http://b.test/3', exactHash: h, simhash: null })).toEqual({ kind: 'exact-duplicate', of: 'http://a.test/1' });
    expect(await idx.check({ url: 'http://a.test/4', exactHash: hash(), simhash: null })).toEqual({ kind: 'unique' });
  });

  it('reports a near-duplicate within maxDistance with its distance, whichever bands the differences fall in', async () => {
    const idx = new ContentIndex(redis, await key());
    const s = random64();
    expect(await idx.check({ url: 'http://n.test/orig', exactHash: hash(), simhash: s })).toEqual({ kind: 'unique' });
    // Three bands differ, one is intact.
    expect(await idx.check({ url: 'http://n.test/3spread', exactHash: hash(), simhash: flip(s, BAND_BITS.slice(0, 3)) })).toEqual({
      kind: 'near-duplicate',
      of: 'http://n.test/orig',
      distance: 3,
    });
    // All three differences in one band.
    expect(await idx.check({ url: 'http://n.test/3packed', exactHash: hash(), simhash: flip(s, [0, 7, 15]) })).toEqual({
      kind: 'near-duplicate',
      of: 'http://n.test/orig',
      distance: 3,
    });
    expect(await idx.check({ url: 'http://n.test/1', exactHash: hash(), simhash: flip(s, [63]) })).toEqual({ kind: 'near-duplicate', of: 'http://n.test/orig', distance: 1 });
    expect(await idx.check({ url: 'http://n.test/0', exactHash: hash(), simhash: s })).toEqual({ kind: 'near-duplicate', of: 'http://n.test/orig', distance: 0 });
  });

  it('does not report distance maxDistance+1, whether no band or some bands match', async () => {
    const idx = new ContentIndex(redis, await key());
    const s = random64();
    await idx.check({ url: 'http://f.test/orig', exactHash: hash(), simhash: s });
    // Every band differs: no candidate at all.
    expect(await idx.check({ url: 'http://f.test/spread', exactHash: hash(), simhash: flip(s, BAND_BITS) })).toEqual({ kind: 'unique' });
    // One band differs in four bits: a candidate, rejected on distance.
    expect(await idx.check({ url: 'http://f.test/packed', exactHash: hash(), simhash: flip(s, [16, 17, 18, 31]) })).toEqual({ kind: 'unique' });
  });

  it('agrees with hammingDistance on random pairs (the script computes distance on two 32-bit halves)', async () => {
    for (let i = 0; i < 200; i++) {
      const idx = new ContentIndex(redis, await key());
      const a = random64();
      const bits = Array.from({ length: i % 6 }, () => Math.floor(Math.random() * 64));
      const b = flip(a, bits);
      const d = hammingDistance(a, b);
      await idx.check({ url: 'http://p.test/a', exactHash: hash(), simhash: a });
      const v = await idx.check({ url: 'http://p.test/b', exactHash: hash(), simhash: b });
      expect(v).toEqual(d <= 3 ? { kind: 'near-duplicate', of: 'http://p.test/a', distance: d } : { kind: 'unique' });
    }
  });

  it('names the closest recorded page', async () => {
    const idx = new ContentIndex(redis, await key());
    const s = random64();
    const far = flip(s, [1, 2, 3, 4]); // 4 from s: both are recorded as unique
    await idx.check({ url: 'http://c.test/a', exactHash: hash(), simhash: s });
    expect(await idx.check({ url: 'http://c.test/b', exactHash: hash(), simhash: far })).toEqual({ kind: 'unique' });
    expect(await idx.check({ url: 'http://c.test/p', exactHash: hash(), simhash: flip(s, [1]) })).toEqual({ kind: 'near-duplicate', of: 'http://c.test/a', distance: 1 });
    expect(await idx.check({ url: 'http://c.test/q', exactHash: hash(), simhash: flip(s, [1, 2, 3]) })).toEqual({ kind: 'near-duplicate', of: 'http://c.test/b', distance: 1 });
  });

  it('gives a URL the same verdict every time it is checked (retried activities)', async () => {
    const idx = new ContentIndex(redis, await key());
    const page = { url: 'http://r.test/1', exactHash: hash(), simhash: random64() };
    expect(await idx.check(page)).toEqual({ kind: 'unique' });
    expect(await idx.check(page)).toEqual({ kind: 'unique' });
    // A retry that refetched different content keeps the first verdict.
    expect(await idx.check({ ...page, exactHash: hash(), simhash: random64() })).toEqual({ kind: 'unique' });
    const dup = { url: 'http://r.test/2', exactHash: page.exactHash, simhash: page.simhash };
    expect(await idx.check(dup)).toEqual({ kind: 'exact-duplicate', of: page.url });
    expect(await idx.check(dup)).toEqual({ kind: 'exact-duplicate', of: page.url });
  });

  it('lets exactly one of 20 concurrent identical pages be unique', async () => {
    const campaign = await key();
    const h = hash();
    const s = random64();
    const urls = Array.from({ length: 20 }, (_, i) => `http://x${i}.test/same`);
    // Separate connections and ContentIndex instances, as separate workers would have.
    const clients = Array.from({ length: 5 }, () => createRedis(process.env.REDIS_URL!));
    const verdicts = await Promise.all(urls.map((url, i) => new ContentIndex(clients[i % 5], campaign).check({ url, exactHash: h, simhash: s })));
    await Promise.all(clients.map((c) => c.quit()));
    const unique = urls.filter((_, i) => verdicts[i].kind === 'unique');
    expect(unique).toHaveLength(1);
    for (const v of verdicts) if (v.kind !== 'unique') expect(v).toEqual({ kind: 'exact-duplicate', of: unique[0] });
  });

  it('lets exactly one of 20 concurrent near-identical pages be unique', async () => {
    const campaign = await key();
    const s = random64();
    const urls = Array.from({ length: 20 }, (_, i) => `http://y${i}.test/similar`);
    const verdicts = await Promise.all(urls.map((url, i) => new ContentIndex(redis, campaign).check({ url, exactHash: hash(), simhash: flip(s, [i]) })));
    const unique = urls.filter((_, i) => verdicts[i].kind === 'unique');
    expect(unique).toHaveLength(1);
    for (const v of verdicts) if (v.kind !== 'unique') expect(v).toMatchObject({ kind: 'near-duplicate', of: unique[0], distance: 2 });
  });

  it('respects maxDistance', async () => {
    const s = random64();
    // maxDistance 6: seven bands, widths 10,9,9,9,9,9,9 from the top: [63..54] [53..45] [44..36] [35..27] [26..18] [17..9] [8..0].
    const seven = [60, 50, 40, 30, 20, 10, 0];
    const wide = new ContentIndex(redis, await key(), { maxDistance: 6 });
    await wide.check({ url: 'http://m.test/orig', exactHash: hash(), simhash: s });
    expect(await wide.check({ url: 'http://m.test/6', exactHash: hash(), simhash: flip(s, seven.slice(0, 6)) })).toEqual({
      kind: 'near-duplicate',
      of: 'http://m.test/orig',
      distance: 6,
    });
    expect(await wide.check({ url: 'http://m.test/7', exactHash: hash(), simhash: flip(s, seven) })).toEqual({ kind: 'unique' });

    const narrow = new ContentIndex(redis, await key());
    await narrow.check({ url: 'http://m.test/orig', exactHash: hash(), simhash: s });
    expect(await narrow.check({ url: 'http://m.test/6', exactHash: hash(), simhash: flip(s, seven.slice(0, 6)) })).toEqual({ kind: 'unique' });

    const exactOnly = new ContentIndex(redis, await key(), { maxDistance: 0 });
    await exactOnly.check({ url: 'http://m.test/orig', exactHash: hash(), simhash: s });
    expect(await exactOnly.check({ url: 'http://m.test/1', exactHash: hash(), simhash: flip(s, [33]) })).toEqual({ kind: 'unique' });
    expect(await exactOnly.check({ url: 'http://m.test/0', exactHash: hash(), simhash: s })).toEqual({ kind: 'near-duplicate', of: 'http://m.test/orig', distance: 0 });

    expect(() => new ContentIndex(redis, 'x', { maxDistance: 16 })).toThrow(RangeError);
    expect(() => new ContentIndex(redis, 'x', { maxDistance: -1 })).toThrow(RangeError);
  });

  it('caps each band bucket, dropping the oldest entries', async () => {
    const campaign = await key();
    const idx = new ContentIndex(redis, campaign, { bucketCap: 4 });
    // Five unrelated pages that share band 0 (the top 16 bits) and nothing else.
    const top = random64() & (0xffffn << 48n);
    const pages = Array.from({ length: 5 }, (_, i) => ({ url: `http://cap.test/${i}`, exactHash: hash(), simhash: top | (random64() & ((1n << 48n) - 1n)) }));
    for (const p of pages) expect(await idx.check(p)).toEqual({ kind: 'unique' });
    if (format === 1) {
      const bucket = await redis.hget(contentKeys(campaign, 3).band(0), bandValues(top, 4)[0]);
      expect(bucket!.split('\n').map((r) => r.slice(16))).toEqual(pages.slice(1).map((p) => p.url));
    }

    // A probe that shares only band 0 with a page finds it only while it is still in the bucket.
    const onlyBand0 = (h: bigint) => flip(h, BAND_BITS.slice(1));
    expect(await idx.check({ url: 'http://cap.test/p0', exactHash: hash(), simhash: onlyBand0(pages[0].simhash) })).toEqual({ kind: 'unique' });
    expect(await idx.check({ url: 'http://cap.test/p4', exactHash: hash(), simhash: onlyBand0(pages[4].simhash) })).toEqual({
      kind: 'near-duplicate',
      of: pages[4].url,
      distance: 3,
    });
  });

  it('finds an edited copy of a long text through simhash64', async () => {
    const idx = new ContentIndex(redis, await key());
    const words = Array.from({ length: 2500 }, (_, i) => `word${(i * 7919) % 1013}`);
    const original = words.join(' ');
    const edited = [...words.slice(0, 1200), 'updated', ...words.slice(1201)].join(' ');
    const [a, b] = [simhash64(original), simhash64(edited)];
    expect(hammingDistance(a, b)).toBeLessThanOrEqual(3);
    await idx.check({ url: 'http://t.test/a', exactHash: hash(), simhash: a });
    expect(await idx.check({ url: 'http://t.test/b', exactHash: hash(), simhash: b })).toMatchObject({ kind: 'near-duplicate', of: 'http://t.test/a' });
  });

  it('rejects a URL with a newline, which would corrupt a bucket', async () => {
    await expect(new ContentIndex(redis, await key()).check({ url: 'http://a.test/\nx', exactHash: hash(), simhash: 1n })).rejects.toThrow(TypeError);
  });
});

// What revisit records rest on: a payload is offered to revisits only once
// its full copy is written, and nobody stores a second full copy while the
// first is being written.
describe.each(FORMATS)('payload index (revisit records), format %d', (format) => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  const key = async () => {
    const k = ck();
    if (format !== 1) await markContentFormat(redis, k, format);
    return k;
  };
  afterAll(async () => {
    await redis.quit();
  });
  const stored = (n: number) => ({ uri: `http://m${n}.test/`, date: `2026-01-01T00:00:0${n}.000Z`, recordId: `<urn:uuid:${n}>` });

  it('gives the first attempt the claim and, once it confirmed, every later one a revisit of its copy', async () => {
    const idx = new PayloadIndex(redis, await key());
    expect(await idx.claim('sha1:AAA', 'a1')).toEqual({ kind: 'original' });
    expect(await idx.confirm('sha1:AAA', stored(1))).toBe(true);
    expect(await idx.claim('sha1:AAA', 'a2')).toEqual({ kind: 'revisit', of: stored(1) });
    // Another payload is its own original.
    expect(await idx.claim('sha1:BBB', 'a3')).toEqual({ kind: 'original' });
  });

  it('makes 20 concurrent attempts with one payload wait for the one writing it: one original, 19 revisits of it', async () => {
    const idx = new PayloadIndex(redis, await key());
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const c = await idx.claim('sha1:SAME', `a${i}`);
        // The claimant "writes" for a while before it confirms; the others must not store meanwhile.
        if (c.kind === 'original') {
          await new Promise((r) => setTimeout(r, 200));
          await idx.confirm('sha1:SAME', stored(i % 10));
        }
        return { i, c };
      }),
    );
    const originals = results.filter((r) => r.c.kind === 'original');
    expect(originals).toHaveLength(1);
    const of = stored(originals[0]!.i % 10);
    expect(results.filter((r) => r.c.kind === 'revisit').map((r) => (r.c as { of: unknown }).of)).toEqual(Array(19).fill(of));
  });

  it('lets a waiter take over a claim whose holder never confirmed (it died), and at once one that was abandoned', async () => {
    const idx = new PayloadIndex(redis, await key(), 300);
    expect(await idx.claim('sha1:DEAD', 'died')).toEqual({ kind: 'original' });
    // Never confirmed: after the takeover time the next attempt writes the payload itself.
    expect(await idx.claim('sha1:DEAD', 'next')).toEqual({ kind: 'original' });
    expect(await idx.confirm('sha1:DEAD', stored(2))).toBe(true);
    // The dead claimant's late confirm (it was only slow) does not replace the copy revisits refer to.
    expect(await idx.confirm('sha1:DEAD', stored(3))).toBe(false);
    expect(await idx.claim('sha1:DEAD', 'later')).toEqual({ kind: 'revisit', of: stored(2) });

    const slow = new PayloadIndex(redis, await key(), 3_600_000);
    expect(await slow.claim('sha1:FAIL', 'writer')).toEqual({ kind: 'original' });
    const waiting = slow.claim('sha1:FAIL', 'waiter');
    // The writer's WARC write failed: it gives the claim up, and the waiter becomes the original.
    await slow.abandon('sha1:FAIL', 'writer');
    expect(await waiting).toEqual({ kind: 'original' });
  });

  it('lets an exact duplicate wait for the first page, which stores without a claim; with nobody storing, it takes over after the takeover time', async () => {
    const idx = new PayloadIndex(redis, await key(), 300);
    // The first page (named by the content index) writes for a while, then confirms; the duplicate must not store meanwhile.
    const waiting = idx.awaitStored('sha1:HTML', 'dup');
    await new Promise((r) => setTimeout(r, 150));
    expect(await idx.confirm('sha1:HTML', stored(4))).toBe(true);
    expect(await waiting).toEqual({ kind: 'revisit', of: stored(4) });
    // The first page's worker died before writing: after the takeover time the duplicate stores the payload itself.
    expect(await idx.awaitStored('sha1:ORPHAN', 'dup2')).toEqual({ kind: 'original' });
  });
});

// The compact layout's own guarantees: its buckets split as the campaign
// grows and nothing is lost across a split, a URL is kept once per distinct
// page, and a campaign created before it keeps its own layout.
describe.each([2, 3] as const)('compact layout (format %d)', (format) => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('finds every exact and near duplicate of 3,000 pages across many bucket splits, in little memory', async () => {
    const campaign = ck();
    await markContentFormat(redis, campaign, format);
    const idx = new ContentIndex(redis, campaign);
    const pages = Array.from({ length: 3000 }, (_, i) => ({
      url: `http://s${i % 50}.test/page/${i}`,
      exactHash: `sha256:${randomBytes(32).toString('hex')}`,
      simhash: random64(),
    }));
    for (let i = 0; i < pages.length; i += 100) {
      const verdicts = await Promise.all(pages.slice(i, i + 100).map((p) => idx.check(p)));
      expect(verdicts.filter((v) => v.kind !== 'unique')).toEqual([]);
    }
    const meta = await redis.hgetall(contentKeys(campaign, 3).meta);
    // 3,000 entries at MAP_LOAD (BAND_LOAD) a bucket: the verdict, exact and band maps all split past one bucket.
    const level = (load: number) => Math.floor(Math.log2(Math.floor(3000 / load)));
    for (const [map, load] of [
      ['v', MAP_LOAD],
      ['x', MAP_LOAD],
      ['k3b0', format === 3 ? BAND_LOAD3 : BAND_LOAD],
      ['k3b3', format === 3 ? BAND_LOAD3 : BAND_LOAD],
    ] as const) {
      expect({ map, level: Number(meta[`${map}:l`] ?? 0) }).toEqual({ map, level: level(load) });
    }
    expect(meta.pages).toBe('3000');
    // Every page's copy (first pages, last pages, pages whose buckets split after they went in) names it.
    for (const i of [0, 1, 63, 64, 1500, 2047, 2999]) {
      expect(await idx.check({ url: `http://copy.test/e${i}`, exactHash: pages[i].exactHash, simhash: null })).toEqual({ kind: 'exact-duplicate', of: pages[i].url });
      expect(await idx.check({ url: `http://copy.test/n${i}`, exactHash: hash(), simhash: flip(pages[i].simhash, BAND_BITS.slice(0, 3)) })).toEqual({
        kind: 'near-duplicate',
        of: pages[i].url,
        distance: 3,
      });
      // And the page itself, checked again, keeps its verdict.
      expect(await idx.check(pages[i])).toEqual({ kind: 'unique' });
    }
    // Far under the old layout's ~700 bytes a page (their URLs in four band entries, the exact
    // hash, the verdict): the keys the compact layout made, all of them named by its meta hash.
    const names = await compactKeyNames(redis, campaign);
    expect(await redis.exists(...names)).toBe(names.length);
    let bytes = 0;
    for (const n of names) bytes += (await redis.memory('USAGE', n, 'SAMPLES', 0)) ?? 0;
    // Format 3 (origins numbered, SimHashes once, 5-byte band records) under 100.
    expect(bytes / pages.length).toBeLessThan(format === 3 ? 100 : 160);
  });

  it("keys made after the campaign's retention set its time to live get it too (new buckets, split targets, page strings)", async () => {
    const campaign = ck();
    await markContentFormat(redis, campaign, format);
    const idx = new ContentIndex(redis, campaign);
    const page = (i: number) => ({ url: `http://r${i % 7}.test/p/${i}`, exactHash: `sha256:${randomBytes(32).toString('hex')}`, simhash: random64() });
    for (let i = 0; i < 300; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => idx.check(page(i + j))));
    const scripted = redis as unknown as RedisLike;
    defineScripts(scripted);
    await expireCampaign(scripted, campaign, 3_600_000);
    const before = new Set(await compactKeyNames(redis, campaign));
    // A session still running after the retention: more pages, more buckets, more page strings.
    for (let i = 300; i < 1500; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => idx.check(page(i + j))));
    const after = await compactKeyNames(redis, campaign);
    expect(after.filter((n) => !before.has(n)).length).toBeGreaterThan(0);
    const ttls = await Promise.all([contentKeys(campaign, 3).meta, ...after].map(async (n) => ({ n, timed: (await redis.pttl(n)) > 0 })));
    expect(ttls.filter((t) => !t.timed)).toEqual([]);
  });

  it('gives back every URL as it was, whatever its scheme (the page table keeps http:// and https:// in a byte)', async () => {
    const campaign = ck();
    await markContentFormat(redis, campaign, format);
    const idx = new ContentIndex(redis, campaign);
    for (const url of ['https://s.test/a?b=1#', 'http://h.test/', 'ftp://f.test/x', 'https:/odd', 'http:', 'urn:x:http://y']) {
      const h = hash();
      expect(await idx.check({ url, exactHash: h, simhash: null })).toEqual({ kind: 'unique' });
      expect(await idx.check({ url: `${url}-copy`, exactHash: h, simhash: null })).toEqual({ kind: 'exact-duplicate', of: url });
    }
  });

  it('keeps a page URL once: the payload its content check numbered refers to the same page', async () => {
    const campaign = ck();
    await markContentFormat(redis, campaign, format);
    const url = 'http://once.test/a';
    expect(await new ContentIndex(redis, campaign).check({ url, exactHash: hash(), simhash: random64() })).toEqual({ kind: 'unique' });
    const payloads = new PayloadIndex(redis, campaign);
    const of = { uri: url, date: '2026-11-28T10:11:12.345Z', recordId: `<urn:uuid:${randomUUID()}>` };
    expect(await payloads.confirm('sha1:ONCE', of)).toBe(true);
    // An image nobody checked gets a page of its own.
    expect(await payloads.claim('sha1:IMG', 'a')).toEqual({ kind: 'original' });
    const img = { uri: 'http://once.test/i.png', date: '2026-11-28T10:11:13.000Z', recordId: `<urn:uuid:${randomUUID()}>` };
    expect(await payloads.confirm('sha1:IMG', img)).toBe(true);
    expect(await redis.hget(contentKeys(campaign, 3).meta, 'pages')).toBe('2');
    expect(await payloads.claim('sha1:ONCE', 'b')).toEqual({ kind: 'revisit', of });
    expect(await payloads.claim('sha1:IMG', 'c')).toEqual({ kind: 'revisit', of: img });
    // Not a UUID, not an ISO date with milliseconds, no record id: kept as written.
    const odd = { uri: 'http://once.test/odd', date: '2026-11-28T10:11:13Z', recordId: '<urn:x:1>' };
    expect(await payloads.confirm('sha1:ODD', odd)).toBe(true);
    expect(await payloads.claim('sha1:ODD', 'd')).toEqual({ kind: 'revisit', of: odd });
    expect(await payloads.confirm('sha1:NONE', { ...odd, recordId: null })).toBe(true);
    expect(await payloads.claim('sha1:NONE', 'e')).toEqual({ kind: 'revisit', of: { ...odd, recordId: null } });
  });

  it('leaves a campaign created before it in its own layout: its pages are still found after the upgrade', async () => {
    const campaign = ck();
    // Today's keys, as the release before wrote them: an unmarked campaign's check is that code, unchanged.
    const before = new ContentIndex(redis, campaign);
    const s = random64();
    const h = hash();
    expect(await before.check({ url: 'http://old.test/a', exactHash: h, simhash: s })).toEqual({ kind: 'unique' });
    await new PayloadIndex(redis, campaign).confirm('sha1:OLD', stored0);
    expect(await redis.exists(contentKeys(campaign, 3).verdict, contentKeys(campaign, 3).exact, contentKeys(campaign, 3).band(0))).toBe(3);
    // A worker of this release (nothing remembered) picks the campaign up.
    forgetContentFormats();
    expect(await contentFormat(redis, campaign)).toBe(1);
    const after = new ContentIndex(redis, campaign);
    expect(await after.check({ url: 'http://old.test/b', exactHash: h, simhash: null })).toEqual({ kind: 'exact-duplicate', of: 'http://old.test/a' });
    expect(await after.check({ url: 'http://old.test/c', exactHash: hash(), simhash: flip(s, [1]) })).toEqual({ kind: 'near-duplicate', of: 'http://old.test/a', distance: 1 });
    expect(await new PayloadIndex(redis, campaign).claim('sha1:OLD', 'x')).toEqual({ kind: 'revisit', of: stored0 });
    expect(await redis.exists(contentKeys(campaign, 3).meta)).toBe(0);
  });
});

const stored0 = { uri: 'http://old.test/a', date: '2026-01-01T00:00:00.000Z', recordId: '<urn:uuid:0>' };

// What format 3 adds to format 2, and a campaign created in format 2 (before
// it) running on under this release.
describe('compact layout, format 3', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  afterAll(async () => {
    await redis.quit();
  });
  const bucketsOf = async (campaign: string, map: string) => (await compactKeyNames(redis, campaign)).filter((n) => n.includes(`:content:${map}:`));

  it('is what a new campaign gets', () => {
    expect(CONTENT_FORMAT).toBe(3);
  });

  it('gives back every URL of 300 origins (origin numbers of one and two bytes) as it was, and keeps each origin once', async () => {
    const campaign = ck();
    await markContentFormat(redis, campaign, 3);
    const idx = new ContentIndex(redis, campaign);
    const urls: string[] = [];
    for (let i = 0; i < 300; i++) urls.push(`https://o${i}.test:8${i % 10}/p/${i}?q=${i}`, `http://o${i}.test`, `http://o${i}.test?x#y`);
    urls.push('urn:x:http://y', 'https:/odd', 'mailto:a@b.test');
    for (const u of urls) expect(await idx.check({ url: u, exactHash: `sha256:${randomBytes(32).toString('hex')}`, simhash: null })).toEqual({ kind: 'unique' });
    const hashes = new Map<string, string>();
    for (const u of urls) {
      const h = `sha256:${randomBytes(32).toString('hex')}`;
      hashes.set(u, h);
      await idx.check({ url: `${u}#first`, exactHash: h, simhash: null });
    }
    for (const u of urls) expect(await idx.check({ url: `${u}#copy`, exactHash: hashes.get(u)!, simhash: null })).toEqual({ kind: 'exact-duplicate', of: `${u}#first` });
    const meta = await redis.hgetall(contentKeys(campaign, 3).meta);
    // 300 http(s) origins with ports, 300 without; the three URLs without an authority kept whole.
    expect(meta.origins).toBe('600');
    const lines = (await Promise.all((await bucketsOf(campaign, 'u')).map((k) => redis.getBuffer(k)))).map((b) => b!.toString('latin1')).join('');
    expect(lines).not.toContain('o1.test');
  });

  it("keeps a URL whole when its origin's 64 bits name another origin: a collision never renames a page", async () => {
    const campaign = ck();
    await markContentFormat(redis, campaign, 3);
    const idx = new ContentIndex(redis, campaign);
    const h = hash();
    expect(await idx.check({ url: 'http://a.test/1', exactHash: h, simhash: null })).toEqual({ kind: 'unique' });
    // As if http://b.test's SHA-1 began as http://a.test's does: its field names origin 1.
    const field = createHash('sha1').update('http://b.test').digest().subarray(0, 8);
    await redis.hset(contentKeys(campaign, 3).bucket('o', 0), field, '1');
    const h2 = hash();
    expect(await idx.check({ url: 'http://b.test/2', exactHash: h2, simhash: null })).toEqual({ kind: 'unique' });
    expect(await idx.check({ url: 'http://b.test/copy', exactHash: h2, simhash: null })).toEqual({ kind: 'exact-duplicate', of: 'http://b.test/2' });
    expect(await idx.check({ url: 'http://a.test/copy', exactHash: h, simhash: null })).toEqual({ kind: 'exact-duplicate', of: 'http://a.test/1' });
    expect(await redis.hget(contentKeys(campaign, 3).meta, 'origins')).toBe('1');
  });

  it("keeps a stored payload's record ID as the attempt that wrote it when the ID is responseRecordId's, and gives the very ID back", async () => {
    const campaign = ck();
    await markContentFormat(redis, campaign, 3);
    const url = 'http://pay.test/a';
    expect(await new ContentIndex(redis, campaign).check({ url, exactHash: hash(), simhash: random64() })).toEqual({ kind: 'unique' });
    const payloads = new PayloadIndex(redis, campaign);
    const date = '2026-11-28T10:11:12.345Z';
    const of = { uri: url, date, recordId: responseRecordId(url, date, 'Att_0-9z') };
    expect(await payloads.confirm('sha1:DERIVED', of, 'Att_0-9z')).toBe(true);
    expect(await payloads.claim('sha1:DERIVED', 'b')).toEqual({ kind: 'revisit', of });
    // Kept in 17 bytes: 'a', the page (4), the date (6), the attempt (6).
    const values = await redis.hvalsBuffer((await bucketsOf(campaign, 'p'))[0]!);
    expect(values.map((v) => [v.length, v.subarray(0, 1).toString()])).toEqual([[17, 'a']]);
    // A record ID that is not the attempt's is kept whole (16 bytes), and given back.
    const other = { uri: 'http://pay.test/b', date, recordId: `<urn:uuid:${randomUUID()}>` };
    expect(await payloads.confirm('sha1:RANDOM', other, 'Att_0-9z')).toBe(true);
    expect(await payloads.claim('sha1:RANDOM', 'c')).toEqual({ kind: 'revisit', of: other });
    // And an exact duplicate waiting for the original gets it too.
    expect(await payloads.awaitStored('sha1:DERIVED', 'd')).toEqual({ kind: 'revisit', of });
  });

  it("keeps an HTML page's stored copy in its exact hash's entry: no payload entry of its own, and copies, revisits and takeovers as before", async () => {
    const campaign = ck();
    await markContentFormat(redis, campaign, 3);
    const idx = new ContentIndex(redis, campaign);
    const payloads = new PayloadIndex(redis, campaign, 300);
    const body = `sha256:${randomBytes(32).toString('hex')}`;
    const owner = 'http://merge.test/owner';
    expect(await idx.check({ url: owner, exactHash: body, simhash: random64() })).toEqual({ kind: 'unique' });
    // Its exact duplicate waits for the owner's copy meanwhile.
    const waiting = payloads.awaitStored({ digest: 'sha1:M', contentHash: body }, 'dup');
    const date = '2026-11-28T10:11:12.345Z';
    const of = { uri: owner, date, recordId: responseRecordId(owner, date, 'Owner_01') };
    expect(await payloads.confirm({ digest: 'sha1:M', contentHash: body }, of, 'Owner_01')).toBe(true);
    expect(await waiting).toEqual({ kind: 'revisit', of });
    expect(await bucketsOf(campaign, 'p')).toEqual([]);
    const xs = await redis.hvalsBuffer((await bucketsOf(campaign, 'x'))[0]!);
    expect(xs.map((v) => [v.length, v.subarray(0, 1).toString()])).toEqual([[17, 'a']]);
    // A later copy is still an exact duplicate of the owner, and a retry's claim a revisit of its copy.
    expect(await idx.check({ url: 'http://merge.test/copy', exactHash: body, simhash: null })).toEqual({ kind: 'exact-duplicate', of: owner });
    expect(await idx.check({ url: owner, exactHash: body, simhash: null })).toEqual({ kind: 'unique' });
    expect(await payloads.claim({ digest: 'sha1:M', contentHash: body }, 'retry')).toEqual({ kind: 'revisit', of });
    // A second confirm (the owner's retry storing its own copy) does not replace it.
    expect(await payloads.confirm({ digest: 'sha1:M', contentHash: body }, { ...of, date: '2026-11-28T10:11:13.000Z' }, 'Owner_02')).toBe(false);

    // The owner died before storing: a copy takes over, kept as a payload entry of its own, and wins over the owner's late confirm.
    const body2 = `sha256:${randomBytes(32).toString('hex')}`;
    expect(await idx.check({ url: 'http://merge.test/died', exactHash: body2, simhash: null })).toEqual({ kind: 'unique' });
    expect(await idx.check({ url: 'http://merge.test/taker', exactHash: body2, simhash: null })).toEqual({ kind: 'exact-duplicate', of: 'http://merge.test/died' });
    expect(await payloads.awaitStored({ digest: 'sha1:D', contentHash: body2 }, 'Taker_01')).toEqual({ kind: 'original' });
    const taken = { uri: 'http://merge.test/taker', date, recordId: responseRecordId('http://merge.test/taker', date, 'Taker_01') };
    expect(await payloads.confirm({ digest: 'sha1:D', contentHash: body2 }, taken, 'Taker_01')).toBe(true);
    expect(await bucketsOf(campaign, 'p')).toHaveLength(1);
    const late = { uri: 'http://merge.test/died', date, recordId: responseRecordId('http://merge.test/died', date, 'Died_001') };
    expect(await payloads.confirm({ digest: 'sha1:D', contentHash: body2 }, late, 'Died_001')).toBe(false);
    expect(await payloads.claim({ digest: 'sha1:D', contentHash: body2 }, 'later')).toEqual({ kind: 'revisit', of: taken });
    expect(await idx.check({ url: 'http://merge.test/third', exactHash: body2, simhash: null })).toEqual({ kind: 'exact-duplicate', of: 'http://merge.test/died' });
  });

  it('keeps band records of 5 bytes and each SimHash once, and still finds a near copy whose record went into a split bucket', async () => {
    const campaign = ck();
    await markContentFormat(redis, campaign, 3);
    const idx = new ContentIndex(redis, campaign);
    const pages = Array.from({ length: 1200 }, (_, i) => ({ url: `http://b${i % 9}.test/${i}`, exactHash: hash(), simhash: random64() }));
    for (let i = 0; i < pages.length; i += 100) await Promise.all(pages.slice(i, i + 100).map((p) => idx.check(p)));
    for (const k of await bucketsOf(campaign, 'k3b2')) expect((await redis.strlen(k)) % 5).toBe(0);
    const sims = await bucketsOf(campaign, 's');
    // Made whole by their first page: 8 bytes for each of SIM_SLOTS pages.
    expect(await Promise.all(sims.map((k) => redis.strlen(k)))).toEqual(sims.map(() => 8 * SIM_SLOTS));
    expect(sims).toHaveLength(Math.ceil(1200 / SIM_SLOTS));
    for (const i of [0, 511, 1199]) {
      expect(await idx.check({ url: `http://near.test/${i}`, exactHash: hash(), simhash: flip(pages[i].simhash, [BAND_BITS[0], BAND_BITS[2]]) })).toEqual({
        kind: 'near-duplicate',
        of: pages[i].url,
        distance: 2,
      });
    }
  });

  it('leaves a campaign created in format 2 in format 2 under this release: its pages, copies and stored payloads are still found', async () => {
    const campaign = ck();
    // Marked 2, as the release before marked every new campaign, and written by the format-2 code path.
    await markContentFormat(redis, campaign, 2);
    const before = new ContentIndex(redis, campaign);
    const pages = Array.from({ length: 300 }, (_, i) => ({ url: `http://two.test/${i}`, exactHash: hash(), simhash: random64() }));
    for (const p of pages) expect(await before.check(p)).toEqual({ kind: 'unique' });
    const of = { uri: pages[7].url, date: '2026-11-28T10:11:12.345Z', recordId: `<urn:uuid:${randomUUID()}>` };
    expect(await new PayloadIndex(redis, campaign).confirm('sha1:TWO', of, 'Att_0-9z')).toBe(true);
    // A worker of this release, nothing remembered, picks the campaign up.
    forgetContentFormats();
    expect(await contentFormat(redis, campaign)).toBe(2);
    const after = new ContentIndex(redis, campaign);
    const more = Array.from({ length: 300 }, (_, i) => ({ url: `http://two.test/more/${i}`, exactHash: hash(), simhash: random64() }));
    for (const p of more) expect(await after.check(p)).toEqual({ kind: 'unique' });
    for (const i of [0, 150, 299]) {
      expect(await after.check({ url: `http://two.test/e${i}`, exactHash: pages[i].exactHash, simhash: null })).toEqual({ kind: 'exact-duplicate', of: pages[i].url });
      expect(await after.check({ url: `http://two.test/n${i}`, exactHash: hash(), simhash: flip(more[i].simhash, [BAND_BITS[1]]) })).toEqual({
        kind: 'near-duplicate',
        of: more[i].url,
        distance: 1,
      });
    }
    expect(await new PayloadIndex(redis, campaign).claim('sha1:TWO', 'x')).toEqual({ kind: 'revisit', of });
    // Still format 2's keys: 12-byte band records, URLs in full, no origin or SimHash table.
    const names = await compactKeyNames(redis, campaign);
    expect(names.filter((n) => /:content:[sho]:\d+$/.test(n))).toEqual([]);
    for (const k of names.filter((n) => n.includes(':content:k3b'))) expect((await redis.strlen(k)) % 12).toBe(0);
    const lines = (await Promise.all(names.filter((n) => n.includes(':content:u:')).map((k) => redis.getBuffer(k)))).map((b) => b!.toString('latin1')).join('');
    expect(lines).toContain('\x01two.test/more/299\n');
    expect(await redis.exists(...names)).toBe(names.length);
  });
});
