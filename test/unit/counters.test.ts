// The counters of a crawl, declared once (src/stats/counters.ts): their
// names are Redis hash fields and JSON keys that workflow histories, stored
// records and reports already hold, so they and their order stay as they are.
import { SCRIPTS } from '../../src/redis/scripts';
import { COUNTED, COUNTERS, countersOf, countsOf, embedCounted, embedCounts, EMBED_COUNTS, hostStatsOf, isPageCounted, PAGE_COUNTS } from '../../src/stats/counters';

test('the counters, in the order their sums spell them', () => {
  expect(COUNTERS).toEqual(['fetched', 'failed', 'skipped', 'embeds', 'embedsFailed', 'embedsSkipped', 'bytes']);
  expect(COUNTED).toEqual([...PAGE_COUNTS, ...EMBED_COUNTS]);
});

test('an embed counts in the embed class of what would be a page', () => {
  expect(PAGE_COUNTS.map(embedCounted)).toEqual(['embeds', 'embedsFailed', 'embedsSkipped']);
  expect(COUNTED.filter(isPageCounted)).toEqual(['fetched', 'failed', 'skipped']);
});

test('counters read from a Redis hash: strings as numbers, absent fields as 0, other fields left out', () => {
  // As HGETALL answers: the stats hash holds the enqueue bounds' fields too.
  const hash: Record<string, string> = { fetched: '3', failed: '1', bytes: '1200', embedsQueued: '4', frontier: '9' };
  expect(countersOf(hash)).toEqual({
    fetched: 3,
    failed: 1,
    skipped: 0,
    embeds: 0,
    embedsFailed: 0,
    embedsSkipped: 0,
    bytes: 1200,
  });
  expect(Object.values(countersOf())).toEqual([0, 0, 0, 0, 0, 0, 0]);
  expect(countsOf(PAGE_COUNTS, { fetched: 2, skipped: 5, bytes: 10 } as Record<string, number>)).toEqual({ fetched: 2, failed: 0, skipped: 5 });
});

test("a host's stats keep the page-only shape until it has an embed, then list the embeds after the bytes", () => {
  expect(JSON.stringify(hostStatsOf({ fetched: 2, failed: 1, bytes: 300, sitemaps: 1 } as Record<string, number>))).toBe('{"fetched":2,"failed":1,"skipped":0,"bytes":300}');
  expect(JSON.stringify(hostStatsOf())).toBe('{"fetched":0,"failed":0,"skipped":0,"bytes":0}');
  expect(JSON.stringify(hostStatsOf({ fetched: 2, embedsSkipped: 1, bytes: 300 }))).toBe(
    '{"fetched":2,"failed":0,"skipped":0,"bytes":300,"embeds":0,"embedsFailed":0,"embedsSkipped":1}',
  );
});

test('the embeds view: in the page classes, and null while there are none', () => {
  expect(embedCounts({})).toBeNull();
  expect(embedCounts({ embeds: 0, embedsFailed: 0, embedsSkipped: 0 })).toBeNull();
  expect(JSON.stringify(embedCounts({ embedsFailed: 2 }))).toBe('{"fetched":0,"failed":2,"skipped":0}');
  expect(embedCounts(hostStatsOf({ embeds: 4, embedsFailed: 1, embedsSkipped: 2 }))).toEqual({ fetched: 4, failed: 1, skipped: 2 });
});

test("the host-record script sums every counter, the frontier and a Bloom filter's expected skips into the totals, and counts every class as finished", () => {
  const lua = SCRIPTS.crawlHostRecord.lua;
  const sums = [...COUNTERS, 'frontier', 'seenSkipped'];
  const summed = /for _, f in ipairs\(\{([^}]*)\}\) do/.exec(lua)?.[1];
  expect(summed?.split(', ')).toEqual(sums.map((f) => `'${f}'`));
  const zero = /local old = \{([^}]*)\}/.exec(lua)?.[1];
  expect(zero?.split(', ')).toEqual(sums.map((f) => `${f} = 0`));
  // Records of older releases lack the embed counters: they count as 0.
  const done = /local function done\(r\) return (.*) end/.exec(lua)?.[1];
  expect(done?.split(' + ')).toEqual([...PAGE_COUNTS.map((f) => `r.${f}`), ...EMBED_COUNTS.map((f) => `(r.${f} or 0)`)]);
});
