// Every flag of `crawl --help`, typed as a user types it, parsed by the
// program main.ts builds and carried through prepareCrawlInput (what the
// crawl action does before anything starts) to the resolved campaign
// settings. The table below must name every flag commander knows, so a new
// flag cannot go untested; the documented special values (`none`, `never`,
// each choice) are rows of their own. `schedule create` shares the campaign
// flags and is run through the same rows; the steering commands' `N|none`
// flags through their own parsers; and the flags README.md and docs/ show
// for crawl are checked to exist, their documented values to be taken.
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { Command, type Option } from 'commander';
import { buildProgram } from '../../src/cli/main';
import { buildCampaignInput, campaignOptions, prepareCrawlInput, type CrawlIo, type CrawlOptions } from '../../src/cli/commands/crawl';
import { scheduledCampaign, type CreateOptions } from '../../src/cli/commands/schedule';
import { budgetsRequest, concurrencyRequest } from '../../src/cli/commands/steer';
import { removeProxySecrets, SECRETS_DIR } from '../../src/cli/proxy-files';
import { CAMPAIGN_DEFAULTS, resolveCampaignSettings, type CampaignInput, type CampaignSettings } from '../../src/config/campaign';
import { MAX_ACTIVE_HOSTS, validateSetBudgets, validateSetConcurrency } from '../../src/config/steering';
import { UsageError } from '../../src/cli/usage-error';
import { tempDirs } from '../support/temp-dirs';

const ROOT = path.join(__dirname, '../..');
const SEED = 'http://a.test/';
const dir = tempDirs('crawl-flags-')();

/** A file of the test's, private (mode 600) as the secret-bearing flags require. */
function privateFile(name: string, content: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content, { mode: 0o600 });
  return file;
}
const PROXY_PASSWORD = 'proxy-pass-1';
const CREDENTIAL = 'cred-s3cret';
const COOKIE = 'cookie-s3cret';
const seedList = privateFile('seeds.txt', '# two seeds\nhttp://a.test/one\nhttp://b.test/two\n');
const pins = privateFile('pins.txt', '# pins\nb.test:80:127.0.0.2\n');
const proxyList = privateFile('proxies.txt', `http://user:${PROXY_PASSWORD}@proxy.test:3128\n`);
const credentials = privateFile('credentials.txt', `https://a.test  alice:${CREDENTIAL}\n`);
const cookies = privateFile('cookies.txt', `.a.test\tTRUE\t/\tFALSE\t0\tsid\t${COOKIE}\n`);

// ---- Parsing as the CLI parses.

interface Parsed {
  /** The action's arguments before its options (crawl: [seeds]; schedule create: [name, seeds]). */
  args: unknown[];
  opts: Record<string, unknown>;
  command: Command;
}

/** The command `names` leads to on the program main.ts builds for `argv`. */
async function commandFor(argv: string[]): Promise<{ program: Command; command: Command }> {
  const program = await buildProgram(['node', 'crawler', ...argv]);
  let command = program;
  for (const name of argv) {
    const sub = command.commands.find((c) => c.name() === name);
    if (!sub) break;
    command = sub;
  }
  // Errors are thrown (exitOverride, set by buildProgram) rather than printed with the help.
  command.configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  return { program, command };
}

/** `argv` parsed by the real program, the command's action replaced by a capture (the real one starts a stack). */
async function parse(argv: string[]): Promise<Parsed> {
  const { program, command } = await commandFor(argv);
  let got: Parsed | undefined;
  command.action((...a: unknown[]) => {
    got = { args: a.slice(0, -2), opts: a[a.length - 2] as Record<string, unknown>, command };
  });
  await program.parseAsync(['node', 'crawler', ...argv]);
  if (!got) throw new Error(`${argv.join(' ')}: no action ran`);
  return got;
}

const quietIo = (stdin?: string): CrawlIo => ({
  stdin: stdin === undefined ? (Object.assign(Readable.from([]), { isTTY: true }) as CrawlIo['stdin']) : Readable.from([Buffer.from(stdin)]),
  log: () => undefined,
});

interface Prepared {
  opts: Record<string, unknown>;
  command: Command;
  /** What the campaign is started with (crawl: its input; schedule create: every run's). */
  input: CampaignInput;
  settings: CampaignSettings;
}

