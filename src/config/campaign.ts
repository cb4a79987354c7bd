// The campaign's settings, declared once as a schema: the input type
// (plain JSON, so `temporal workflow start --input '{…}'` works), the
// resolved settings type, the defaults, the validation and the settings
// table of docs/settings.md all come from it.
// Pure module: the campaign workflow imports it, so no Node APIs here and no
// URL parsing (seeds are validated by the prepareCampaign activity and the
// CLI). zod is plain JavaScript and bundles into the workflow.

import { z } from 'zod';
import { DEFAULT_TRAP_LIMITS } from '../url/traps';
import { MAX_ACTIVE_HOSTS } from './steering';
import { CrawlerError } from '../errors';
import { checkUrlPattern, MAX_URL_RULES, MAX_URL_RULE_LENGTH } from '../url/url-rules';
import { headerEntryProblem, MAX_HEADERS } from '../http/header-rules';
import { outputDirProblem, S3_ENDPOINT_SHAPE, s3EndpointProblem, S3_REGION_SHAPE, s3RegionProblem } from '../storage/output-location-rules';

export const SCOPE_MODES = ['same-domain', 'same-host', 'domains', 'any'] as const;
export type ScopeMode = (typeof SCOPE_MODES)[number];
/** Where sitemap URLs come from: robots.txt `Sitemap:` lines, plus `/sitemap.xml` with robots+root. */
export const SITEMAP_MODES = ['robots+root', 'robots', 'off'] as const;
export type SitemapMode = (typeof SITEMAP_MODES)[number];
/** Page requisites (stylesheets, scripts, images, fonts) fetched as embeds: on by default, so archives replay whole. */
export const REQUISITE_MODES = ['on', 'off'] as const;
export type RequisiteMode = (typeof REQUISITE_MODES)[number];
/** off: no content dedup; exact: identical bodies; near: identical or SimHash within maxDistance. */
export const COOKIE_MODES = ['on', 'off'] as const;
export type CookieMode = (typeof COOKIE_MODES)[number];

import { RENDER_MODES } from './render-modes';
export { RENDER_MODES, type RenderMode } from './render-modes';

export const DEDUP_MODES = ['near', 'exact', 'off'] as const;
export type DedupMode = (typeof DEDUP_MODES)[number];
export const POLITENESS_KEYS = ['host', 'domain', 'ip'] as const;
export type PolitenessKey = (typeof POLITENESS_KEYS)[number];
export const NON_HTML_POLICIES = ['store', 'skip'] as const;
export type NonHtmlPolicy = (typeof NON_HTML_POLICIES)[number];
/**
 * What an ended campaign keeps in Redis for its retention (src/redis/retention.ts):
 * summary = what is read after the end (`crawler status`, `crawler seal`, `crawler purge`);
 * all = every key, as it was when the campaign ended.
 */
export const RETENTION_KEEPS = ['summary', 'all'] as const;
export type RetentionKeep = (typeof RETENTION_KEEPS)[number];

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
 * What a campaign ID may be: safe in Redis keys, file names and URLs. The
 * colon is there for scheduled runs, whose workflow IDs (their campaign IDs)
 * end in the RFC 3339 time Temporal appends.
 */
export const CAMPAIGN_ID_PATTERN = /^[A-Za-z0-9._:-]{1,80}$/;
/**
 * The settings ride in the workflow input, the prepareCampaign input and
 * every continue-as-new: Temporal refuses payloads over 2 MB by default. 10,000
 * pins of ~40 bytes are ~400 KB; longer lists want DNS, not pins.
 */
export const MAX_RESOLVE_ENTRIES = 10_000;
/** Replaced by the campaign ID in output.dir. */
export const CAMPAIGN_PLACEHOLDER = '{campaign}';
export const MAX_SEEDS_FILE_LENGTH = 4096;
/** Shortest retention: the campaign's last bookkeeping step (its summary) may be retried within it and still find the keys. */
export const MIN_RETENTION_MS = 60_000;
export const MAX_HANDLER_LENGTH = 4096;
/**
 * Longest delay Node's timers keep (2^31 − 1 ms, about 24.8 days): a longer
 * one is taken as 1 ms, so a timeout of 2^31 ms would fire at once. Every
 * setting that ends in a setTimeout (fetch and handler timeouts, pauses,
 * the parse limit) is held to it.
 */
export const MAX_TIMER_MS = 2_147_483_647;
/**
 * Largest fetch.maxBodyBytes: 1 GiB. A body is held in a worker's memory
 * whole (to hash, parse and write it), next to the other sessions' bodies.
 */
export const MAX_BODY_BYTES = 1024 * 1024 * 1024;

export const DEFAULT_USER_AGENT = 'DurableCrawler/0.1 (+https://github.com/durable-crawler/durable-crawler)';

export class CampaignInputError extends CrawlerError<'INVALID_CAMPAIGN_INPUT'> {
  constructor(readonly problems: string[]) {
    super('INVALID_CAMPAIGN_INPUT', `invalid campaign input: ${problems.join('; ')}`);
    this.name = 'CampaignInputError';
  }
}

// ---- Building blocks: each field's type, bounds, default and description, and the words of its error.

/** A value as the user wrote it, for "(got …)". */
const shown = (v: unknown): string => (typeof v === 'number' ? String(v) : (JSON.stringify(v) ?? String(v)));
const got = (iss: { input?: unknown }): string => ` (got ${shown(iss.input)})`;

interface WholeOptions {
  min: number;
  max?: number;
  /** After the maximum, why it is there (" ms, the longest timer Node keeps"). */
  unit?: string;
  /** Set when null is allowed: what it means (", or null for unlimited"). */
  orNull?: string;
  /** One message for every failure, when the field has words of its own (shared with set-concurrency, say). */
  message?: string;
}

/**
 * A whole number within [min, max]. One message per kind of failure, each
 * naming the range, so the user sees what would have been accepted.
 */
function whole(o: WholeOptions) {
  const nullPart = o.orNull ?? '';
  const range = o.max === undefined ? `≥ ${o.min}` : `from ${o.min} to ${o.max}${o.unit ?? ''}`;
  const error = (iss: z.core.$ZodRawIssue): string => {
    if (o.message) return o.message + got(iss);
    // Past the safe-integer range with no maximum of our own: not a usable whole number.
    if (iss.code === 'invalid_type' || (iss.code === 'too_big' && o.max === undefined)) return `must be a whole number ${range}${nullPart}${got(iss)}`;
    if (o.max === undefined) return `must be at least ${o.min}${nullPart}${got(iss)}`;
    return `must be at least ${o.min} and at most ${o.max}${o.unit ?? ''}${nullPart}${got(iss)}`;
  };
  const n = z.int({ error }).min(o.min, { error });
  return o.max === undefined ? n : n.max(o.max, { error });
}

