import { rm } from 'node:fs/promises';
import path from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { WorkflowFailedError } from '@temporalio/client';
import {
  CAMPAIGN_DEFAULTS,
  CampaignInputError,
  COOKIE_MODES,
  RETENTION_KEEPS,
  type RetentionKeep,
  DEDUP_MODES,
  NON_HTML_POLICIES,
  POLITENESS_KEYS,
  REQUISITE_MODES,
  RENDER_MODES,
  resolveCampaignSettings,
  SEEN_SETS,
  type SeenSet,
  SITEMAP_MODES,
  type CampaignInput,
  type CookieMode,
  type DedupMode,
  type NonHtmlPolicy,
  type PolitenessKey,
  type RequisiteMode,
  type RenderMode,
  type SitemapMode,
} from '../../config/campaign';
import { explicitSetting, processSettings, settingVariable, temporalIsRemote } from '../../config/env';
import { createAddressPolicy } from '../../http/address-policy';
import { parseResolveEntries } from '../../http/resolve-overrides';
import { findOrInstallChromium } from '../../stack/chromium';
import { clusterBucketForCrawl, connectOrStartStack, type RunningStack } from '../../stack/stack';
import { newCampaignId, runningCampaigns, startCampaign } from '../../temporal/campaign-client';
import { connectClient, ensureSearchAttributes, TemporalUnavailableError } from '../../temporal/connect';
import { CampaignHosts } from '../../redis/campaign-hosts';
import { checkRedis, createRedis, RedisUnavailableError } from '../../redis/client';
import { normalizeUrl } from '../../url/normalize';
import { loadHandler, resolveHandlerSpec } from '../../handlers/loader';
import { readCookiesFile } from '../../http/cookies-file';
import { ensureWorkflowBundle } from '../../worker/workflow-bundle';
import { WorkerCrashLoopError, WorkerPool } from '../../worker/worker-pool';
import { campaignStatusQuery, type CampaignResult, type CampaignStatus } from '../../../workflows/messages';
import { UsageError } from '../usage-error';
import { ProgressReporter } from '../progress';
import { checkSeedList, copyStdinSeeds, readResolveFile, seedsFileLocation } from '../seed-lists';
import { loadCredentialsFile } from '../../http/credentials';
import { proxyFilesFor, removeProxySecrets } from '../proxy-files';
import { isLocationUrl } from '../../storage/output-location-rules';
import { seenFilterLine } from '../../redis/seen-bloom';

export interface CrawlOptions {
  maxPages?: number;
  maxDepth?: number;
  delayMs?: number;
  sameDomain?: boolean;
  sameHost?: boolean;
  anyDomain?: boolean;
  domains?: string;
  out?: string;
  workers: number;
  resolve: string[];
  /** A seed list: path, http(s) URL, or `-` for standard input. */
  seedsFile?: string;
  resolveFile?: string;
  json?: boolean;
  id?: string;
  userAgent?: string;
  ignoreRobots?: boolean;
  maxPagesPerHost?: number;
  maxLinksPerPage?: number;
  maxSitemapsPerHost?: number;
  maxEmbedsPerPage?: number;
  maxEmbeds?: number;
  requisites?: RequisiteMode;
  render?: RenderMode;
  /** browser.screenshot and browser.text: what `crawler qa` compares a replay with. */
  screenshot?: boolean;
  text?: boolean;
  /** A number, or `none` (null in the campaign input; see limitOrNone). */
  maxInFlightPerAddress?: number | 'none';
  maxActiveHosts?: number;
  allowAddresses?: string;
  allowPrivate?: boolean;
  sitemaps?: SitemapMode;
  dedup?: DedupMode;
  simhashDistance?: number;
  nonHtml?: NonHtmlPolicy;
  maxUrlLength?: number;
  politenessKey?: PolitenessKey;
  priority: string[];
  /** frontier.spillAbove, or `none` (never spill: null in the campaign input; see limitOrNone). */
  spillAbove?: number | 'none';
  /** frontier.seen and frontier.seenRate: the URL-seen set, exact or a Bloom filter at that false-positive rate. */
  seen?: SeenSet;
  seenRate?: number;
  /** ms, or `never` (null in the campaign input; see limitOrNone). */
  retention?: number | 'never';
  retentionKeep?: RetentionKeep;
  handler?: string;
  handlerTimeoutMs?: number;
  cookies?: CookieMode;
  /** A Netscape cookies.txt; the input carries its absolute path, the workers read it. */
  cookiesFile?: string;
  /** Continuous crawling: revisit every URL, between these bounds (ms). */
  revisit?: boolean;
  revisitMin?: number;
  revisitMax?: number;
  /** scope.include / scope.exclude (repeatable). */
  include?: string[];
  exclude?: string[];
  /** fetch.headers, "Name: value" (repeatable). */
  header?: string[];
  credentialsFile?: string;
  warcKeepSecrets?: boolean;
  /** output.s3: how workers reach the bucket of an s3:// --out (never its credentials). */
  s3Endpoint?: string;
  s3Region?: string;
  s3PathStyle?: boolean;
  /** Proxy URLs (`--proxy`, repeatable): written to a private file, never put in the campaign input. */
  proxy?: string[];
  /** Proxy lists (`--proxy-file`, repeatable). */
  proxyFile?: string[];
  /** Set by prepareCrawlInput: the absolute paths that go in fetch.proxyFiles. */
  proxyFiles?: string[];
}

