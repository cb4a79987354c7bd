// robots.txt parsing and matching per RFC 9309 (Robots Exclusion Protocol).
//
// We write our own because the npm robots.txt libraries fall short of the RFC
// in ways that matter to a polite crawler: percent-encoding normalisation
// (§2.2.2), merging every group that names the crawler, letting a matching
// group without rules shadow `*`, an explicit parse limit (§2.5), and
// wildcard matching that cannot backtrack catastrophically. We also need the
// parsed result as plain JSON so workers can cache it in Redis.
//
// Pure module: no I/O. Only the globals TextDecoder and URL are used.
//
// Leniencies (in the spirit of RFC 9309 §2.2.4 and Google's parser):
// - field names are case-insensitive and surrounding whitespace is ignored;
// - accepted spellings: `user-agent` / `useragent` / `user agent` / `user_agent`;
//   `disallow` / `dissallow` / `dissalow` / `disalow` / `diasllow` / `disallaw`;
//   `allow`; `crawl-delay` / `crawldelay` / `crawl delay` / `crawl_delay`;
//   `sitemap` / `sitemaps` / `site-map`;
// - a missing colon is tolerated when the line is exactly `<known field> <value>`
//   with no further whitespace in the value (`Disallow /tmp`), so prose such as
//   `user agent foo bar` is not misread as a record;
// - a user-agent value is reduced to its leading product token
//   (`DurableCrawler/1.0` → `durablecrawler`), compared case-insensitively;
// - a UTF-8 BOM, NUL bytes, binary garbage, CR / LF / CRLF endings and unknown
//   fields are tolerated; lines that are not records are skipped.
//
// Deliberate choices where the RFC leaves room:
// - Only allow/disallow lines end a run of user-agent lines; crawl-delay and
//   sitemap are "other records" that MUST NOT terminate a group (§2.2.4), so
//   `User-agent: *` / `Crawl-delay: 5` / `User-agent: a` / `Disallow: /x` is a
//   single group naming both agents for its allow/disallow rules (as in
//   Google's parser).
// - A crawl-delay line, though, belongs only to the user-agent lines written
//   directly above it: in that example `*` gets 5 s and `a` none. Sites write
//   `User-agent: *` / `Crawl-delay: 10` / blank / `User-agent: a` / `Crawl-delay: 1`
//   to give one crawler a shorter delay; merging the two would hand `a` the 10 s
//   of `*`. In JSON such a group is stored without a delay plus one rule-less
//   group per user-agent run that has one, so matching stays "merge every
//   group naming the agent".
// - The `*` delay applies only when no group names our product token: a
//   specific group without Crawl-delay means no delay from robots.txt.
// - When several crawl-delay values apply (repeated in a run, or across
//   merged groups) the largest wins: being too polite is the safe mistake.
// - Reserved characters and their percent-encodings stay distinct
//   (`/a%2Fb` ≠ `/a/b`), except `*` and `$`, which only have a literal form as
//   `%2A` / `%24` in patterns (§2.2.3, Figure 6). We do not implement Figure 4's
//   second row (encoding `:` and `/` inside a query value) because that needs
//   guessing which `/` and `:` are data and which are structure.
// - A rule value keeps inner whitespace (`Disallow: /a b` blocks `/a%20b`), and a
//   value starting with neither `/` nor `*` is kept but can never match a path.
// - When the body exceeds the parse limit the final, cut-off line is dropped:
//   a truncated `Allow: /abc` would become a broader `Allow: /a`.
import { CrawlerError } from '../errors';

/** RFC 9309 §2.5: the parsing limit MUST be at least 500 KiB. */
export const DEFAULT_MAX_ROBOTS_BYTES = 500 * 1024;

// 2: crawl-delay is per run of user-agent lines (see above). Version 1 JSON
// merged a run's delay into the whole group, so it is refused and re-fetched.
const JSON_VERSION = 2;

export type RobotsErrorCode = 'INVALID_JSON';

/** Raised when cached JSON cannot be turned back into a RobotsTxt. */
export class RobotsError extends CrawlerError<RobotsErrorCode> {
  constructor(code: RobotsErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'RobotsError';
  }
}

export interface RobotsRuleJson {
  allow: boolean;
  /** Normalised pattern: `*` is a wildcard, a trailing `$` an end anchor. */
  pattern: string;
}

