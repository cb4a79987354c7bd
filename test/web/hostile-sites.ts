// Misbehaving sites for the test web: redirect loops, crawler traps, servers
// that drip, stall, truncate or reset, oversized and compressed bombs, broken
// robots.txt files, sitemaps, odd charsets, throttling, session-id and
// duplicate URLs. Each builder returns a SiteSpec (add it with web.addSite)
// that carries `expected`: what a correct crawler does with the site, in
// request-log terms, so integration tests can assert behaviour against the
// hostile web without reaching the real one.
//
// Everything is deterministic (seeded) and memory-light: big bodies are
// generated while streaming and bombs are built from one small cached gzip
// member sent many times.
import { Readable, pipeline } from 'node:stream';
import zlib from 'node:zlib';
import iconv from 'iconv-lite';
import { hashString, mix, mulberry32 } from './seeded';
import type { RequestRecord, SiteRequest, SiteSpec } from './test-web';

// ---- expectations --------------------------------------------------------------

/** What a correct crawler records for one URL of a hostile site. */
export interface PageVerdict {
  /** Acceptable index outcomes ('fetched', 'error', 'http-error', 'redirect', 'skipped-content-type', 'robots-disallowed', …). */
  outcomes: string[];
  /** Acceptable error codes when the outcome is 'error' (a FetchErrorCode) or 'http-error' (`HTTP_<status>`). */
  errorCodes?: string[];
  /** Expected final status when fetched. */
  status?: number;
  /** Text the decoded page contains. */
  contains?: string;
  note?: string;
}

export interface HostileExpectation {
  /** What a correct crawler does here, in a sentence or three. */
  summary: string;
  /** Paths on this host an integration crawl starts from. */
  seeds: string[];
  /** Targets (path + query) a correct crawler requests at least once, robots.txt included where it matters. */
  mustFetch: string[];
  /** Targets a correct crawler never requests: exact targets or patterns over the raw target. */
  mustNotFetch: (string | RegExp)[];
  /** Other hosts (IP literals included) a correct crawler never connects to. */
  forbiddenHosts: string[];
  /** Index verdicts by target. */
  index: Record<string, PageVerdict>;
  /** Named sets of targets, e.g. URLs only a sitemap names, or URLs with identical bodies. */
  groups: Record<string, string[]>;
}

/** A SiteSpec plus what a correct crawler does with it; pass it to addSite as is. */
export interface HostileSite extends SiteSpec {
  expected: HostileExpectation;
}

/**
 * A request target in comparable form: WHATWG-parsed (percent-encoding,
 * dot segments), fragment dropped, query parameters stably sorted by key as
 * the crawler's normaliser does.
 */
export function canonicalTarget(target: string): string {
  const u = new URL(target, 'http://x.invalid');
  u.hash = '';
  const params = [...u.searchParams];
  if (params.length === 0) return u.pathname + (u.search === '?' ? '' : u.search);
  params.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return `${u.pathname}?${new URLSearchParams(params).toString()}`;
}

/**
 * Problems with a request log against a site's expectation: missing
 * mustFetch targets and requests that mustNotFetch forbids. Empty when the
 * crawler behaved.
 */
export function checkRequestLog(site: HostileSite, log: RequestRecord[]): string[] {
  const host = site.host.toLowerCase();
  const mine = log.filter((r) => r.host === host);
  const seen = new Set(mine.map((r) => safeCanonical(r.path)));
  const problems: string[] = [];
  for (const t of site.expected.mustFetch) {
    if (!seen.has(safeCanonical(t))) problems.push(`never requested ${t}`);
  }
  for (const r of mine) {
    for (const p of site.expected.mustNotFetch) {
      const hit = typeof p === 'string' ? safeCanonical(r.path) === safeCanonical(p) : p.test(r.path);
      if (hit) problems.push(`requested forbidden ${r.path.length > 200 ? `${r.path.slice(0, 200)}…` : r.path}`);
    }
  }
  return problems;
}

function safeCanonical(target: string): string {
  try {
    return canonicalTarget(target);
  } catch {
    return target;
  }
}

// ---- redirects -----------------------------------------------------------------

export interface RedirectSiteOptions {
  /** Where /away redirects (same port as this web); default 'elsewhere.test'. */
  otherHost?: string;
  /** Hops of /chain/0 → … → /chain/N; default 10. */
  chainHops?: number;
  /** Hops of /short/0 → … → /short/N, a chain meant to be followed to its end; default 3. */
  shortChainHops?: number;
}

export const METADATA_URL = 'http://169.254.169.254/latest/meta-data/';
export const PRIVATE_ADMIN_URL = 'http://10.0.0.1/admin';

/**
 * Redirect loop (/loop/a ⇄ /loop/b), a long chain (/chain/0 → /chain/N, every
 * redirect status and Location spelling), a short chain (/short/0 → /short/N)
 * that ends in a page, a redirect to another host (/away), redirects into the
 * cloud metadata address (/metadata) and a private network (/private-net),
 * and plain links to both.
 */
export function redirectSite(host: string, opts: RedirectSiteOptions = {}): HostileSite {
  const hops = opts.chainHops ?? 10;
  const shortHops = opts.shortChainHops ?? 3;
  const other = (opts.otherHost ?? 'elsewhere.test').toLowerCase();
  const statuses = [301, 302, 303, 307, 308];
  const chain = Array.from({ length: hops + 1 }, (_, i) => `/chain/${i}`);
  const shortChain = Array.from({ length: shortHops + 1 }, (_, i) => `/short/${i}`);
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      const { path, origin } = ctx;
      const redirect = (status: number, location: string): void => ctx.send(status, 'text/html; charset=utf-8', `<a href="${escapeHtml(location)}">moved</a>\n`, { location });
      if (path === '/') {
        ctx.send(
          200,
          HTML,
          page('Redirects', [
            link('/loop/a', 'loop'),
            link('/chain/0', 'chain'),
            link('/short/0', 'short chain'),
            link('/away', 'away'),
            link('/metadata', 'metadata'),
            link('/private-net', 'private network'),
            link(PRIVATE_ADMIN_URL, 'admin'),
            link(METADATA_URL, 'metadata direct'),
            // 169.254.169.254 as one decimal number: WHATWG URL parsing turns it into the dotted form.
            link('http://2852039166/latest/meta-data/', 'metadata decimal'),
          ]),
        );
      } else if (path === '/loop/a') redirect(302, '/loop/b');
      else if (path === '/loop/b') redirect(302, `${origin}/loop/a`);
      else if (path === '/away') redirect(301, `http://${other}:${ctx.port}/`);
      else if (path === '/metadata') redirect(302, METADATA_URL);
      else if (path === '/private-net') redirect(307, PRIVATE_ADMIN_URL);
      else {
        const m = /^\/(chain|short)\/(0|[1-9]\d*)$/.exec(path);
        const last = m?.[1] === 'short' ? shortHops : hops;
        if (!m || Number(m[2]) > last) return notFound(ctx);
        const [, name, n] = m;
        const i = Number(n);
        if (i === last) return void ctx.send(200, HTML, page('End of chain', [`<p>end of ${name === 'short' ? 'short chain' : 'chain'} after ${last} hops</p>`]));
        const next = i + 1;
        // Absolute, root-relative and path-relative Location values in turn.
        const location = [`${origin}/${name}/${next}`, `/${name}/${next}`, `${next}`][i % 3];
        redirect(statuses[i % statuses.length], location);
      }
      return true;
    },
    expected: {
      summary:
        'Every hop is its own request under the host clock, archived and indexed under its own URL (outcome redirect): ' +
        'the loop ends when its target is already known (each URL requested once); the ' +
        `${hops}-hop chain ends with TOO_MANY_REDIRECTS on the hop past fetch.maxRedirects when maxRedirects < ${hops} and reaches "end of chain" otherwise; ` +
        `the ${shortHops}-hop /short chain is followed to its page, each hop requested once; ` +
        '/away is recorded as a redirect whose target goes to its own host; redirects and links into ' +
        '169.254.169.254 and 10.0.0.1 are refused and never connected to.',
      seeds: ['/'],
      mustFetch: ['/', '/loop/a', '/loop/b', '/chain/0', ...shortChain, '/away', '/metadata', '/private-net'],
      mustNotFetch: [],
      forbiddenHosts: ['169.254.169.254', '10.0.0.1'],
      index: {
        '/loop/a': { outcomes: ['redirect'], note: 'its target /loop/b redirects back: the chain ends at the seen-set' },
        '/loop/b': { outcomes: ['redirect'] },
        '/chain/0': { outcomes: ['redirect'], note: `the hop past fetch.maxRedirects ends as error TOO_MANY_REDIRECTS when maxRedirects < ${hops}` },
        '/short/0': { outcomes: ['redirect'], note: 'the hops are redirects, the last URL the page' },
        [shortChain[shortChain.length - 1]]: { outcomes: ['fetched'], status: 200, contains: 'end of short chain', note: `when maxRedirects >= ${shortHops}` },
        '/away': { outcomes: ['redirect'], status: 301, note: `target http://${other}:PORT/ is queued for its own host, if in scope` },
        '/metadata': { outcomes: ['redirect', 'error', 'skipped'], note: 'target refused: link-local' },
        '/private-net': { outcomes: ['redirect', 'error', 'skipped'], note: 'target refused: private address' },
      },
      groups: { chain, shortChain, loop: ['/loop/a', '/loop/b'] },
    },
  };
}