export const wholeNumber = (name: string) => (raw: string) => {
  if (!/^-?\d+$/.test(raw.trim())) throw new InvalidArgumentError(`${name} must be a whole number`);
  const n = Number(raw);
  if (n < 0) throw new InvalidArgumentError(`${name} must not be negative (got ${n})`);
  return n;
};
const collect = (v: string, acc: string[]) => [...acc, v];
/** A decimal number (0.01, 1e-3); its bounds are the setting's, checked with the rest of the input. */
const fraction = (name: string) => (raw: string) => {
  const n = Number(raw.trim());
  if (raw.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError(`${name} must be a number such as 0.01`);
  return n;
};

/**
 * `--flag N|none`. The parser returns the word, not null: commander (v14)
 * stores a parser's null or undefined as '' (its stand-in for a missing
 * value), which the campaign schema then refuses. buildCampaignInput turns
 * the word into the null of the campaign input.
 */
export const limitOrNone =
  (name: string) =>
  (raw: string): number | 'none' => {
    if (raw.trim().toLowerCase() === 'none') return 'none';
    if (!/^\s*\d+\s*$/.test(raw)) throw new InvalidArgumentError(`${name} must be a whole number, or none for unlimited (got ${JSON.stringify(raw)})`);
    return Number(raw);
  };

/** A flag taking one of a setting's values (declared once, in src/config/campaign.ts). */
export const choice =
  <T extends string>(name: string, values: readonly T[]) =>
  (raw: string): T => {
    if (!values.includes(raw as T)) throw new InvalidArgumentError(`${name} must be one of ${values.join(', ')} (got ${JSON.stringify(raw)})`);
    return raw as T;
  };
/** "a (default), b, c" for a flag's help. */
const choices = (values: readonly string[], fallback: string) => values.map((v) => (v === fallback ? `${v} (default)` : v)).join(', ');

const DURATION_UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--revisit-min 1h` / `30d` / `90m` / `5s`: a duration given with its unit. */
export const parseDuration = (flag: string) => (raw: string) => {
  const m = /^(\d+)([smhd])$/.exec(raw.trim().toLowerCase());
  if (!m || Number(m[1]) === 0) throw new InvalidArgumentError(`${flag} must be a whole number above 0 with a unit s, m, h or d (such as 1h or 30d; got ${JSON.stringify(raw)})`);
  return Number(m[1]) * DURATION_UNITS[m[2]];
};

/**
 * `--retention 7d` / `36h` / `90m` / `never`: how long a finished campaign's
 * Redis keys stay. `never` comes back as the word, for the reason limitOrNone gives.
 */
export function parseRetention(raw: string): number | 'never' {
  const v = raw.trim().toLowerCase();
  if (v === 'never') return 'never';
  const m = /^(\d+)([mhd])$/.exec(v);
  // Seconds are for revisit bounds; a retention that short would drop keys a finishing campaign still reads.
  if (!m) throw new InvalidArgumentError(`--retention must be a number with a unit m, h or d (such as 7d or 36h), or never (got ${JSON.stringify(raw)})`);
  return Number(m[1]) * DURATION_UNITS[m[2]];
}

/**
 * A server named by the environment did not answer: say what to check, and
 * how to let crawl bring its own (not an option with TLS / API-key settings,
 * which are for a server of the operator's).
 */
function hint(err: unknown, setting: 'redisUrl' | 'temporalAddress', own: string): unknown {
  if (!(err instanceof RedisUnavailableError || err instanceof TemporalUnavailableError) || !explicitSetting(setting)) return err;
  const variable = settingVariable(setting);
  const remote = setting === 'temporalAddress' && temporalIsRemote(processSettings());
  const tail = remote
    ? 'Check the address, TLS settings and credentials.'
    : `Check that it runs at that address (and its credentials), or unset ${variable} so that crawl starts ${own}.`;
  err.message = `${err.message.replace(/\.+$/, '')}. ${tail}`;
  return err;
}

/**
 * `--priority REGEX=N`: split at the last `=`, so the expression may contain
 * `=` itself (`[?&]page=1$=3`). Range and syntax are checked with the rest of
 * the campaign input.
 */
export function parsePriorityFlag(raw: string): { pattern: string; priority: number } {
  const eq = raw.lastIndexOf('=');
  const pattern = eq < 0 ? '' : raw.slice(0, eq);
  const n = eq < 0 ? '' : raw.slice(eq + 1).trim();
  if (!pattern || !/^[+-]?\d+$/.test(n)) throw new Error(`--priority ${JSON.stringify(raw)}: expected REGEX=N with N a whole number, e.g. --priority '/products/=5'`);
  return { pattern, priority: Number(n) };
}

/**
 * Everything the user typed, checked before anything starts. Pure: lists
 * named by --seeds-file / --resolve-file are read by prepareCrawlInput, which
 * passes the seed list's final location in `o.seedsFile`.
 */
export function buildCampaignInput(seeds: string[], o: CrawlOptions): CampaignInput & { campaignId: string } {
  const problems: string[] = [];
  if (seeds.length === 0 && o.seedsFile === undefined) problems.push('give seed URLs, or a list of them with --seeds-file FILE|URL|- (one URL per line)');
  seeds.forEach((seed, i) => {
    let url: URL;
    try {
      normalizeUrl(seed);
      url = new URL(seed.trim());
    } catch (err) {
      problems.push(`seed ${JSON.stringify(seed)}: ${(err as Error).message}`);
      return;
    }
    // Seeds travel in the campaign input, hence in Temporal history and the Web UI, and a
    // URL's user:password@ is never sent (normalisation drops it): refused, without echoing it.
    if (url.username !== '' || url.password !== '')
      problems.push(`seed ${i + 1}: holds user:password@, which the crawler never sends and the campaign's history would keep; give the credentials in --credentials-file`);
  });
  try {
    parseResolveEntries(o.resolve);
  } catch (err) {
    problems.push((err as Error).message);
  }
  const allowAddresses =
    o.allowAddresses
      ?.split(',')
      .map((c) => c.trim())
      .filter(Boolean) ?? [];
  try {
    createAddressPolicy({ allow: allowAddresses });
  } catch (err) {
    problems.push(`--allow-addresses: ${(err as Error).message}`);
  }
  const priorities: { pattern: string; priority: number }[] = [];
  for (const raw of o.priority ?? []) {
    try {
      priorities.push(parsePriorityFlag(raw));
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  const scopeFlags = [o.sameDomain, o.sameHost, o.anyDomain, o.domains !== undefined].filter(Boolean).length;
  if (scopeFlags > 1) problems.push('choose one of --same-domain, --same-host, --any-domain, --domains');
  if (!o.revisit && (o.revisitMin !== undefined || o.revisitMax !== undefined)) problems.push('--revisit-min and --revisit-max need --revisit');
  const s3Flags = (o.s3Endpoint !== undefined || o.s3Region !== undefined || o.s3PathStyle) && !(o.out !== undefined && isLocationUrl(o.out));
  if (s3Flags) problems.push('--s3-endpoint, --s3-region and --s3-path-style are for an output in a bucket: --out s3://bucket/prefix');
  if (problems.length) throw new UsageError(problems.join('\n'));
  const campaignId = o.id ?? newCampaignId();
  const input: CampaignInput & { campaignId: string } = {
    campaignId,
    seeds,
    ...(o.seedsFile !== undefined ? { seedsFile: o.seedsFile } : {}),
    scope: {
      ...(o.domains !== undefined
        ? {
            mode: 'domains',
            domains: o.domains
              .split(',')
              .map((d) => d.trim())
              .filter(Boolean),
          }
        : { mode: o.sameHost ? 'same-host' : o.anyDomain ? 'any' : ('same-domain' as const) }),
      ...(o.include?.length ? { include: o.include } : {}),
      ...(o.exclude?.length ? { exclude: o.exclude } : {}),
    },
    budgets: {
      maxPages: o.maxPages ?? null,
      maxDepth: o.maxDepth ?? null,
      maxPagesPerHost: o.maxPagesPerHost ?? null,
      ...(o.maxLinksPerPage !== undefined ? { maxLinksPerPage: o.maxLinksPerPage } : {}),
      ...(o.maxSitemapsPerHost !== undefined ? { maxSitemapsPerHost: o.maxSitemapsPerHost } : {}),
      ...(o.maxEmbedsPerPage !== undefined ? { maxEmbedsPerPage: o.maxEmbedsPerPage } : {}),
      ...(o.maxEmbeds !== undefined ? { maxEmbeds: o.maxEmbeds } : {}),
    },
    politeness: {
      ...(o.delayMs !== undefined ? { minDelayMs: o.delayMs } : {}),
      ...(o.userAgent ? { userAgent: o.userAgent } : {}),
      ...(o.ignoreRobots ? { respectRobots: false } : {}),
      ...(o.politenessKey !== undefined ? { key: o.politenessKey } : {}),
      ...(o.maxActiveHosts !== undefined ? { maxActiveHosts: o.maxActiveHosts } : {}),
      ...(o.maxInFlightPerAddress !== undefined ? { maxInFlightPerAddress: o.maxInFlightPerAddress === 'none' ? null : o.maxInFlightPerAddress } : {}),
    },
    fetch: {
      resolve: o.resolve,
      allowAddresses,
      ...(o.allowPrivate ? { refusePrivateAddresses: false } : {}),
      ...(o.header?.length ? { headers: o.header } : {}),
      // The path, made absolute for the workers; never the file's contents (they would land in Temporal history).
      ...(o.credentialsFile !== undefined ? { credentialsFile: path.resolve(o.credentialsFile) } : {}),
      ...(o.proxyFiles && o.proxyFiles.length > 0 ? { proxyFiles: o.proxyFiles } : {}),
    },
    ...(o.maxUrlLength !== undefined ? { traps: { maxUrlLength: o.maxUrlLength } } : {}),
    content: {
      ...(o.dedup !== undefined ? { dedup: o.dedup } : {}),
      ...(o.simhashDistance !== undefined ? { maxSimhashDistance: o.simhashDistance } : {}),
      ...(o.nonHtml !== undefined ? { nonHtml: o.nonHtml } : {}),
    },
    ...(o.sitemaps !== undefined ? { sitemaps: o.sitemaps } : {}),
    ...(o.requisites !== undefined ? { requisites: o.requisites } : {}),
    ...(o.render !== undefined ? { render: o.render } : {}),
    ...(o.screenshot || o.text ? { browser: { ...(o.screenshot ? { screenshot: true } : {}), ...(o.text ? { text: true } : {}) } } : {}),
    output: {
      dir: outputDirArg(o.out ?? path.join('crawl-output', campaignId)),
      ...(o.warcKeepSecrets ? { warcKeepSecrets: true } : {}),
      ...(o.s3Endpoint !== undefined || o.s3Region !== undefined || o.s3PathStyle
        ? {
            s3: {
              ...(o.s3Endpoint !== undefined ? { endpoint: o.s3Endpoint } : {}),
              ...(o.s3Region !== undefined ? { region: o.s3Region } : {}),
              ...(o.s3PathStyle ? { pathStyle: true } : {}),
            },
          }
        : {}),
    },
    ...(priorities.length > 0 || o.spillAbove !== undefined || o.seen !== undefined || o.seenRate !== undefined
      ? {
          frontier: {
            ...(priorities.length > 0 ? { priorities } : {}),
            ...(o.spillAbove !== undefined ? { spillAbove: o.spillAbove === 'none' ? null : o.spillAbove } : {}),
            ...(o.seen !== undefined ? { seen: o.seen } : {}),
            ...(o.seenRate !== undefined ? { seenRate: o.seenRate } : {}),
          },
        }
      : {}),
    ...(o.retention !== undefined || o.retentionKeep !== undefined
      ? {
          retention: {
            ...(o.retention !== undefined ? { redisMs: o.retention === 'never' ? null : o.retention } : {}),
            ...(o.retentionKeep !== undefined ? { keep: o.retentionKeep } : {}),
          },
        }
      : {}),
    ...(o.handler !== undefined ? { handler: resolveHandlerSpec(o.handler) } : {}),
    ...(o.handlerTimeoutMs !== undefined ? { handlerTimeoutMs: o.handlerTimeoutMs } : {}),
    ...(o.cookies !== undefined ? { cookies: o.cookies } : {}),
    ...(o.cookiesFile !== undefined ? { cookiesFile: path.resolve(o.cookiesFile) } : {}),
    ...(o.revisit
      ? { revisit: { enabled: true, ...(o.revisitMin !== undefined ? { minMs: o.revisitMin } : {}), ...(o.revisitMax !== undefined ? { maxMs: o.revisitMax } : {}) } }
      : {}),
  };
  try {
    resolveCampaignSettings(input, campaignId);
  } catch (err) {
    if (err instanceof CampaignInputError) throw new UsageError(err.problems.join('\n'));
    throw err;
  }
  return input;
}

/**
 * `--out` as the campaign input carries it: a folder made absolute (workers
 * resolve a relative one against their own working directories), or a URL
 * (`s3://bucket/prefix`) as typed, for the campaign schema to check.
 */
/**
 * On a `cluster up` cluster the workers share no folder: a campaign given no
 * `--out` and no S3 setting goes to the cluster's bucket (its endpoint and
 * bucket; null when not on a cluster, or when the flags say where).
 */
export function clusterBucketByDefault(o: Pick<CrawlOptions, 'out' | 's3Endpoint' | 's3Region' | 's3PathStyle'>): { endpoint: string; bucket: string } | null {
  return o.out === undefined && o.s3Endpoint === undefined && o.s3Region === undefined && !o.s3PathStyle ? clusterBucketForCrawl() : null;
}

export const outputDirArg = (out: string): string => (isLocationUrl(out) ? out : path.resolve(out));

export interface CrawlIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Warnings and notes (stderr). */
  log: (m: string) => void;
}