export interface RobotsGroupJson {
  /** Lower-cased product tokens, `*`, or '' for a user-agent line without a usable token. */
  agents: string[];
  rules: RobotsRuleJson[];
  crawlDelaySec?: number;
}

export interface RobotsTxtJson {
  v: typeof JSON_VERSION;
  groups: RobotsGroupJson[];
  sitemaps: string[];
}

export interface RobotsRules {
  /** Accepts an absolute URL or a path (with optional query); the fragment is ignored. */
  isAllowed(urlOrPath: string): boolean;
  readonly crawlDelaySec?: number;
  /** The product token whose groups apply, `*` for the fallback groups, null when none apply. */
  readonly matchedAgent: string | '*' | null;
}

export interface ParseRobotsOptions {
  /** Bytes of the body to parse; content past it is ignored. Defaults to 500 KiB. */
  maxBytes?: number;
}

// ---------------------------------------------------------------------------
// Product tokens

const TOKEN_PREFIX = /^[A-Za-z_-]+/;

/**
 * The RFC 9309 product token of a crawler's user-agent string, lower-cased
 * ('DurableCrawler/0.1 (+info)' → 'durablecrawler'); '' when it has none.
 */
export function productToken(userAgent: string): string {
  const m = TOKEN_PREFIX.exec(userAgent.trim());
  return m ? m[0].toLowerCase() : '';
}

/** The agent a robots.txt user-agent line names: a token, '*', or '' (matches nobody). */
function agentOfLine(value: string): string {
  // `*` counts only on its own; `*bot` is not a wildcard agent (as in Google's parser).
  if (value === '*' || /^\*\s/.test(value)) return '*';
  return productToken(value);
}

// ---------------------------------------------------------------------------
// Percent-encoding normalisation (RFC 9309 §2.2.2)

const HEX = '0123456789ABCDEF';

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

function hexVal(c: number): number {
  return c <= 57 ? c - 48 : (c | 0x20) - 87;
}

function isUnreserved(b: number): boolean {
  return (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || (b >= 48 && b <= 57) || b === 45 || b === 46 || b === 95 || b === 126;
}

// RFC 3986 reserved characters (gen-delims and sub-delims), kept literal so
// that `/` and `%2F` stay distinct. `*` and `$` are handled by the caller.
const RESERVED = new Set(Array.from(":/?#[]@!&'()+,;=", (c) => c.charCodeAt(0)));

function pctByte(b: number): string {
  return `%${HEX[b >> 4]}${HEX[b & 15]}`;
}

function pctCodePoint(cp: number): string {
  if (cp < 0x80) return pctByte(cp);
  if (cp < 0x800) return pctByte(0xc0 | (cp >> 6)) + pctByte(0x80 | (cp & 63));
  if (cp < 0x10000) {
    return pctByte(0xe0 | (cp >> 12)) + pctByte(0x80 | ((cp >> 6) & 63)) + pctByte(0x80 | (cp & 63));
  }
  return pctByte(0xf0 | (cp >> 18)) + pctByte(0x80 | ((cp >> 12) & 63)) + pctByte(0x80 | ((cp >> 6) & 63)) + pctByte(0x80 | (cp & 63));
}

/**
 * Canonical form shared by patterns and paths: `%XX` of unreserved octets is
 * decoded, other `%XX` upper-cased, a stray `%` becomes `%25`, and anything
 * outside unreserved/reserved ASCII (controls, space, `"<>\^`{|}`, non-ASCII)
 * is percent-encoded as UTF-8. `*` is kept as a wildcard in patterns and
 * encoded in paths; `$` is always encoded (the anchor is stripped beforehand).
 */
function canonicalise(s: string, isPattern: boolean): string {
  // Fast path: the common case is plain ASCII with nothing to rewrite.
  if (/^[A-Za-z0-9\-._~:/?[\]@!&'()+,;=]*$/.test(s)) return s;
  let out = '';
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 37 /* % */) {
      if (i + 2 < n && isHex(s.charCodeAt(i + 1)) && isHex(s.charCodeAt(i + 2))) {
        const b = (hexVal(s.charCodeAt(i + 1)) << 4) | hexVal(s.charCodeAt(i + 2));
        out += isUnreserved(b) ? String.fromCharCode(b) : pctByte(b);
        i += 2;
      } else {
        out += '%25';
      }
    } else if (c === 42 /* * */) {
      out += isPattern ? '*' : '%2A';
    } else if (isUnreserved(c) || RESERVED.has(c)) {
      out += s[i];
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += pctCodePoint(0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00));
        i++;
      } else {
        out += pctCodePoint(0xfffd);
      }
    } else if (c >= 0xd800 && c <= 0xdfff) {
      // A lone surrogate has no UTF-8 form; mirror what TextEncoder does.
      out += pctCodePoint(0xfffd);
    } else {
      out += pctCodePoint(c);
    }
  }
  return out;
}