/**
 * A host's first session runs in its workflow's first task: the SDK keeps the
 * task alive past 8 s (80 % of its 10 s timeout) only by extending it, three
 * history events each time, which the local session is there to save.
 */
const MAX_FIRST_LOCAL_MS = 8_000;

/** Milliseconds that end in a Node timer: at most MAX_TIMER_MS. */
const timerMs = (min: 0 | 1) => whole({ min, max: MAX_TIMER_MS, unit: ' ms, the longest timer Node keeps' });

/** The user's choice among `values`; they are listed in the error. */
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: (iss) => `must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}${got(iss)}` });

const flag = () => z.boolean({ error: (iss) => `must be true or false${got(iss)}` });

/** A section of the input: absent means every default; anything but an object is named with an example. */
/** frontier.spillAbove's default: a host's frontier past 5,000 URLs spills its tail to the output store. */
export const DEFAULT_SPILL_ABOVE = 5000;
/** frontier.spillAbove's least: below it segments would be tiny and a host would spill and refill all the time. */
export const MIN_SPILL_ABOVE = 20;
/** frontier.seenRate's default: a new URL skipped once in a hundred. */
export const DEFAULT_BLOOM_RATE = 0.01;
/** frontier.seenRate's bounds: below 1e-6 the filter is no smaller than the exact set (8 bytes a URL); above 10 % a crawl loses too much to be worth it. */
export const MIN_BLOOM_RATE = 1e-6;
export const MAX_BLOOM_RATE = 0.1;
/** frontier.seen's choices: the exact seen set, or a Bloom filter (src/redis/seen-bloom.ts). */
export const SEEN_SETS = ['exact', 'bloom'] as const;
export type SeenSet = (typeof SEEN_SETS)[number];
const seenRateError = (iss: { input?: unknown }): string => `must be a number from ${MIN_BLOOM_RATE} to ${MAX_BLOOM_RATE}${got(iss)}`;

const section = <S extends z.core.$ZodLooseShape>(shape: S, example?: string) =>
  z.object(shape, { error: (iss) => `must be an object${example ? ` such as ${example}` : ''}${got(iss)}` });

/** A check that runs on whatever the fields hold, so a cross-field rule is reported with the fields' own problems. */
const always = { when: () => true };

/** A string checked by `problem` (null: fine); `shape` is the message for anything else. */
function text(shape: string, problem: (v: string) => string | null) {
  return z.string({ error: (iss) => `${shape}${got(iss)}` }).superRefine((v, ctx) => {
    const p = v.trim() === '' ? `${shape}${got({ input: v })}` : problem(v);
    if (p) ctx.addIssue({ code: 'custom', message: p, input: v });
  });
}

/** A list of strings, capped at `max` entries (the cap is a check, not `.max()`, so the other fields are still reported with it). */
function stringList(shape: string, max?: { n: number; message: (length: number) => string }) {
  const list = z.array(z.string({ error: (iss) => `must be a string${got(iss)}` }), { error: (iss) => `${shape}${got(iss)}` });
  if (!max) return list;
  return list.superRefine((v, ctx) => {
    if (v.length > max.n) ctx.addIssue({ code: 'custom', message: max.message(v.length), input: v });
  });
}

// ---- Field rules that are more than a type and a range.

/**
 * No Node APIs here (the workflow imports this module), so "absolute" is
 * spelled out: a POSIX path, a Windows drive or UNC path, or an http(s) URL.
 * Relative paths are refused because workers resolve them against their own
 * working directories, which need not be the caller's.
 */