/**
 * buildCampaignInput plus the lists named on the command line: the
 * --resolve-file entries join the --resolve flags, and the seed list is
 * located (made absolute; standard input copied into the output folder) and
 * read once to catch a bad file before anything starts. All flags are
 * checked before standard input is consumed.
 */
export async function prepareCrawlInput(seeds: string[], o: CrawlOptions, io: CrawlIo): Promise<CampaignInput & { campaignId: string }> {
  const campaignId = o.id ?? newCampaignId();
  const outDir = outputDirArg(o.out ?? path.join('crawl-output', campaignId));
  // Standard input is copied into the output folder for the workers to read; a bucket is no folder they read seeds from.
  if (o.seedsFile === '-' && isLocationUrl(outDir))
    throw new UsageError('--seeds-file -: standard input is copied into the output folder for the workers; with --out s3://… give a file every worker can read, or an http(s) URL');
  const resolve = o.resolveFile !== undefined ? [...o.resolve, ...(await readResolveFile(o.resolveFile))] : o.resolve;
  const list = o.seedsFile !== undefined ? seedsFileLocation(o.seedsFile, outDir, campaignId) : null;
  // Checked and written before the rest, so a bad proxy is exit code 2 with nothing started.
  const proxyFiles = await proxyFilesFor(campaignId, o);
  const input = buildCampaignInput(seeds, { ...o, id: campaignId, out: outDir, resolve, seedsFile: list?.location, proxyFiles });
  // Loaded here as the workers this command starts will load it, so a typo or a syntax error is
  // exit code 2, not a failed campaign. Workers elsewhere (--workers 0) may keep it at another
  // path: their prepareCampaign checks it and refuses the campaign.
  if (input.handler && o.workers !== 0) await loadHandler(input.handler).catch((err: unknown) => Promise.reject(new UsageError((err as Error).message)));
  // A credentials file is checked here whoever runs the workers: unreadable, readable by all or
  // malformed is exit code 2 naming the line (never its contents), before anything starts.
  if (input.fetch?.credentialsFile) await loadCredentialsFile(input.fetch.credentialsFile).catch((err: unknown) => Promise.reject(new UsageError((err as Error).message)));
  // Read as the workers will read it: unreadable, readable by anyone, or a malformed line is exit code 2 (the line named, never a value).
  if (input.cookiesFile && o.workers !== 0) await readCookiesFile(input.cookiesFile).catch((err: unknown) => Promise.reject(new UsageError((err as Error).message)));
  // Found (or installed, as root) here as the workers this command starts will find it, and started once: no Chromium, or one
  // that does not start, is exit code 2 saying what to install.
  if ((input.render === 'browser' || input.render === 'auto') && o.workers !== 0)
    await findOrInstallChromium()
      // Loaded only then: playwright-core is not what a crawl without rendering should wait for.
      .then(async (chromium) => (await import('../../browser/browser-pool')).checkChromiumStarts(chromium))
      .catch((err: unknown) => Promise.reject(new UsageError((err as Error).message)));
  if (list) {
    if (list.fromStdin) input.seedsFile = await copyStdinSeeds(io.stdin, outDir, campaignId);
    const check = await checkSeedList(input.seedsFile!, seeds.length, io.log, list.fromStdin ? '-' : o.seedsFile).catch(async (err: unknown) => {
      // The copy of a list no campaign will read is clutter in the output folder.
      if (list.fromStdin) await rm(input.seedsFile!, { force: true });
      throw err;
    });
    if (check.complete) io.log(`seed list ${input.seedsFile}: ${check.seeds - check.invalid} seed(s)`);
  }
  return input;
}