/** `crawl …`: parsed, then prepared as the crawl action prepares it. */
async function crawl(argv: string[], stdin?: string): Promise<Prepared> {
  const { args, opts, command } = await parse(['crawl', ...argv]);
  const input = await prepareCrawlInput(args[0] as string[], opts as unknown as CrawlOptions, quietIo(stdin));
  return { opts, command, input, settings: resolveCampaignSettings(input, input.campaignId) };
}

const RUN_ID = 'nightly-2026-01-01T00:00:00Z';

/** `schedule create nightly … --every 1h`: parsed, then made into every run's campaign as the action does. */
async function scheduleCreate(argv: string[]): Promise<Prepared> {
  const { args, opts, command } = await parse(['schedule', 'create', 'nightly', '--every', '1h', ...argv]);
  const { campaign } = await scheduledCampaign(args[0] as string, args[1] as string[], opts as unknown as CreateOptions, quietIo());
  return { opts, command, input: campaign, settings: resolveCampaignSettings(campaign, RUN_ID) };
}

/** Commander took the flag from the command line (not its default). */
function typed(p: Prepared, flag: string): boolean {
  const option = p.command.options.find((o) => o.long === flag);
  return option !== undefined && p.command.getOptionValueSource(option.attributeName()) === 'cli';
}

/** A setting by its path in docs/settings.md (`politeness.maxInFlightPerAddress`). */
const settingAt = (settings: CampaignSettings, at: string): unknown => at.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], settings);

// ---- The table: every flag of crawl, its values as typed, and where each lands.

interface FlagCase {
  /** The flag this row is about; the table must hold a row for each flag commander knows. */
  flag: string;
  /** The command line after `crawl`, as typed. */
  argv: string[];
  /** Where the value lands in the resolved settings, and what it is there. */
  settings?: Record<string, unknown>;
  /** What a flag that is no setting of its own reaches (the parsed options, the prepared input); also run for schedule create. */
  check?: (p: Prepared) => void | Promise<void>;
  /** Standard input, for `--seeds-file -`. */
  stdin?: string;
}