const SEEDS_FILE_SHAPE = 'must be an absolute path or an http(s) URL of a seed list';
const seedsFileProblem = (v: string): string | null => {
  if (v.length > MAX_SEEDS_FILE_LENGTH) return `is ${v.length} characters long; at most ${MAX_SEEDS_FILE_LENGTH}`;
  if (/[\0\r\n]/.test(v)) return 'must not contain NUL or line breaks';
  if (v === '-') return '"-" (standard input) is for the crawl command, which copies it to a file; name that file here';
  if (!/^(\/|[A-Za-z]:[\\/]|\\\\|https?:\/\/[^/?#\s]+)/i.test(v)) return `${SEEDS_FILE_SHAPE}${got({ input: v })}`;
  return null;
};

/**
 * An absolute path or a package name (`name`, `@scope/name`, with an
 * optional subpath). Relative paths are refused for the reason seedsFile
 * refuses them; whether the module loads is checked by the CLI and by
 * prepareCampaign, which run Node.
 */
const HANDLER_SHAPE = 'must be an absolute path to a handler module or a package name';
const handlerProblem = (v: string): string | null => {
  if (v.length > MAX_HANDLER_LENGTH) return `is ${v.length} characters long; at most ${MAX_HANDLER_LENGTH}`;
  if (/[\0\r\n]/.test(v)) return 'must not contain NUL or line breaks';
  if (/^\.\.?([\\/]|$)/.test(v)) return `${JSON.stringify(v)} is a relative path: workers need it absolute (the crawl command makes it so)`;
  if (!/^(\/|[A-Za-z]:[\\/]|\\\\)/.test(v) && !/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(\/[\w.@/-]+)?$/i.test(v)) return `${HANDLER_SHAPE}${got({ input: v })}`;
  return null;
};

/**
 * Proxy lists are named by path: a proxy URL may carry a password, and the
 * campaign input lands in Temporal's history, so the URLs themselves never
 * travel in it (docs/operations.md, "Proxies"). A value that looks like a
 * URL is refused without being echoed, in case it holds one.
 */
export const MAX_PROXY_FILES = 100;
const PROXY_FILE_SHAPE = 'must be an absolute path to a proxy list (one proxy URL a line, `#` comments)';
const proxyFileProblem = (v: string): string | null => {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(v))
    return 'is a URL: name a file that lists proxy URLs instead (a proxy URL may hold a password, which must not travel in the campaign input)';
  if (v.length > MAX_SEEDS_FILE_LENGTH) return `is ${v.length} characters long; at most ${MAX_SEEDS_FILE_LENGTH}`;
  if (/[\0\r\n]/.test(v)) return 'must not contain NUL or line breaks';
  if (!/^(\/|[A-Za-z]:[\\/]|\\\\)/.test(v)) return `${PROXY_FILE_SHAPE}${got({ input: v })}`;
  return null;
};

/**
 * A cookies file holds live sessions: the input (Temporal history) carries
 * its absolute path, and the workers read it (src/http/cookies-file.ts).
 */
const COOKIES_FILE_SHAPE = 'must be an absolute path to a cookies.txt every worker can read';
const cookiesFileProblem = (v: string): string | null => {
  if (v.length > MAX_SEEDS_FILE_LENGTH) return `is ${v.length} characters long; at most ${MAX_SEEDS_FILE_LENGTH}`;
  if (/[\0\r\n]/.test(v)) return 'must not contain NUL or line breaks';
  if (!/^(\/|[A-Za-z]:[\\/]|\\\\)/.test(v)) return `${COOKIES_FILE_SHAPE}${got({ input: v })}`;
  return null;
};

const RULE_SHAPE = '{"pattern": "<regular expression>", "priority": <integer>}';
const PATTERN_SHAPE = 'must be a non-empty regular expression';
const priorityRule = z.object(
  {
    pattern: text(PATTERN_SHAPE, (v) => {
      if (v.length > MAX_PRIORITY_PATTERN_LENGTH) return `is ${v.length} characters long; at most ${MAX_PRIORITY_PATTERN_LENGTH}`;
      try {
        new RegExp(v);
      } catch (err) {
        return `${JSON.stringify(v)} is not a valid regular expression: ${(err as Error).message}`;
      }
      return null;
    }),
    priority: whole({
      min: FRONTIER_PRIORITY_MIN,
      max: FRONTIER_PRIORITY_MAX,
      message: `must be a whole number from ${FRONTIER_PRIORITY_MIN} to ${FRONTIER_PRIORITY_MAX}`,
    }),
  },
  { error: () => `must be ${RULE_SHAPE}` },
);
export type FrontierPriorityRule = z.output<typeof priorityRule>;

/** scope.include / scope.exclude: regular expressions, bounded in number and length, each checked to compile. */
const urlRuleList = (name: string) =>
  z.array(text(PATTERN_SHAPE, checkUrlPattern), { error: (iss) => `must be a list of regular expressions${got(iss)}` }).superRefine((v, ctx) => {
    if (v.length > MAX_URL_RULES) ctx.addIssue({ code: 'custom', message: `has ${v.length} ${name} patterns; at most ${MAX_URL_RULES}`, input: v });
  });

/**
 * An absolute path to a credentials file (src/http/credentials.ts): the
 * input carries the path, never the secrets; the CLI and prepareCampaign
 * read the file (and refuse a bad one) before anything starts.
 */
const CREDENTIALS_FILE_SHAPE = 'must be an absolute path to a credentials file';
const credentialsFileProblem = (v: string): string | null => {
  if (v.length > MAX_SEEDS_FILE_LENGTH) return `is ${v.length} characters long; at most ${MAX_SEEDS_FILE_LENGTH}`;
  if (/[\0\r\n]/.test(v)) return 'must not contain NUL or line breaks';
  if (!/^(\/|[A-Za-z]:[\\/]|\\\\)/.test(v)) return `${CREDENTIALS_FILE_SHAPE}: workers read it${got({ input: v })}`;
  return null;
};

// ---- The schema. Every field's default and description are here; docs/settings.md is generated from it.

const WEEK_MS = 7 * 24 * 60 * 60_000;

const revisitSection = section(
  {
    enabled: flag().default(true).describe('Revisit every URL fetched (true when a revisit section is given; no section: false).'),
    minMs: whole({ min: 1 })
      .default(60 * 60_000)
      .describe('Shortest revisit interval. A due time kept in Redis, not a timer.'),
    maxMs: whole({ min: 1 })
      .default(30 * 24 * 60 * 60_000)
      .describe('Longest revisit interval.'),
    factor: z
      .number({ error: (iss) => `must be a number above 1 and at most 10${got(iss)}` })
      .gt(1, { error: (iss) => `must be a number above 1 and at most 10${got(iss)}` })
      .lte(10, { error: (iss) => `must be a number above 1 and at most 10${got(iss)}` })
      .default(1.5)
      .describe('An interval is divided by it after a change, multiplied after none.'),
    minChangeDistance: whole({ min: 0, max: 64, unit: ' (bits of a SimHash)' })
      .default(3)
      .describe(
        'A page whose payload digest changed but whose SimHash moved this many bits or fewer counts as unchanged (boilerplate that differs on every request: a clock, a token); 0 = the digest alone decides.',
      ),
    goneAfter: whole({ min: 1 }).default(3).describe('A URL answering 404/410 this many visits in a row leaves the schedule (index outcome `gone`).'),
  },
  '{"enabled": true, "minMs": 3600000, "maxMs": 2592000000}',
).superRefine((r, ctx) => {
  if (typeof r.minMs === 'number' && typeof r.maxMs === 'number' && r.maxMs < r.minMs)
    ctx.addIssue({ code: 'custom', message: 'must be ≥ revisit.minMs', path: ['maxMs'], input: r.maxMs });
}, always);

const campaignFields = {
  campaignId: z
    .string({ error: () => 'must be 1–80 characters of letters, digits, dot, dash, underscore or colon' })
    .regex(CAMPAIGN_ID_PATTERN, { error: () => 'must be 1–80 characters of letters, digits, dot, dash, underscore or colon' })
    .describe('Defaults to the workflow ID.'),
  seeds: stringList('must be a list of URLs').default([]).describe('Seed URLs inline, for short lists (they travel in the workflow input). Optional when seedsFile is given.'),
  seedsFile: text(SEEDS_FILE_SHAPE, seedsFileProblem)
    .nullable()
    .default(null)
    .describe(
      'A seed list too long for the input: an absolute path every worker can read (the output folder is shared by all of them) or an http(s) URL; one URL per line, `#` comments, plain or gzip. Read in batches by src/seeds/seed-source.ts. Both this and seeds may be given.',
    ),
  scope: section({
    mode: oneOf(SCOPE_MODES).default('same-domain').describe("Which links are followed: the seeds' registrable domains, their hosts, the listed domains, or anywhere."),
    domains: stringList('must be a list of domains').default([]).describe('The domains (and their subdomains) of mode "domains".'),
    include: urlRuleList('include')
      .default([])
      .describe(
        `Links, redirect targets and handler links are enqueued only if one of these matches (none given: all). JavaScript regular expressions, unanchored, matched against the normalised URL; at most ${MAX_URL_RULES} of ${MAX_URL_RULE_LENGTH} characters. Seeds, sitemaps and page requisites are not held to them (docs/url-rules.md).`,
      ),
    exclude: urlRuleList('exclude')
      .default([])
      .describe(`No URL matching one of these is enqueued: links, redirect targets, handler links, seeds, sitemaps and page requisites alike. Same form and bounds as include.`),
  })
    .superRefine((s, ctx) => {
      if (s.mode === 'domains' && Array.isArray(s.domains) && s.domains.length === 0)
        ctx.addIssue({ code: 'custom', message: 'must list at least one domain when scope.mode is "domains"', path: ['domains'], input: s.domains });
    }, always)
    .prefault({}),
  budgets: section({
    maxPages: whole({ min: 0, orNull: ' or null' })
      .nullable()
      .default(null)
      .describe('Page requests across the whole campaign, whatever their outcome (robots.txt and sitemaps excluded); null = unlimited.'),
    maxDepth: whole({ min: 0, orNull: ' or null' }).nullable().default(null).describe('Link hops from a seed; seeds are depth 0; null = unlimited.'),
    maxPagesPerHost: whole({ min: 0, orNull: ' or null' })
      .nullable()
      .default(null)
      .describe('Requests per host (robots.txt and sitemaps excluded); null = unlimited. The guard against infinite sites.'),
    // 3,000 links a page: a site's largest ordinary index pages (a book index,
    // a sitemap-like HTML page) stay whole; a link bomb does not reach Redis.
    maxLinksPerPage: whole({ min: 0 })
      .default(3_000)
      .describe(
        "Links taken from one page (its own and its handler's; a sitemap's URLs are held by the host's page budget instead); the rest are dropped and counted in the index line (`linksDropped`). A link bomb of 600,000 links otherwise floods Redis in one call.",
      ),
    // 50 sitemaps a host: 2.5 million URLs at the protocol's 50,000 a file.
    maxSitemapsPerHost: whole({ min: 0 })
      .default(50)
      .describe("Sitemaps, sitemap-index children and feeds queued per host (robots.txt's first, then /sitemap.xml); those beyond it are never queued nor requested."),
    // 300 a page: a heavy news page loads 150 to 250 resources; a page past
    // it (an image gallery of thousands) keeps its first 300 in document order.
    maxEmbedsPerPage: whole({ min: 0 })
      .default(300)
      .describe(
        'Requisites (embeds) taken from one page or stylesheet, in document order; the rest are counted in the index line (`embedsDropped`). Embeds count against neither maxPages nor maxDepth.',
      ),
    maxEmbeds: whole({ min: 0, orNull: ' or null' })
      .nullable()
      .default(null)
      .describe('Embed requests across the whole campaign (null = unlimited); past it embeds are recorded `embed-budget-exhausted`, unrequested, and pages go on.'),
  }).prefault({}),
  politeness: section({
    minDelayMs: timerMs(0).default(1000).describe('Floor for the pause between two requests to one host.'),
    maxDelayMs: timerMs(0).default(60_000).describe('Ceiling applied to a robots.txt Crawl-delay, so a hostile value cannot stall a host forever.'),
    userAgent: z
      .string({ error: () => 'must be printable ASCII' })
      .regex(/^[\x21-\x7e][\x20-\x7e]*$/, { error: () => 'must be printable ASCII' })
      .default(DEFAULT_USER_AGENT)
      .describe('User-Agent header; its product token is matched against robots.txt.'),
    respectRobots: flag().default(true).describe('Fetch and obey robots.txt.'),
    key: oneOf(POLITENESS_KEYS).default('host').describe('What shares one politeness clock: each host, each registrable domain, or each IP address.'),
    // The same range set-concurrency enforces while the campaign runs, in the same words.
    maxActiveHosts: whole({ min: 1, max: MAX_ACTIVE_HOSTS, message: `must be a whole number from 1 to ${MAX_ACTIVE_HOSTS}, or null for unlimited` })
      .nullable()
      .default(null)
      .describe(
        "Most hosts crawled at once (the campaign's concurrency; null = unlimited). One host always has one request at a time: robots.txt's Crawl-delay assumes it. Steerable while running (setConcurrency).",
      ),
    // 8 requests at once to one address, as Heritrix's and Nutch's defaults.
    maxInFlightPerAddress: whole({ min: 1, orNull: ', or null for unlimited' })
      .nullable()
      .default(8)
      .describe(
        'Requests in flight to one IP address at once, whatever the politeness key (null = unlimited): wildcard subdomains of one server are many hosts, each with its own clock, but one machine answers them all.',
      ),
  })
    .superRefine((p, ctx) => {
      if (typeof p.minDelayMs === 'number' && typeof p.maxDelayMs === 'number' && p.maxDelayMs < p.minDelayMs)
        ctx.addIssue({ code: 'custom', message: 'must be ≥ politeness.minDelayMs', path: ['maxDelayMs'], input: p.maxDelayMs });
    }, always)
    .prefault({}),
  fetch: section({
    resolve: stringList('must be a list of HOST:PORT:ADDR strings', {
      n: MAX_RESOLVE_ENTRIES,
      message: (n) => `has ${n} entries; at most ${MAX_RESOLVE_ENTRIES} (they travel in the workflow input)`,
    })
      .default([])
      .describe(`curl-style HOST:PORT:ADDR overrides (at most ${MAX_RESOLVE_ENTRIES}: they travel in the workflow input).`),
    maxBodyBytes: whole({ min: 1, max: MAX_BODY_BYTES, unit: ' (1 GiB: a body is held in memory whole)' })
      .default(10 * 1024 * 1024)
      .describe('Bytes of a body read (on the wire and decoded); a longer one is stored cut, `truncated: "length"`.'),
    connectTimeoutMs: timerMs(1).default(10_000).describe('Deadline of one TCP (and TLS) connection.'),
    headersTimeoutMs: timerMs(1).default(30_000).describe("From the request sent to the response's complete headers (undici's timer wheel: about 1 s resolution)."),
    bodyTimeoutMs: timerMs(1).default(30_000).describe('Longest idle gap between two chunks of a body.'),
    totalTimeoutMs: timerMs(1).default(120_000).describe('Hard cap on one fetch, redirects and body included.'),
    maxRedirects: whole({ min: 0 }).default(5).describe('Redirects followed within one fetch.'),
    maxRetries: whole({ min: 0 }).default(3).describe('How many times a 5xx / 429 / network failure is retried before the URL is recorded as failed.'),
    refusePrivateAddresses: flag().default(true).describe('Refuse hosts that resolve to loopback, private, link-local or metadata addresses.'),
    allowAddresses: stringList('must be a list of CIDR strings such as "10.0.0.0/8"')
      .default([])
      .describe('CIDRs fetched even though private (e.g. "10.1.0.0/16"); --resolve pins are always allowed.'),
    proxyFiles: z
      .array(text(PROXY_FILE_SHAPE, proxyFileProblem), { error: (iss) => `must be a list of absolute paths${got(iss)}` })
      .superRefine((v, ctx) => {
        if (v.length > MAX_PROXY_FILES) ctx.addIssue({ code: 'custom', message: `has ${v.length} entries; at most ${MAX_PROXY_FILES}`, input: v.length });
      })
      .default([])
      .describe(
        'Forward proxies: absolute paths of proxy lists every worker can read, one `http://`, `https://`, `socks5://` or `socks5h://` URL a line (credentials allowed: `user:password@`), `#` comments, mode 0600. Each host goes through one proxy; one that fails is set aside a minute. Empty: direct. See docs/operations.md, "Proxies".',
      ),
    robotsTimeoutMs: timerMs(1).default(30_000).describe('Deadline of one robots.txt fetch; one that keeps missing it makes the host robots-unavailable.'),
    headers: z
      .array(text('must be "Name: value"', headerEntryProblem), { error: (iss) => `must be a list of "Name: value" strings${got(iss)}` })
      .superRefine((v, ctx) => {
        if (v.length > MAX_HEADERS) ctx.addIssue({ code: 'custom', message: `has ${v.length} headers; at most ${MAX_HEADERS}`, input: v });
      })
      .default([])
      .describe(
        `Request headers sent with every request ("Name: value", at most ${MAX_HEADERS}). They travel in the input, so names that look like credentials (Authorization, Cookie, *-Token, *Api-Key…) are refused: those go in credentialsFile.`,
      ),
    credentialsFile: text(CREDENTIALS_FILE_SHAPE, credentialsFileProblem)
      .nullable()
      .default(null)
      .describe(
        'Absolute path of a credentials file every worker can read (docs/operations.md): one origin and its credentials a line (user:password, Bearer token, or Name: value), sent only to that origin. The input carries the path, never the secrets. null: none.',
      ),
  }).prefault({}),
  // Chosen by measurement (docs/benchmarks-history.md, "the ceiling"): a host session costs a
  // worker nothing while it waits, a durable timer costs the Temporal server
  // about 9 ms of CPU and five history events.
  session: section({
    durableSleepMs: timerMs(1)
      .default(5_000)
      .describe(
        "Waits at least this long (a long Crawl-delay, Retry-After, a back-off) end the host session (docs/architecture.md) and become a durable timer in the host's workflow; shorter gaps are paced inside the session.",
      ),
    maxPages: whole({ min: 1 }).default(1_000).describe('A session ends after this many URLs, so its progress lands in history.'),
    maxMs: timerMs(1).default(120_000).describe('A session ends after this long.'),
    firstLocalMs: whole({ min: 1, max: MAX_FIRST_LOCAL_MS, unit: ' ms, under the 10 s workflow-task timeout' })
      .default(5_000)
      .describe(
        "A host's first session runs inside its workflow's first task (a local activity: no activity of its own in history) and ends after this long, or at maxMs if shorter; the host's later sessions are regular ones. A one-page host is done in it.",
      ),
  }).prefault({}),
  traps: section({
    maxUrlLength: whole({ min: 1 }).default(DEFAULT_TRAP_LIMITS.maxUrlLength).describe('Longest discovered link followed, in characters.'),
    maxQueryParams: whole({ min: 0 }).default(DEFAULT_TRAP_LIMITS.maxQueryParams).describe('Most non-empty query parameters of a link followed.'),
    maxRepeatedSegment: whole({ min: 1 })
      .default(DEFAULT_TRAP_LIMITS.maxRepeatedSegment)
      .describe('Most times one path segment (or a block of two) may repeat in a link followed.'),
    maxPathDepth: whole({ min: 1 }).default(DEFAULT_TRAP_LIMITS.maxPathDepth).describe('Most path segments of a link followed.'),
  }).prefault({}),
  content: section({
    nonHtml: oneOf(NON_HTML_POLICIES).default('store').describe('Non-HTML responses: store them in WARC (never parsed for links), or record them in the index only.'),
    dedup: oneOf(DEDUP_MODES).default('near').describe('Content dedup: identical bodies or SimHash near-duplicates (near), identical bodies only (exact), none (off).'),
    maxSimhashDistance: whole({ min: 0, max: 15 }).default(3).describe('Largest SimHash Hamming distance that still counts as a near-duplicate.'),
    maxParseMs: timerMs(1).default(10_000).describe('Time limit of parsing one page for links; a page past it is recorded with outcome `parse-timeout`.'),
  }).prefault({}),
  requisites: oneOf(REQUISITE_MODES)
    .default('on')
    .describe(
      "Fetch what each page needs to display (stylesheets and their imports and fonts, scripts, images, media) as embeds, so the archive replays whole; embeds on other hosts are fetched up to two embed hops from a page even outside the crawl's scope (docs/crawling-rules.md).",
    ),
  render: oneOf(RENDER_MODES)
    .default('off')
    .describe(
      "browser: every HTML page is rendered in Chromium after its HTTP fetch, each request the page makes answered by the crawler's own HTTP client and archived; links come from the rendered DOM (docs/rendering.md). auto: HTTP first, and only the pages of the URL patterns where rendering finds more links or text than HTTP are rendered, learnt per host from a sample and re-checked now and then. off: HTTP only.",
    ),
  browser: section({
    // 30 s: a heavy single-page application settles in a few seconds; one that never does must not hold its host longer.
    pageTimeoutMs: timerMs(1)
      .default(30_000)
      .describe("A rendered page's deadline, from the start of its navigation to its DOM being taken: whatever it loaded by then is what it has."),
    // 500 ms: long enough for a script's chain of fetch → render → fetch, short enough not to add seconds a page.
    quietMs: timerMs(0)
      .default(500)
      .describe('After `load`, a page is done once no request of it has been in flight for this long and then its thread was idle (capped by pageTimeoutMs).'),
    // 6: a page holds its turn through its quiet wait, so with many hosts rendering the turns, not the cores, bound a worker:
    // bench (v) over 40 hosts (Chromium's headless shell, idle machine) rendered 9.3 pages/s at 4, 11.3 at 6, 12.1 at 8, at the
    // same memory (0.84 GB PSS a worker's tree) and CPU a page; 6 takes most of that while a heavier site's pages still share
    // two cores without running into their deadline.
    maxPagesAtOnce: whole({ min: 1, max: 64 }).default(6).describe("Pages rendering at once in one worker process (its one Chromium); other hosts' pages wait for a turn."),
    pagesPerContext: whole({ min: 1 })
      .default(100)
      .describe("The browser context the campaign's host sessions share on a worker (its cache, storage, its memory) is replaced after this many pages."),
    // Off: most pages have nothing lazy, and scrolling costs a wait per viewport of page.
    scroll: flag()
      .default(false)
      .describe(
        'Scroll each rendered page to its bottom, a viewport at a time, before its DOM is taken, so content loaded on scroll (lazy images, an endless feed) is archived and its links followed; stops when the page stops growing, after 50 steps, or at pageTimeoutMs.',
      ),
    // Off, as scroll: a Browsertrix user turns on its behaviors knowing what they cost; each here costs waits on
    // every page that has what it acts on (docs/rendering.md, "Behaviors").
    scrollBoxes: flag()
      .default(false)
      .describe(
        "Scroll each rendered page's inner scrolling boxes (an element whose overflow scrolls and whose content is taller than it: a feed, a chat, a list) to their bottom, a box's height at a time, while they grow, so what they load on scroll is archived and its links followed; at most 20 boxes and 50 steps a page, within pageTimeoutMs.",
      ),
    expand: flag()
      .default(false)
      .describe(
        'Open what a rendered page hides behind a click before its DOM is taken: `<details>`, accordions (controls with aria-expanded=false) and tabs ([role=tab]), each once, at most 50 a page, within pageTimeoutMs; what they load is archived and its links followed.',
      ),
    // Off, as in Browsertrix (its autoclick is not among its default behaviors): clicking costs a wait a click.
    autoclick: flag()
      .default(false)
      .describe(
        'Click what changes a rendered page in place before its DOM is taken (buttons, role=button, `#` and `javascript:` links), again while a click adds to the page ("load more"); never submits a form, never clicks a link to another URL, never leaves the page (a click that tries is undone and its URL followed as a link). At most 50 clicks a page, within pageTimeoutMs.',
      ),
    // Off, as Browsertrix's autoplay is for a user who did not ask for it: each medium played costs a wait of up
    // to a few seconds, and a player's segments can be the largest records of a page.
    autoplay: flag()
      .default(false)
      .describe(
        "Play each `<video>` and `<audio>` of a rendered page, muted, one at a time, before its DOM is taken, so what a player fetches only once it plays (a script player's manifest and segments, a `preload=none` source) is archived; each plays until its requests go quiet, 3 s at most, then is paused; at most 10 a page, within pageTimeoutMs. What the DOM names (src, `<source>`, poster) is archived either way.",
      ),
    // 2048: measured, four light pages rendering at once peak at 0.6 GB (PSS of the whole tree) and a heavy site's renderer takes 0.1–0.4 GB,
    // so four of those stay under it; what passes it is a leak or a runaway page (docs/rendering.md, "The browser's life").
    maxMemoryMb: whole({ min: 64 })
      .default(2048)
      .describe(
        "The worker's Chromium is restarted between pages once its process tree holds more than this (MiB, PSS: shared pages counted once), read from /proc at most every 2 s; pages rendering finish first, new ones wait.",
      ),
    // 1000: a restart costs about half a second of waiting pages; once per thousand pages bounds what Chromium keeps that memory readings miss.
    pagesPerBrowser: whole({ min: 1 })
      .default(1000)
      .describe("The worker's Chromium is restarted between pages after this many pages (all sessions' pages together), as for browser.maxMemoryMb."),
    screenshot: flag()
      .default(false)
      .describe(
        "Store screenshots of each rendered page in the WARC as Browsertrix Crawler stores them, `resource` records named `urn:view:<page URL>` (the viewport at the top of the page, PNG), `urn:thumbnail:<page URL>` (the same, 640 × 360 JPEG) and `urn:fullPage:<page URL>` (the full page, PNG, cut at 16384 px high); indexed in the CDXJ, so ReplayWeb.page shows a WACZ page's thumbnail and `crawler qa` compares the full page (the view in an archive that has no full page). A failed screenshot is logged and skipped.",
      ),
    // Off, as Browsertrix's --text: a page's text can be as large as its HTML.
    text: flag()
      .default(false)
      .describe(
        "Store each rendered page's text as a reader sees it (the body's innerText once the DOM is taken, cut at 1,048,576 characters) in the WARC, as a `resource` record named `urn:text:<page URL>`; `export --wacz` lists it as the page's `text` in pages.jsonl and extraPages.jsonl (full-text search in ReplayWeb.page).",
      ),
    // 3: one odd page does not decide a pattern, and a static site pays three renders, not thirty.
    autoSamples: whole({ min: 1, max: 8 })
      .default(3)
      .describe(
        'render: auto: pages of a URL pattern rendered and compared with their HTTP fetch before the pattern is decided (the last this many comparisons decide, by majority).',
      ),
    // 20: one page in twenty rendered again keeps a decision honest at 5 % of the cost of rendering everything.
    autoRecheckEvery: whole({ min: 0 })
      .default(20)
      .describe('render: auto: one page in this many of a decided URL pattern is rendered and compared again, so a decision can change (0: never).'),
  }).prefault({}),
  sitemaps: oneOf(SITEMAP_MODES).default('robots+root').describe('Where sitemap URLs come from: robots.txt `Sitemap:` lines, plus `/sitemap.xml` with robots+root; off: none.'),
  output: section({
    dir: z
      .string({ error: (iss) => `must be a folder or s3://bucket/prefix${got(iss)}` })
      .default('crawl-output')
      .describe(
        `Where the archive goes: a folder, or \`s3://bucket/prefix\` (an S3-compatible bucket: connection in output.s3, credentials from the AWS SDK's default chain on each worker, never in settings). \`${CAMPAIGN_PLACEHOLDER}\` in it is replaced by the campaign ID (how each run of a schedule gets its own folder or prefix).`,
      ),
    warcKeepSecrets: flag()
      .default(false)
      .describe(
        'Keep the values of Authorization, Proxy-Authorization and Cookie request headers, credentials-file headers and Set-Cookie response headers in the WARC; by default they become `[redacted]` (the names stay). For WARCs stored privately.',
      ),
    // Connection settings only: the keys are secrets, found by the AWS SDK on each machine (they would land in Temporal history here).
    s3: z
      .strictObject(
        {
          endpoint: text(S3_ENDPOINT_SHAPE, s3EndpointProblem)
            .nullable()
            .default(null)
            .describe(
              'The S3-compatible endpoint of an `s3://` output.dir (SeaweedFS, MinIO, Garage…), an http(s) URL; null: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, on each worker, else AWS S3 itself.',
            ),
          region: text(S3_REGION_SHAPE, s3RegionProblem)
            .nullable()
            .default(null)
            .describe("The bucket's region; null: AWS_REGION on each worker, else us-east-1 with an endpoint (what self-hosted stores take), else the AWS profile's."),
          pathStyle: flag()
            .default(false)
            .describe('Address the bucket as `<endpoint>/<bucket>` rather than `<bucket>.<endpoint host>`: most self-hosted stores need it (AWS S3 takes both).'),
        },
        {
          // A key of its own named, not its value: someone putting keys here is putting secrets in Temporal's history.
          error: (iss) =>
            iss.code === 'unrecognized_keys'
              ? `has ${iss.keys.map((k) => JSON.stringify(k)).join(', ')}: output.s3 holds endpoint, region and pathStyle; credentials come from the AWS SDK's default chain on each machine, never from settings`
              : `must be an object such as {"endpoint": "http://127.0.0.1:8333", "pathStyle": true}${got(iss)}`,
        },
      )
      .prefault({}),
    // An output in object storage: each worker writes into its local spool and uploads every file it finishes.
    upload: section({
      // 256 MiB: a few parts of a multipart upload each, and not much lost with a worker's disk.
      maxFileBytes: whole({ min: 1 })
        .default(256 * 1024 * 1024)
        .describe(
          'Output in object storage: a worker finishes its WARC, index or dataset file and uploads it once the file has reached this size (bytes; a file ends at most one page past it). A folder output is not affected.',
        ),
      // A minute: how long a slow crawl's pages wait, at most, before they are in the bucket.
      maxFileAgeMs: timerMs(1)
        .default(60_000)
        .describe(
          'Output in object storage: a worker also finishes and uploads a file this long (ms) after starting it, however little it holds: the longest a page waits before it is in the bucket. A folder output is not affected.',
        ),
    }).prefault({}),
  }).prefault({}),
  handler: text(HANDLER_SHAPE, handlerProblem)
    .nullable()
    .default(null)
    .describe(
      "The user's code run on every fetched page (docs/handlers.md): an absolute path to a .ts/.mts/.js/.mjs module every worker can read (the crawl command makes a relative path absolute), or a package name resolvable from the workers. null: no handler.",
    ),
  handlerTimeoutMs: timerMs(1).default(30_000).describe('Time limit of one handler hook call; a hook past it fails that attempt.'),
  cookies: oneOf(COOKIE_MODES)
    .default('on')
    .describe(
      'Keep the cookies sites set, per registrable domain, in Redis, and send them back (RFC 6265), pages, sitemaps and embeds alike; off: every request anonymous. robots.txt is always fetched without cookies.',
    ),
  cookiesFile: text(COOKIES_FILE_SHAPE, cookiesFileProblem)
    .nullable()
    .default(null)
    .describe(
      'A Netscape cookies.txt (curl, wget, browser extensions) the crawl starts with, for sites it must crawl logged in: an absolute path every worker can read, not readable by others. Only its path travels; null: none.',
    ),
  frontier: section(
    {
      priorities: z
        .array(priorityRule, { error: () => `must be a list of ${RULE_SHAPE}` })
        .superRefine((rules, ctx) => {
          if (rules.length > MAX_PRIORITY_RULES) ctx.addIssue({ code: 'custom', message: `has ${rules.length} rules; at most ${MAX_PRIORITY_RULES}`, input: rules });
        })
        .default([])
        .describe(
          `Within a host's frontier, higher priority first, then depth, then discovery. The first rule whose pattern (a JavaScript regular expression, unanchored, matched against the normalised URL) matches gives a URL its priority; no match = 0. Integers from ${FRONTIER_PRIORITY_MIN} to ${FRONTIER_PRIORITY_MAX}, at most ${MAX_PRIORITY_RULES} rules.`,
        ),
      // A host's frontier past this keeps about half in Redis and its tail in segments on the
      // output store (src/redis/frontier-spill.ts): Redis grows with active hosts, not with URLs.
      spillAbove: whole({ min: MIN_SPILL_ABOVE, orNull: ', or null to keep every frontier whole in Redis' })
        .nullable()
        .default(DEFAULT_SPILL_ABOVE)
        .describe(
          `A host whose frontier holds more URLs than this keeps about half of them (its head) in Redis and writes the rest, its cold tail, as compressed segments under \`frontier/\` in the campaign's output (folder or bucket), read back in priority order as the host drains. null = never spill. Every worker must run a release that reads segments (docs/operations.md).`,
        ),
      // The URL-seen test (src/redis/seen-bloom.ts): exact by default; a Bloom filter for crawls
      // that accept a stated loss. Read when the campaign is created and fixed for its life.
      seen: oneOf(SEEN_SETS)
        .default('exact')
        .describe(
          'The URL-seen set of each host: "exact" (64-bit fingerprints, no URL ever lost) or "bloom" (a Bloom filter at about a third of the memory, which skips a new URL with probability seenRate: the summary and `crawler status` show how many URLs that is expected to be). Chosen when the campaign is created; changing it later changes nothing for that campaign.',
        ),
      seenRate: z
        .number({ error: seenRateError })
        .gte(MIN_BLOOM_RATE, { error: seenRateError })
        .lte(MAX_BLOOM_RATE, { error: seenRateError })
        .default(DEFAULT_BLOOM_RATE)
        .describe(
          `With seen "bloom": the chance that a URL new to its host is taken for one already seen and skipped (its false-positive rate, the sum over the filter's levels), from ${MIN_BLOOM_RATE} to ${MAX_BLOOM_RATE}. Lower costs more memory: at 0.01 about 2 to 4 bytes a URL (up to 6 just after a large host's filter grows), at 0.001 about 2.5 to 5.5 (docs/operations.md).`,
        ),
    },
    '{"priorities": [{"pattern": "/products/", "priority": 5}], "spillAbove": 5000, "seen": "bloom", "seenRate": 0.01}',
  )
    .nullish()
    .transform((f) => f ?? { priorities: [], spillAbove: DEFAULT_SPILL_ABOVE, seen: 'exact' as const, seenRate: DEFAULT_BLOOM_RATE }),
  retention: section({
    // A week: long enough to look at a finished campaign's hosts with
    // `crawler status` and to resume work on it by hand; the keys of a
    // large campaign are gigabytes (docs/operations.md, sizing).
    redisMs: whole({ min: MIN_RETENTION_MS, orNull: ' (a minute), or null to keep the keys until `crawler purge`' })
      .nullable()
      .default(WEEK_MS)
      .describe(
        "How long the campaign's Redis keys (those `retention.keep` keeps) are kept once it has ended (completed, stopped by a budget, cancelled); null = until `crawler purge`. The summary, the WARC and the index do not depend on them. An expiry in Redis, not a timer.",
      ),
    // summary by default: the rest (content index, seen-sets, frontier and
    // revisit leftovers, session and robots.txt state, cookie jars) is about
    // nine tenths of a finished campaign's memory and nothing reads it once
    // the campaign has ended, while the cookie jars hold sites' session
    // cookies, secrets best not left lying in Redis for a week. all is for
    // looking into an ended campaign's state by hand (redis-cli).
    keep: oneOf(RETENTION_KEEPS)
      .default('summary')
      .describe(
        "What the campaign's Redis keeps once it has ended. summary: what `crawler status`, `crawler seal` and `crawler purge` read (settings, host records and counters, committed attempt ids, the host lists); the content index, seen-sets, frontier and revisit leftovers, robots.txt and session state and cookie jars are deleted at the end. all: every key, for its retention.",
      ),
  }).prefault({}),
  // Nutch's AdaptiveFetchSchedule uses 1.5-ish steps; an hour to a month
  // keeps a news front page fresh and a dormant page cheap.
  revisit: revisitSection
    .nullish()
    .transform((r) => r ?? REVISIT_OFF)
    .describe(
      'Continuous crawling (docs/continuous-crawling.md): every URL fetched is scheduled for another visit between minMs and maxMs later, the interval adapting to how often the page changes. Such a campaign never completes on its own: only a cancel or a budget ends it.',
    ),
};

/** No revisit section: the defaults, switched off. */
const REVISIT_OFF = revisitSection.parse({ enabled: false });

/** The whole campaign input; `campaignSchema.shape` is what docs/settings.md is generated from. */
export const campaignSchema = z
  .object(campaignFields, { error: () => 'input must be an object' })
  .superRefine((c, ctx) => {
    const noFile = c.seedsFile === undefined || c.seedsFile === null;
    if (Array.isArray(c.seeds) && c.seeds.length === 0 && noFile)
      ctx.addIssue({ code: 'custom', message: 'must be a non-empty list of URLs, or seedsFile must name a seed list', path: ['seeds'], input: c.seeds });
    // A cookies file the crawl would never send is a mistake worth hearing about, not a silent anonymous crawl.
    if (c.cookies === 'off' && typeof c.cookiesFile === 'string')
      ctx.addIssue({ code: 'custom', message: 'needs cookies "on": with cookies off no cookie is sent', path: ['cookiesFile'], input: c.cookiesFile });
    // Checked as the workers will read it, the campaign ID in place of {campaign} (an ID of "." or ".." would make a prefix segment of its own).
    const dir = (c.output as { dir?: unknown } | undefined)?.dir;
    if (typeof dir === 'string') {
      const problem = outputDirProblem(dir) ?? (typeof c.campaignId === 'string' ? outputDirProblem(dir.replaceAll(CAMPAIGN_PLACEHOLDER, c.campaignId)) : null);
      if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['output', 'dir'], input: dir });
    }
  }, always)
  // `{campaign}` in the folder is the campaign ID: every run of a schedule is a campaign of its own, with its own folder.
  .transform((c) => ({ ...c, output: { ...c.output, dir: c.output.dir.replaceAll(CAMPAIGN_PLACEHOLDER, c.campaignId) } }));