/** The options that shape a campaign: shared by `crawl` and `schedule create`, so a scheduled crawl takes the same flags. */
export function campaignOptions(command: Command): Command {
  return command
    .option('--max-pages <n>', 'stop after this many page requests', wholeNumber('--max-pages'))
    .option('--max-depth <n>', 'follow links at most this many hops from a seed', wholeNumber('--max-depth'))
    .option('--delay-ms <n>', 'minimum pause between two requests to one host (default 1000)', wholeNumber('--delay-ms'))
    .option('--max-active-hosts <n>', 'crawl at most this many hosts at once (default: all; each host is always one request at a time)', wholeNumber('--max-active-hosts'))
    .option('--same-domain', "stay on the seeds' registrable domains (default)")
    .option('--same-host', "stay on the seeds' hosts")
    .option('--any-domain', 'follow links anywhere')
    .option('--domains <list>', 'stay on these comma-separated domains and their subdomains')
    .option('--resolve <host:port:addr>', 'send requests for host:port to addr, like curl --resolve (repeatable)', collect, [])
    .option('--resolve-file <file>', 'more --resolve entries, one HOST:PORT:ADDR per line (# comments)')
    .option('--user-agent <ua>', 'User-Agent header; its product token is matched against robots.txt')
    .option('--ignore-robots', 'do not fetch or obey robots.txt (only for sites you own)')
    .option('--max-pages-per-host <n>', 'at most this many requests per host (guards against infinite sites)', wholeNumber('--max-pages-per-host'))
    .option('--max-links-per-page <n>', 'take at most this many links from one page; the rest are counted as dropped (default 3000)', wholeNumber('--max-links-per-page'))
    .option('--max-sitemaps-per-host <n>', 'fetch at most this many sitemaps, sitemap indexes and feeds per host (default 50)', wholeNumber('--max-sitemaps-per-host'))
    .option(
      '--requisites <mode>',
      `${choices(REQUISITE_MODES, CAMPAIGN_DEFAULTS.requisites)}: fetch the stylesheets, scripts, images and fonts each page needs, so the archive replays whole`,
      choice('--requisites', REQUISITE_MODES),
    )
    .option(
      '--render <mode>',
      `${choices(RENDER_MODES, CAMPAIGN_DEFAULTS.render)}: render every HTML page in Chromium (browser), or only those of the URL patterns where rendering finds more (auto), and take their links from the rendered page (docs/rendering.md)`,
      choice('--render', RENDER_MODES),
    )
    .option(
      '--screenshot',
      'store screenshots of each rendered page in the WARC as Browsertrix does (urn:view:, urn:thumbnail:, urn:fullPage:): thumbnails in ReplayWeb.page, what `crawler qa` compares the replay with',
    )
    .option('--text', "store each rendered page's text (innerText) in the WARC (urn:text:): listed with its page by export --wacz, compared with the replay's by `crawler qa`")
    .option('--max-embeds-per-page <n>', 'take at most this many requisites from one page or stylesheet (default 300)', wholeNumber('--max-embeds-per-page'))
    .option('--max-embeds <n>', 'request at most this many embeds in the whole campaign (default unlimited)', wholeNumber('--max-embeds'))
    .option(
      '--max-in-flight-per-address <n|none>',
      'at most this many requests in flight to one IP address, whatever the politeness key (default 8; none: unlimited)',
      limitOrNone('--max-in-flight-per-address'),
    )
    .option('--max-url-length <n>', 'ignore discovered links longer than this (default 2048)', wholeNumber('--max-url-length'))
    .option('--allow-addresses <cidrs>', 'comma-separated private ranges that may be fetched, e.g. 10.1.0.0/16')
    .option('--allow-private', 'fetch loopback/private/link-local addresses too (default: refused)')
    .option(
      '--proxy <url>',
      'send requests through this forward proxy: http://, https://, socks5:// or socks5h://, with user:password@ if needed (repeatable; each host sticks to one)',
      collect,
      [],
    )
    .option('--proxy-file <file>', 'more proxies, one URL a line (# comments); the file must not be readable by every user (repeatable)', collect, [])
    .option(
      '--politeness-key <key>',
      `what shares one politeness clock: ${choices(POLITENESS_KEYS, CAMPAIGN_DEFAULTS.politeness.key)}`,
      choice('--politeness-key', POLITENESS_KEYS),
    )
    .option(
      '--sitemaps <mode>',
      `${choices(SITEMAP_MODES, CAMPAIGN_DEFAULTS.sitemaps)}: robots.txt Sitemap: lines, and /sitemap.xml with robots+root`,
      choice('--sitemaps', SITEMAP_MODES),
    )
    .option('--dedup <mode>', `content dedup: ${choices(DEDUP_MODES, CAMPAIGN_DEFAULTS.content.dedup)}`, choice('--dedup', DEDUP_MODES))
    .option('--simhash-distance <n>', 'largest SimHash distance counted as a near-duplicate (default 3)', wholeNumber('--simhash-distance'))
    .option(
      '--non-html <policy>',
      `${choices(NON_HTML_POLICIES, CAMPAIGN_DEFAULTS.content.nonHtml)}: what becomes of the bodies of non-HTML responses`,
      choice('--non-html', NON_HTML_POLICIES),
    )
    .option('--priority <regex=n>', 'URLs matching REGEX are fetched before others of their host (higher N first, -8…8, default 0; first match wins; repeatable)', collect, [])
    .option(
      '--spill-above <urls>',
      `a host whose frontier holds more URLs than this keeps about half in Redis and the rest in segments in the output (default ${CAMPAIGN_DEFAULTS.frontier.spillAbove}), or none to keep it all in Redis`,
      limitOrNone('--spill-above'),
    )
    .option(
      '--seen <set>',
      `${choices(SEEN_SETS, CAMPAIGN_DEFAULTS.frontier.seen)}: each host's URL-seen set; bloom takes about a third of the memory and skips a new URL with probability --seen-rate (the summary says how many that is expected to be)`,
      choice('--seen', SEEN_SETS),
    )
    .option(
      '--seen-rate <rate>',
      `with --seen bloom: the chance a new URL is taken for a seen one and skipped (default ${CAMPAIGN_DEFAULTS.frontier.seenRate})`,
      fraction('--seen-rate'),
    )
    .option('--include <regex>', 'follow only links whose normalised URL matches one of these (repeatable; seeds, sitemaps and page requisites exempt)', collect, [])
    .option('--exclude <regex>', 'never enqueue a URL that matches one of these: links, seeds, sitemaps and page requisites (repeatable)', collect, [])
    .option('--header <"Name: value">', 'send this header with every request (repeatable); credentials go in --credentials-file', collect, [])
    .option('--credentials-file <file>', 'origins and their credentials, one a line: user:password, Bearer TOKEN or Name: value (mode 600; docs/operations.md)')
    .option('--warc-keep-secrets', 'keep Authorization, Cookie, Set-Cookie and credential header values in the WARC (default: [redacted])')
    .option(
      '--s3-endpoint <url>',
      "the S3-compatible endpoint of an s3:// --out, e.g. http://127.0.0.1:8333 (default: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL on each worker, else AWS S3); credentials are the AWS SDK's on each machine (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE…)",
    )
    .option('--s3-region <region>', "the bucket's region (default: AWS_REGION on each worker, else us-east-1 with an endpoint)")
    .option('--s3-path-style', 'address the bucket as <endpoint>/<bucket> rather than <bucket>.<endpoint host>, as most self-hosted stores need')
    .option('--retention <duration>', "keep the campaign's Redis keys this long after it ends: 7d (default), 36h, 90m, or never (until `crawler purge`)", parseRetention)
    .option(
      '--retention-keep <what>',
      `which Redis keys outlive the campaign's end: ${choices(RETENTION_KEEPS, CAMPAIGN_DEFAULTS.retention.keep)} (summary: what status, seal and purge read; the content index, seen-sets, frontier leftovers and cookie jars go at the end)`,
      choice('--retention-keep', RETENTION_KEEPS),
    )
    .option('--handler <module>', 'your code run on every page (docs/handlers.md): a .ts/.js file (relative to here) or a package name; items go to <out>/datasets')
    .option('--handler-timeout-ms <n>', 'time limit of one handler hook call (default 30000)', wholeNumber('--handler-timeout-ms'))
    .option(
      '--cookies <mode>',
      `${choices(COOKIE_MODES, CAMPAIGN_DEFAULTS.cookies)}: keep the cookies sites set and send them back, as a browser does (off: every request anonymous)`,
      choice('--cookies', COOKIE_MODES),
    )
    .option(
      '--cookies-file <file>',
      'start with the cookies of this Netscape cookies.txt (curl -c, wget, browser extensions), e.g. to crawl logged in; must not be readable by others',
    )
    .option('--revisit', 'keep the pages fresh: revisit every URL, more often the more it changes; the campaign runs until cancelled (docs/continuous-crawling.md)')
    .option('--revisit-min <duration>', 'shortest revisit interval: 1h (default), 90m, 30s…', parseDuration('--revisit-min'))
    .option('--revisit-max <duration>', 'longest revisit interval: 30d (default), 7d, 12h…', parseDuration('--revisit-max'));
}

