// Shared seed segments (src/redis/seed-segments.ts): one object of a chunk
// holds a block per host, each block reads back alone from its byte range,
// its registered name carries where it is and which entries to skip, and the
// refill's scores are those the registering script numbered.
import { frontierScoreBase, decodeEntry } from '../../src/redis/frontier';
import { campaignSegmentsPrefix, decodeSegment, parseSharedSegment, sharedSegmentKey, sharedSegmentPairs, segmentKey } from '../../src/redis/frontier-spill';
import { blockNamePrefix, buildSeedObject, registerGroups, type HostSeeds } from '../../src/redis/seed-segments';
import { objectKeyProblem } from '../../src/storage/folder-object-store';
import { urlFingerprint } from '../../src/url/fingerprint';

const seed = (host: string, n: number, priority = 0) => {
  const url = `https://${host}/page/${n}?q=${n}`;
  return { url, fp: urlFingerprint(url), priority };
};

describe('shared seed segments', () => {
  const hosts: HostSeeds[] = [
    { host: 'a.test', seeds: [seed('a.test', 1), seed('a.test', 2, 3), seed('a.test', 1), seed('a.test', 4, -2)] },
    { host: 'b.test:8443', seeds: [seed('b.test:8443', 9)] },
    { host: 'c.test', seeds: [] },
    { host: 'd.test', seeds: Array.from({ length: 300 }, (_, n) => seed('d.test', n)) },
  ];

  test.each([1, 2] as const)('give each host its block, readable alone from its byte range (layout %i)', (layout) => {
    const { body, blocks } = buildSeedObject(hosts, layout);
    // A host without seeds gets no block; the blocks tile the object.
    expect(blocks.map((b) => b.host)).toEqual(['a.test', 'b.test:8443', 'd.test']);
    expect(blocks[0]!.start).toBe(0);
    for (let i = 1; i < blocks.length; i++) expect(blocks[i]!.start).toBe(blocks[i - 1]!.start + blocks[i - 1]!.length);
    expect(blocks.reduce((n, b) => n + b.length, 0)).toBe(body.length);
    for (const b of blocks) {
      const pairs = decodeSegment(body.subarray(b.start, b.start + b.length));
      const listed = hosts.find((h) => h.host === b.host)!.seeds;
      // A seed listed twice for a host keeps its first place only.
      const once = listed.filter((s, i) => listed.findIndex((t) => t.fp === s.fp) === i);
      expect(pairs.map(([, m]) => decodeEntry(m, b.host))).toEqual(once.map((s) => ({ url: s.url, depth: 0, referrer: null })));
      expect(pairs.map(([base]) => Number(base))).toEqual(once.map((s) => frontierScoreBase(s.priority, 0)));
      expect(b.entries).toEqual(once.map((s) => ({ fp: s.fp, base: frontierScoreBase(s.priority, 0) })));
    }
  });

  test('a registered name gives back its range, its numbering and its skips; the scores are those the script gave', () => {
    const { body, blocks } = buildSeedObject(hosts, 2);
    const a = blocks[0]!;
    // As crawlSeedRegister completes it: first number 41, entry 1 seen before.
    const name = `${blockNamePrefix('0123456789abcdef', a)}.41.1`;
    const seg = parseSharedSegment(name)!;
    expect(seg).toEqual({ object: '0123456789abcdef', start: a.start, length: a.length, first: 41, skipped: new Set([1]) });
    const pairs = sharedSegmentPairs(seg, body.subarray(seg.start, seg.start + seg.length));
    // Entries 0 and 2 numbered 42 and 43 in block order, entry 1 left out.
    expect(pairs.map(([score]) => Number(score))).toEqual([frontierScoreBase(0, 0) + 42, frontierScoreBase(-2, 0) + 43]);
    expect(pairs.map(([, m]) => decodeEntry(m, 'a.test').url)).toEqual(['https://a.test/page/1?q=1', 'https://a.test/page/4?q=4']);
    // Without skips, every entry; a name far into a large object parses too.
    const d = blocks[2]!;
    const all = parseSharedSegment(`${blockNamePrefix('ff', d)}.0`)!;
    expect(sharedSegmentPairs(all, body.subarray(all.start, all.start + all.length))).toHaveLength(300);
    expect(parseSharedSegment(`${blockNamePrefix('ff', { start: 987_654_321, length: 12_345 })}.999999999999.3,7,8`)).toMatchObject({
      start: 987_654_321,
      length: 12_345,
      first: 999_999_999_999,
      skipped: new Set([3, 7, 8]),
    });
  });

  test("a host's own segment name is not a shared one; a shared one that does not parse is refused", () => {
    expect(parseSharedSegment('lz1abc-0123456789abcdef')).toBeNull();
    expect(() => parseSharedSegment('@zz.1.2')).toThrow(/does not parse/);
    expect(() => parseSharedSegment('@ab.1.2.x')).toThrow(/does not parse/);
  });

  test.each([
    ['c.1a2b3c4d', 'seeds'],
    ['a.b|c', '%seeds'],
  ])('live under the campaign prefix, apart from every host folder (campaign %j, host %j)', (campaign, host) => {
    const key = sharedSegmentKey(campaign, '0123456789abcdef');
    expect(objectKeyProblem(key)).toBeNull();
    expect(key.startsWith(campaignSegmentsPrefix(campaign))).toBe(true);
    // No host's segment folder is the shared one, whatever the host is called.
    const hostFolder = segmentKey(campaign, host, 'x').split('/').slice(0, 3).join('/');
    expect(key.split('/').slice(0, 3).join('/')).not.toBe(hostFolder);
  });

  test('registration groups: by slot, each slot in the order it first appears and its items in list order, at most so many a group', () => {
    const items = ['a1', 'b1', 'a2', 'c1', 'a3', 'b2', 'a4', 'a5'];
    const slot = (x: string) => x.charCodeAt(0);
    expect(registerGroups(items, slot, 3)).toEqual([['a1', 'a2', 'a3'], ['b1', 'b2'], ['c1'], ['a4', 'a5']]);
    // Every item once, whatever the bound; one item a group at a bound of 1.
    expect(registerGroups(items, slot, 1)).toEqual(items.map((x) => [x]));
    expect(registerGroups(items, slot, 100).flat().sort()).toEqual([...items].sort());
    expect(registerGroups([], slot)).toEqual([]);
  });
});