/**
 * A plain one-page site that nothing links to and no crawl seeds: the only
 * way in is a redirect from another host (redirectSite's /away), so a
 * request here shows the redirect target was handed to this host's crawl.
 */
export function redirectTargetSite(host: string): HostileSite {
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      if (ctx.path !== '/') return false;
      ctx.send(200, HTML, page('Redirect target', ['<p>reached through a redirect from another host</p>']));
      return true;
    },
    expected: {
      summary: 'Reached only through a cross-host redirect: "/" is fetched by this host\'s own crawl, referred by the redirecting URL.',
      seeds: [],
      mustFetch: ['/'],
      mustNotFetch: [],
      forbiddenHosts: [],
      index: { '/': { outcomes: ['fetched'], status: 200, contains: 'reached through a redirect' } },
      groups: {},
    },
  };
}

// ---- HTTP error statuses -------------------------------------------------------

/**
 * Pages that end in an HTTP error: /missing (404) and /gone (410) every time,
 * /down (503, no Retry-After) every time, so it outlasts any retry budget.
 */
export function httpErrorSite(host: string): HostileSite {
  const statuses: Record<string, number> = { '/missing': 404, '/gone': 410, '/down': 503 };
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      if (ctx.path === '/robots.txt' || ctx.path === '/sitemap.xml') return false;
      if (ctx.path === '/')
        ctx.send(
          200,
          HTML,
          page(
            'HTTP errors',
            Object.keys(statuses).map((p) => link(p, p.slice(1))),
          ),
        );
      else {
        const status = statuses[ctx.path] ?? 404;
        ctx.send(status, HTML, page(`Error ${status}`, [`<p>${status} for ${escapeHtml(ctx.path)}</p>`]));
      }
      return true;
    },
    expected: {
      summary:
        'Each error page is indexed as an http-error with code HTTP_<status> and its response stored: the 4xx ones ' +
        'are requested once (never retried), /down is retried fetch.maxRetries times and then recorded.',
      seeds: ['/'],
      mustFetch: ['/', ...Object.keys(statuses)],
      mustNotFetch: [],
      forbiddenHosts: [],
      index: Object.fromEntries(Object.entries(statuses).map(([p, status]) => [p, { outcomes: ['http-error'], errorCodes: [`HTTP_${status}`], status }])),
      groups: { clientErrors: ['/missing', '/gone'], serverErrors: ['/down'] },
    },
  };
}

// ---- traps ---------------------------------------------------------------------

export interface TrapSiteOptions {
  /** Month the calendar starts at; default 2026/11. */
  year?: number;
  month?: number;
}

export interface TrapSite extends HostileSite {
  /** The links a page of this site carries, as root-relative targets (undefined: 404). */
  linksOf(target: string): string[] | undefined;
  /** Every target a breadth-first crawl from `/` reaches within maxDepth link hops (robots allow all). */
  reachable(maxDepth: number): Set<string>;
  /** Whether a target is beyond the finite part of the site. */
  isTrap(target: string): boolean;
}

/**
 * Infinite spaces: a calendar with prev/next month links forever, a search
 * page whose links each add one more query parameter (two per page, so the
 * space doubles per hop), and `/a/` linking `a/` for /a/a/a/… . /about and /
 * are the only finite part.
 */
export function calendarTrapSite(host: string, opts: TrapSiteOptions = {}): TrapSite {
  const y0 = opts.year ?? 2026;
  const m0 = opts.month ?? 11;
  const start = `/calendar/${y0}/${m0}`;
  const linksOf = (target: string): string[] | undefined => {
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    const query = q < 0 ? '' : target.slice(q + 1);
    if (path === '/') return ['/about', start, '/search?q=trap', '/a/'];
    if (path === '/about') return ['/'];
    let m = /^\/calendar\/([1-9]\d{0,5})\/([1-9]|1[0-2])$/.exec(path);
    if (m) {
      const y = Number(m[1]);
      const mo = Number(m[2]);
      const prev = mo === 1 ? `/calendar/${y - 1}/12` : `/calendar/${y}/${mo - 1}`;
      const next = mo === 12 ? `/calendar/${y + 1}/1` : `/calendar/${y}/${mo + 1}`;
      return y > 1 ? [prev, next] : [next];
    }
    if (path === '/search') {
      const params = new URLSearchParams(query);
      if (params.get('q') !== 'trap') return undefined;
      // Keys sort after `q` and in creation order, so sorting normalisers keep the spelling.
      const n = [...params.keys()].length;
      const key = `z${String(n).padStart(3, '0')}`;
      return [`/search?${query}&${key}=a`, `/search?${query}&${key}=b`];
    }
    m = /^((?:\/a)+)\/$/.exec(path);
    if (m && query === '') return [`${path}a/`];
    return undefined;
  };
  const isTrap = (target: string): boolean => {
    const c = safeCanonical(target);
    return !['/', '/about', start, '/search?q=trap', '/a/'].includes(c);
  };
  return {
    host,
    pages: 1,
    fanOut: 0,
    linksOf,
    isTrap,
    reachable(maxDepth: number): Set<string> {
      const out = new Set<string>(['/']);
      let frontier = ['/'];
      for (let d = 0; d < maxDepth && frontier.length > 0; d++) {
        const next: string[] = [];
        for (const t of frontier) {
          for (const l of linksOf(t) ?? []) {
            if (out.has(l)) continue;
            out.add(l);
            next.push(l);
          }
        }
        frontier = next;
      }
      return out;
    },
    handler: (ctx) => {
      if (ctx.path === '/robots.txt') return false;
      const links = linksOf(ctx.target);
      if (!links) return notFound(ctx);
      // Relative hrefs for the repeated-segment trap: `a/` from /a/a/ is /a/a/a/.
      const hrefs = /^(\/a)+\/$/.test(ctx.path) ? ['a/'] : links;
      ctx.send(
        200,
        HTML,
        page(
          `Trap ${ctx.target}`,
          hrefs.map((h, i) => link(h, `link ${i}`)),
        ),
      );
      return true;
    },
    expected: {
      summary:
        'The crawl terminates: depth limits, per-host budgets, URL length limits or repeated-segment/query-growth ' +
        'heuristics stop it inside the trap. With budgets.maxDepth = d a breadth-first crawler fetches exactly reachable(d).',
      seeds: ['/'],
      mustFetch: ['/', '/about', start, '/search?q=trap', '/a/'],
      mustNotFetch: [],
      forbiddenHosts: [],
      index: { '/about': { outcomes: ['fetched'], status: 200 } },
      groups: { finite: ['/', '/about'], trapEntrances: [start, '/search?q=trap', '/a/'] },
    },
  };
}

// ---- transport faults ----------------------------------------------------------

export interface FaultSiteOptions {
  /** /slow-drip writes one byte per interval; default 100 ms. */
  dripIntervalMs?: number;
  /** /slow-drip ends after this long; default 30 s. */
  dripTotalMs?: number;
  /** /no-headers and /stall drop the connection after this long; default never (until close()). */
  hangMs?: number;
  /** Size of /huge and /huge-chunked; default 50 MiB. */
  hugeBytes?: number;
  /** /truncated declares this Content-Length; default 100,000. */
  truncatedDeclared?: number;
  /** … and sends this many bytes before closing; default 1,000. */
  truncatedSent?: number;
  /**
   * The faults (of FAULT_PATHS) this copy links from its home page and
   * expects to be crawled; default all. Every path is served either way.
   */
  only?: readonly string[];
}

/** Every fault of faultSite, one path each. */
export const FAULT_PATHS = ['/slow-drip', '/stall', '/no-headers', '/truncated', '/reset', '/reset-mid-body', '/huge', '/huge-chunked', '/gzip-bomb'] as const;

