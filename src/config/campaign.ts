// The campaign's settings: one plain-JSON input type (so `temporal workflow
// start --input '{…}'` works), one place for defaults, one validator.
// Pure module: the campaign workflow imports it, so no Node APIs here and no
// URL parsing (seeds are validated by the prepareCampaign activity and the CLI).

import { DEFAULT_TRAP_LIMITS, type TrapLimits } from '../url/traps';
import { MAX_ACTIVE_HOSTS } from './steering';
import { CrawlerError } from '../errors';

export type ScopeMode = 'same-domain' | 'same-host' | 'domains' | 'any';
/** Where sitemap URLs come from: robots.txt `Sitemap:` lines, plus `/sitemap.xml` with robots+root. */
export type SitemapMode = 'robots+root' | 'robots' | 'off';
/** off: no content dedup; exact: identical bodies; near: identical or SimHash within maxDistance. */
export type DedupMode = 'near' | 'exact' | 'off';

export interface CampaignInput {
  /** Defaults to the workflow ID. */
  campaignId?: string;
  /** Seed URLs inline, for short lists (they travel in the workflow input). Optional when seedsFile is given. */
  seeds?: string[];
  /**
   * A seed list too long for the input: an absolute path every worker can
   * read (the output folder is shared by all of them) or an http(s) URL;
   * one URL per line, `#` comments, plain or gzip. Read in batches by
   * src/seeds/seed-source.ts. Both this and seeds may be given.
   */
  seedsFile?: string | null;
  scope?: { mode?: ScopeMode; domains?: string[] };
  budgets?: {
    /** Page requests across the whole campaign, whatever their outcome (robots.txt and sitemaps excluded); null = unlimited. */
    maxPages?: number | null;
    /** Link hops from a seed; seeds are depth 0; null = unlimited. */
    maxDepth?: number | null;
    /** Requests per host (robots.txt and sitemaps excluded); null = unlimited. The guard against infinite sites. */
    maxPagesPerHost?: number | null;
    /**
     * Links taken from one page (its own, a sitemap's, a handler's); the
     * rest are dropped and counted in the index line (`linksDropped`). A
     * link bomb of 600,000 links otherwise floods Redis in one call.
     */
    maxLinksPerPage?: number;
    /** Sitemap and sitemap-index fetches per host; those beyond it are recorded skipped, not requested. */
    maxSitemapsPerHost?: number;
  };
  politeness?: {
    /** Floor for the pause between two requests to one host. */
    minDelayMs?: number;
    /** Ceiling applied to a robots.txt Crawl-delay, so a hostile value cannot stall a host forever. */
    maxDelayMs?: number;
    userAgent?: string;
    respectRobots?: boolean;
    /** What shares one politeness clock: each host (default), each registrable domain, or each IP address. */
    key?: 'host' | 'domain' | 'ip';
    /**
     * Most hosts crawled at once (the campaign's concurrency; null =
     * unlimited). One host always has one request at a time: robots.txt's
     * Crawl-delay assumes it. Steerable while running (setConcurrency).
     */
    maxActiveHosts?: number | null;
    /**
     * Requests in flight to one IP address at once, whatever the politeness
     * key (null = unlimited): wildcard subdomains of one server are many
     * hosts, each with its own clock, but one machine answers them all.
     */
    maxInFlightPerAddress?: number | null;
  };
  fetch?: {
    /** curl-style HOST:PORT:ADDR overrides (at most MAX_RESOLVE_ENTRIES: they travel in the workflow input). */
    resolve?: string[];
    maxBodyBytes?: number;
    connectTimeoutMs?: number;
    headersTimeoutMs?: number;
    bodyTimeoutMs?: number;
    totalTimeoutMs?: number;
    maxRedirects?: number;
    /** How many times a 5xx / 429 / network failure is retried before the URL is recorded as failed. */
    maxRetries?: number;
    /** Refuse hosts that resolve to loopback, private, link-local or metadata addresses (default true). */
    refusePrivateAddresses?: boolean;
    /** CIDRs fetched even though private (e.g. "10.1.0.0/16"); --resolve pins are always allowed. */
    allowAddresses?: string[];
    /** Deadline of one robots.txt fetch; one that keeps missing it makes the host robots-unavailable. */
    robotsTimeoutMs?: number;
  };
  /** Host sessions: one activity fetches a run of a host's URLs (docs/architecture.md). */
  session?: {
    /**
     * Waits at least this long (a long Crawl-delay, Retry-After, a back-off)
     * end the session and become a durable timer in the host's workflow;
     * shorter gaps are paced inside the session by the host clock.
     */
    durableSleepMs?: number;
    /** A session ends after this many URLs or this long, so its progress lands in history. */
    maxPages?: number;
    maxMs?: number;
  };
  /** Spider-trap URL rules applied to every discovered link. */
  traps?: Partial<TrapLimits>;
  content?: {
    /** Non-HTML responses: store them in WARC (never parsed for links), or record them in the index only. */
    nonHtml?: 'store' | 'skip';
    dedup?: DedupMode;
    /** Largest SimHash Hamming distance that still counts as a near-duplicate (0–15). */
    maxSimhashDistance?: number;
    /** Time limit of parsing one page for links; a page past it is recorded with outcome `parse-timeout`. */
    maxParseMs?: number;
  };
  sitemaps?: SitemapMode;
  /** `dir` may contain `{campaign}`, replaced by the campaign ID (how each run of a schedule gets its own folder). */
  output?: { dir?: string };
  /**
   * The user's code run on every fetched page (docs/handlers.md): an
   * absolute path to a .ts/.mts/.js/.mjs module every worker can read (the
   * crawl command makes a relative path absolute), or a package name
   * resolvable from the workers. null or absent: no handler.
   */
  handler?: string | null;
  /** Time limit of one handler hook call; a hook past it fails that attempt. */
  handlerTimeoutMs?: number;
  frontier?: {
    /**
     * Within a host's frontier, higher priority first, then depth, then
     * discovery. The first rule whose pattern (a JavaScript regular
     * expression, unanchored, matched against the normalised URL) matches
     * gives a URL its priority; no match = 0. Integers from
     * FRONTIER_PRIORITY_MIN to FRONTIER_PRIORITY_MAX.
     */
    priorities?: FrontierPriorityRule[];
  };
  /**
   * How long the campaign's Redis keys (frontiers, seen-sets, content index,
   * host records…) are kept once it has ended (completed, stopped by a
   * budget, cancelled); null = until `crawler purge`. The summary, the WARC
   * and the index do not depend on them.
   */
  retention?: { redisMs?: number | null };
  /**
   * Continuous crawling (docs/continuous-crawling.md): every URL fetched is
   * scheduled for another visit between minMs and maxMs later, the interval
   * adapting to how often the page changes. Such a campaign never completes
   * on its own: only a cancel or a budget ends it.
   */
  revisit?: {
    enabled?: boolean;
    minMs?: number;
    maxMs?: number;
    /** An interval is divided by it after a change, multiplied after none (> 1). */
    factor?: number;
    /**
     * A page whose payload digest changed but whose SimHash moved this many
     * bits or fewer counts as unchanged (boilerplate that differs on every
     * request: a clock, a token); 0 = the digest alone decides.
     */
    minChangeDistance?: number;
    /** A URL answering 404/410 this many visits in a row leaves the schedule (index outcome `gone`). */
    goneAfter?: number;
  };
}

