// Crawl scope: which discovered URLs the crawl may enqueue. The spec is plain
// JSON so it can travel in workflow inputs; createScope turns it into a
// matcher in activity code. Matching walks the host's label suffixes against
// a Set, so allows() costs O(labels) whatever the number of seeds/domains.
import { parse } from 'tldts';
import { normalizeUrl } from './normalize';
import { UrlError } from './url-error';
import { CrawlerError } from '../errors';

export type ScopeMode = 'same-domain' | 'same-host' | 'domains' | 'any';

export type ScopeSpec = {
  mode: ScopeMode;
  /** Required for mode 'domains': each entry matches itself and its subdomains. */
  domains?: string[];
  /**
   * Treat Public Suffix List *private* suffixes (github.io, blogspot.com, …)
   * as public, making `a.github.io` and `b.github.io` different sites in
   * 'same-domain' mode. Off by default: only ICANN suffixes count.
   */
  privateSuffixes?: boolean;
};

export interface Scope {
  readonly mode: ScopeMode;
  /** Hosts/domains the scope is anchored on (empty for 'any'), sorted. */
  readonly roots: readonly string[];
  allows(url: string): boolean;
  describe(): string;
}

export type ScopeErrorCode = 'INVALID_SCOPE' | 'NO_SEEDS' | 'INVALID_SEED' | 'INVALID_DOMAIN';

/** Raised by createScope for a spec that cannot describe a crawl. */
export class ScopeError extends CrawlerError<ScopeErrorCode> {
  /** The offending domain entry or seed, or '' when the spec as a whole is wrong. */
  readonly url: string;
  constructor(code: ScopeErrorCode, url: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'ScopeError';
    this.url = url;
  }
}

export const SCOPE_MODES: readonly { mode: ScopeMode; description: string; example: string }[] = [
  {
    mode: 'same-domain',
    description: "Host equals, or is a subdomain of, a seed's registrable domain (eTLD+1 from the Public Suffix List).",
    example: 'seed https://www.example.co.uk/ allows a.b.example.co.uk, rejects other.co.uk',
  },
  {
    mode: 'same-host',
    description: "Hostname equals a seed's hostname exactly; scheme and port are ignored.",
    example: 'seed https://www.example.com/ allows http://www.example.com:8080/x, rejects example.com',
  },
  {
    mode: 'domains',
    description: 'Host equals, or is a subdomain of, a listed domain; seeds do not widen the scope.',
    example: 'domains ["*.Example.org"] allows example.org and docs.example.org',
  },
  { mode: 'any', description: 'Every http(s) URL.', example: 'allows everything crawlable' },
];

/**
 * Registrable domain (eTLD+1) of a host, e.g. `a.b.example.co.uk` →
 * `example.co.uk`. Accepts a hostname or `host:port`.
 *
 * Fallbacks, chosen so that scope never widens beyond what a seed names:
 * - IP addresses → the address itself (there is no parent "domain").
 * - Unknown TLDs such as `site3.test` follow the PSL default rule `*`, i.e.
 *   the last two labels: `a.site3.test` → `site3.test`.
 * - Single-label hosts (`localhost`) and hosts that are themselves public
 *   suffixes (`co.uk`) → the hostname itself.
 */
export function registrableDomain(host: string, opts: { privateSuffixes?: boolean } = {}): string {
  const hostname = toHostname(host);
  if (isIpHost(hostname)) return hostname;
  const parsed = parse(hostname, {
    allowPrivateDomains: opts.privateSuffixes ?? false,
    extractHostname: false, // already a clean, lower-cased, punycoded hostname
  });
  return parsed.domain ?? hostname;
}

export function createScope(spec: ScopeSpec, seeds: string[]): Scope {
  const mode = spec?.mode;
  switch (mode) {
    case 'any':
      return {
        mode,
        roots: [],
        allows: (url) => crawlableHostname(url) !== null,
        describe: () => 'any: every http(s) URL',
      };
    case 'same-host': {
      const roots = new Set(seedHostnames(seeds, mode));
      return {
        mode,
        roots: [...roots].sort(),
        allows: (url) => {
          const h = crawlableHostname(url);
          return h !== null && roots.has(h);
        },
        describe: () => `same-host: ${[...roots].sort().join(', ')}`,
      };
    }
    case 'same-domain': {
      const opts = { privateSuffixes: spec.privateSuffixes ?? false };
      const roots = new Set(seedHostnames(seeds, mode).map((h) => registrableDomain(h, opts)));
      const note = opts.privateSuffixes ? ' (private suffixes treated as public)' : '';
      return suffixScope(mode, roots, `same-domain${note}`);
    }
    case 'domains': {
      const list = spec.domains ?? [];
      if (list.length === 0) throw new ScopeError('INVALID_SCOPE', '', "Scope mode 'domains' needs a non-empty domains list");
      return suffixScope(mode, new Set(list.map(normalizeDomainEntry)), 'domains');
    }
    default:
      throw new ScopeError('INVALID_SCOPE', '', `Unknown scope mode ${JSON.stringify(mode)}`);
  }
}