export const MiB = 1024 * 1024;

/**
 * Network-level misbehaviour, one path each: /slow-drip (a byte every
 * interval, never idle long enough for an idle timeout), /stall (headers, a
 * few bytes, then silence), /no-headers (request accepted, never answered),
 * /truncated (Content-Length larger than the bytes sent, then FIN),
 * /reset (TCP RST before any response byte), /reset-mid-body, /huge and
 * /huge-chunked (50 MiB of HTML, streamed), /gzip-bomb (Content-Encoding
 * gzip expanding to > 1 GiB). /ok is a normal page.
 */
export function faultSite(host: string, opts: FaultSiteOptions = {}): HostileSite {
  const interval = opts.dripIntervalMs ?? 100;
  const dripTotal = opts.dripTotalMs ?? 30_000;
  const hugeBytes = opts.hugeBytes ?? 50 * MiB;
  const declared = opts.truncatedDeclared ?? 100_000;
  const sent = Math.min(opts.truncatedSent ?? 1_000, declared - 1);
  const faults: string[] = FAULT_PATHS.filter((p) => opts.only?.includes(p) ?? true);
  const has = (p: string) => faults.includes(p);
  const verdicts: Record<string, PageVerdict> = {
    '/ok': { outcomes: ['fetched'], status: 200 },
    '/slow-drip': { outcomes: ['fetched', 'error'], errorCodes: ['TOTAL_TIMEOUT'], note: "fetched only with truncated: 'time'" },
    '/stall': { outcomes: ['fetched', 'error'], errorCodes: ['BODY_TIMEOUT'], note: "fetched only with truncated: 'time'" },
    '/no-headers': { outcomes: ['error'], errorCodes: ['HEADERS_TIMEOUT', 'TOTAL_TIMEOUT'] },
    '/truncated': { outcomes: ['error'], errorCodes: ['CONNECTION_RESET', 'NETWORK_ERROR', 'PROTOCOL_ERROR'] },
    '/reset': { outcomes: ['error'], errorCodes: ['CONNECTION_RESET', 'NETWORK_ERROR'] },
    '/reset-mid-body': { outcomes: ['error'], errorCodes: ['CONNECTION_RESET', 'NETWORK_ERROR'] },
    '/huge': { outcomes: ['fetched', 'error'], note: "fetched with truncated: 'length' and bytes <= maxBodyBytes" },
    '/huge-chunked': { outcomes: ['fetched', 'error'], note: "fetched with truncated: 'length' and bytes <= maxBodyBytes" },
    '/gzip-bomb': {
      outcomes: ['fetched', 'error'],
      errorCodes: ['DECOMPRESSION_FAILED'],
      note: "decoded bytes never exceed maxBodyBytes; fetched only with truncated: 'length'",
    },
  };
  const hang = (ctx: SiteRequest): void => {
    if (opts.hangMs !== undefined) ctx.later(opts.hangMs, () => ctx.socket.destroy());
  };
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      const { res, socket } = ctx;
      switch (ctx.path) {
        case '/robots.txt':
          return false;
        case '/':
          ctx.send(
            200,
            HTML,
            page(
              'Faults',
              [...faults, '/ok'].map((p) => link(p, p.slice(1))),
            ),
          );
          return true;
        case '/ok':
        case '/after-drip':
        case '/huge-link':
        case '/after-bomb':
          ctx.send(200, HTML, page(`Fine ${ctx.path}`, ['<p>a normal page</p>']));
          return true;
        case '/slow-drip': {
          res.writeHead(200, { 'content-type': HTML });
          res.write('<!doctype html><html><body><p>');
          const ticks = Math.max(1, Math.ceil(dripTotal / interval));
          let n = 0;
          const tick = (): void => {
            if (++n >= ticks) {
              res.end(`</p>${link('/after-drip', 'after')}</body></html>\n`);
              return;
            }
            res.write('.');
            ctx.later(interval, tick);
          };
          ctx.later(interval, tick);
          return true;
        }
        case '/stall':
          res.writeHead(200, { 'content-type': HTML });
          res.write(`<!doctype html><html><body>${link('/ok', 'ok')}<p>stalled `);
          hang(ctx);
          return true;
        case '/no-headers':
          hang(ctx);
          return true;
        case '/truncated':
          res.writeHead(200, { 'content-type': HTML, 'content-length': declared });
          // Destroy only once the partial body has left, so the client sees it, then a premature FIN.
          res.write(filler(sent), () => socket.destroy());
          return true;
        case '/reset':
          socket.resetAndDestroy();
          return true;
        case '/reset-mid-body':
          res.writeHead(200, { 'content-type': HTML, 'content-length': declared });
          res.write(filler(sent), () => socket.resetAndDestroy());
          return true;
        case '/huge':
        case '/huge-chunked': {
          const chunked = ctx.path === '/huge-chunked';
          stream(ctx, 200, chunked ? { 'content-type': HTML } : { 'content-type': HTML, 'content-length': hugeBytes }, hugeHtml(hugeBytes));
          return true;
        }
        case '/gzip-bomb':
          stream(ctx, 200, { 'content-type': HTML, 'content-encoding': 'gzip' }, gzipBomb(`<!doctype html><html><body>${link('/after-bomb', 'after')}<p>`));
          return true;
        default:
          return notFound(ctx);
      }
    },
    expected: {
      summary:
        'No fault stalls or crashes a worker, and none is indexed as a complete page: /slow-drip is cut by ' +
        'fetch.totalTimeoutMs (idle body timeouts never fire), /stall by bodyTimeoutMs, /no-headers by ' +
        'headersTimeoutMs, /truncated and the resets fail as network errors, /huge* and /gzip-bomb are cut at ' +
        'maxBodyBytes without buffering more. /ok and the links found early in /huge are still crawled.',
      seeds: ['/'],
      mustFetch: ['/', '/ok', ...faults],
      mustNotFetch: [],
      forbiddenHosts: [],
      index: Object.fromEntries(Object.entries(verdicts).filter(([p]) => p === '/ok' || has(p))),
      groups: {
        faults,
        linkedFromHuge: has('/huge') || has('/huge-chunked') ? ['/huge-link'] : [],
        linkedFromBomb: has('/gzip-bomb') ? ['/after-bomb'] : [],
      },
    },
  };
}

// ---- content types and broken HTML ---------------------------------------------

export interface ContentSiteOptions {
  /** The crawl's content.nonHtml policy, which decides how the PDF and PNG are indexed; default 'store'. */
  nonHtml?: 'store' | 'skip';
}

/**
 * Non-HTML bodies linked from HTML (application/pdf and image/png, both
 * with link-looking text inside that must not be followed) and malformed
 * HTML (unclosed tags, NUL and invalid UTF-8 bytes) whose links are still
 * extractable, except one inside an unterminated comment.
 */
export function contentSite(host: string, opts: ContentSiteOptions = {}): HostileSite {
  const good = ['/malformed/1', '/malformed/2', '/malformed/3'];
  const binary = opts.nonHtml === 'skip' ? { outcomes: ['skipped-content-type'], status: 200 } : { outcomes: ['fetched'], status: 200 };
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      switch (ctx.path) {
        case '/robots.txt':
          return false;
        case '/':
          ctx.send(200, HTML, page('Content types', [link('/doc.pdf', 'pdf'), link('/image.png', 'png'), link('/malformed', 'broken')]));
          return true;
        case '/doc.pdf':
          ctx.send(200, 'application/pdf', PDF);
          return true;
        case '/image.png':
          ctx.send(200, 'image/png', PNG);
          return true;
        case '/malformed':
          ctx.send(200, HTML, MALFORMED);
          return true;
        default:
          if (good.includes(ctx.path)) {
            ctx.send(200, HTML, page(`Recovered ${ctx.path}`, ['<p>found in broken HTML</p>']));
            return true;
          }
          return notFound(ctx);
      }
    },
    expected: {
      summary:
        'PDF and PNG are fetched and stored with their content types (indexed only, as skipped-content-type, under ' +
        'nonHtml: skip) but never parsed for links (/from-pdf and /from-png are never requested); the malformed ' +
        'page yields /malformed/1..3 and not the link inside its unterminated comment.',
      seeds: ['/'],
      mustFetch: ['/', '/doc.pdf', '/image.png', '/malformed', ...good],
      mustNotFetch: ['/from-pdf', '/from-png', '/malformed/hidden'],
      forbiddenHosts: [],
      index: {
        '/doc.pdf': binary,
        '/image.png': binary,
        '/malformed': { outcomes: ['fetched'], status: 200, contains: 'still a page' },
      },
      groups: { fromMalformed: good },
    },
  };
}