export function registerCrawlCommand(program: Command): void {
  campaignOptions(
    program
      .command('crawl')
      .description('crawl from the given seeds: brings up the stack if needed, starts workers, waits, prints a summary')
      .argument('[seeds...]', 'seed URLs (optional with --seeds-file)')
      .option(
        '--seeds-file <file|url|->',
        'more seeds from a list: one URL per line, # comments, gzip accepted; - reads standard input (copied into the output folder for the workers)',
      ),
  )
    .option(
      '--out <dir>',
      "output folder, or s3://bucket/prefix (default crawl-output/<campaign>; on a `crawler cluster up` cluster, s3://crawls/<campaign> in the cluster's object store)",
    )
    .option('--id <campaign>', 'campaign ID (default: generated)')
    .option('--workers <n>', 'worker processes to start (0: use workers running elsewhere)', wholeNumber('--workers'), 1)
    .option('--json', 'print the summary as one JSON object on the last line of stdout')
    .action(async (seeds: string[], o: CrawlOptions) => {
      // While the live status line shows, other lines (the workers' logs) go above it.
      let progress: ProgressReporter | null = null;
      const log = (m: string) => (progress ? progress.print(m) : process.stderr.write(`${m}\n`));
      const clusterBucket = clusterBucketByDefault(o);
      if (clusterBucket) {
        o.id ??= newCampaignId();
        Object.assign(o, { out: `s3://${clusterBucket.bucket}/${o.id}`, s3Endpoint: clusterBucket.endpoint, s3PathStyle: true });
        log(`output: ${o.out} in the cluster's object store (${clusterBucket.endpoint})`);
      }
      const input = await prepareCrawlInput(seeds, o, { stdin: process.stdin, log });
      const cfg = processSettings();
      let stack: RunningStack | null = null;
      // Joining the project's stack may take a while (starting its servers): an interrupt then
      // waits for it, and leaves it, so no server is left running with no crawl to stop it.
      let joining: Promise<RunningStack> | null = null;
      let pool: WorkerPool | null = null;
      let interrupted = false;
      const cleanup = async () => {
        await pool?.stopAll();
        await (stack ?? (await joining?.catch(() => null)))?.stop();
      };
      const onSignal = () => {
        if (interrupted) process.exit(130);
        interrupted = true;
        log(
          `\ninterrupted: stopping workers${stack?.embedded.length ? ' (the embedded servers stop too unless another crawl uses them)' : ''}. ` +
            `Campaign ${input.campaignId} is durable: it continues when workers run again (npm run crawler -- worker).`,
        );
        void cleanup().then(() => process.exit(130));
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        // A Redis named by REDIS_URL is checked before anything starts:
        // workers would retry a dead one in silence and the campaign would
        // sit at "starting". Likewise a Temporal server named by
        // TEMPORAL_ADDRESS, before a redis-server is started for nothing.
        // (Servers the stack finds or starts answered already.)
        const namedRedis = explicitSetting('redisUrl');
        if (namedRedis) {
          await checkRedis(namedRedis).catch((err: unknown) => {
            throw hint(err, 'redisUrl', 'its own redis-server');
          });
        }
        const connect = (address: string) =>
          connectClient(address, cfg.temporalNamespace).catch((err: unknown) => {
            throw hint(err, 'temporalAddress', 'its own dev server');
          });
        const namedAddress = explicitSetting('temporalAddress');
        const named = namedAddress ? await connect(namedAddress) : null;
        joining = connectOrStartStack({ log });
        stack = await joining;
        const client = named ?? (await connect(stack.temporalAddress));
        await ensureSearchAttributes(client, cfg.temporalNamespace);
        if (o.workers > 0) {
          const bundle = await ensureWorkflowBundle();
          pool = new WorkerPool(
            { TEMPORAL_ADDRESS: stack.temporalAddress, REDIS_URL: stack.redisUrl, CRAWLER_WORKFLOW_BUNDLE: bundle },
            { onLog: log, supervise: true, renders: (input.render ?? 'off') !== 'off' },
          );
          await pool.start(o.workers);
        }
        const handle = await startCampaign(client, cfg.taskQueue, input);
        const ui = stack.uiUrl ? `${stack.uiUrl}/namespaces/${cfg.temporalNamespace}/workflows/${encodeURIComponent(input.campaignId)}` : null;
        log(`campaign ${input.campaignId} started${ui ? ` — Web UI: ${ui}` : ''}`);
        if (input.revisit?.enabled) log(`revisit mode: the campaign keeps its pages fresh until \`crawler cancel ${input.campaignId}\` (or a budget) ends it`);
        // Campaigns interrupted earlier go on running (they are durable): say so, since they share these workers.
        const others = await runningCampaigns(client, cfg.taskQueue, input.campaignId).catch(() => []);
        if (others.length > 0) {
          log(
            `sharing the workers with ${others.length === 20 ? '20 or more' : others.length} other running campaign(s): ${others.slice(0, 5).join(', ')}${others.length > 5 ? ', …' : ''}. ` +
              'Each gets a fair share; stop one with: npm run crawler -- cancel <campaign>',
          );
        }
        // The counts come from Redis, where sessions keep them within about
        // 2 s; the campaign's own answer is as of its last dispatch round.
        const redis = createRedis(stack.redisUrl);
        const poll = async (): Promise<CampaignStatus> => {
          const s = await handle.query(campaignStatusQuery);
          return { ...s, totals: await new CampaignHosts(redis, s.campaignKey).live() };
        };
        const shown = new ProgressReporter(process.stderr, poll, input.budgets?.maxPages ?? null);
        progress = shown;
        shown.start();
        let result: CampaignResult;
        try {
          // Workers that die are replaced; ones that keep dying end the wait
          // (the campaign itself is untouched and resumes with healthy workers).
          result = await (pool ? Promise.race([handle.result(), pool.failed()]) : handle.result());
        } catch (err) {
          if (err instanceof WorkerCrashLoopError) {
            // The embedded servers stop with the last crawl using them; `worker` does not start them.
            const servers = stack?.embedded.length ? 'bring the servers up (npm run crawler -- stack up), ' : '';
            throw new Error(
              `${err.message}\nCampaign ${input.campaignId} is intact in Temporal: fix the cause, then ${servers}run workers ` +
                `(npm run crawler -- worker) and follow it with npm run crawler -- status ${input.campaignId}.`,
              { cause: err },
            );
          }
          if (err instanceof WorkflowFailedError) throw new Error(`campaign ${input.campaignId} failed: ${err.cause?.message ?? err.message}`, { cause: err });
          throw err;
        } finally {
          await shown.stop();
          progress = null;
          redis.disconnect();
        }
        await client.connection.close();
        // The campaign is over: the --proxy values written for its workers go (a --proxy-file is the operator's).
        await removeProxySecrets(input.fetch?.proxyFiles ?? []);
        const summary = { ...result, webUi: ui };
        process.stdout.write(summaryLines(result, ui).join('\n') + '\n');
        if (o.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        if (!interrupted) await cleanup();
      }
    });
}

/** What `crawl` prints when its campaign ends (`ui`: the campaign's page in the Web UI). */
function summaryLines(result: CampaignResult, ui: string | null): string[] {
  return [
    `campaign ${result.campaignId}: ${result.status}`,
    `  pages ${result.pages}, failed ${result.failed}, skipped ${result.skipped}, bytes ${result.bytes}, hosts ${result.hosts}`,
    ...(result.embeds ? [`  embeds ${result.embeds.fetched}, failed ${result.embeds.failed}, skipped ${result.embeds.skipped} (page requisites, apart from the pages)`] : []),
    ...(result.seenFilter ? [`  ${seenFilterLine(result.seenFilter)}`] : []),
    `  duration ${(result.durationMs / 1000).toFixed(1)} s`,
    `  output ${result.outputDir}`,
    ...sealLines(result),
    ...(ui ? [`  Web UI ${ui}`] : []),
    ...result.problems.map((p) => `  problem: ${p}`),
  ];
}

/** The sealed index and the revisit records, as the summary shows them. */
export function sealLines(result: Pick<CampaignResult, 'sealedIndex' | 'revisits' | 'rendered'>): string[] {
  const out: string[] = [];
  const sealed = result.sealedIndex;
  if (sealed) {
    const gaps = sealed.missing ? `, ${sealed.missing} committed URL(s) without a line` : '';
    out.push(`  sealed index ${sealed.file} (${sealed.lines} URLs, ${sealed.dropped} raw line(s) of lost attempts left out${gaps})`);
  }
  if (result.revisits) out.push(`  revisit records ${result.revisits.records}, payload bytes not stored again ${result.revisits.bytesSaved}`);
  const r = result.rendered;
  if (r) {
    const why = Object.entries(r.reasons)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    out.push(`  rendered ${r.pages} of ${r.htmlPages} HTML pages (${(r.share * 100).toFixed(1)} %)${why ? `: ${why}` : ''}`);
  }
  return out;
}
