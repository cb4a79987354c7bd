// Start-time settings: the concurrency range set-concurrency also enforces, where seeds come from, the
// bounds of every setting, and the one schema the input type, the defaults and the docs table come from.
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { buildCampaignInput, campaignOptions, parseRetention } from '../../src/cli/commands/crawl';
import {
  CAMPAIGN_DEFAULTS,
  CampaignInputError,
  DEDUP_MODES,
  MAX_BODY_BYTES,
  MAX_RESOLVE_ENTRIES,
  MAX_TIMER_MS,
  MIN_RETENTION_MS,
  NON_HTML_POLICIES,
  REQUISITE_MODES,
  POLITENESS_KEYS,
  resolveCampaignSettings,
  SCOPE_MODES,
  SITEMAP_MODES,
  type CampaignInput,
} from '../../src/config/campaign';
import { settingsTable } from '../../src/config/settings-table';
import { MAX_ACTIVE_HOSTS, parseRenderArg, validateSetConcurrency, validateSetRender } from '../../src/config/steering';
import { RENDER_MODES } from '../../src/config/campaign';

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

test("set-render takes the campaign's render modes for one host, or null for the campaign's own; anything else is refused", () => {
  for (const render of [...RENDER_MODES, null]) expect(validateSetRender({ host: 'A.test:8080', render })).toEqual({ host: 'a.test:8080', render });
  // Known hosts given: the key is resolved as for set-rate (a bare name matching one host:port).
  expect(validateSetRender({ host: 'a.test', render: 'browser' }, ['a.test:8080', 'b.test:8080'])).toEqual({ host: 'a.test:8080', render: 'browser' });
  expect(() => validateSetRender({ host: 'a.test', render: 'chrome' })).toThrow(/render must be one of off, browser, auto, or null/);
  expect(() => validateSetRender({ render: 'browser' })).toThrow(/render is steered per host/);
  expect(() => validateSetRender({ host: 'c.test', render: 'off' }, ['a.test:8080'])).toThrow(/not known to this campaign/);
  // The CLI's words: "campaign" for the campaign's own again.
  expect([parseRenderArg('Browser'), parseRenderArg('campaign'), parseRenderArg('x')]).toEqual(['browser', null, 'x']);
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

  test('keeps only what is read after the end unless told to keep every key', () => {
    const keep = (k: unknown) => resolveCampaignSettings({ seeds: ['http://a.test/'], retention: { keep: k } as { keep: 'all' }, output: { dir: '/tmp/x' } }, 'c1').retention;
    expect(resolveCampaignSettings({ seeds: ['http://a.test/'], output: { dir: '/tmp/x' } }, 'c1').retention.keep).toBe('summary');
    expect(keep('all')).toEqual({ redisMs: 7 * 86_400_000, keep: 'all' });
    expect(() => keep('seen')).toThrow(/retention.keep must be one of "summary", "all"/);
  });

  test.each([
    ['7d', 7 * 86_400_000],
    ['36h', 36 * 3_600_000],
    ['90m', 90 * 60_000],
    ['never', 'never'],
  ])('crawl --retention %s', (flag, ms) => {
    // `never` stays a word until buildCampaignInput makes it null: commander stores a parser's null as ''.
    expect(parseRetention(flag)).toBe(ms);
  });

  test.each(['7', '1w', '-1d', '1.5h', ''])('crawl --retention %j is refused with the accepted forms', (flag) => {
    expect(() => parseRetention(flag)).toThrow(/m, h or d .* or never/);
  });
});

/** The problems `input` is refused with (none: accepted). */
const problemsOf = (input: object): string[] => {
  try {
    resolveCampaignSettings({ seeds: ['http://a.test/'], output: { dir: '/tmp/x' }, ...input } as CampaignInput, 'c1');
  } catch (err) {
    if (err instanceof CampaignInputError) return err.problems;
    throw err;
  }
  return [];
};
/** `{ a: { b: v } }` for the path "a.b". */
const at = (dotted: string, v: unknown): object => dotted.split('.').reduceRight<unknown>((inner, key) => ({ [key]: inner }), v) as object;