// `--workers 0` where the crawl would otherwise check here what its workers need (a Chromium to
// render with, the handler loaded): that is checked elsewhere, and the rows are about the flag.
const CASES: FlagCase[] = [
  { flag: '--max-pages', argv: [SEED, '--max-pages', '500'], settings: { 'budgets.maxPages': 500 } },
  { flag: '--max-pages', argv: [SEED, '--max-pages', '0'], settings: { 'budgets.maxPages': 0 } },
  { flag: '--max-depth', argv: [SEED, '--max-depth', '3'], settings: { 'budgets.maxDepth': 3 } },
  { flag: '--delay-ms', argv: [SEED, '--delay-ms', '2000'], settings: { 'politeness.minDelayMs': 2000 } },
  { flag: '--delay-ms', argv: [SEED, '--delay-ms', '0'], settings: { 'politeness.minDelayMs': 0 } },
  { flag: '--max-active-hosts', argv: [SEED, '--max-active-hosts', '20'], settings: { 'politeness.maxActiveHosts': 20 } },
  {
    flag: '--same-domain',
    argv: [SEED, '--same-domain'],
    settings: { 'scope.mode': 'same-domain' },
    // The default mode, so the setting alone cannot tell: the flag is taken, and counts against another scope flag.
    check: ({ opts }) => {
      expect(opts.sameDomain).toBe(true);
      expect(() => buildCampaignInput([SEED], { ...(opts as unknown as CrawlOptions), sameHost: true })).toThrow(/choose one of --same-domain, --same-host/);
    },
  },
  { flag: '--same-host', argv: [SEED, '--same-host'], settings: { 'scope.mode': 'same-host' } },
  { flag: '--any-domain', argv: [SEED, '--any-domain'], settings: { 'scope.mode': 'any' } },
  { flag: '--domains', argv: [SEED, '--domains', 'a.test,b.test'], settings: { 'scope.mode': 'domains', 'scope.domains': ['a.test', 'b.test'] } },
  {
    flag: '--resolve',
    argv: [SEED, '--resolve', 'a.test:80:127.0.0.1', '--resolve', 'b.test:443:[::1]'],
    settings: { 'fetch.resolve': ['a.test:80:127.0.0.1', 'b.test:443:[::1]'] },
  },
  {
    flag: '--resolve-file',
    argv: [SEED, '--resolve', 'a.test:80:127.0.0.1', '--resolve-file', pins],
    settings: { 'fetch.resolve': ['a.test:80:127.0.0.1', 'b.test:80:127.0.0.2'] },
  },
  { flag: '--user-agent', argv: [SEED, '--user-agent', 'MyBot/1.0 (+https://a.test/bot)'], settings: { 'politeness.userAgent': 'MyBot/1.0 (+https://a.test/bot)' } },
  { flag: '--ignore-robots', argv: [SEED, '--ignore-robots'], settings: { 'politeness.respectRobots': false } },
  { flag: '--max-pages-per-host', argv: [SEED, '--max-pages-per-host', '100'], settings: { 'budgets.maxPagesPerHost': 100 } },
  { flag: '--max-links-per-page', argv: [SEED, '--max-links-per-page', '50'], settings: { 'budgets.maxLinksPerPage': 50 } },
  { flag: '--max-sitemaps-per-host', argv: [SEED, '--max-sitemaps-per-host', '5'], settings: { 'budgets.maxSitemapsPerHost': 5 } },
  { flag: '--requisites', argv: [SEED, '--requisites', 'on'], settings: { requisites: 'on' } },
  { flag: '--requisites', argv: [SEED, '--requisites', 'off'], settings: { requisites: 'off' } },
  { flag: '--render', argv: [SEED, '--workers', '0', '--render', 'off'], settings: { render: 'off' } },
  { flag: '--render', argv: [SEED, '--workers', '0', '--render', 'browser'], settings: { render: 'browser' } },
  { flag: '--render', argv: [SEED, '--workers', '0', '--render', 'auto'], settings: { render: 'auto' } },
  {
    flag: '--screenshot',
    argv: [SEED, '--workers', '0', '--render', 'browser', '--screenshot'],
    settings: { 'browser.screenshot': true, 'browser.text': false },
  },
  { flag: '--text', argv: [SEED, '--workers', '0', '--render', 'browser', '--text'], settings: { 'browser.text': true, 'browser.screenshot': false } },
  { flag: '--max-embeds-per-page', argv: [SEED, '--max-embeds-per-page', '40'], settings: { 'budgets.maxEmbedsPerPage': 40 } },
  { flag: '--max-embeds', argv: [SEED, '--max-embeds', '1000'], settings: { 'budgets.maxEmbeds': 1000 } },
  { flag: '--max-in-flight-per-address', argv: [SEED, '--max-in-flight-per-address', '3'], settings: { 'politeness.maxInFlightPerAddress': 3 } },
  { flag: '--max-in-flight-per-address', argv: [SEED, '--max-in-flight-per-address', 'none'], settings: { 'politeness.maxInFlightPerAddress': null } },
  { flag: '--max-url-length', argv: [SEED, '--max-url-length', '500'], settings: { 'traps.maxUrlLength': 500 } },
  { flag: '--allow-addresses', argv: [SEED, '--allow-addresses', '10.1.0.0/16,192.168.5.0/24'], settings: { 'fetch.allowAddresses': ['10.1.0.0/16', '192.168.5.0/24'] } },
  { flag: '--allow-private', argv: [SEED, '--allow-private'], settings: { 'fetch.refusePrivateAddresses': false } },
  {
    flag: '--proxy',
    argv: [SEED, '--proxy', `http://user:${PROXY_PASSWORD}@proxy.test:3128`],
    // The URL goes to a private file of the project's for the workers; the input names the file only.
    check: async ({ input, settings }) => {
      const files = settings.fetch.proxyFiles;
      try {
        expect(files).toHaveLength(1);
        expect(path.dirname(files[0])).toBe(SECRETS_DIR);
        expect(fs.readFileSync(files[0], 'utf8')).toContain(`http://user:${PROXY_PASSWORD}@proxy.test:3128`);
        expect(fs.statSync(files[0]).mode & 0o077).toBe(0);
        expect(JSON.stringify(input)).not.toContain(PROXY_PASSWORD);
      } finally {
        await removeProxySecrets(files);
      }
    },
  },
  {
    flag: '--proxy-file',
    argv: [SEED, '--proxy-file', path.relative(process.cwd(), proxyList)],
    settings: { 'fetch.proxyFiles': [proxyList] },
    check: ({ input }) => expect(JSON.stringify(input)).not.toContain(PROXY_PASSWORD),
  },
  { flag: '--politeness-key', argv: [SEED, '--politeness-key', 'host'], settings: { 'politeness.key': 'host' } },
  { flag: '--politeness-key', argv: [SEED, '--politeness-key', 'domain'], settings: { 'politeness.key': 'domain' } },
  { flag: '--politeness-key', argv: [SEED, '--politeness-key', 'ip'], settings: { 'politeness.key': 'ip' } },
  { flag: '--sitemaps', argv: [SEED, '--sitemaps', 'robots+root'], settings: { sitemaps: 'robots+root' } },
  { flag: '--sitemaps', argv: [SEED, '--sitemaps', 'robots'], settings: { sitemaps: 'robots' } },
  { flag: '--sitemaps', argv: [SEED, '--sitemaps', 'off'], settings: { sitemaps: 'off' } },
  { flag: '--dedup', argv: [SEED, '--dedup', 'near'], settings: { 'content.dedup': 'near' } },
  { flag: '--dedup', argv: [SEED, '--dedup', 'exact'], settings: { 'content.dedup': 'exact' } },
  { flag: '--dedup', argv: [SEED, '--dedup', 'off'], settings: { 'content.dedup': 'off' } },
  { flag: '--simhash-distance', argv: [SEED, '--simhash-distance', '5'], settings: { 'content.maxSimhashDistance': 5 } },
  { flag: '--non-html', argv: [SEED, '--non-html', 'store'], settings: { 'content.nonHtml': 'store' } },
  { flag: '--non-html', argv: [SEED, '--non-html', 'skip'], settings: { 'content.nonHtml': 'skip' } },
  {
    flag: '--priority',
    argv: [SEED, '--priority', '/products/=5', '--priority', '[?&]page=1$=-3'],
    settings: {
      'frontier.priorities': [
        { pattern: '/products/', priority: 5 },
        { pattern: '[?&]page=1$', priority: -3 },
      ],
    },
  },
  { flag: '--spill-above', argv: [SEED, '--spill-above', '1000'], settings: { 'frontier.spillAbove': 1000, 'frontier.priorities': [] } },
  {
    flag: '--spill-above',
    argv: [SEED, '--spill-above', 'none', '--priority', '/a/=1'],
    settings: { 'frontier.spillAbove': null, 'frontier.priorities': [{ pattern: '/a/', priority: 1 }] },
  },
  { flag: '--seen', argv: [SEED, '--seen', 'bloom'], settings: { 'frontier.seen': 'bloom', 'frontier.seenRate': 0.01, 'frontier.spillAbove': 5000 } },
  { flag: '--seen-rate', argv: [SEED, '--seen', 'bloom', '--seen-rate', '0.001'], settings: { 'frontier.seen': 'bloom', 'frontier.seenRate': 0.001 } },
  { flag: '--include', argv: [SEED, '--include', '/docs/', '--include', '/blog/'], settings: { 'scope.include': ['/docs/', '/blog/'] } },
  { flag: '--exclude', argv: [SEED, '--exclude', '[?&]print=', '--exclude', '/logout'], settings: { 'scope.exclude': ['[?&]print=', '/logout'] } },
  { flag: '--header', argv: [SEED, '--header', 'X-Crawl: yes', '--header', 'Accept-Language: fr'], settings: { 'fetch.headers': ['X-Crawl: yes', 'Accept-Language: fr'] } },
  {
    flag: '--credentials-file',
    argv: [SEED, '--credentials-file', path.relative(process.cwd(), credentials)],
    settings: { 'fetch.credentialsFile': credentials },
    check: ({ input }) => expect(JSON.stringify(input)).not.toContain(CREDENTIAL),
  },
  { flag: '--warc-keep-secrets', argv: [SEED, '--warc-keep-secrets'], settings: { 'output.warcKeepSecrets': true } },
  // How workers reach the bucket of an s3:// --out; never its credentials.
  {
    flag: '--s3-endpoint',
    argv: [SEED, '--out', 's3://crawl/runs', '--s3-endpoint', 'http://127.0.0.1:8333'],
    settings: { 'output.s3.endpoint': 'http://127.0.0.1:8333', 'output.s3.region': null, 'output.s3.pathStyle': false },
  },
  { flag: '--s3-region', argv: [SEED, '--out', 's3://crawl/runs', '--s3-region', 'eu-west-3'], settings: { 'output.s3.region': 'eu-west-3' } },
  { flag: '--s3-path-style', argv: [SEED, '--out', 's3://crawl/runs', '--s3-path-style'], settings: { 'output.s3.pathStyle': true } },
  { flag: '--retention', argv: [SEED, '--retention', '7d'], settings: { 'retention.redisMs': 7 * 86_400_000 } },
  { flag: '--retention', argv: [SEED, '--retention', '36h'], settings: { 'retention.redisMs': 36 * 3_600_000 } },
  { flag: '--retention', argv: [SEED, '--retention', '90m'], settings: { 'retention.redisMs': 90 * 60_000 } },
  { flag: '--retention', argv: [SEED, '--retention', 'never'], settings: { 'retention.redisMs': null } },
  { flag: '--retention-keep', argv: [SEED, '--retention-keep', 'all'], settings: { 'retention.keep': 'all', 'retention.redisMs': 7 * 86_400_000 } },
  { flag: '--retention-keep', argv: [SEED, '--retention', '36h', '--retention-keep', 'summary'], settings: { 'retention.keep': 'summary', 'retention.redisMs': 36 * 3_600_000 } },
  // Loaded by the workers (elsewhere, with --workers 0); the input carries the module's absolute path.
  {
    flag: '--handler',
    argv: [SEED, '--workers', '0', '--handler', 'examples/catalogue-handler.ts'],
    settings: { handler: path.resolve('examples/catalogue-handler.ts') },
  },
  { flag: '--handler-timeout-ms', argv: [SEED, '--handler-timeout-ms', '5000'], settings: { handlerTimeoutMs: 5000 } },
  { flag: '--cookies', argv: [SEED, '--cookies', 'on'], settings: { cookies: 'on' } },
  { flag: '--cookies', argv: [SEED, '--cookies', 'off'], settings: { cookies: 'off' } },
  {
    flag: '--cookies-file',
    argv: [SEED, '--cookies-file', path.relative(process.cwd(), cookies)],
    settings: { cookiesFile: cookies },
    check: ({ input }) => expect(JSON.stringify(input)).not.toContain(COOKIE),
  },
  { flag: '--revisit', argv: [SEED, '--revisit'], settings: { 'revisit.enabled': true } },
  { flag: '--revisit-min', argv: [SEED, '--revisit', '--revisit-min', '90m'], settings: { 'revisit.enabled': true, 'revisit.minMs': 90 * 60_000 } },
  { flag: '--revisit-min', argv: [SEED, '--revisit', '--revisit-min', '30s'], settings: { 'revisit.minMs': 30_000 } },
  { flag: '--revisit-max', argv: [SEED, '--revisit', '--revisit-max', '7d'], settings: { 'revisit.enabled': true, 'revisit.maxMs': 7 * 86_400_000 } },
  { flag: '--revisit-max', argv: [SEED, '--revisit', '--revisit-max', '12h'], settings: { 'revisit.maxMs': 12 * 3_600_000 } },
  // crawl's own flags.
  { flag: '--seeds-file', argv: ['--seeds-file', path.relative(process.cwd(), seedList)], settings: { seedsFile: seedList, seeds: [] } },
  {
    flag: '--seeds-file',
    argv: ['--seeds-file', '-', '--out', path.join(dir, 'from-stdin'), '--id', 'from-stdin'],
    stdin: 'http://a.test/one\n',
    // Standard input is copied into the output folder, where every worker can read it.
    settings: { seedsFile: path.join(dir, 'from-stdin', 'seeds-from-stdin.txt') },
    check: ({ settings }) => expect(fs.readFileSync(settings.seedsFile!, 'utf8')).toBe('http://a.test/one\n'),
  },
  { flag: '--out', argv: [SEED, '--out', path.relative(process.cwd(), path.join(dir, 'out'))], settings: { 'output.dir': path.join(dir, 'out') } },
  // A bucket location is taken as typed (no folder to make absolute), {campaign} replaced as in a folder.
  { flag: '--out', argv: [SEED, '--out', 's3://crawl/runs/{campaign}', '--id', 'c7'], settings: { 'output.dir': 's3://crawl/runs/c7' } },
  {
    flag: '--id',
    argv: [SEED, '--id', 'my-crawl'],
    settings: { campaignId: 'my-crawl', 'output.dir': path.resolve('crawl-output', 'my-crawl') },
  },
  // How many workers this command starts: the CLI's, not the campaign's.
  {
    flag: '--workers',
    argv: [SEED, '--workers', '3'],
    check: ({ opts, input }) => {
      expect(opts.workers).toBe(3);
      expect(input).not.toHaveProperty('workers');
    },
  },
  { flag: '--workers', argv: [SEED, '--workers', '0'], check: ({ opts }) => expect(opts.workers).toBe(0) },
  { flag: '--json', argv: [SEED, '--json'], check: ({ opts }) => expect(opts.json).toBe(true) },
];