/**
 * The key a URL is in scope by under same-host or same-domain: its hostname,
 * or its registrable domain; null when it is not crawlable. Seeds from a
 * seed list have their keys kept in Redis (activities/runtime.ts).
 */
export function scopeRootOf(spec: ScopeSpec, url: string): string | null {
  const h = crawlableHostname(url);
  if (h === null) return null;
  if (spec.mode === 'same-host') return h;
  if (spec.mode === 'same-domain') return registrableDomain(h, { privateSuffixes: spec.privateSuffixes ?? false });
  return null;
}

function suffixScope(mode: ScopeMode, roots: Set<string>, label: string): Scope {
  const sorted = [...roots].sort();
  return {
    mode,
    roots: sorted,
    allows: (url) => {
      const h = crawlableHostname(url);
      return h !== null && withinRoots(h, roots);
    },
    describe: () => `${label}: ${sorted.join(', ')} and subdomains`,
  };
}

function withinRoots(hostname: string, roots: Set<string>): boolean {
  // An IP's "parent" (1.0.0.1 → 0.0.1) is meaningless: exact match only.
  if (isIpHost(hostname)) return roots.has(hostname);
  let h = hostname;
  for (;;) {
    if (roots.has(h)) return true;
    const dot = h.indexOf('.');
    if (dot === -1) return false;
    h = h.slice(dot + 1);
  }
}

function seedHostnames(seeds: string[], mode: ScopeMode): string[] {
  if (seeds.length === 0) throw new ScopeError('NO_SEEDS', '', `Scope mode '${mode}' needs at least one seed URL`);
  return seeds.map((seed) => {
    try {
      return new URL(normalizeUrl(seed)).hostname;
    } catch (cause) {
      const reason = cause instanceof UrlError ? cause.code : 'INVALID_URL';
      throw new ScopeError('INVALID_SEED', seed, `Seed is not a crawlable URL (${reason}): ${seed}`, { cause });
    }
  });
}

/** Lower-case, punycode, and strip `*.`, leading dots and a trailing dot. */
function normalizeDomainEntry(entry: string): string {
  let d = String(entry).trim().toLowerCase();
  try {
    // Be forgiving when a full URL is pasted where a domain was expected.
    if (d.includes('://')) d = new URL(d).hostname;
    d = d.replace(/^(\*?\.)+/, '');
    const hostname = d === '' ? '' : toHostname(d);
    if (hostname === '') throw new Error('empty');
    return hostname;
  } catch (cause) {
    throw new ScopeError('INVALID_DOMAIN', String(entry), `Invalid domain in scope: ${JSON.stringify(entry)}`, { cause });
  }
}

/** Hostname of an http(s) URL without a trailing dot, or null if not crawlable. */
function crawlableHostname(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  const h = stripTrailingDot(u.hostname);
  return h === '' ? null : h;
}

const FORBIDDEN_IN_HOST = /[\s/?#@\\]/;

// Goes through the URL parser so that hosts get exactly the lower-casing,
// punycode and IP canonicalisation that normalizeUrl gives URLs.
function toHostname(host: string): string {
  const h = String(host).trim();
  if (h === '' || FORBIDDEN_IN_HOST.test(h)) {
    throw new UrlError('INVALID_URL', h, `Not a host name: ${JSON.stringify(host)}`);
  }
  let u: URL;
  try {
    u = new URL(`http://${h}/`);
  } catch (cause) {
    throw new UrlError('INVALID_URL', h, `Not a host name: ${JSON.stringify(host)}`, { cause });
  }
  const hostname = stripTrailingDot(u.hostname);
  if (hostname === '') throw new UrlError('INVALID_URL', h, `Not a host name: ${JSON.stringify(host)}`);
  return hostname;
}

function stripTrailingDot(h: string): string {
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

function isIpHost(hostname: string): boolean {
  // The URL parser rewrites every IPv4 form to dotted decimal and brackets IPv6.
  return hostname.startsWith('[') || /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname);
}
