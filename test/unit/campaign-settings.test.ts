// Start-time settings: the concurrency range set-concurrency also enforces, and where seeds come from.
import { parseRetention } from '../../src/cli/commands/crawl';
import { CampaignInputError, MAX_RESOLVE_ENTRIES, MIN_RETENTION_MS, resolveCampaignSettings } from '../../src/config/campaign';
import { MAX_ACTIVE_HOSTS, validateSetConcurrency } from '../../src/config/steering';

const settingsWith = (maxActiveHosts: number | null) => resolveCampaignSettings({ seeds: ['http://a.test/'], politeness: { maxActiveHosts }, output: { dir: '/tmp/x' } }, 'c1');

test.each([0, MAX_ACTIVE_HOSTS + 1])('maxActiveHosts %p is refused at start as it is by set-concurrency', (n) => {
  expect(() => settingsWith(n)).toThrow(CampaignInputError);
  expect(() => settingsWith(n)).toThrow(/maxActiveHosts must be a whole number from 1 to/);
  expect(() => validateSetConcurrency({ maxActiveHosts: n })).toThrow(/from 1 to/);
});

test.each([1, MAX_ACTIVE_HOSTS, null])('maxActiveHosts %p is taken at start as by set-concurrency', (n) => {
  expect(settingsWith(n).politeness.maxActiveHosts).toBe(n);
  expect(validateSetConcurrency({ maxActiveHosts: n })).toEqual({ maxActiveHosts: n });
});

describe('seeds and seedsFile', () => {
  const resolve = (input: object) => resolveCampaignSettings({ output: { dir: '/tmp/x' }, ...input } as never, 'c1');
  const problems = (input: object): string[] => {
    try {
      resolve(input);
    } catch (err) {
      if (err instanceof CampaignInputError) return err.problems;
      throw err;
    }
    return [];
  };

  test.each([
    ['a file alone', { seedsFile: '/data/seeds.txt.gz' }, [], '/data/seeds.txt.gz'],
    ['a URL alone', { seedsFile: 'https://lists.test/seeds.txt' }, [], 'https://lists.test/seeds.txt'],
    ['both', { seeds: ['http://a.test/'], seedsFile: '/data/seeds.txt' }, ['http://a.test/'], '/data/seeds.txt'],
    ['a Windows path', { seedsFile: 'D:\\lists\\seeds.txt' }, [], 'D:\\lists\\seeds.txt'],
    ['inline seeds alone', { seeds: ['http://a.test/'] }, ['http://a.test/'], null],
  ])('%s is taken', (_name, input, seeds, seedsFile) => {
    const s = resolve(input);
    expect(s.seeds).toEqual(seeds);
    expect(s.seedsFile).toBe(seedsFile);
  });

  test('settings read back (as stored in Redis) resolve to themselves', () => {
    const s = resolve({ seedsFile: '/data/seeds.txt' });
    expect(resolveCampaignSettings(JSON.parse(JSON.stringify(s)), 'c1')).toEqual(s);
    const inline = resolve({ seeds: ['http://a.test/'] });
    expect(resolveCampaignSettings(JSON.parse(JSON.stringify(inline)), 'c1')).toEqual(inline);
  });

  test.each([
    ['neither', {}, /seeds must be a non-empty list of URLs, or seedsFile/],
    ['an empty list and no file', { seeds: [] }, /seeds must be a non-empty list/],
    ['an empty list and a null file', { seeds: [], seedsFile: null }, /seeds must be a non-empty list/],
    ['a relative path (workers resolve it against their own directory)', { seedsFile: 'seeds.txt' }, /seedsFile must be an absolute path or an http\(s\) URL/],
    ['stdin', { seedsFile: '-' }, /standard input/],
    ['another scheme', { seedsFile: 'ftp://lists.test/seeds.txt' }, /absolute path or an http\(s\) URL/],
    ['not a string', { seedsFile: 42 }, /an http\(s\) URL of a seed list \(got 42\)/],
    ['a line break', { seedsFile: '/data/a\nb' }, /line breaks/],
    ['seeds that are not a list', { seeds: 'http://a.test/', seedsFile: '/data/s.txt' }, /seeds must be a list of URLs/],
  ])('%s is refused', (_name, input, message) => {
    const p = problems(input);
    expect(p.some((x) => message.test(x))).toBe(true);
  });

  test(`fetch.resolve is capped at ${MAX_RESOLVE_ENTRIES} entries: the settings travel in the workflow input`, () => {
    const pins = (n: number) => Array.from({ length: n }, (_, i) => `h${i}.test:80:127.0.0.1`);
    expect(resolve({ seeds: ['http://a.test/'], fetch: { resolve: pins(MAX_RESOLVE_ENTRIES) } }).fetch.resolve).toHaveLength(MAX_RESOLVE_ENTRIES);
    expect(problems({ seeds: ['http://a.test/'], fetch: { resolve: pins(MAX_RESOLVE_ENTRIES + 1) } })).toEqual([
      `fetch.resolve has ${MAX_RESOLVE_ENTRIES + 1} entries; at most ${MAX_RESOLVE_ENTRIES} (they travel in the workflow input)`,
    ]);
  });
});

describe('retention of the Redis keys after the campaign ends', () => {
  const withRetention = (redisMs: unknown) =>
    resolveCampaignSettings({ seeds: ['http://a.test/'], retention: { redisMs } as { redisMs: number }, output: { dir: '/tmp/x' } }, 'c1');

  test('defaults to a week; null keeps the keys until purged; less than a minute is refused', () => {
    expect(resolveCampaignSettings({ seeds: ['http://a.test/'], output: { dir: '/tmp/x' } }, 'c1').retention.redisMs).toBe(7 * 86_400_000);
    expect(withRetention(null).retention.redisMs).toBeNull();
    expect(withRetention(MIN_RETENTION_MS).retention.redisMs).toBe(MIN_RETENTION_MS);
    expect(() => withRetention(MIN_RETENTION_MS - 1)).toThrow(/retention.redisMs must be at least 60000/);
    expect(() => withRetention('7d')).toThrow(/retention.redisMs must be a whole number/);
  });

  test.each([
    ['7d', 7 * 86_400_000],
    ['36h', 36 * 3_600_000],
    ['90m', 90 * 60_000],
    ['never', null],
  ])('crawl --retention %s', (flag, ms) => {
    expect(parseRetention(flag)).toBe(ms);
  });

  test.each(['7', '1w', '-1d', '1.5h', ''])('crawl --retention %j is refused with the accepted forms', (flag) => {
    expect(() => parseRetention(flag)).toThrow(/m, h or d .* or never/);
  });
});