const longFlags = (c: Command) => c.options.map((o: Option) => o.long ?? o.short ?? o.flags);

describe('every flag of crawl --help, as typed, reaches the campaign', () => {
  test('the table has a row for every flag commander knows on crawl, and no other', async () => {
    const { command } = await commandFor(['crawl']);
    expect(command.name()).toBe('crawl');
    expect([...new Set(CASES.map((c) => c.flag))].sort()).toEqual(longFlags(command).sort());
  });

  test.each(CASES.map((c) => [c.argv.join(' '), c] as const))('crawl %s', async (_argv, c) => {
    const p = await crawl(c.argv, c.stdin);
    expect(typed(p, c.flag)).toBe(true);
    for (const [at, value] of Object.entries(c.settings ?? {})) expect([at, settingAt(p.settings, at)]).toEqual([at, value]);
    await c.check?.(p);
  });

  test('each flag of a setting moves it off its default with one of its values', async () => {
    const defaults = (await crawl([SEED])).settings;
    const byFlag = new Map<string, FlagCase[]>();
    for (const c of CASES.filter((x) => x.settings && x.flag !== '--same-domain')) byFlag.set(c.flag, [...(byFlag.get(c.flag) ?? []), c]);
    for (const [flag, cases] of byFlag) {
      const moved = cases.some((c) => Object.entries(c.settings!).some(([at, value]) => JSON.stringify(settingAt(defaults, at)) !== JSON.stringify(value)));
      expect([flag, moved]).toEqual([flag, true]);
    }
  });

  test('a flag left out leaves its setting at the default; the defaults of crawl are its own', async () => {
    const { opts, settings } = await crawl([SEED]);
    expect(opts.workers).toBe(1);
    expect([settings.politeness.maxInFlightPerAddress, settings.retention.redisMs, settings.revisit.enabled]).toEqual([8, 7 * 86_400_000, false]);
  });

  test.each([
    ['--max-in-flight-per-address', 'nothing', /--max-in-flight-per-address must be a whole number, or none for unlimited \(got "nothing"\)/],
    ['--max-in-flight-per-address', '-1', /--max-in-flight-per-address must be a whole number, or none/],
    ['--retention', 'forever', /--retention must be a number with a unit m, h or d .*, or never \(got "forever"\)/],
    ['--retention-keep', 'some', /--retention-keep must be one of summary, all \(got "some"\)/],
    ['--render', 'chrome', /--render must be one of off, browser, auto/],
  ])('crawl %s %s is refused, naming the accepted forms', async (flag, value, message) => {
    await expect(parse(['crawl', SEED, flag, value])).rejects.toThrow(message);
  });

  test('an s3:// --out the settings refuse, an S3 flag without one, and standard input for a bucket are refused before anything starts, saying why', async () => {
    await expect(crawl([SEED, '--out', 's3://Crawl_Bucket/x'])).rejects.toThrow(/output.dir has a bucket name "Crawl_Bucket" S3 refuses/);
    await expect(crawl([SEED, '--out', 's3://crawl/a/../b'])).rejects.toThrow(/output.dir has a "." or ".." segment in the prefix/);
    await expect(crawl([SEED, '--out', 's3://crawl/x', '--s3-endpoint', 'ftp://store.test'])).rejects.toThrow(/output.s3.endpoint must be an http:\/\/ or https:\/\/ URL/);
    await expect(crawl([SEED, '--s3-path-style'])).rejects.toThrow(/--s3-endpoint, --s3-region and --s3-path-style are for an output in a bucket: --out s3:\/\/bucket\/prefix/);
    await expect(crawl(['--seeds-file', '-', '--out', 's3://crawl/x'], 'http://a.test/\n')).rejects.toThrow(/--seeds-file -: .* give a file every worker can read/);
    // A key in the location is refused without being echoed: the input would carry it into Temporal's history.
    const err = (await crawl([SEED, '--out', 's3://AKIAEXAMPLE:hunter2@crawl/x']).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(UsageError);
    expect(err.message).toMatch(/output.dir holds user:password@/);
    expect(err.message).not.toContain('hunter2');
  });

  test('--max-in-flight-per-address 0 is refused by the campaign, with the same words as the setting', async () => {
    await expect(crawl([SEED, '--max-in-flight-per-address', '0'])).rejects.toThrow(/politeness.maxInFlightPerAddress must be at least 1, or null for unlimited \(got 0\)/);
  });
});

describe('schedule create takes the campaign flags as crawl does', () => {
  const shared = new Set(longFlags(campaignOptions(new Command())));
  const rows = CASES.filter((c) => shared.has(c.flag));
  /** A schedule's runs start on workers elsewhere: it has no --workers. */
  const withoutWorkers = (argv: string[]) => argv.filter((a, i) => a !== '--workers' && argv[i - 1] !== '--workers');

  test('every campaign flag is a flag of schedule create', async () => {
    const { command } = await commandFor(['schedule', 'create']);
    expect(command.name()).toBe('create');
    expect(longFlags(command)).toEqual(expect.arrayContaining([...shared]));
    // Rows for all but crawl's own flags (--seeds-file, --out, --id, --workers, --json).
    expect(new Set(rows.map((c) => c.flag))).toEqual(shared);
  });

  // A revisit campaign never ends, so a schedule refuses one (below).
  test.each(rows.filter((c) => !c.argv.includes('--revisit')).map((c) => [withoutWorkers(c.argv).join(' '), c] as const))(
    'schedule create nightly --every 1h %s',
    async (_argv, c) => {
      const p = await scheduleCreate(withoutWorkers(c.argv));
      expect(typed(p, c.flag)).toBe(true);
      for (const [at, value] of Object.entries(c.settings ?? {})) expect([at, settingAt(p.settings, at)]).toEqual([at, value]);
      await c.check?.(p);
    },
  );

  test('every run gets its own output folder under --out, or its own prefix under an s3:// --out; --revisit is refused', async () => {
    const p = await scheduleCreate([SEED, '--out', path.join(dir, 'runs'), '--warc-keep-secrets']);
    expect(p.settings.output).toEqual({
      dir: path.join(dir, 'runs', RUN_ID),
      warcKeepSecrets: true,
      s3: { endpoint: null, region: null, pathStyle: false },
      upload: CAMPAIGN_DEFAULTS.output.upload,
    });
    const s3 = await scheduleCreate([SEED, '--out', 's3://crawl/runs/', '--s3-endpoint', 'http://127.0.0.1:8333', '--s3-path-style']);
    expect(s3.input.output?.dir).toBe('s3://crawl/runs/{campaign}');
    expect(s3.settings.output).toEqual({
      dir: `s3://crawl/runs/${RUN_ID}`,
      warcKeepSecrets: false,
      s3: { endpoint: 'http://127.0.0.1:8333', region: null, pathStyle: true },
      upload: CAMPAIGN_DEFAULTS.output.upload,
    });
    await expect(scheduleCreate([SEED, '--revisit'])).rejects.toThrow(UsageError);
  });
});

describe("the steering commands' N|none flags", () => {
  test.each([
    [['set-concurrency', 'c1', '--max-hosts', 'none'], { maxActiveHosts: null }],
    [['set-concurrency', 'c1', '--max-hosts', '25'], { maxActiveHosts: 25 }],
    [['set-concurrency', 'c1', '--max-hosts', String(MAX_ACTIVE_HOSTS)], { maxActiveHosts: MAX_ACTIVE_HOSTS }],
  ])('%j', async (argv, request) => {
    const { opts } = await parse(argv);
    expect(validateSetConcurrency(concurrencyRequest(opts as { maxHosts: string }))).toEqual(request);
  });

  test.each([
    [['set-budget', 'c1', '--max-pages', 'none'], { maxPages: null }],
    [['set-budget', 'c1', '--max-pages', '500'], { maxPages: 500 }],
    [['set-budget', 'c1', '--max-depth', 'none'], { maxDepth: null }],
    [['set-budget', 'c1', '--max-pages', '100', '--max-depth', 'none'], { maxPages: 100, maxDepth: null }],
  ])('%j', async (argv, request) => {
    const { opts } = await parse(argv);
    expect(validateSetBudgets(budgetsRequest(opts as { maxPages?: string; maxDepth?: string }))).toEqual(request);
  });

  test('a value that is neither a number nor none is refused in the words of the setting', async () => {
    const { opts } = await parse(['set-concurrency', 'c1', '--max-hosts', 'lots']);
    expect(() => validateSetConcurrency(concurrencyRequest(opts as { maxHosts: string }))).toThrow(
      /maxActiveHosts must be a whole number from 1 to .*, or null for unlimited \(got "lots"\)/,
    );
    const budget = await parse(['set-budget', 'c1', '--max-pages', '-5']);
    expect(() => validateSetBudgets(budgetsRequest(budget.opts as { maxPages?: string }))).toThrow(/maxPages/);
  });
});

// ---- What the documentation shows for crawl.

/**
 * The crawl command lines of README.md and docs/*.md: each `npm run crawl --`
 * / `crawler crawl` / `crawler -- crawl` up to the end of its line, a comment,
 * a pipe or the end of its code span; inline code that starts with `crawl `;
 * and the code spans of README's "`crawl` options:" paragraph.
 */
function documentedCrawlText(): { file: string; text: string }[] {
  const files = [
    'README.md',
    ...fs
      .readdirSync(path.join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const out: { file: string; text: string }[] = [];
  for (const file of files) {
    const doc = fs.readFileSync(path.join(ROOT, file), 'utf8');
    for (const line of doc.split('\n')) {
      for (const m of line.matchAll(/(?:npm run crawl --|crawler(?: --)? crawl\b)/g))
        out.push({ file, text: line.slice(m.index + m[0].length).split(/`|\s#\s|\s\|\s|\s&&\s|;\s/)[0] });
      for (const m of line.matchAll(/`crawl( [^`]*)`/g)) out.push({ file, text: m[1] });
    }
    const start = doc.search(/^`crawl` options:/m);
    if (start >= 0) {
      const end = doc.indexOf('\n\n', start);
      for (const m of doc.slice(start, end < 0 ? undefined : end).matchAll(/`(--[a-z][^`]*)`/g)) out.push({ file, text: m[1] });
    }
  }
  return out;
}

/** `--flag value` pairs of a documented command line (a value only for flags that take one). */
function documentedFlags(text: string, takesValue: (flag: string) => boolean): { flag: string; value?: string }[] {
  const tokens = [...text.matchAll(/'[^']*'|"[^"]*"|\S+/g)].map((m) => m[0].replace(/^(['"])(.*)\1$/, '$2'));
  const found: { flag: string; value?: string }[] = [];
  tokens.forEach((t, i) => {
    const flag = /^--[a-z][a-z0-9-]*/.exec(t)?.[0];
    if (!flag) return;
    const next = tokens[i + 1];
    found.push({ flag, ...(takesValue(flag) && next !== undefined && !next.startsWith('--') ? { value: next } : {}) });
  });
  return found;
}

/** Flags whose value is a file the crawl reads: the table runs them with real files. */
const FILE_FLAGS = new Set(['--seeds-file', '--resolve-file', '--proxy-file', '--credentials-file', '--cookies-file', '--handler']);
/** Flags documented with the flag they need. */
const COMPANIONS: Record<string, string[]> = { '--revisit-min': ['--revisit'], '--revisit-max': ['--revisit'] };

/**
 * The values a documented form stands for: `7d|36h|90m|never` is four,
 * `N|none` is a number and none, `500` is itself; a placeholder (`FILE`,
 * `<url>`, `REGEX=N`) is none.
 */
function documentedValues(form: string): string[] {
  const alternatives = form.split('|').map((v) => (v === 'N' ? '2' : v));
  return alternatives.some((v) => /[A-Z<>…]/.test(v)) ? [] : alternatives;
}

describe('the crawl flags README.md and docs/ show', () => {
  const shown = documentedCrawlText();

  test('are found (the check reads something)', () => {
    expect(shown.length).toBeGreaterThan(0);
  });

  test('each exists in crawl --help', async () => {
    const { command } = await commandFor(['crawl']);
    const help = new Set(
      command
        .createHelp()
        .visibleOptions(command)
        .map((o) => o.long),
    );
    const unknown = shown.flatMap(({ file, text }) => documentedFlags(text, () => false).flatMap(({ flag }) => (help.has(flag) ? [] : [`${file}: ${flag}`])));
    expect(unknown).toEqual([]);
  });

  test('each value they show (every alternative of a|b|c) is taken, and the campaign it makes is valid', async () => {
    const { command } = await commandFor(['crawl']);
    const takesValue = (flag: string) => {
      const o = command.options.find((x) => x.long === flag);
      return o !== undefined && (o.required || o.optional);
    };
    const runs = new Map<string, string[]>();
    for (const { text } of shown) {
      for (const { flag, value } of documentedFlags(text, takesValue)) {
        if (value === undefined || FILE_FLAGS.has(flag)) continue;
        for (const v of documentedValues(value)) runs.set(`${flag} ${v}`, [...(COMPANIONS[flag] ?? []), flag, v]);
      }
    }
    expect(runs.size).toBeGreaterThan(0);
    const refused: string[] = [];
    for (const [name, argv] of runs) {
      await crawl([SEED, '--workers', '0', ...argv]).catch((err: Error) => refused.push(`${name}: ${err.message}`));
    }
    expect(refused).toEqual([]);
  });
});