// ---- robots.txt ----------------------------------------------------------------

export interface RobotsSiteOptions {
  /** Generated pages behind the robots.txt; default 5. */
  pages?: number;
  fanOut?: number;
  seed?: number;
}

/** /robots.txt is 8 KiB of seeded binary garbage (no line can parse as a rule); the pages are a generated graph. */
export function robotsGarbageSite(host: string, opts: RobotsSiteOptions = {}): HostileSite {
  const pages = opts.pages ?? 5;
  const body = garbage(hashString(`${opts.seed ?? 0}|${host}|robots`), 8 * 1024);
  return {
    host,
    pages,
    fanOut: opts.fanOut ?? 2,
    seed: opts.seed,
    handler: (ctx) => {
      if (ctx.path !== '/robots.txt') return false;
      ctx.send(200, 'text/plain', body);
      return true;
    },
    expected: {
      summary: 'Garbage robots.txt has no rules, so everything is allowed (RFC 9309): every page is fetched; web.expectedPages() holds.',
      seeds: ['/'],
      mustFetch: ['/robots.txt', ...generatedPaths(pages)],
      mustNotFetch: [],
      forbiddenHosts: [],
      index: {},
      groups: {},
    },
  };
}

export interface HugeRobotsOptions extends RobotsSiteOptions {
  /** Total size; default 10 MiB. */
  bytes?: number;
}

/**
 * A 10 MiB robots.txt, streamed: the real group (Disallow: /private/) first,
 * then comment filler. The generated pages link into /private/.
 */