export interface FrontierPriorityRule {
  pattern: string;
  priority: number;
}

export interface CampaignSettings {
  campaignId: string;
  seeds: string[];
  seedsFile: string | null;
  scope: { mode: ScopeMode; domains: string[] };
  budgets: { maxPages: number | null; maxDepth: number | null; maxPagesPerHost: number | null; maxLinksPerPage: number; maxSitemapsPerHost: number };
  politeness: {
    minDelayMs: number;
    maxDelayMs: number;
    userAgent: string;
    respectRobots: boolean;
    key: 'host' | 'domain' | 'ip';
    maxActiveHosts: number | null;
    maxInFlightPerAddress: number | null;
  };
  fetch: {
    resolve: string[];
    maxBodyBytes: number;
    connectTimeoutMs: number;
    headersTimeoutMs: number;
    bodyTimeoutMs: number;
    totalTimeoutMs: number;
    maxRedirects: number;
    maxRetries: number;
    refusePrivateAddresses: boolean;
    allowAddresses: string[];
    robotsTimeoutMs: number;
  };
  session: { durableSleepMs: number; maxPages: number; maxMs: number };
  traps: TrapLimits;
  content: { nonHtml: 'store' | 'skip'; dedup: DedupMode; maxSimhashDistance: number; maxParseMs: number };
  sitemaps: SitemapMode;
  output: { dir: string };
  handler: string | null;
  handlerTimeoutMs: number;
  frontier: { priorities: FrontierPriorityRule[] };
  retention: { redisMs: number | null };
  revisit: RevisitSettings;
}