describe('bounds: no setting is taken that the crawler cannot honour', () => {
  // Node takes a timer past 2^31 − 1 ms as 1 ms: such a "timeout" would fire at once.
  const timers = [
    'handlerTimeoutMs',
    'fetch.connectTimeoutMs',
    'fetch.headersTimeoutMs',
    'fetch.bodyTimeoutMs',
    'fetch.totalTimeoutMs',
    'fetch.robotsTimeoutMs',
    'content.maxParseMs',
    'session.durableSleepMs',
    'session.maxMs',
  ];

  test.each(timers)('%s: 0 and 2^31 ms are refused, naming the field and the range; 1 and 2^31 − 1 are taken', (field) => {
    const range = `must be at least 1 and at most ${MAX_TIMER_MS} ms, the longest timer Node keeps`;
    expect(problemsOf(at(field, 0))).toEqual([`${field} ${range} (got 0)`]);
    expect(problemsOf(at(field, 2 ** 31))).toEqual([`${field} ${range} (got ${2 ** 31})`]);
    expect(problemsOf(at(field, 1))).toEqual([]);
    expect(problemsOf(at(field, MAX_TIMER_MS))).toEqual([]);
  });

  test.each(['politeness.minDelayMs', 'politeness.maxDelayMs'])('%s: 0 (no pause) is taken, 2^31 ms is refused', (field) => {
    expect(problemsOf({ politeness: { minDelayMs: 0, maxDelayMs: 0 } })).toEqual([]);
    expect(problemsOf({ politeness: { minDelayMs: 0, maxDelayMs: MAX_TIMER_MS } })).toEqual([]);
    expect(problemsOf(at(field, 2 ** 31)).join('\n')).toContain(`${field} must be at least 0 and at most ${MAX_TIMER_MS} ms, the longest timer Node keeps (got ${2 ** 31})`);
  });

  test(`fetch.maxBodyBytes: from 1 byte to ${MAX_BODY_BYTES} (1 GiB)`, () => {
    const range = `must be at least 1 and at most ${MAX_BODY_BYTES} (1 GiB: a body is held in memory whole)`;
    expect(problemsOf({ fetch: { maxBodyBytes: 0 } })).toEqual([`fetch.maxBodyBytes ${range} (got 0)`]);
    expect(problemsOf({ fetch: { maxBodyBytes: MAX_BODY_BYTES + 1 } })).toEqual([`fetch.maxBodyBytes ${range} (got ${MAX_BODY_BYTES + 1})`]);
    expect(problemsOf({ fetch: { maxBodyBytes: 1 } })).toEqual([]);
    expect(problemsOf({ fetch: { maxBodyBytes: MAX_BODY_BYTES } })).toEqual([]);
  });

  test('not-a-number, fractions and unsafe integers are named as such', () => {
    expect(problemsOf({ fetch: { maxRetries: '3' } })).toEqual(['fetch.maxRetries must be a whole number ≥ 0 (got "3")']);
    expect(problemsOf({ fetch: { maxRedirects: 1.5 } })).toEqual(['fetch.maxRedirects must be a whole number ≥ 0 (got 1.5)']);
    expect(problemsOf({ budgets: { maxPages: 2 ** 60 } })).toEqual([`budgets.maxPages must be a whole number ≥ 0 or null (got ${2 ** 60})`]);
    // A cookies file holds sessions: only its absolute path travels, and one that would never be sent is a mistake.
    expect(problemsOf({ cookiesFile: 'cookies.txt' })).toEqual(['cookiesFile must be an absolute path to a cookies.txt every worker can read (got "cookies.txt")']);
    expect(problemsOf({ cookies: 'off', cookiesFile: '/home/a/cookies.txt' })).toEqual(['cookiesFile needs cookies "on": with cookies off no cookie is sent']);
    expect(problemsOf({ cookies: 'sometimes' })).toHaveLength(1);
    expect(problemsOf({ handlerTimeoutMs: Number.NaN })).toEqual([`handlerTimeoutMs must be a whole number from 1 to ${MAX_TIMER_MS} ms, the longest timer Node keeps (got NaN)`]);
  });
});