/** Normalises a rule's value; '' means "no rule" (e.g. an empty Disallow). */
function normalisePattern(raw: string): string {
  if (raw === '') return '';
  // Only a final `$` anchors (§2.2.3); anywhere else it is a literal character.
  const anchored = raw.endsWith('$');
  const body = canonicalise(anchored ? raw.slice(0, -1) : raw, true);
  return anchored ? `${body}$` : body;
}

/** Path + query of a URL or path, without the fragment, never empty. */
export function pathAndQuery(urlOrPath: string): string {
  let s = urlOrPath.trim();
  const hash = s.indexOf('#');
  if (hash >= 0) s = s.slice(0, hash);
  if (!s.startsWith('/') || s.startsWith('//')) {
    // Skip `scheme://authority` (or `//authority`); without a scheme treat the
    // leading segment as a host, as in `example.com/a`.
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(s);
    let rest = scheme ? s.slice(scheme[0].length) : s.startsWith('//') ? s.slice(2) : s;
    const cut = rest.search(/[/?]/);
    rest = cut < 0 ? '' : rest.slice(cut);
    s = rest;
  }
  if (s === '') return '/';
  if (s.startsWith('?')) return `/${s}`;
  return s;
}

/** The canonical form of a URL's path + query that patterns are matched against. */
export function normalisePath(urlOrPath: string): string {
  return canonicalise(pathAndQuery(urlOrPath), false);
}

// ---------------------------------------------------------------------------
// Pattern compilation and matching

interface CompiledRule {
  readonly allow: boolean;
  readonly pattern: string;
  /** Literal pieces between wildcards; segments[0] must be a prefix of the path. */
  readonly segments: readonly string[];
  readonly anchored: boolean;
}

function compileRule(rule: RobotsRuleJson): CompiledRule {
  const anchored = rule.pattern.endsWith('$');
  const body = anchored ? rule.pattern.slice(0, -1) : rule.pattern;
  return { allow: rule.allow, pattern: rule.pattern, segments: body.split('*'), anchored };
}

/**
 * Glob match with `*` only. Taking the leftmost occurrence of each literal
 * segment is always sufficient for such patterns, so this runs in
 * O(path × pattern) at worst with no backtracking, whatever the pattern.
 */
function ruleMatches(rule: CompiledRule, path: string): boolean {
  const segs = rule.segments;
  const first = segs[0];
  if (!path.startsWith(first)) return false;
  if (segs.length === 1) return rule.anchored ? path.length === first.length : true;
  let pos = first.length;
  let end = path.length;
  let lastIdx = segs.length;
  if (rule.anchored) {
    const last = segs[segs.length - 1];
    if (path.length - last.length < pos || !path.endsWith(last)) return false;
    end = path.length - last.length;
    lastIdx = segs.length - 1;
  }
  for (let i = 1; i < lastIdx; i++) {
    const seg = segs[i];
    if (seg === '') continue;
    const idx = path.indexOf(seg, pos);
    if (idx < 0 || idx + seg.length > end) return false;
    pos = idx + seg.length;
  }
  return true;
}

class CompiledRobotsRules implements RobotsRules {
  readonly crawlDelaySec?: number;
  readonly matchedAgent: string | '*' | null;
  // Sorted most specific first (allow before disallow on equal length), so the
  // first rule that matches decides.
  private readonly rules: readonly CompiledRule[];

  constructor(rules: CompiledRule[], matchedAgent: string | '*' | null, crawlDelaySec: number | undefined) {
    this.rules = rules.sort((a, b) => b.pattern.length - a.pattern.length || Number(b.allow) - Number(a.allow));
    this.matchedAgent = matchedAgent;
    if (crawlDelaySec !== undefined) this.crawlDelaySec = crawlDelaySec;
  }

  isAllowed(urlOrPath: string): boolean {
    const path = normalisePath(urlOrPath);
    // §2.2.2: "The /robots.txt URI is implicitly allowed."
    const q = path.indexOf('?');
    if ((q < 0 ? path : path.slice(0, q)) === '/robots.txt') return true;
    for (const rule of this.rules) {
      if (ruleMatches(rule, path)) return rule.allow;
    }
    return true;
  }
}