export interface RevisitSettings {
  enabled: boolean;
  minMs: number;
  maxMs: number;
  factor: number;
  minChangeDistance: number;
  goneAfter: number;
}

/**
 * Bounds of a frontier priority. The frontier score holds priority, depth
 * and discovery order in one double that must stay an exact integer
 * (src/redis/frontier.ts: |score| < 2^53 ≈ 9.007e15), and 17 levels of
 * 1e15 are what fits next to the depth and discovery fields.
 */
export const FRONTIER_PRIORITY_MIN = -8;
export const FRONTIER_PRIORITY_MAX = 8;
/** Rules are tried in order on every discovered URL: keep that cost bounded. */
export const MAX_PRIORITY_RULES = 50;
export const MAX_PRIORITY_PATTERN_LENGTH = 500;
/**
 * The settings ride in the workflow input, the prepareCampaign input and
 * every continue-as-new: Temporal refuses payloads over 2 MB by default. 10,000
 * pins of ~40 bytes are ~400 KB; longer lists want DNS, not pins.
 */
/**
 * What a campaign ID may be: safe in Redis keys, file names and URLs. The
 * colon is there for scheduled runs, whose workflow IDs (their campaign IDs)
 * end in the RFC 3339 time Temporal appends.
 */
export const CAMPAIGN_ID_PATTERN = /^[A-Za-z0-9._:-]{1,80}$/;
export const MAX_RESOLVE_ENTRIES = 10_000;
/** Replaced by the campaign ID in output.dir. */
export const CAMPAIGN_PLACEHOLDER = '{campaign}';
export const MAX_SEEDS_FILE_LENGTH = 4096;
/** Shortest retention: the campaign's last bookkeeping step (its summary) may be retried within it and still find the keys. */
export const MIN_RETENTION_MS = 60_000;
export const MAX_HANDLER_LENGTH = 4096;

export const DEFAULT_USER_AGENT = 'DurableCrawler/0.1 (+https://github.com/durable-crawler/durable-crawler)';