test('every problem at once, each naming its field; cross-field rules are reported with the fields', () => {
  expect(
    problemsOf({
      seeds: [],
      scope: { mode: 'domains' },
      politeness: { minDelayMs: 5_000, maxDelayMs: 1_000, userAgent: 'bad\nagent', key: 'port' },
      fetch: { connectTimeoutMs: 0, resolve: ['h:80:127.0.0.1', 7] },
      content: { dedup: 'sometimes', maxSimhashDistance: 16 },
      sitemaps: 'all',
      revisit: 'daily',
    }).sort(),
  ).toEqual(
    [
      'seeds must be a non-empty list of URLs, or seedsFile must name a seed list',
      'scope.domains must list at least one domain when scope.mode is "domains"',
      'politeness.userAgent must be printable ASCII',
      'politeness.key must be one of "host", "domain", "ip" (got "port")',
      'politeness.maxDelayMs must be ≥ politeness.minDelayMs',
      `fetch.connectTimeoutMs must be at least 1 and at most ${MAX_TIMER_MS} ms, the longest timer Node keeps (got 0)`,
      'fetch.resolve[1] must be a string (got 7)',
      'content.dedup must be one of "near", "exact", "off" (got "sometimes")',
      'content.maxSimhashDistance must be at least 0 and at most 15 (got 16)',
      'sitemaps must be one of "robots+root", "robots", "off" (got "all")',
      'revisit must be an object such as {"enabled": true, "minMs": 3600000, "maxMs": 2592000000} (got "daily")',
    ].sort(),
  );
});

describe('one schema', () => {
  test('the defaults are what an input without settings resolves to, and what they were before the schema', () => {
    const s = resolveCampaignSettings({ seeds: ['http://a.test/'] }, 'c1');
    const { campaignId, seeds, seedsFile, ...sections } = s;
    expect({ campaignId, seeds, seedsFile }).toEqual({ campaignId: 'c1', seeds: ['http://a.test/'], seedsFile: null });
    expect(sections).toEqual(CAMPAIGN_DEFAULTS);
    expect(CAMPAIGN_DEFAULTS).toEqual({
      scope: { mode: 'same-domain', domains: [], include: [], exclude: [] },
      budgets: { maxPages: null, maxDepth: null, maxPagesPerHost: null, maxLinksPerPage: 3_000, maxSitemapsPerHost: 50, maxEmbedsPerPage: 300, maxEmbeds: null },
      politeness: {
        minDelayMs: 1000,
        maxDelayMs: 60_000,
        userAgent: 'DurableCrawler/0.1 (+https://github.com/durable-crawler/durable-crawler)',
        respectRobots: true,
        key: 'host',
        maxActiveHosts: null,
        maxInFlightPerAddress: 8,
      },
      fetch: {
        resolve: [],
        maxBodyBytes: 10 * 1024 * 1024,
        connectTimeoutMs: 10_000,
        headersTimeoutMs: 30_000,
        bodyTimeoutMs: 30_000,
        totalTimeoutMs: 120_000,
        maxRedirects: 5,
        maxRetries: 3,
        refusePrivateAddresses: true,
        allowAddresses: [],
        proxyFiles: [],
        robotsTimeoutMs: 30_000,
        headers: [],
        credentialsFile: null,
      },
      session: { durableSleepMs: 5_000, maxPages: 1_000, maxMs: 120_000, firstLocalMs: 5_000 },
      traps: { maxUrlLength: 2048, maxQueryParams: 20, maxRepeatedSegment: 3, maxPathDepth: 32 },
      content: { nonHtml: 'store', dedup: 'near', maxSimhashDistance: 3, maxParseMs: 10_000 },
      requisites: 'on',
      // Off unless a campaign asks: nothing changes for the others (docs/rendering.md).
      render: 'off',
      browser: {
        pageTimeoutMs: 30_000,
        quietMs: 500,
        maxPagesAtOnce: 6,
        pagesPerContext: 100,
        scroll: false,
        scrollBoxes: false,
        expand: false,
        autoclick: false,
        autoplay: false,
        maxMemoryMb: 2048,
        pagesPerBrowser: 1000,
        screenshot: false,
        text: false,
        autoSamples: 3,
        autoRecheckEvery: 20,
      },
      sitemaps: 'robots+root',
      output: {
        dir: 'crawl-output',
        warcKeepSecrets: false,
        s3: { endpoint: null, region: null, pathStyle: false },
        upload: { maxFileBytes: 256 * 1024 * 1024, maxFileAgeMs: 60_000 },
      },
      handler: null,
      handlerTimeoutMs: 30_000,
      cookies: 'on',
      cookiesFile: null,
      frontier: { priorities: [], spillAbove: 5000, seen: 'exact', seenRate: 0.01 },
      retention: { redisMs: 7 * 86_400_000, keep: 'summary' },
      revisit: { enabled: false, minMs: 3_600_000, maxMs: 30 * 86_400_000, factor: 1.5, minChangeDistance: 3, goneAfter: 3 },
    });
  });

  test('output.upload: a part may be given alone, the other keeps its default; bounds below 1 are refused, naming the field', () => {
    const resolve = (upload: object) => resolveCampaignSettings({ seeds: ['http://a.test/'], output: { upload } } as CampaignInput, 'c1');
    expect(resolve({ maxFileAgeMs: 5_000 }).output.upload).toEqual({ maxFileBytes: 256 * 1024 * 1024, maxFileAgeMs: 5_000 });
    expect(() => resolve({ maxFileBytes: 0 })).toThrow(/output\.upload\.maxFileBytes must be at least 1 \(got 0\)/);
    expect(() => resolve({ maxFileAgeMs: 1.5 })).toThrow(/output\.upload\.maxFileAgeMs must be a whole number/);
  });

  test('a revisit section switches revisiting on; {campaign} in the output folder is the campaign ID', () => {
    const s = resolveCampaignSettings({ seeds: ['http://a.test/'], revisit: { maxMs: 86_400_000 }, output: { dir: '/srv/{campaign}/out' } }, 'nightly-1');
    expect(s.revisit).toEqual({ ...CAMPAIGN_DEFAULTS.revisit, enabled: true, maxMs: 86_400_000 });
    expect(s.output.dir).toBe('/srv/nightly-1/out');
  });

  test.each([
    ['--politeness-key', POLITENESS_KEYS],
    ['--sitemaps', SITEMAP_MODES],
    ['--dedup', DEDUP_MODES],
    ['--non-html', NON_HTML_POLICIES],
    ['--requisites', REQUISITE_MODES],
  ])('the CLI takes the values the settings declare for %s, and no other', (flag, values) => {
    const parse = (value: string) =>
      campaignOptions(new Command().exitOverride().configureOutput({ writeErr: () => undefined }))
        .parse(['node', 'crawler', flag, value])
        .opts();
    for (const v of values) expect(Object.values(parse(v))).toContain(v);
    expect(() => parse('sometimes')).toThrow(`${flag} must be one of ${values.join(', ')} (got "sometimes")`);
  });

  test('--requisites and the embed budgets reach the campaign input', () => {
    const o = campaignOptions(new Command().exitOverride()).parse(['node', 'crawler', '--requisites', 'off', '--max-embeds-per-page', '40', '--max-embeds', '1000']).opts();
    const input = buildCampaignInput(['http://a.test/'], { workers: 1, resolve: [], priority: [], ...o });
    expect(input.requisites).toBe('off');
    expect(input.budgets).toMatchObject({ maxEmbedsPerPage: 40, maxEmbeds: 1000 });
    // Left out: on, with the defaults.
    const s = resolveCampaignSettings(buildCampaignInput(['http://a.test/'], { workers: 1, resolve: [], priority: [] }), 'c1');
    expect([s.requisites, s.budgets.maxEmbedsPerPage, s.budgets.maxEmbeds]).toEqual(['on', 300, null]);
  });

  test('scope modes are listed from their one declaration', () => {
    expect(problemsOf({ scope: { mode: 'everywhere' } })).toEqual([`scope.mode must be one of ${SCOPE_MODES.map((m) => JSON.stringify(m)).join(', ')} (got "everywhere")`]);
  });
});