export function robotsHugeSite(host: string, opts: HugeRobotsOptions = {}): HostileSite {
  const pages = opts.pages ?? 5;
  const bytes = opts.bytes ?? 10 * MiB;
  const head = Buffer.from('User-agent: *\nDisallow: /private/\n');
  return {
    host,
    pages,
    fanOut: opts.fanOut ?? 2,
    seed: opts.seed,
    // Same rules as the served head, so web.expectedPages() knows about them.
    robots: { disallow: ['/private/'] },
    handler: (ctx) => {
      if (ctx.path !== '/robots.txt') return false;
      stream(ctx, 200, { 'content-type': 'text/plain; charset=utf-8' }, robotsFiller(head, bytes));
      return true;
    },
    expected: {
      summary:
        'Parse at least the first 500 KiB (RFC 9309) and stop reading early; Disallow: /private/ from the head ' +
        'applies, so no /private/ URL is fetched and every other page is; web.expectedPages() holds.',
      seeds: ['/'],
      mustFetch: ['/robots.txt', ...generatedPaths(pages)],
      mustNotFetch: [/^\/private\//],
      forbiddenHosts: [],
      index: {},
      groups: {},
    },
  };
}

export interface RobotsErrorOptions extends RobotsSiteOptions {
  /** Status /robots.txt answers; default 500. */
  status?: number;
  /** robots.txt requests that fail before it answers 200 allow-all; default Infinity. */
  failures?: number;
}

/**
 * /robots.txt answers 500 (or `status`) for its first `failures` requests.
 * RFC 9309 §2.3.1: a 4xx other than 429 means "no robots.txt", so no
 * restrictions; 5xx and 429 mean "unavailable", so nothing may be crawled.
 */
export function robotsErrorSite(host: string, opts: RobotsErrorOptions = {}): HostileSite {
  const pages = opts.pages ?? 3;
  const status = opts.status ?? 500;
  const failures = opts.failures ?? Infinity;
  const unavailable = status >= 500 || status === 429;
  const forever = failures === Infinity && unavailable;
  return {
    host,
    pages,
    fanOut: opts.fanOut ?? 2,
    seed: opts.seed,
    handler: (ctx) => {
      if (ctx.path !== '/robots.txt' || ctx.attempt > failures) return false;
      ctx.send(status, 'text/plain; charset=utf-8', `status ${status}\n`);
      return true;
    },
    expected: {
      summary: forever
        ? `robots.txt answering ${status} means "disallow everything for now" (RFC 9309): only /robots.txt is ` + 'requested, retried with back-off, and no page is fetched.'
        : unavailable
          ? `robots.txt fails ${failures} time(s) with ${status}; the crawler waits, retries it, and then fetches every page.`
          : `robots.txt answering ${status} means there is none (RFC 9309): no restrictions, every page is fetched.`,
      seeds: ['/'],
      mustFetch: forever ? ['/robots.txt'] : ['/robots.txt', ...generatedPaths(pages)],
      mustNotFetch: forever ? [/^\/(?!robots\.txt$)/] : [],
      forbiddenHosts: [],
      index: forever ? {} : Object.fromEntries(generatedPaths(pages).map((p) => [p, { outcomes: ['fetched'], status: 200 }])),
      groups: {},
    },
  };
}

// ---- sitemaps ------------------------------------------------------------------

export interface SitemapSiteOptions {
  /** List the > 1 GiB sitemap bomb in the sitemap index; default true. */
  bomb?: boolean;
}

export const SITEMAP_NS = 'http://www.sitemaps.org/schemas/sitemap/0.9';

/**
 * robots.txt names /sitemap.xml and /sitemap_index.xml; the index points at
 * a gzipped urlset (/sitemaps/pages.xml.gz) and a sitemap bomb
 * (/sitemaps/bomb.xml.gz, > 1 GiB decompressed, ~1 MiB sent). Sitemap pages
 * are linked from nowhere, so a test can tell sitemap discovery apart.
 */
export function sitemapSite(host: string, opts: SitemapSiteOptions = {}): HostileSite {
  const withBomb = opts.bomb ?? true;
  const linked = ['/linked/1', '/linked/2'];
  const fromSitemap = ['/from-sitemap/1', '/from-sitemap/2', '/from-sitemap/3', '/from-sitemap/4?a=1&b=2'];
  const fromGz = ['/from-gz/1', '/from-gz/2', '/from-gz/3'];
  const disallowed = '/private/from-sitemap';
  const urlset = (origin: string, paths: string[]): string =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="${SITEMAP_NS}">\n` +
    paths.map((p) => `  <url><loc>${escapeXml(origin + p)}</loc><lastmod>2026-11-01</lastmod></url>\n`).join('') +
    '</urlset>\n';
  const leaves = new Set([...linked, ...fromSitemap.map((p) => p.replace(/\?.*/, '')), ...fromGz, disallowed, '/from-bomb/1']);
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      const { origin, path } = ctx;
      if (path === '/robots.txt') {
        ctx.send(200, 'text/plain; charset=utf-8', `User-agent: *\nDisallow: /private/\n\nSitemap: ${origin}/sitemap.xml\nSitemap: ${origin}/sitemap_index.xml\n`);
      } else if (path === '/')
        ctx.send(
          200,
          HTML,
          page(
            'Sitemaps',
            linked.map((p) => link(p, p)),
          ),
        );
      else if (path === '/sitemap.xml') ctx.send(200, 'application/xml', urlset(origin, [...fromSitemap, disallowed]));
      else if (path === '/sitemap_index.xml') {
        const maps = ['/sitemaps/pages.xml.gz', ...(withBomb ? ['/sitemaps/bomb.xml.gz'] : [])];
        ctx.send(
          200,
          'application/xml',
          `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="${SITEMAP_NS}">\n` +
            maps.map((m) => `  <sitemap><loc>${escapeXml(origin + m)}</loc></sitemap>\n`).join('') +
            '</sitemapindex>\n',
        );
      } else if (path === '/sitemaps/pages.xml.gz') ctx.send(200, 'application/x-gzip', zlib.gzipSync(urlset(origin, fromGz)));
      else if (path === '/sitemaps/bomb.xml.gz' && withBomb) {
        const head = `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="${SITEMAP_NS}">\n  <url><loc>${escapeXml(`${origin}/from-bomb/1`)}</loc></url>\n`;
        stream(ctx, 200, { 'content-type': 'application/x-gzip' }, gzipBomb(head));
      } else if (leaves.has(path)) ctx.send(200, HTML, page(`Page ${path}`, ['<p>only a sitemap names me</p>']));
      else notFound(ctx);
      return true;
    },
    expected: {
      summary:
        'Read Sitemap: lines from robots.txt, follow the sitemap index into the gzipped urlset, and fetch the ' +
        'URLs listed (decoding &amp;), but not the robots-disallowed one; stop decompressing the bomb at a size ' +
        'cap (50 MB uncompressed is the protocol limit) without running out of memory.',
      seeds: ['/'],
      mustFetch: [
        '/robots.txt',
        '/',
        ...linked,
        '/sitemap.xml',
        '/sitemap_index.xml',
        '/sitemaps/pages.xml.gz',
        ...(withBomb ? ['/sitemaps/bomb.xml.gz'] : []),
        ...fromSitemap,
        ...fromGz,
      ],
      mustNotFetch: [disallowed],
      forbiddenHosts: [],
      index: {},
      groups: { linked, sitemapOnly: [...fromSitemap, ...fromGz], optionalFromBomb: ['/from-bomb/1'] },
    },
  };
}

// ---- charsets ------------------------------------------------------------------

export interface CharsetCase {
  /** Page path. */
  path: string;
  encoding: string;
  /** Where the charset is declared. */
  declared: 'header' | 'meta' | 'bom';
  /** A non-ASCII word on the page. */
  word: string;
  /** Non-ASCII href on the page, as written. */
  href: string;
  /** What the crawler must request for it: the href percent-encoded as UTF-8. */
  target: string;
}

export const CHARSET_CASES: readonly CharsetCase[] = [
  charsetCase('/sjis', 'Shift_JIS', 'header', '日本語', '/検索/東京'),
  charsetCase('/cp1251', 'windows-1251', 'meta', 'Привет', '/страница/один'),
  charsetCase('/bom', 'utf-8', 'bom', 'Grüße', '/straße/größe'),
];

function charsetCase(path: string, encoding: string, declared: CharsetCase['declared'], word: string, href: string): CharsetCase {
  return { path, encoding, declared, word, href, target: new URL(href, 'http://x.invalid').pathname };
}

/**
 * A Shift_JIS page (charset only in Content-Type), a windows-1251 page
 * (charset only in <meta charset>) and a UTF-8 page with a BOM and no
 * declared charset; each has a known word and a link with a non-ASCII href.
 */
export function charsetSite(host: string): HostileSite {
  const bodies = new Map<string, { type: string; body: Buffer }>();
  for (const c of CHARSET_CASES) {
    const meta = c.declared === 'meta' ? `<meta charset="${c.encoding}">` : '';
    const html =
      `<!doctype html>\n<html><head>${meta}<title>${c.word}</title></head>\n` +
      `<body><h1>${c.word}</h1><p>${c.word} - ${c.encoding}</p>\n<a href="${c.href}">${c.word}</a>\n</body></html>\n`;
    const encoded = iconv.encode(html, c.encoding);
    const body = c.declared === 'bom' ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), encoded]) : encoded;
    bodies.set(c.path, { type: c.declared === 'header' ? `text/html; charset=${c.encoding}` : 'text/html', body });
  }
  const targets = new Map(CHARSET_CASES.map((c) => [c.target, c]));
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      if (ctx.path === '/robots.txt') return false;
      if (ctx.path === '/') {
        ctx.send(
          200,
          HTML,
          page(
            'Charsets',
            CHARSET_CASES.map((c) => link(c.path, c.encoding)),
          ),
        );
        return true;
      }
      const b = bodies.get(ctx.path);
      if (b) {
        ctx.send(200, b.type, b.body);
        return true;
      }
      const c = targets.get(ctx.path);
      if (c) {
        ctx.send(200, HTML, page(`Target of ${c.path}`, [`<p>reached from ${c.word}</p>`]));
        return true;
      }
      return notFound(ctx);
    },
    expected: {
      summary:
        'Each page is decoded with its declared charset (header, meta, BOM), so the index/text holds the word, ' +
        'and the non-ASCII hrefs are resolved and percent-encoded as UTF-8; mis-decoded hrefs 404.',
      seeds: ['/'],
      mustFetch: ['/', ...CHARSET_CASES.flatMap((c) => [c.path, c.target])],
      mustNotFetch: [],
      forbiddenHosts: [],
      index: Object.fromEntries(CHARSET_CASES.map((c) => [c.path, { outcomes: ['fetched'], status: 200, contains: c.word }])),
      groups: { targets: CHARSET_CASES.map((c) => c.target) },
    },
  };
}

// ---- throttling ----------------------------------------------------------------

export interface RateLimitOptions extends RobotsSiteOptions {
  /** Page requests served normally before the throttling starts; default 0. */
  after?: number;
  /** Page requests answered 429 before the site recovers; default 3. */
  limited?: number;
  /** Retry-After value in seconds; a list gives the n-th 429 the n-th value (the last one repeats). Default 2. */
  retryAfterSec?: number | number[];
}

/**
 * Page requests `after`+1 … `after`+`limited`, whatever their path, get 429
 * with Retry-After; the rest is a generated graph. robots.txt and the
 * /sitemap.xml probe are never throttled, so the 429s land on pages.
 */
export function rateLimitSite(host: string, opts: RateLimitOptions = {}): HostileSite {
  const after = opts.after ?? 0;
  const limited = opts.limited ?? 3;
  const retryAfter = Array.isArray(opts.retryAfterSec) ? opts.retryAfterSec : [opts.retryAfterSec ?? 2];
  const retryAfterFor = (k: number): number => retryAfter[Math.min(k, retryAfter.length - 1)];
  const pages = opts.pages ?? 4;
  const counts = new WeakMap<object, number>();
  return {
    host,
    pages,
    fanOut: opts.fanOut ?? 2,
    seed: opts.seed,
    handler: (ctx) => {
      if (ctx.path === '/robots.txt' || ctx.path === '/sitemap.xml') return false;
      const n = (counts.get(ctx.web) ?? 0) + 1;
      counts.set(ctx.web, n);
      if (n <= after || n > after + limited) return false;
      ctx.send(429, 'text/plain; charset=utf-8', 'slow down\n', { 'retry-after': String(retryAfterFor(n - after - 1)) });
      return true;
    },
    expected: {
      summary:
        `After each 429 the crawler sends nothing to this host for Retry-After (${retryAfter.join(', ')} s), without ` +
        'spending its retries on the wait, and finally fetches every page.',
      seeds: ['/'],
      mustFetch: generatedPaths(pages),
      mustNotFetch: [],
      forbiddenHosts: [],
      index: Object.fromEntries(generatedPaths(pages).map((p) => [p, { outcomes: ['fetched'], status: 200 }])),
      groups: {
        retryAfterMs: Array.from({ length: limited }, (_, k) => String(retryAfterFor(k) * 1000)),
        servedBeforeThrottling: [String(after)],
        throttledRequests: [String(limited)],
      },
    },
  };
}

export interface UnavailableOptions extends RobotsSiteOptions {
  /** 503s per path before it succeeds; default 2. */
  failures?: number;
}

/** Every page answers 503 (no Retry-After) for its first `failures` requests, then 200. */
export function unavailableSite(host: string, opts: UnavailableOptions = {}): HostileSite {
  const failures = opts.failures ?? 2;
  const pages = opts.pages ?? 3;
  return {
    host,
    pages,
    fanOut: opts.fanOut ?? 2,
    seed: opts.seed,
    handler: (ctx) => {
      if (ctx.path === '/robots.txt' || ctx.attempt > failures) return false;
      ctx.send(503, 'text/plain; charset=utf-8', 'unavailable\n');
      return true;
    },
    expected: {
      summary:
        `Each page is retried with back-off and fetched on attempt ${failures + 1} (given fetch.maxRetries >= ${failures}); ` +
        `no page is requested more than ${failures + 1} times.`,
      seeds: ['/'],
      mustFetch: generatedPaths(pages),
      mustNotFetch: [],
      forbiddenHosts: [],
      index: Object.fromEntries(generatedPaths(pages).map((p) => [p, { outcomes: ['fetched'], status: 200 }])),
      groups: { requestsPerPage: [String(failures + 1)] },
    },
  };
}

// ---- duplicates ----------------------------------------------------------------

export interface DuplicateSiteOptions {
  items?: number;
  news?: number;
  seed?: number;
}

/** Query and path parameters that carry a session, not a page. */
export const SESSION_PARAMS = ['sid', 'jsessionid', 'PHPSESSID', 'sessionid'];

/**
 * Session-id variants of /item?id=N (query sid, ;jsessionid= path
 * parameter, PHPSESSID, different parameter order) with identical bodies;
 * near-duplicates /news/1..N that differ only in a timestamp and a counter;
 * exact duplicates /copy/a, /copy/b and /print/article?id=7, which alone
 * link to /from-copies.
 */
export function duplicateSite(host: string, opts: DuplicateSiteOptions = {}): HostileSite {
  const items = opts.items ?? 3;
  const newsCount = opts.news ?? 5;
  const seedHash = hashString(`${opts.seed ?? 0}|${host}|sessions`);
  const sid = (from: string, k: number): string => hex(mix(seedHash, hashString(`${from}#${k}`)), 4);
  const variants = (id: number, from: string): string[] => {
    const s = (k: number): string => sid(from, id * 10 + k);
    return [`/item?id=${id}&sid=${s(0)}`, `/item;jsessionid=${s(1).toUpperCase()}?id=${id}`, `/item?sid=${s(2)}&id=${id}`, `/item?id=${id}&PHPSESSID=${s(3)}`];
  };
  const news = Array.from({ length: newsCount }, (_, i) => `/news/${i + 1}`);
  const copies = ['/copy/a', '/copy/b', '/print/article?id=7'];
  const fromCopies = '/from-copies';
  const article = paragraphs(hashString(`${host}|article`), 12);
  // A link without text: the copies' visible text stays the article's, so the
  // first copy is still a near-duplicate of the news original.
  const copyBody = page('The article', [...article, `<p><a href="${fromCopies}"></a></p>`]);
  // A session trap: every answer of /cart mints a new session id from the one
  // the request brought, so a crawler that keeps session ids follows /cart for ever.
  const cartSid = (from: string): string => sid(`cart|${from}`, 0);
  const cartLinks = (incoming: string): string[] => {
    const next = cartSid(incoming);
    return [`/cart;jsessionid=${next.toUpperCase()}`, `/cart?sid=${cartSid(next)}`];
  };
  const homeLinks = [...Array.from({ length: items }, (_, i) => variants(i + 1, '/')).flat(), ...news, ...copies, cartLinks('home')[0]];
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      const { path } = ctx;
      if (path === '/robots.txt') return false;
      if (path === '/')
        ctx.send(
          200,
          HTML,
          page(
            'Duplicates',
            homeLinks.map((h, i) => link(h, `link ${i}`)),
          ),
        );
      else if (path === '/item' || /^\/item;jsessionid=[^/]*$/i.test(path)) {
        const id = Number(new URLSearchParams(ctx.search).get('id'));
        if (!Number.isInteger(id) || id < 1 || id > items) return notFound(ctx);
        // Links depend on the item only, never on the session in the request: identical bodies.
        const others = Array.from({ length: items }, (_, i) => i + 1).filter((j) => j !== id);
        const links = others.map((j) => variants(j, `/item/${id}`)[j % 4]);
        ctx.send(200, HTML, page(`Item ${id}`, [`<p>Item number ${id}, the same whatever session you bring.</p>`, ...links.map((h) => link(h, h))]));
      } else if (path === '/cart' || /^\/cart;jsessionid=[^/]*$/i.test(path)) {
        const incoming = /;jsessionid=([^/?]*)/i.exec(path)?.[1] ?? new URLSearchParams(ctx.search).get('sid') ?? '';
        ctx.send(
          200,
          HTML,
          page('Your cart', [`<p>Session ${escapeHtml(incoming || 'new')}: the cart is empty.</p>`, ...cartLinks(incoming.toLowerCase()).map((h) => link(h, 'cart'))]),
        );
      } else if (/^\/news\/[1-9]\d*$/.test(path) && news.includes(path)) {
        const n = Number(path.slice(6));
        const stamp = `<p class="meta">Updated 2026-11-0${(n % 9) + 1}T12:00:0${n % 10}Z · ${1000 + n} views</p>`;
        ctx.send(200, HTML, page('Breaking news', [stamp, ...article]));
      } else if (copies.includes(ctx.target) || (path !== '/print/article' && copies.includes(path))) ctx.send(200, HTML, copyBody);
      else if (path === fromCopies) ctx.send(200, HTML, page('Linked from the copies', ['<p>only duplicates link here</p>']));
      else notFound(ctx);
      return true;
    },
    expected: {
      summary:
        'Session parameters (sid, jsessionid, PHPSESSID) are stripped by a session-aware normaliser, so each item ' +
        'is fetched once as /item?id=N; otherwise every variant is fetched once and all carry the same contentHash. ' +
        '/cart is a session trap (each answer links to /cart under a new session id): fetched once as /cart. ' +
        'The /news pages are near-duplicates (simhash-close, different hashes); /copy/a, /copy/b and ' +
        '/print/article?id=7 are byte-identical. Only the copies link to /from-copies: it is requested all the same, ' +
        "since dedup never costs coverage (a duplicate's links go through the seen-sets like any page's).",
      seeds: ['/'],
      mustFetch: ['/', ...news, ...copies, fromCopies, '/cart'],
      mustNotFetch: [],
      forbiddenHosts: [],
      index: {},
      groups: {
        sessionVariants: homeLinks.filter((h) => h.startsWith('/item')),
        canonicalItems: Array.from({ length: items }, (_, i) => `/item?id=${i + 1}`),
        nearDuplicates: news,
        exactDuplicates: copies,
        onlyFromDuplicates: [fromCopies],
        sessionTrap: ['/cart'],
      },
    },
  };
}