export const CAMPAIGN_DEFAULTS = {
  scope: { mode: 'same-domain' as ScopeMode, domains: [] as string[] },
  // 3,000 links a page: a site's largest ordinary index pages (a book index,
  // a sitemap-like HTML page) stay whole; a link bomb does not reach Redis.
  // 50 sitemaps a host: 2.5 million URLs at the protocol's 50,000 a file.
  budgets: { maxPages: null, maxDepth: null, maxPagesPerHost: null, maxLinksPerPage: 3_000, maxSitemapsPerHost: 50 },
  // 8 requests at once to one address, as Heritrix's and Nutch's defaults.
  politeness: {
    minDelayMs: 1000,
    maxDelayMs: 60_000,
    userAgent: DEFAULT_USER_AGENT,
    respectRobots: true,
    key: 'host' as 'host' | 'domain' | 'ip',
    maxActiveHosts: null,
    maxInFlightPerAddress: 8 as number | null,
  },
  fetch: {
    resolve: [] as string[],
    maxBodyBytes: 10 * 1024 * 1024,
    connectTimeoutMs: 10_000,
    headersTimeoutMs: 30_000,
    bodyTimeoutMs: 30_000,
    totalTimeoutMs: 120_000,
    maxRedirects: 5,
    maxRetries: 3,
    refusePrivateAddresses: true,
    allowAddresses: [] as string[],
    robotsTimeoutMs: 30_000,
  },
  // Chosen by measurement (docs/benchmarks.md): a host session costs a
  // worker nothing while it waits, a durable timer costs the Temporal server
  // about 9 ms of CPU and five history events.
  session: { durableSleepMs: 5_000, maxPages: 1_000, maxMs: 120_000 },
  traps: DEFAULT_TRAP_LIMITS,
  content: { nonHtml: 'store' as 'store' | 'skip', dedup: 'near' as DedupMode, maxSimhashDistance: 3, maxParseMs: 10_000 },
  sitemaps: 'robots+root' as SitemapMode,
  output: { dir: 'crawl-output' },
  handler: null,
  handlerTimeoutMs: 30_000,
  frontier: { priorities: [] as FrontierPriorityRule[] },
  // A week: long enough to look at a finished campaign's hosts with
  // `crawler status` and to resume work on it by hand; the keys of a
  // large campaign are gigabytes (docs/operations.md, sizing).
  retention: { redisMs: (7 * 24 * 60 * 60_000) as number | null },
  // Nutch's AdaptiveFetchSchedule uses 1.5-ish steps; an hour to a month
  // keeps a news front page fresh and a dormant page cheap.
  revisit: { enabled: false, minMs: 60 * 60_000, maxMs: 30 * 24 * 60 * 60_000, factor: 1.5, minChangeDistance: 3, goneAfter: 3 },
} as const;

export class CampaignInputError extends CrawlerError<'INVALID_CAMPAIGN_INPUT'> {
  constructor(readonly problems: string[]) {
    super('INVALID_CAMPAIGN_INPUT', `invalid campaign input: ${problems.join('; ')}`);
    this.name = 'CampaignInputError';
  }
}

const SCOPE_MODES: ScopeMode[] = ['same-domain', 'same-host', 'domains', 'any'];

function nonNegInt(problems: string[], name: string, v: unknown, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    problems.push(`${name} must be a whole number ≥ 0 (got ${JSON.stringify(v)})`);
    return fallback;
  }
  return v;
}

function positiveInt(problems: string[], name: string, v: unknown, fallback: number): number {
  const n = nonNegInt(problems, name, v, fallback);
  if (n === 0) problems.push(`${name} must be at least 1`);
  return n;
}

function optionalLimit(problems: string[], name: string, v: unknown): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    problems.push(`${name} must be a whole number ≥ 0 or null (got ${JSON.stringify(v)})`);
    return null;
  }
  return v;
}

/**
 * Applies defaults and checks everything but URL syntax. Throws
 * CampaignInputError listing every problem at once.
 */