/** Most query parameters tried first by allowedInAnyQueryOrder: bounds its cost on a URL with hundreds. */
const MAX_QUERY_ORDERS = 20;

/**
 * `rules.isAllowed` for a URL whose query parameters the crawler sorted
 * (src/url/normalize.ts): a site writes its robots.txt for the order of its
 * own links, so `Disallow: /?s=` must still stop `/?post_type=product&s=shoes`,
 * which the site linked as `/?s=shoes&post_type=product`. The URL is allowed
 * only if it is allowed as given and with each of its first
 * MAX_QUERY_ORDERS parameters moved to the front. Where the site's own order
 * is unknown, the polite mistake is to skip a URL, not to fetch it.
 */
export function allowedInAnyQueryOrder(rules: Pick<RobotsRules, 'isAllowed'>, url: string): boolean {
  if (!rules.isAllowed(url)) return false;
  const hash = url.indexOf('#');
  const noFragment = hash < 0 ? url : url.slice(0, hash);
  const q = noFragment.indexOf('?');
  if (q < 0) return true;
  const params = noFragment.slice(q + 1).split('&');
  if (params.length < 2) return true;
  const base = noFragment.slice(0, q + 1);
  for (let i = 1; i < Math.min(params.length, MAX_QUERY_ORDERS); i++) {
    const reordered = [params[i], ...params.slice(0, i), ...params.slice(i + 1)];
    if (!rules.isAllowed(base + reordered.join('&'))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Parsing

type Field = 'user-agent' | 'allow' | 'disallow' | 'crawl-delay' | 'sitemap';

const FIELD_NAMES: ReadonlyMap<string, Field> = new Map<string, Field>([
  ['user-agent', 'user-agent'],
  ['useragent', 'user-agent'],
  ['user agent', 'user-agent'],
  ['user_agent', 'user-agent'],
  ['allow', 'allow'],
  ['disallow', 'disallow'],
  ['dissallow', 'disallow'],
  ['dissalow', 'disallow'],
  ['disalow', 'disallow'],
  ['diasllow', 'disallow'],
  ['disallaw', 'disallow'],
  ['crawl-delay', 'crawl-delay'],
  ['crawldelay', 'crawl-delay'],
  ['crawl delay', 'crawl-delay'],
  ['crawl_delay', 'crawl-delay'],
  ['sitemap', 'sitemap'],
  ['sitemaps', 'sitemap'],
  ['site-map', 'sitemap'],
]);

function fieldOf(name: string): Field | undefined {
  return FIELD_NAMES.get(name.trim().replace(/\s+/g, ' ').toLowerCase());
}

function splitRecord(line: string): { field: Field; value: string } | null {
  const colon = line.indexOf(':');
  if (colon >= 0) {
    const field = fieldOf(line.slice(0, colon));
    if (field) return { field, value: line.slice(colon + 1).trim() };
  }
  // No usable colon: accept only `<field> <single-token value>`; a colon inside
  // the value (`Sitemap https://…`) is why this is tried even when one exists.
  const m = /^(\S+)\s+(\S+)$/.exec(line);
  if (m) {
    const field = fieldOf(m[1]);
    if (field) return { field, value: m[2] };
  }
  return null;
}

/** Body → text, limited to maxBytes of UTF-8, without a BOM or a cut-off last line. */
function decodeLimited(body: string | Uint8Array, maxBytes: number): string {
  let text: string;
  let truncated = false;
  if (typeof body === 'string') {
    text = body;
    // Every UTF-16 code unit is at most 3 UTF-8 bytes, so most bodies skip the count.
    if (text.length * 3 > maxBytes) {
      let bytes = 0;
      let i = 0;
      for (; i < text.length; i++) {
        const c = text.charCodeAt(i);
        const size = c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? 4 : 3;
        if (bytes + size > maxBytes) break;
        bytes += size;
        if (size === 4) i++;
      }
      if (i < text.length) {
        text = text.slice(0, i);
        truncated = true;
      }
    }
  } else {
    let bytes = body;
    if (bytes.length > maxBytes) {
      bytes = bytes.subarray(0, maxBytes);
      truncated = true;
    }
    // Non-fatal: invalid UTF-8 becomes U+FFFD and the line is simply unmatched.
    text = new TextDecoder('utf-8').decode(bytes);
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (truncated) {
    const lastBreak = Math.max(text.lastIndexOf('\n'), text.lastIndexOf('\r'));
    text = lastBreak < 0 ? '' : text.slice(0, lastBreak);
  }
  return text;
}

function parseCrawlDelay(value: string): number | undefined {
  // Plain decimal only: Number() would also accept '0x10', '1e3' or ''.
  if (!/^(?:\d+(?:\.\d*)?|\.\d+)$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

function parseSitemap(value: string): string | undefined {
  if (!/^https?:\/\//i.test(value)) return undefined;
  try {
    return new URL(value).href;
  } catch {
    return undefined;
  }
}

function maxDelay(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}

/** A group while parsing: its runs of consecutive user-agent lines carry the crawl-delays. */
interface ParsedGroup {
  agents: string[];
  rules: RobotsRuleJson[];
  runs: { agents: string[]; crawlDelaySec?: number }[];
}

/** Parses a robots.txt body. Never throws on content; anything unparseable is skipped. */
export function parseRobotsTxt(body: string | Uint8Array, opts: ParseRobotsOptions = {}): RobotsTxt {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_ROBOTS_BYTES;
  const text = decodeLimited(body, Math.max(0, maxBytes));
  const groups: ParsedGroup[] = [];
  const sitemaps: string[] = [];
  // Beside the list, so de-duplicating 15,000 Sitemap: lines (a 500 KiB file of them) stays linear.
  const sitemapSet = new Set<string>();
  let current: ParsedGroup | null = null;
  // Set by allow/disallow: the next user-agent line then starts a new group.
  let sawRule = false;
  // Set by crawl-delay: the next user-agent line then starts a new run within the group.
  let sawDelay = false;

  for (const rawLine of text.split(/\r\n|\r|\n/)) {
    const hash = rawLine.indexOf('#');
    const line = (hash >= 0 ? rawLine.slice(0, hash) : rawLine).trim();
    if (line === '') continue;
    const record = splitRecord(line);
    if (!record) continue;
    const { field, value } = record;
    switch (field) {
      case 'user-agent': {
        if (current === null || sawRule) {
          current = { agents: [], rules: [], runs: [] };
          groups.push(current);
          sawRule = false;
          sawDelay = false;
        }
        const agent = agentOfLine(value);
        current.agents.push(agent);
        const run = current.runs[current.runs.length - 1];
        if (run === undefined || sawDelay) current.runs.push({ agents: [agent] });
        else run.agents.push(agent);
        sawDelay = false;
        break;
      }
      case 'allow':
      case 'disallow': {
        // §2.2.2: rules outside any group are ignored.
        if (current === null) break;
        sawRule = true;
        const pattern = normalisePattern(value);
        if (pattern !== '') current.rules.push({ allow: field === 'allow', pattern });
        break;
      }
      case 'crawl-delay': {
        if (current === null) break;
        sawDelay = true;
        // The run of user-agent lines this delay was written under.
        const run = current.runs[current.runs.length - 1];
        const merged = maxDelay(run.crawlDelaySec, parseCrawlDelay(value));
        if (merged !== undefined) run.crawlDelaySec = merged;
        break;
      }
      case 'sitemap': {
        const url = parseSitemap(value);
        if (url !== undefined && !sitemapSet.has(url)) {
          sitemapSet.add(url);
          sitemaps.push(url);
        }
        break;
      }
    }
  }
  const out: RobotsGroupJson[] = [];
  for (const g of groups) {
    if (g.runs.length === 1) {
      const delay = g.runs[0].crawlDelaySec;
      out.push({ agents: g.agents, rules: g.rules, ...(delay !== undefined ? { crawlDelaySec: delay } : {}) });
      continue;
    }
    // Several runs: the rules are the group's, each delay only its run's.
    out.push({ agents: g.agents, rules: g.rules });
    for (const run of g.runs) {
      if (run.crawlDelaySec !== undefined) out.push({ agents: run.agents, rules: [], crawlDelaySec: run.crawlDelaySec });
    }
  }
  return new RobotsTxt(out, sitemaps);
}

// ---------------------------------------------------------------------------
// The parsed file

export class RobotsTxt {
  readonly sitemaps: string[];
  private readonly groups: readonly RobotsGroupJson[];
  private readonly compiled: ReadonlyMap<RobotsGroupJson, CompiledRule[]>;
  private readonly cache = new Map<string, RobotsRules>();

  /** Use parseRobotsTxt / fromJSON / allowAll / disallowAll rather than this. */
  constructor(groups: RobotsGroupJson[], sitemaps: string[]) {
    this.groups = groups;
    this.sitemaps = sitemaps;
    this.compiled = new Map(groups.map((g) => [g, g.rules.map(compileRule)]));
  }

  /** For a 4xx robots.txt (RFC 9309 §2.3.1.3): crawl everything. */
  static allowAll(): RobotsTxt {
    return new RobotsTxt([], []);
  }

  /** For a 5xx or unreachable robots.txt (§2.3.1.4): crawl nothing. */
  static disallowAll(): RobotsTxt {
    return new RobotsTxt([{ agents: ['*'], rules: [{ allow: false, pattern: '/' }] }], []);
  }

  /** The merged rules that apply to a crawler with this user-agent string. */
  rulesFor(userAgent: string): RobotsRules {
    const token = productToken(userAgent);
    const cached = this.cache.get(token);
    if (cached) return cached;
    let matched: RobotsGroupJson[] = token === '' ? [] : this.groups.filter((g) => g.agents.includes(token));
    let matchedAgent: string | null = matched.length > 0 ? token : null;
    if (matched.length === 0) {
      matched = this.groups.filter((g) => g.agents.includes('*'));
      matchedAgent = matched.length > 0 ? '*' : null;
    }
    const rules: CompiledRule[] = [];
    let delay: number | undefined;
    for (const g of matched) {
      // A loop, not push(...spread): a huge file can exceed the engine's argument limit.
      for (const rule of this.compiled.get(g) ?? []) rules.push(rule);
      delay = maxDelay(delay, g.crawlDelaySec);
    }
    const result = new CompiledRobotsRules(rules, matchedAgent, delay);
    this.cache.set(token, result);
    return result;
  }

  toJSON(): RobotsTxtJson {
    return {
      v: JSON_VERSION,
      groups: this.groups.map((g) => ({
        agents: [...g.agents],
        rules: g.rules.map((r) => ({ allow: r.allow, pattern: r.pattern })),
        ...(g.crawlDelaySec !== undefined ? { crawlDelaySec: g.crawlDelaySec } : {}),
      })),
      sitemaps: [...this.sitemaps],
    };
  }

  /** Rebuilds from toJSON() output (e.g. read back from a cache); throws RobotsError if malformed. */
  static fromJSON(j: unknown): RobotsTxt {
    const fail = (why: string): never => {
      throw new RobotsError('INVALID_JSON', `invalid robots.txt JSON: ${why}`);
    };
    const o = (typeof j === 'string' ? safeJsonParse(j, fail) : j) as Partial<RobotsTxtJson> | null;
    if (o === null || typeof o !== 'object') return fail('not an object');
    if (o.v !== JSON_VERSION) return fail(`unsupported version ${String(o.v)}`);
    if (!Array.isArray(o.groups)) return fail('groups is not an array');
    if (!Array.isArray(o.sitemaps) || !o.sitemaps.every((s) => typeof s === 'string')) {
      return fail('sitemaps is not an array of strings');
    }
    const groups = o.groups.map((g: unknown, i): RobotsGroupJson => {
      const group = g as Partial<RobotsGroupJson> | null;
      if (group === null || typeof group !== 'object') return fail(`group ${i} is not an object`);
      if (!Array.isArray(group.agents) || !group.agents.every((a) => typeof a === 'string')) {
        return fail(`group ${i} agents`);
      }
      if (!Array.isArray(group.rules)) return fail(`group ${i} rules`);
      const rules = group.rules.map((r: unknown): RobotsRuleJson => {
        const rule = r as Partial<RobotsRuleJson> | null;
        if (rule === null || typeof rule !== 'object' || typeof rule.allow !== 'boolean' || typeof rule.pattern !== 'string' || rule.pattern === '') {
          return fail(`group ${i} has a malformed rule`);
        }
        return { allow: rule.allow, pattern: rule.pattern };
      });
      const delay = group.crawlDelaySec;
      if (delay !== undefined && (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0)) {
        return fail(`group ${i} crawlDelaySec`);
      }
      return { agents: [...group.agents], rules, ...(delay !== undefined ? { crawlDelaySec: delay } : {}) };
    });
    return new RobotsTxt(groups, [...o.sitemaps]);
  }
}

function safeJsonParse(s: string, fail: (why: string) => never): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return fail('not JSON');
  }
}
