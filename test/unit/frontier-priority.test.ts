// Frontier priorities: the campaign rules (validated where the input comes
// in), the pure URL → priority function the enqueue call sites use, the
// CLI flag, and the score that orders the Redis frontier. The score packs
// three fields into one double, so its exactness and field separation are
// checked at the extremes of every field.
import { buildCampaignInput, parsePriorityFlag } from '../../src/cli/commands/crawl';
import { UsageError } from '../../src/cli/usage-error';
import {
  CampaignInputError,
  FRONTIER_PRIORITY_MAX,
  FRONTIER_PRIORITY_MIN,
  frontierPriority,
  MAX_PRIORITY_RULES,
  resolveCampaignSettings,
  type CampaignInput,
} from '../../src/config/campaign';
import { DEPTH_STEP, frontierScoreBase, MAX_SCORED_DEPTH } from '../../src/redis/frontier';

const SEEDS = ['http://example.test/'];
const resolve = (frontier: unknown) => resolveCampaignSettings({ seeds: SEEDS, frontier } as CampaignInput, 'c');
const problemsOf = (frontier: unknown): string[] => {
  try {
    resolve(frontier);
  } catch (err) {
    if (err instanceof CampaignInputError) return err.problems;
    throw err;
  }
  return [];
};

describe('campaign priority rules', () => {
  test('default: no rules, every URL at 0', () => {
    const s = resolveCampaignSettings({ seeds: SEEDS }, 'c');
    expect(s.frontier).toEqual({ priorities: [], spillAbove: 5000, seen: 'exact', seenRate: 0.01 });
    expect(frontierPriority('http://example.test/products/1', s)).toBe(0);
  });

  test('the first matching rule wins; unmatched URLs get 0', () => {
    const s = resolve({
      priorities: [
        { pattern: '/products/featured/', priority: 8 },
        { pattern: '/products/', priority: 3 },
        { pattern: '[?&]sort=', priority: -5 },
      ],
    });
    expect(frontierPriority('http://example.test/products/featured/1', s)).toBe(8);
    expect(frontierPriority('http://example.test/products/2', s)).toBe(3);
    // Order decides, not specificity: /products/ comes before the sort rule.
    expect(frontierPriority('http://example.test/products/2?sort=asc', s)).toBe(3);
    expect(frontierPriority('http://example.test/list?page=2&sort=asc', s)).toBe(-5);
    expect(frontierPriority('http://example.test/about', s)).toBe(0);
  });

  test('patterns are unanchored regular expressions on the whole normalised URL', () => {
    const s = resolve({
      priorities: [
        { pattern: '^https://', priority: 1 },
        { pattern: '\\.pdf$', priority: -1 },
      ],
    });
    expect(frontierPriority('https://example.test/a', s)).toBe(1);
    expect(frontierPriority('http://example.test/doc.pdf', s)).toBe(-1);
    expect(frontierPriority('http://example.test/doc.pdf?x=1', s)).toBe(0);
  });

  test('settings stored by a release without priorities rank everything 0', () => {
    expect(frontierPriority('http://example.test/', {})).toBe(0);
  });

  test.each([
    ['a pattern that does not compile', { priorities: [{ pattern: '(', priority: 1 }] }, /frontier\.priorities\[0\]\.pattern "\(" is not a valid regular expression/],
    ['an empty pattern', { priorities: [{ pattern: '', priority: 1 }] }, /frontier\.priorities\[0\]\.pattern must be a non-empty regular expression/],
    ['a rule without a pattern', { priorities: [{ priority: 1 }] }, /frontier\.priorities\[0\]\.pattern must be a non-empty/],
    [
      'priority above the maximum',
      { priorities: [{ pattern: 'x', priority: FRONTIER_PRIORITY_MAX + 1 }] },
      /frontier\.priorities\[0\]\.priority must be a whole number from -8 to 8 \(got 9\)/,
    ],
    ['priority below the minimum', { priorities: [{ pattern: 'x', priority: FRONTIER_PRIORITY_MIN - 1 }] }, /got -9/],
    ['a fractional priority', { priorities: [{ pattern: 'x', priority: 1.5 }] }, /got 1\.5/],
    ['a priority given as a string', { priorities: [{ pattern: 'x', priority: '5' }] }, /got "5"/],
    ['a rule that is not an object', { priorities: [{ pattern: 'x', priority: 1 }, 'y'] }, /frontier\.priorities\[1\] must be \{"pattern"/],
    ['a pattern longer than the limit', { priorities: [{ pattern: 'x'.repeat(501), priority: 1 }] }, /is 501 characters long; at most 500/],
    ['priorities that are not a list', { priorities: { pattern: 'x', priority: 1 } }, /frontier\.priorities must be a list/],
    ['a frontier section that is not an object', 'high', /frontier must be an object/],
  ])('refuses %s', (_what, frontier, message) => {
    const problems = problemsOf(frontier);
    expect(problems.some((p) => message.test(p))).toBe(true);
  });

  test('too many rules, and every bad rule reported at once', () => {
    const many = Array.from({ length: MAX_PRIORITY_RULES + 1 }, (_, i) => ({ pattern: `/p${i}/`, priority: 1 }));
    expect(problemsOf({ priorities: many })).toEqual([`frontier.priorities has ${MAX_PRIORITY_RULES + 1} rules; at most ${MAX_PRIORITY_RULES}`]);
    expect(
      problemsOf({
        priorities: [
          { pattern: '[', priority: 1 },
          { pattern: 'ok', priority: 99 },
        ],
      }),
    ).toHaveLength(2);
  });
});

describe('frontier score', () => {
  const score = (priority: number, depth: number, seq: number) => frontierScoreBase(priority, depth) + seq;

  test('priority 0 is exactly the score older releases wrote (depth × 1e12 + seq)', () => {
    for (const depth of [0, 1, 7, 500, MAX_SCORED_DEPTH]) for (const seq of [1, 12_345, 1e12 - 1]) expect(score(0, depth, seq)).toBe(depth * 1e12 + seq);
  });

  test('every combination at the extremes is an exact integer and sorts by priority desc, then depth, then seq', () => {
    const priorities = [FRONTIER_PRIORITY_MAX, 7, 1, 0, -1, -7, FRONTIER_PRIORITY_MIN];
    const depths = [0, 1, 998, MAX_SCORED_DEPTH];
    const seqs = [1, 2, 1e12 - 2, 1e12 - 1];
    const cases = priorities.flatMap((p) => depths.flatMap((d) => seqs.map((s) => ({ p, d, s, score: score(p, d, s) }))));
    for (const c of cases) expect({ ...c, safe: Number.isSafeInteger(c.score) }).toEqual({ ...c, safe: true });
    const bySpec = [...cases].sort((a, b) => b.p - a.p || a.d - b.d || a.s - b.s);
    const byScore = [...cases].sort((a, b) => a.score - b.score);
    expect(byScore).toEqual(bySpec);
    // No two distinct (priority, depth, seq) share a score.
    expect(new Set(cases.map((c) => c.score)).size).toBe(cases.length);
  });

  test('depths past the last band keep discovery order among themselves, after every shallower depth', () => {
    expect(frontierScoreBase(0, 5_000)).toBe(MAX_SCORED_DEPTH * DEPTH_STEP);
    expect(score(0, 5_000, 1)).toBeLessThan(score(0, 1_200, 2));
    expect(score(0, MAX_SCORED_DEPTH - 1, 1e12 - 1)).toBeLessThan(score(0, 5_000, 1));
  });

  test('out-of-range priorities and depths never reach Redis', () => {
    expect(() => frontierScoreBase(FRONTIER_PRIORITY_MAX + 1, 0)).toThrow(RangeError);
    expect(() => frontierScoreBase(0.5, 0)).toThrow(RangeError);
    expect(() => frontierScoreBase(0, -1)).toThrow(RangeError);
  });
});

describe('crawl --priority', () => {
  const opts = (priority: string[]) => ({ workers: 1, resolve: [], priority });

  test('REGEX=N flags become the campaign rules, in order; the last = separates', () => {
    expect(parsePriorityFlag('[?&]page=1$=-3')).toEqual({ pattern: '[?&]page=1$', priority: -3 });
    const input = buildCampaignInput(SEEDS, opts(['/products/=5', '/blog/=+2', 'sort==-1']));
    expect(input.frontier).toEqual({
      priorities: [
        { pattern: '/products/', priority: 5 },
        { pattern: '/blog/', priority: 2 },
        { pattern: 'sort=', priority: -1 },
      ],
    });
  });

  test('no flag, no frontier section (the campaign defaults apply)', () => {
    expect(buildCampaignInput(SEEDS, opts([])).frontier).toBeUndefined();
  });

  test.each([
    ['/products/', /--priority "\/products\/": expected REGEX=N/],
    ['=5', /expected REGEX=N/],
    ['/a/=high', /expected REGEX=N/],
    ['/a/=9', /priority must be a whole number from -8 to 8 \(got 9\)/],
    ['(=1', /is not a valid regular expression/],
  ])('--priority %s is a usage error', (flag, message) => {
    expect(() => buildCampaignInput(SEEDS, opts([flag]))).toThrow(UsageError);
    expect(() => buildCampaignInput(SEEDS, opts([flag]))).toThrow(message);
  });
});