// ---- URL size and canonical ----------------------------------------------------

export interface LongLinkOptions {
  /** Length of the long href; default 100 KiB. */
  longBytes?: number;
  /** Query parameters on the many-parameter link; default 100. */
  params?: number;
}

/**
 * /long-link carries a 100 KiB href (the server answers 414 past 16 KiB),
 * /many-params a link with 100 query parameters, and /canonical/variant?ref=
 * pages declare <link rel=canonical href=/canonical/main>.
 */
export function longLinkSite(host: string, opts: LongLinkOptions = {}): HostileSite {
  const longBytes = opts.longBytes ?? 100 * 1024;
  const nParams = opts.params ?? 100;
  const longPrefix = '/long?x=';
  const longHref = longPrefix + 'a'.repeat(Math.max(0, longBytes - longPrefix.length));
  const manyHref = `/params?${Array.from({ length: nParams }, (_, i) => `p${String(i).padStart(3, '0')}=v${i}`).join('&')}`;
  const variants = ['/canonical/variant?ref=a', '/canonical/variant?ref=b'];
  const canonicalBody = (origin: string): string =>
    `<!doctype html>\n<html><head><meta charset="utf-8"><title>Canonical</title>` +
    `<link rel="canonical" href="${origin}/canonical/main"></head>\n<body><p>The one true page.</p></body></html>\n`;
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      const { path } = ctx;
      if (path === '/robots.txt') return false;
      if (ctx.target.length > 16 * 1024) ctx.send(414, 'text/plain; charset=utf-8', 'URI too long\n');
      else if (path === '/')
        ctx.send(
          200,
          HTML,
          page(
            'URL sizes',
            ['/long-link', '/many-params', ...variants].map((p) => link(p, p)),
          ),
        );
      else if (path === '/long-link') ctx.send(200, HTML, page('Long link', [link(longHref, 'long'), link('/after-long', 'after')]));
      else if (path === '/many-params') ctx.send(200, HTML, page('Many params', [link(manyHref, 'params'), link('/after-params', 'after')]));
      else if (path === '/canonical/variant' || path === '/canonical/main') ctx.send(200, HTML, canonicalBody(ctx.origin));
      else if (path === '/after-long' || path === '/after-params' || path === '/params' || path === '/long') {
        ctx.send(200, HTML, page(`Page ${path}`, ['<p>plain</p>']));
      } else notFound(ctx);
      return true;
    },
    expected: {
      summary:
        'The 100 KiB href is dropped (URL_TOO_LONG) and never requested while its neighbour link is followed; ' +
        `the ${nParams}-parameter URL (${manyHref.length} chars) is handled without error; the canonical variants ` +
        'are fetched and their canonical /canonical/main is recorded (and may be fetched).',
      seeds: ['/'],
      mustFetch: ['/', '/long-link', '/many-params', '/after-long', '/after-params', ...variants],
      mustNotFetch: [/^\/long\?/],
      forbiddenHosts: [],
      index: {},
      groups: { manyParams: [manyHref], canonicalVariants: variants, canonical: ['/canonical/main'] },
    },
  };
}

// ---- one host with everything at once ------------------------------------------