export function resolveCampaignSettings(input: CampaignInput, fallbackId: string): CampaignSettings {
  const problems: string[] = [];
  if (!input || typeof input !== 'object') throw new CampaignInputError(['input must be an object']);
  const seeds = Array.isArray(input.seeds) ? input.seeds : [];
  const seedsFile = seedsFileOf(problems, input.seedsFile);
  if (input.seeds !== undefined && !Array.isArray(input.seeds)) problems.push('seeds must be a list of URLs');
  else if (seeds.length === 0 && (input.seedsFile === undefined || input.seedsFile === null))
    problems.push('seeds must be a non-empty list of URLs, or seedsFile must name a seed list');
  if (seeds.some((s) => typeof s !== 'string')) problems.push('every seed must be a string');
  const mode = input.scope?.mode ?? CAMPAIGN_DEFAULTS.scope.mode;
  if (!SCOPE_MODES.includes(mode)) problems.push(`scope.mode must be one of ${SCOPE_MODES.join(', ')} (got ${JSON.stringify(mode)})`);
  const domains = input.scope?.domains ?? [];
  if (mode === 'domains' && domains.length === 0) problems.push('scope.domains must list at least one domain when scope.mode is "domains"');
  const p = input.politeness ?? {};
  const f = input.fetch ?? {};
  const d = CAMPAIGN_DEFAULTS;
  const userAgent = p.userAgent ?? d.politeness.userAgent;
  if (typeof userAgent !== 'string' || !/^[\x21-\x7e][\x20-\x7e]*$/.test(userAgent)) problems.push('politeness.userAgent must be printable ASCII');
  const campaignId = input.campaignId ?? fallbackId;
  if (typeof campaignId !== 'string' || !CAMPAIGN_ID_PATTERN.test(campaignId)) {
    problems.push('campaignId must be 1–80 characters of letters, digits, dot, dash, underscore or colon');
  }
  const settings: CampaignSettings = {
    campaignId,
    seeds,
    seedsFile,
    scope: { mode, domains },
    budgets: {
      maxPages: optionalLimit(problems, 'budgets.maxPages', input.budgets?.maxPages),
      maxDepth: optionalLimit(problems, 'budgets.maxDepth', input.budgets?.maxDepth),
      maxPagesPerHost: optionalLimit(problems, 'budgets.maxPagesPerHost', input.budgets?.maxPagesPerHost),
      maxLinksPerPage: nonNegInt(problems, 'budgets.maxLinksPerPage', input.budgets?.maxLinksPerPage, d.budgets.maxLinksPerPage),
      maxSitemapsPerHost: nonNegInt(problems, 'budgets.maxSitemapsPerHost', input.budgets?.maxSitemapsPerHost, d.budgets.maxSitemapsPerHost),
    },
    politeness: {
      minDelayMs: nonNegInt(problems, 'politeness.minDelayMs', p.minDelayMs, d.politeness.minDelayMs),
      maxDelayMs: nonNegInt(problems, 'politeness.maxDelayMs', p.maxDelayMs, d.politeness.maxDelayMs),
      userAgent,
      respectRobots: p.respectRobots ?? d.politeness.respectRobots,
      key: p.key ?? d.politeness.key,
      maxActiveHosts: optionalLimit(problems, 'politeness.maxActiveHosts', p.maxActiveHosts),
      maxInFlightPerAddress:
        p.maxInFlightPerAddress === undefined ? d.politeness.maxInFlightPerAddress : optionalLimit(problems, 'politeness.maxInFlightPerAddress', p.maxInFlightPerAddress),
    },
    fetch: {
      resolve: f.resolve ?? [],
      maxBodyBytes: nonNegInt(problems, 'fetch.maxBodyBytes', f.maxBodyBytes, d.fetch.maxBodyBytes),
      connectTimeoutMs: nonNegInt(problems, 'fetch.connectTimeoutMs', f.connectTimeoutMs, d.fetch.connectTimeoutMs),
      headersTimeoutMs: nonNegInt(problems, 'fetch.headersTimeoutMs', f.headersTimeoutMs, d.fetch.headersTimeoutMs),
      bodyTimeoutMs: nonNegInt(problems, 'fetch.bodyTimeoutMs', f.bodyTimeoutMs, d.fetch.bodyTimeoutMs),
      totalTimeoutMs: nonNegInt(problems, 'fetch.totalTimeoutMs', f.totalTimeoutMs, d.fetch.totalTimeoutMs),
      maxRedirects: nonNegInt(problems, 'fetch.maxRedirects', f.maxRedirects, d.fetch.maxRedirects),
      maxRetries: nonNegInt(problems, 'fetch.maxRetries', f.maxRetries, d.fetch.maxRetries),
      refusePrivateAddresses: f.refusePrivateAddresses ?? d.fetch.refusePrivateAddresses,
      allowAddresses: f.allowAddresses ?? [],
      robotsTimeoutMs: positiveInt(problems, 'fetch.robotsTimeoutMs', f.robotsTimeoutMs, d.fetch.robotsTimeoutMs),
    },
    session: {
      durableSleepMs: positiveInt(problems, 'session.durableSleepMs', input.session?.durableSleepMs, d.session.durableSleepMs),
      maxPages: positiveInt(problems, 'session.maxPages', input.session?.maxPages, d.session.maxPages),
      maxMs: positiveInt(problems, 'session.maxMs', input.session?.maxMs, d.session.maxMs),
    },
    traps: {
      maxUrlLength: positiveInt(problems, 'traps.maxUrlLength', input.traps?.maxUrlLength, d.traps.maxUrlLength),
      maxQueryParams: nonNegInt(problems, 'traps.maxQueryParams', input.traps?.maxQueryParams, d.traps.maxQueryParams),
      maxRepeatedSegment: positiveInt(problems, 'traps.maxRepeatedSegment', input.traps?.maxRepeatedSegment, d.traps.maxRepeatedSegment),
      maxPathDepth: positiveInt(problems, 'traps.maxPathDepth', input.traps?.maxPathDepth, d.traps.maxPathDepth),
    },
    content: {
      nonHtml: input.content?.nonHtml ?? d.content.nonHtml,
      dedup: input.content?.dedup ?? d.content.dedup,
      maxSimhashDistance: nonNegInt(problems, 'content.maxSimhashDistance', input.content?.maxSimhashDistance, d.content.maxSimhashDistance),
      maxParseMs: positiveInt(problems, 'content.maxParseMs', input.content?.maxParseMs, d.content.maxParseMs),
    },
    sitemaps: input.sitemaps ?? d.sitemaps,
    // `{campaign}` in the folder is the campaign ID: every run of a schedule is a campaign of its own, with its own folder.
    output: { dir: (input.output?.dir ?? d.output.dir).replaceAll(CAMPAIGN_PLACEHOLDER, campaignId) },
    handler: handlerOf(problems, input.handler),
    handlerTimeoutMs: positiveInt(problems, 'handlerTimeoutMs', input.handlerTimeoutMs, d.handlerTimeoutMs),
    frontier: { priorities: priorityRules(problems, input.frontier) },
    retention: { redisMs: input.retention?.redisMs === undefined ? d.retention.redisMs : optionalLimit(problems, 'retention.redisMs', input.retention.redisMs) },
    revisit: revisitSettings(problems, input.revisit),
  };
  if (settings.retention.redisMs !== null && settings.retention.redisMs < MIN_RETENTION_MS) {
    problems.push(`retention.redisMs must be at least ${MIN_RETENTION_MS} (a minute), or null to keep the keys until \`crawler purge\``);
  }
  if (!Array.isArray(settings.fetch.resolve) || settings.fetch.resolve.some((r) => typeof r !== 'string')) {
    problems.push('fetch.resolve must be a list of HOST:PORT:ADDR strings');
  } else if (settings.fetch.resolve.length > MAX_RESOLVE_ENTRIES) {
    problems.push(`fetch.resolve has ${settings.fetch.resolve.length} entries; at most ${MAX_RESOLVE_ENTRIES} (they travel in the workflow input)`);
  }
  if (!Array.isArray(settings.fetch.allowAddresses) || settings.fetch.allowAddresses.some((r) => typeof r !== 'string')) {
    problems.push('fetch.allowAddresses must be a list of CIDR strings such as "10.0.0.0/8"');
  }
  if (typeof settings.fetch.refusePrivateAddresses !== 'boolean') problems.push('fetch.refusePrivateAddresses must be true or false');
  if (settings.content.nonHtml !== 'store' && settings.content.nonHtml !== 'skip') problems.push('content.nonHtml must be "store" or "skip"');
  if (!['near', 'exact', 'off'].includes(settings.content.dedup)) problems.push('content.dedup must be "near", "exact" or "off"');
  if (settings.content.maxSimhashDistance > 15) problems.push('content.maxSimhashDistance must be at most 15');
  if (!['host', 'domain', 'ip'].includes(settings.politeness.key)) problems.push('politeness.key must be "host", "domain" or "ip"');
  if (!['robots+root', 'robots', 'off'].includes(settings.sitemaps)) problems.push('sitemaps must be "robots+root", "robots" or "off"');
  if (settings.politeness.maxDelayMs < settings.politeness.minDelayMs) problems.push('politeness.maxDelayMs must be ≥ politeness.minDelayMs');
  // The same range set-concurrency enforces while the campaign runs.
  const maxActive = settings.politeness.maxActiveHosts;
  if (settings.politeness.maxInFlightPerAddress === 0) problems.push('politeness.maxInFlightPerAddress must be at least 1, or null for unlimited');
  if (maxActive !== null && (maxActive < 1 || maxActive > MAX_ACTIVE_HOSTS)) {
    problems.push(`politeness.maxActiveHosts must be a whole number from 1 to ${MAX_ACTIVE_HOSTS}, or null for unlimited`);
  }
  if (problems.length) throw new CampaignInputError(problems);
  return settings;
}