test('docs/settings.md holds the settings table as the schema generates it: every field, its default, its bounds', () => {
  const table = settingsTable();
  // The table is the schema's: a default or a bound changed in the code shows here.
  expect(table).toContain(`| \`fetch.connectTimeoutMs\` | \`10000\` (10 s) | whole number 1 to ${MAX_TIMER_MS} |`);
  expect(table).toContain(`| \`fetch.maxBodyBytes\` | \`10485760\` (10 MiB) | whole number 1 to ${MAX_BODY_BYTES} |`);
  expect(table).toContain('| `content.dedup` | `"near"` | `near`, `exact`, `off` |');
  // One row per setting of a resolved campaign (sections walked into, lists and values are settings).
  const paths = (o: object, prefix = ''): string[] =>
    Object.entries(o).flatMap(([k, v]) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? paths(v as object, `${prefix}${k}.`) : [`${prefix}${k}`]));
  const rows = table.trim().split('\n').slice(2);
  expect(rows.map((r) => /^\| `([^`]+)`/.exec(r)?.[1])).toEqual(paths(resolveCampaignSettings({ seeds: ['http://a.test/'] }, 'c1')));
  const doc = fs.readFileSync(path.join(__dirname, '../../docs/settings.md'), 'utf8');
  expect(doc).toContain(table);
});