export interface HostileHostOptions {
  /** `Sitemap:` lines in robots.txt, /sitemaps/<n>.xml, every one 404; default 5,000. */
  sitemaps?: number;
  /** Nested, never closed <div> elements of /deep; default 400,000. */
  nesting?: number;
  /** Distinct same-host links on /bomb (to /bomb/<n>, each a small page of its own); default 150,000. */
  bombLinks?: number;
  /** Plain pages /page/1 … /page/N linked from the home page; default 20. */
  ordinaryPages?: number;
  /** Subdomains s1.<host> … sN.<host> linked from the home page, served by the same server; default 300. */
  subdomains?: number;
  /** Generated pages of each subdomain; default 1. */
  subdomainPages?: number;
  /** Added to every response of the host and of its subdomains, so requests overlap; default 0. */
  latencyMs?: number;
}

/** Where everything is on a hostileHost(). */
export interface HostileHostLayout {
  host: string;
  subdomains: string[];
  ordinary: string[];
  deep: string;
  bomb: string;
  /** The page the campaign's handler dies on (test/fixtures/handlers/poison-handler.ts). */
  poison: string;
  /** Matches a request for one of the robots.txt sitemaps (not the /sitemap.xml probe). */
  listedSitemap: RegExp;
  /** Matches a request for one of the link bomb's targets. */
  bombTarget: RegExp;
  sitemaps: number;
  nesting: number;
  bombLinks: number;
  /** Links on the home page, its link to itself included. */
  homeLinks: number;
}

export interface HostileHost {
  /** The hostile host itself. */
  site: HostileSite;
  /** Its subdomains: plain generated sites, each a host of its own with its own politeness clock. */
  subdomainSites: SiteSpec[];
  layout: HostileHostLayout;
}

/**
 * One host with every way a site can swamp a crawler at once (issue 23):
 * a robots.txt listing 5,000 sitemaps that all 404, a page nested 400,000
 * elements deep, a page of 150,000 distinct links, a page whose processing
 * kills its worker (the handler in test/fixtures/handlers/poison-handler.ts
 * does that on `/poison`), and links to 300 subdomains that the same server
 * answers, so a per-host clock alone lets them all hit one machine at once.
 * Between them sit 20 ordinary pages, linked from the home page, that a
 * crawl with page budgets must still store. Big bodies are streamed.
 */
export function hostileHost(host = 'hostile.test', opts: HostileHostOptions = {}): HostileHost {
  const sitemaps = opts.sitemaps ?? 5_000;
  const nesting = opts.nesting ?? 400_000;
  const bombLinks = opts.bombLinks ?? 150_000;
  const ordinaryCount = opts.ordinaryPages ?? 20;
  const subdomainCount = opts.subdomains ?? 300;
  const subdomainPages = opts.subdomainPages ?? 1;
  const subdomains = Array.from({ length: subdomainCount }, (_, i) => `s${i + 1}.${host}`.toLowerCase());
  const ordinary = Array.from({ length: ordinaryCount }, (_, i) => `/page/${i + 1}`);
  const ordinarySet = new Set(ordinary);
  const [deep, bomb, poison] = ['/deep', '/bomb', '/poison'];
  const seed = hashString(`hostile-host|${host}`);
  const homeLinks = (port: number): string[] => [
    ...ordinary.map((p) => link(p, `ordinary ${p}`)),
    link(deep, 'deep'),
    link(bomb, 'links'),
    link(poison, 'poison'),
    ...subdomains.map((s) => link(`http://${s}:${port}/`, s)),
  ];
  const robots = (origin: string): string => 'User-agent: *\nDisallow:\n\n' + Array.from({ length: sitemaps }, (_, i) => `Sitemap: ${origin}/sitemaps/${i + 1}.xml\n`).join('');
  const site: HostileSite = {
    host,
    pages: 1,
    fanOut: 0,
    latencyMs: opts.latencyMs,
    handler: (ctx) => {
      const { path } = ctx;
      if (path === '/robots.txt') ctx.send(200, 'text/plain; charset=utf-8', robots(ctx.origin));
      else if (path === '/') ctx.send(200, HTML, page(`${host} home`, homeLinks(ctx.port)));
      else if (ordinarySet.has(path)) {
        const i = ordinary.indexOf(path);
        // Each its own words, so content dedup cannot call one a copy of another.
        const neighbours = [ordinary[(i + 1) % ordinary.length], ordinary[(i + ordinary.length - 1) % ordinary.length]];
        ctx.send(200, HTML, page(`Ordinary page ${i + 1}`, [...paragraphs(mix(seed, i), 3), ...neighbours.map((p) => link(p, p))]));
      } else if (path === deep) stream(ctx, 200, { 'content-type': HTML }, deepHtml(nesting));
      else if (path === bomb) stream(ctx, 200, { 'content-type': HTML }, linkBombHtml(bombLinks));
      else if (path === poison) ctx.send(200, HTML, page('Poison', ['<p>the handler kills its worker on this page</p>']));
      else {
        const m = /^\/bomb\/(0|[1-9]\d*)$/.exec(path);
        if (m && Number(m[1]) < bombLinks) ctx.send(200, HTML, page(`Bomb target ${m[1]}`, [`<p>target ${m[1]} of the link bomb</p>`]));
        else notFound(ctx);
      }
      return true;
    },
    expected: {
      summary:
        `robots.txt lists ${sitemaps} sitemaps: at most budgets.maxSitemapsPerHost are requested (all 404). /deep is nested ` +
        `${nesting} elements deep and /bomb holds ${bombLinks} links: both are parsed within a time bound and keep their index ` +
        'lines (the bomb with linksDropped, at most budgets.maxLinksPerPage of its links taken). /poison kills its worker: ' +
        'after 3 claims it is recorded error INTERNAL_ERROR. Every ordinary page and every subdomain page is fetched, and no ' +
        'more than politeness.maxInFlightPerAddress requests are ever in flight at the one address.',
      seeds: ['/'],
      mustFetch: ['/robots.txt', '/', ...ordinary, deep, bomb, poison],
      mustNotFetch: [],
      forbiddenHosts: [],
      index: {
        ...Object.fromEntries(ordinary.map((p) => [p, { outcomes: ['fetched'], status: 200 }])),
        '/': { outcomes: ['fetched'], status: 200 },
        [deep]: { outcomes: ['fetched', 'parse-timeout'], status: 200, note: 'parsed by a streaming extractor, or cut by content.maxParseMs' },
        [bomb]: { outcomes: ['fetched', 'parse-timeout'], status: 200, note: 'linksDropped counts the links past budgets.maxLinksPerPage' },
        [poison]: { outcomes: ['error'], errorCodes: ['INTERNAL_ERROR'], note: 'its worker died on each of 3 claims' },
      },
      groups: { ordinary, hostile: [deep, bomb, poison] },
    },
  };
  const subdomainSites: SiteSpec[] = subdomains.map((s) => ({
    host: s,
    pages: subdomainPages,
    fanOut: subdomainPages > 1 ? 2 : 0,
    latencyMs: opts.latencyMs,
    seed,
  }));
  return {
    site,
    subdomainSites,
    layout: {
      host,
      subdomains,
      ordinary,
      deep,
      bomb,
      poison,
      listedSitemap: /^\/sitemaps\/[1-9]\d*\.xml$/,
      bombTarget: /^\/bomb\/(0|[1-9]\d*)$/,
      sitemaps,
      nesting,
      bombLinks,
      // page() adds a link home.
      homeLinks: homeLinks(0).length + 1,
    },
  };
}

/** `n` nested <div>s, never closed (an HTML parser closes them at the end), streamed in 64 KiB chunks. */
function* deepHtml(n: number): Generator<Buffer> {
  yield Buffer.from('<!doctype html>\n<html><head><meta charset="utf-8"><title>Deep</title></head>\n<body>\n');
  const perChunk = Math.floor((64 * 1024) / 5);
  const chunk = Buffer.from('<div>'.repeat(perChunk));
  let left = n;
  while (left > 0) {
    const k = Math.min(left, perChunk);
    yield k === perChunk ? chunk : chunk.subarray(0, k * 5);
    left -= k;
  }
  yield Buffer.from('\n<p>the bottom of the deep page</p>\n</body></html>\n');
}

/** `n` distinct same-host links, /bomb/0 … /bomb/<n-1>, streamed 1,000 at a time. */
function* linkBombHtml(n: number): Generator<Buffer> {
  yield Buffer.from('<!doctype html>\n<html><head><meta charset="utf-8"><title>Links</title></head>\n<body>\n<ul>\n');
  for (let start = 0; start < n; start += 1000) {
    const end = Math.min(n, start + 1000);
    let s = '';
    for (let i = start; i < end; i++) s += `<li><a href="/bomb/${i}">${i}</a></li>\n`;
    yield Buffer.from(s);
  }
  yield Buffer.from('</ul>\n</body></html>\n');
}