function revisitSettings(problems: string[], r: CampaignInput['revisit'] | undefined): RevisitSettings {
  const d = CAMPAIGN_DEFAULTS.revisit;
  if (r === undefined || r === null) return { ...d };
  if (typeof r !== 'object' || Array.isArray(r)) {
    problems.push('revisit must be an object such as {"enabled": true, "minMs": 3600000, "maxMs": 2592000000}');
    return { ...d };
  }
  const enabled = r.enabled ?? true;
  if (typeof enabled !== 'boolean') problems.push('revisit.enabled must be true or false');
  const out: RevisitSettings = {
    enabled: enabled === true,
    minMs: positiveInt(problems, 'revisit.minMs', r.minMs, d.minMs),
    maxMs: positiveInt(problems, 'revisit.maxMs', r.maxMs, d.maxMs),
    factor: r.factor ?? d.factor,
    minChangeDistance: nonNegInt(problems, 'revisit.minChangeDistance', r.minChangeDistance, d.minChangeDistance),
    goneAfter: positiveInt(problems, 'revisit.goneAfter', r.goneAfter, d.goneAfter),
  };
  if (out.maxMs < out.minMs) problems.push('revisit.maxMs must be ≥ revisit.minMs');
  if (typeof out.factor !== 'number' || !Number.isFinite(out.factor) || out.factor <= 1 || out.factor > 10) problems.push('revisit.factor must be a number above 1 and at most 10');
  if (out.minChangeDistance > 64) problems.push('revisit.minChangeDistance must be at most 64 (bits of a SimHash)');
  return out;
}