/** What a campaign is started with (plain JSON): every field but seeds or seedsFile may be left out. */
export interface CampaignInput extends Omit<z.input<typeof campaignSchema>, 'campaignId'> {
  /** Defaults to the workflow ID. */
  campaignId?: string;
}
/** The resolved settings: every default applied, every field checked. */
export type CampaignSettings = z.output<typeof campaignSchema>;
export type RevisitSettings = CampaignSettings['revisit'];

/** The defaults of every section, read from the schema (campaignId and the seeds have none). */
export const CAMPAIGN_DEFAULTS = (() => {
  const { campaignId: _id, seeds: _seeds, seedsFile: _file, ...sections } = campaignFields;
  return z.object(sections).parse({});
})();

/** A problem as the user reads it: the field's path, then what is wrong with it. */
function problemOf(issue: z.core.$ZodIssue): string {
  const path = issue.path.reduce<string>((p, k) => (typeof k === 'number' ? `${p}[${k}]` : p ? `${p}.${String(k)}` : String(k)), '');
  return path ? `${path} ${issue.message}` : issue.message;
}

/**
 * Applies defaults and checks everything but URL syntax. Throws
 * CampaignInputError listing every problem at once, each naming its field.
 */
export function resolveCampaignSettings(input: CampaignInput, fallbackId: string): CampaignSettings {
  if (!input || typeof input !== 'object' || Array.isArray(input)) throw new CampaignInputError(['input must be an object']);
  const r = campaignSchema.safeParse({ ...input, campaignId: input.campaignId ?? fallbackId });
  if (r.success) return r.data;
  // One field may fail two checks with the same words (a huge number is both unsafe and too big).
  throw new CampaignInputError([...new Set(r.error.issues.map(problemOf))]);
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