// ---- all at once ---------------------------------------------------------------

/**
 * One of every hostile site, hosts `<kind>.<suffix>` (default suffix
 * `hostile.test`), with expectations for a crawl with default content
 * settings. `redirect-target` has no seeds: only /away on `redirects` leads there.
 */
export function allHostileSites(suffix = 'hostile.test'): HostileSite[] {
  const h = (kind: string): string => `${kind}.${suffix}`;
  return [
    redirectSite(h('redirects'), { otherHost: h('redirect-target') }),
    redirectTargetSite(h('redirect-target')),
    calendarTrapSite(h('traps')),
    // The faults on two hosts: a host crawls one URL at a time, and each
    // fault is tried 1 + maxRetries times with growing back-offs between,
    // so on one host they made the longest host of a crawl by far.
    faultSite(h('faults'), { only: ['/slow-drip', '/stall', '/no-headers', '/huge', '/huge-chunked', '/gzip-bomb'] }),
    faultSite(h('network-faults'), { only: ['/truncated', '/reset', '/reset-mid-body'] }),
    contentSite(h('content')),
    httpErrorSite(h('http-errors')),
    robotsGarbageSite(h('robots-garbage')),
    robotsHugeSite(h('robots-huge')),
    robotsErrorSite(h('robots-500')),
    robotsErrorSite(h('robots-404'), { status: 404 }),
    robotsErrorSite(h('robots-429'), { status: 429 }),
    sitemapSite(h('sitemaps')),
    charsetSite(h('charsets')),
    // One page served, so the 429s come while other pages of the host wait in
    // its frontier; the first Retry-After (6 s) is three times the back-off of
    // a first retry (2 s), so only honouring it explains the pause.
    rateLimitSite(h('throttled'), { after: 1, limited: 3, retryAfterSec: [6, 1] }),
    unavailableSite(h('unavailable')),
    duplicateSite(h('duplicates')),
    longLinkSite(h('long-links')),
  ];
}

// ---- bodies --------------------------------------------------------------------

const HTML = 'text/html; charset=utf-8';

function page(title: string, body: string[]): string {
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n` +
    `<body>\n<h1>${escapeHtml(title)}</h1>\n${body.join('\n')}\n<p><a href="/">home</a></p>\n</body></html>\n`
  );
}

function link(href: string, text: string): string {
  return `<p><a href="${escapeHtml(href)}">${escapeHtml(text)}</a></p>`;
}

function notFound(ctx: SiteRequest): true {
  ctx.send(404, 'text/plain; charset=utf-8', 'not found\n');
  return true;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function escapeXml(s: string): string {
  return escapeHtml(s).replace(/'/g, '&apos;');
}

function generatedPaths(pages: number): string[] {
  return Array.from({ length: pages }, (_, i) => (i === 0 ? '/' : `/page/${i}`));
}

const WORDS = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua'.split(' ');

function paragraphs(seed: number, n: number): string[] {
  const rng = mulberry32(seed);
  return Array.from({ length: n }, () => `<p>${Array.from({ length: 30 }, () => WORDS[rng.int(WORDS.length)]).join(' ')}.</p>`);
}

/** `n` bytes of plain HTML text. */
function filler(n: number): Buffer {
  return Buffer.alloc(n, 'filler text ');
}

const HUGE_HEAD = Buffer.from(`<!doctype html>\n<html><head><meta charset="utf-8"><title>Huge</title></head>\n<body>\n<p><a href="/huge-link">early link</a></p>\n`);
const HUGE_TAIL = Buffer.from('\n<p><a href="/huge-tail">late link</a></p>\n</body></html>\n');
const HUGE_CHUNK = Buffer.alloc(64 * 1024, '<p>all work and no play makes a huge page</p>\n');

/** Exactly `total` bytes of HTML, yielded as shared 64 KiB chunks (never held in memory at once). */
function* hugeHtml(total: number): Generator<Buffer> {
  let left = total;
  const head = HUGE_HEAD.subarray(0, left);
  yield head;
  left -= head.length;
  const tailLen = Math.min(HUGE_TAIL.length, left);
  left -= tailLen;
  while (left > 0) {
    const c = left >= HUGE_CHUNK.length ? HUGE_CHUNK : HUGE_CHUNK.subarray(0, left);
    yield c;
    left -= c.length;
  }
  if (tailLen > 0) yield HUGE_TAIL.subarray(HUGE_TAIL.length - tailLen);
}

/** One gzip member of 1 MiB of spaces (~1 KiB), built once and shared by every bomb. */
let spaceMember: Buffer | undefined;
export const BOMB_MEMBER_BYTES = MiB;
/** Space members per bomb: > 1 GiB once decompressed. */
export const BOMB_MEMBERS = 1100;

/**
 * A multi-member gzip stream (RFC 1952 allows concatenated members; zlib
 * decodes them as one): `head` then BOMB_MEMBERS MiB of spaces, whitespace an
 * XML or HTML parser keeps consuming. About 1 MiB on the wire.
 */
function* gzipBomb(head: string): Generator<Buffer> {
  spaceMember ??= zlib.gzipSync(Buffer.alloc(BOMB_MEMBER_BYTES, 0x20), { level: 9 });
  yield zlib.gzipSync(head);
  for (let i = 0; i < BOMB_MEMBERS; i++) yield spaceMember;
}

function* robotsFiller(head: Buffer, total: number): Generator<Buffer> {
  yield head.subarray(0, total);
  let left = total - head.length;
  const line = (n: number): string => `# filler ${String(n).padStart(8, '0')} ${'x'.repeat(44)}\n`;
  const block = Buffer.from(Array.from({ length: 1024 }, (_, i) => line(i)).join(''));
  while (left > 0) {
    const c = left >= block.length ? block : block.subarray(0, left);
    yield c;
    left -= c.length;
  }
}

/** Seeded bytes with NULs, high bytes and line breaks, but no ':' so no line is a robots rule. */
function garbage(seed: number, n: number): Buffer {
  const rng = mulberry32(seed);
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) {
    let b = rng.int(256);
    if (b === 0x3a) b = 0x00;
    out[i] = b;
  }
  return out;
}

/** Streams a body with back-pressure; a client that goes away just ends it. */
function stream(ctx: SiteRequest, status: number, headers: Record<string, string | number>, source: Iterable<Buffer>): void {
  const { res, req } = ctx;
  if (res.destroyed) return;
  res.writeHead(status, headers);
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  pipeline(Readable.from(source, { objectMode: false, highWaterMark: 64 * 1024 }), res, () => {});
}

// ---- fixed binary bodies -------------------------------------------------------

/** A tiny PDF whose link annotation and stream text look like links to /from-pdf. */
const PDF_STREAM = '<a href="/from-pdf">x</a>\n';
const PDF = Buffer.from(
  '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n' +
    '1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n' +
    '2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n' +
    '3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Annots [4 0 R] >> endobj\n' +
    '4 0 obj << /Type /Annot /Subtype /Link /Rect [0 0 100 20] /A << /S /URI /URI (/from-pdf) >> >> endobj\n' +
    `5 0 obj << /Length ${PDF_STREAM.length} >> stream\n${PDF_STREAM}endstream endobj\n` +
    'trailer << /Root 1 0 R >>\n%%EOF\n',
  'latin1',
);

/** A 1×1 PNG followed by link-looking bytes after IEND. */
const PNG = Buffer.concat([
  Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64'),
  Buffer.from('<a href="/from-png">x</a>'),
]);

/** Unclosed tags, stray end tags, NUL and invalid UTF-8, yet three findable links; the last one sits in an unterminated comment. */
const MALFORMED = Buffer.concat([
  Buffer.from(
    '<html><head><title>broken</title><body><div><p>still a page <b>bold <i>italic\n' +
      '<a href="/malformed/1">one</a> </span></div></div>\n<table><tr><td><a href=/malformed/2>two</td>\n',
  ),
  Buffer.from([0x00, 0xff, 0xfe, 0xc3, 0x28, 0xe2, 0x82, 0x0a]),
  Buffer.from("<ul><li><a href='/malformed/3' class=x y=>three<li>unclosed <p>para <b>bold\n"),
  Buffer.from('<!-- never closed <a href="/malformed/hidden">hidden</a>\n'),
]);

// ---- seeded randomness ---------------------------------------------------------

/** 4·words hex digits from a seed. */
function hex(seed: number, words: number): string {
  const rng = mulberry32(seed);
  return Array.from({ length: words }, () => rng.int(0x10000).toString(16).padStart(4, '0')).join('');
}