/**
 * No Node APIs here (the workflow imports this module), so "absolute" is
 * spelled out: a POSIX path, a Windows drive or UNC path, or an http(s) URL.
 * Relative paths are refused because workers resolve them against their own
 * working directories, which need not be the caller's.
 */
function seedsFileOf(problems: string[], v: unknown): string | null {
  if (v === undefined || v === null) return null;
  const shape = 'seedsFile must be an absolute path or an http(s) URL of a seed list';
  if (typeof v !== 'string' || v.trim() === '') {
    problems.push(`${shape} (got ${JSON.stringify(v)})`);
    return null;
  }
  if (v.length > MAX_SEEDS_FILE_LENGTH) problems.push(`seedsFile is ${v.length} characters long; at most ${MAX_SEEDS_FILE_LENGTH}`);
  else if (/[\0\r\n]/.test(v)) problems.push('seedsFile must not contain NUL or line breaks');
  else if (v === '-') problems.push('seedsFile "-" (standard input) is for the crawl command, which copies it to a file; name that file here');
  else if (!/^(\/|[A-Za-z]:[\\/]|\\\\|https?:\/\/[^/?#\s]+)/i.test(v)) problems.push(`${shape} (got ${JSON.stringify(v)})`);
  return v;
}

/**
 * An absolute path or a package name (`name`, `@scope/name`, with an
 * optional subpath). Relative paths are refused for the reason seedsFile
 * refuses them; whether the module loads is checked by the CLI and by
 * prepareCampaign, which run Node.
 */
function handlerOf(problems: string[], v: unknown): string | null {
  if (v === undefined || v === null) return null;
  const shape = 'handler must be an absolute path to a handler module or a package name';
  if (typeof v !== 'string' || v.trim() === '') {
    problems.push(`${shape} (got ${JSON.stringify(v)})`);
    return null;
  }
  if (v.length > MAX_HANDLER_LENGTH) problems.push(`handler is ${v.length} characters long; at most ${MAX_HANDLER_LENGTH}`);
  else if (/[\0\r\n]/.test(v)) problems.push('handler must not contain NUL or line breaks');
  else if (/^\.\.?([\\/]|$)/.test(v)) problems.push(`handler ${JSON.stringify(v)} is a relative path: workers need it absolute (the crawl command makes it so)`);
  else if (!/^(\/|[A-Za-z]:[\\/]|\\\\)/.test(v) && !/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(\/[\w.@/-]+)?$/i.test(v)) problems.push(`${shape} (got ${JSON.stringify(v)})`);
  return v;
}

function priorityRules(problems: string[], frontier: CampaignInput['frontier'] | undefined): FrontierPriorityRule[] {
  if (frontier === undefined || frontier === null) return [];
  if (typeof frontier !== 'object' || Array.isArray(frontier)) {
    problems.push('frontier must be an object such as {"priorities": [{"pattern": "/products/", "priority": 5}]}');
    return [];
  }
  const raw = frontier.priorities ?? [];
  if (!Array.isArray(raw)) {
    problems.push('frontier.priorities must be a list of {"pattern": "<regular expression>", "priority": <integer>}');
    return [];
  }
  if (raw.length > MAX_PRIORITY_RULES) problems.push(`frontier.priorities has ${raw.length} rules; at most ${MAX_PRIORITY_RULES}`);
  const rules: FrontierPriorityRule[] = [];
  raw.forEach((r: unknown, i) => {
    const name = `frontier.priorities[${i}]`;
    if (!r || typeof r !== 'object') {
      problems.push(`${name} must be {"pattern": "<regular expression>", "priority": <integer>}`);
      return;
    }
    const { pattern, priority } = r as Partial<FrontierPriorityRule>;
    let ok = true;
    if (typeof pattern !== 'string' || pattern === '') {
      problems.push(`${name}.pattern must be a non-empty regular expression (got ${JSON.stringify(pattern)})`);
      ok = false;
    } else if (pattern.length > MAX_PRIORITY_PATTERN_LENGTH) {
      problems.push(`${name}.pattern is ${pattern.length} characters long; at most ${MAX_PRIORITY_PATTERN_LENGTH}`);
      ok = false;
    } else {
      try {
        new RegExp(pattern);
      } catch (err) {
        problems.push(`${name}.pattern ${JSON.stringify(pattern)} is not a valid regular expression: ${(err as Error).message}`);
        ok = false;
      }
    }
    if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < FRONTIER_PRIORITY_MIN || priority > FRONTIER_PRIORITY_MAX) {
      problems.push(`${name}.priority must be a whole number from ${FRONTIER_PRIORITY_MIN} to ${FRONTIER_PRIORITY_MAX} (got ${JSON.stringify(priority)})`);
      ok = false;
    }
    if (ok) rules.push({ pattern: pattern!, priority: priority! });
  });
  return rules;
}

const compiledRules = new WeakMap<readonly FrontierPriorityRule[], { re: RegExp; priority: number }[]>();

/**
 * A URL's frontier priority under the campaign's rules: the first matching
 * rule's, else 0. Pure (the compiled patterns are cached per rules list);
 * every place that enqueues URLs calls it with the normalised URL.
 */
export function frontierPriority(url: string, settings: { frontier?: CampaignSettings['frontier'] }): number {
  const rules = settings.frontier?.priorities;
  if (!rules || rules.length === 0) return 0;
  let compiled = compiledRules.get(rules);
  if (!compiled) {
    compiled = rules.map((r) => ({ re: new RegExp(r.pattern), priority: r.priority }));
    compiledRules.set(rules, compiled);
  }
  for (const r of compiled) if (r.re.test(url)) return r.priority;
  return 0;
}

/** The pause between two requests to one host, given robots.txt's Crawl-delay. */
export function crawlDelayMs(politeness: CampaignSettings['politeness'], robotsCrawlDelaySec: number | null | undefined): number {
  const robotsMs = robotsCrawlDelaySec != null && Number.isFinite(robotsCrawlDelaySec) ? Math.round(robotsCrawlDelaySec * 1000) : 0;
  return Math.max(politeness.minDelayMs, Math.min(robotsMs, politeness.maxDelayMs));
}
