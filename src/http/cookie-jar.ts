// The campaign's cookie jars: a site that sets a session cookie on its home
// page and asks for it afterwards is crawled like a browser would see it.
// RFC 6265 (which cookie a Set-Cookie makes, which cookies a request
// carries: domain, path, Secure, HttpOnly, expiry, public suffixes) is
// tough-cookie's; what is ours is where the cookies live and how much a
// site may put there.
//
// Where: a CookieStore, one jar per campaign and registrable domain
// (eTLD+1), field [domain, path, name] → the cookie as tough-cookie's JSON;
// the crawler's is a Redis HASH per jar (src/redis/cookie-store.ts). That is
// the largest unit a cookie can be shared in (Domain=example.com set by
// www.example.com goes to shop.example.com too, and no Domain attribute
// may name a public suffix), so every cookie a request may carry is in the
// one jar its host belongs to; tough-cookie's matching keeps host-only
// cookies to their host inside it. Cookies ignore ports (RFC 6265 §8.5), so
// the jar is named by the host name without one.
//
// How: the jar is read before each request and what the response set is
// written before the fetch returns, one cookie a field. Nothing is kept in
// a worker's memory between requests, so a host session resumed on another
// worker after a crash (or a sibling host's session running at the same
// time on another one) sends what the last response set. A write lost with
// a crash belongs to a response whose page was not committed: the page is
// fetched again.
//
// How much: a hostile site may set thousands of cookies. A cookie whose
// name and value pass MAX_COOKIE_BYTES is ignored (RFC 6265bis' 4096), a
// response's Set-Cookie headers past MAX_SET_COOKIES_PER_RESPONSE are, and a
// jar over MAX_JAR_COOKIES cookies or MAX_JAR_BYTES bytes drops its least
// recently set cookies (RFC 6265 §5.3 step 12 lets a user agent evict; the
// expired go first).
import { Cookie, CookieJar, MemoryCookieStore } from 'tough-cookie';
import { registrableDomain } from '../url/scope';
import type { Fetcher } from './fetcher';

/** Name plus value of one cookie, in bytes: a longer one is ignored. */
export const MAX_COOKIE_BYTES = 4096;
/** Cookies one jar (a registrable domain) keeps: about what browsers keep per site. */
export const MAX_JAR_COOKIES = 150;
/** Bytes one jar keeps in its store (field names and JSON together). */
export const MAX_JAR_BYTES = 64 * 1024;
/** Set-Cookie headers of one response read; the rest are ignored. */
export const MAX_SET_COOKIES_PER_RESPONSE = MAX_JAR_COOKIES;

/**
 * Where the campaign's jars live, each a map of field → value, named by
 * any host whose cookies it holds (the store finds the jar of its
 * registrable domain: cookieJarDomain). Every write is one transaction: a
 * crash leaves a jar as before it or after it, never half.
 */
export interface CookieStore {
  /** Every field of `host`'s jar, as stored now. */
  read(host: string): Promise<Record<string, string>>;
  /** Seeding: each of `fields` set only where the jar has no such field yet, and `mark` set, in one transaction. */
  seed(host: string, fields: [string, string][], mark: [string, string]): Promise<void>;
  /** `sets` written and `deletes` removed, in one transaction; rejects when the store refused any of them. */
  write(host: string, sets: [string, string][], deletes: string[]): Promise<void>;
}

/** Field marking a jar as seeded from the campaign's cookies file (not a cookie: cookie fields are JSON arrays). */
const IMPORTED_FIELD = '!imported';

/** The registrable domain a host's cookies live under (port dropped, IP addresses and single labels as they are). */
export function cookieJarDomain(host: string): string {
  return registrableDomain(host);
}

const fieldOf = (c: Cookie): string => JSON.stringify([c.domain, c.path, c.key]);

const jarOptions = {
  rejectPublicSuffixes: true,
  // Test and intranet names (.test, .local, localhost) are crawled too.
  allowSpecialUseDomain: true,
  looseMode: false,
  // A __Secure-/__Host- cookie that breaks its prefix's rules is dropped without a fuss, as browsers do.
  prefixSecurity: 'silent',
} as const;

/**
 * A cookie as stored: a Max-Age becomes the absolute expiry it stands for
 * now (tough-cookie counts Max-Age from the cookie's last access, which
 * moves; what the server meant is from when it was set).
 */
function storable(c: Cookie, now: Date): Cookie {
  if (c.maxAge === null || c.maxAge === undefined) return c;
  const copy = c.clone() ?? c;
  copy.expires = c.expiryDate(now) ?? 'Infinity';
  copy.maxAge = null;
  return copy;
}

const expired = (c: Cookie, now: number): boolean => {
  const t = c.expiryTime();
  return t !== undefined && t <= now;
};

/** The campaign's jars, one per registrable domain, in its store. `imported`: the campaign's cookies file, seeded into each jar on first use. */
export class CookieJars {
  private readonly imported = new Map<string, Cookie[]>();

  constructor(
    private readonly store: CookieStore,
    imported: Cookie[] = [],
  ) {
    for (const c of imported) {
      if (!c.domain) continue;
      const d = cookieJarDomain(c.domain);
      this.imported.set(d, [...(this.imported.get(d) ?? []), c]);
    }
  }

  /** The jar for a request to `url`, as its store holds it now (seeded from the cookies file on its first use). */
  async open(url: string): Promise<LoadedJar> {
    const host = new URL(url).hostname;
    let stored = await this.store.read(host);
    const seeds = this.imported.get(cookieJarDomain(host));
    if (seeds && stored[IMPORTED_FIELD] === undefined) {
      // Only where unset: a cookie a response already set is newer than the
      // file's; the mark makes a cookie the site deleted since stay deleted.
      await this.store.seed(
        host,
        seeds.map((c) => [fieldOf(c), JSON.stringify(c.toJSON())]),
        [IMPORTED_FIELD, '1'],
      );
      stored = await this.store.read(host);
    }
    const memory = new MemoryCookieStore();
    const now = Date.now();
    const stale: string[] = [];
    const ages = new Map<string, { at: number; bytes: number }>();
    // Cookies of equal path length go out oldest first (RFC 6265 §5.4), and tough-cookie breaks
    // a tie of creation times by the order the Cookie objects were made in: so they are made
    // in order of creation, then of field, whatever order the store lists them in.
    const entries = Object.entries(stored)
      .filter(([field]) => field !== IMPORTED_FIELD)
      .map(([field, json]) => ({ field, json, raw: parseJson(json) }))
      .sort((a, b) => createdAt(a.raw) - createdAt(b.raw) || (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
    for (const { field, json, raw } of entries) {
      const c = raw === undefined ? undefined : Cookie.fromJSON(raw);
      if (!c || expired(c, now)) {
        stale.push(field);
        continue;
      }
      await memory.putCookie(c);
      ages.set(field, { at: lastSet(c), bytes: field.length + json.length });
    }
    return new LoadedJar(this.store, host, new CookieJar(memory, jarOptions), memory, ages, stale);
  }
}

function parseJson(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

/** The creation time of a stored cookie's JSON (0 when it has none). */
function createdAt(raw: unknown): number {
  const t = raw !== null && typeof raw === 'object' ? (raw as { creation?: unknown }).creation : undefined;
  return typeof t === 'string' ? Date.parse(t) || 0 : 0;
}

const lastSet = (c: Cookie): number => (c.lastAccessed instanceof Date ? c.lastAccessed.getTime() : c.creation instanceof Date ? c.creation.getTime() : 0);

/** One request's view of a jar: the Cookie header to send, then what the response set. */
export class LoadedJar {
  constructor(
    private readonly store: CookieStore,
    /** The host of the request: its jar in the store. */
    private readonly host: string,
    private readonly jar: CookieJar,
    private readonly memory: MemoryCookieStore,
    /** Field → when its cookie was last set and what it costs: what eviction goes by. */
    private readonly ages: Map<string, { at: number; bytes: number }>,
    /** Fields of cookies found expired or unreadable: deleted with the next write. */
    private readonly stale: string[],
  ) {}

  /** The Cookie header for `url` (RFC 6265 §5.4 order), or null when no cookie applies. */
  async header(url: string): Promise<string | null> {
    const s = await this.jar.getCookieString(url);
    return s === '' ? null : s;
  }

  /** Cookies in the jar now (for tests and bounds). */
  get size(): number {
    return this.ages.size;
  }

  /**
   * Takes the Set-Cookie headers of the response to `url` (each one cookie)
   * and writes what they changed, evicting past the jar's bounds. Returns
   * how many cookies were set or deleted.
   */
  async take(url: string, setCookies: string[]): Promise<number> {
    const nowDate = new Date();
    const now = nowDate.getTime();
    const writes = new Map<string, string | null>();
    const lines = setCookies.slice(0, MAX_SET_COOKIES_PER_RESPONSE);
    for (const [i, line] of lines.entries()) {
      const parsed = Cookie.parse(line);
      if (!parsed || Buffer.byteLength(parsed.key) + Buffer.byteLength(parsed.value) > MAX_COOKIE_BYTES) continue;
      // A millisecond apart: cookies of one response keep their order (their creation times order them when sent).
      const set = await this.jar.setCookie(parsed, url, { ignoreError: true, now: new Date(now + i) });
      if (!set) continue;
      const field = fieldOf(set);
      if (expired(set, now)) {
        // An expiry in the past is how a server deletes a cookie.
        await this.memory.removeCookie(set.domain!, set.path!, set.key);
        this.ages.delete(field);
        writes.set(field, null);
        continue;
      }
      const json = JSON.stringify(storable(set, nowDate).toJSON());
      this.ages.set(field, { at: now + i, bytes: field.length + json.length });
      writes.set(field, json);
    }
    for (const field of this.evictions()) {
      const [domain, path, key] = JSON.parse(field) as [string, string, string];
      await this.memory.removeCookie(domain, path, key);
      this.ages.delete(field);
      writes.set(field, null);
    }
    for (const field of this.stale) if (!writes.has(field)) writes.set(field, null);
    this.stale.length = 0;
    if (writes.size === 0) return 0;
    // One transaction: a crash leaves the jar as before the response or after it, never half.
    const sets = [...writes].filter((w): w is [string, string] => w[1] !== null);
    const dels = [...writes].filter(([, v]) => v === null).map(([f]) => f);
    await this.store.write(this.host, sets, dels);
    return writes.size;
  }

  /** Fields to drop so the jar is within its bounds: least recently set first. */
  private evictions(): string[] {
    let bytes = 0;
    for (const a of this.ages.values()) bytes += a.bytes;
    if (this.ages.size <= MAX_JAR_COOKIES && bytes <= MAX_JAR_BYTES) return [];
    const byAge = [...this.ages].sort((a, b) => a[1].at - b[1].at);
    const out: string[] = [];
    let count = this.ages.size;
    for (const [field, a] of byAge) {
      if (count <= MAX_JAR_COOKIES && bytes <= MAX_JAR_BYTES) break;
      out.push(field);
      count--;
      bytes -= a.bytes;
    }
    return out;
  }
}

/**
 * `inner` with the campaign's cookies: each request carries the Cookie
 * header of its URL's jar (through the request's own headers, so the WARC
 * records it as sent, and redacts it), and each response's Set-Cookie
 * headers (a 3xx's too: redirects are their own requests here) go back in
 * the jar before the fetch returns.
 */
export function cookieFetcher(inner: Fetcher, jars: CookieJars): Fetcher {
  return {
    async fetch(request, ctx) {
      let jar: LoadedJar;
      try {
        jar = await jars.open(request.url);
      } catch (err) {
        // A URL the jar cannot name is the inner fetcher's to refuse, with its own typed failure.
        if (err instanceof TypeError) return inner.fetch(request, ctx);
        throw err;
      }
      const cookie = await jar.header(request.url);
      const headers = cookie === null ? request.headers : { ...request.headers, cookie };
      const got = await inner.fetch({ ...request, headers }, ctx);
      if (got.ok) {
        const lines = setCookieLines(got.response.headers['set-cookie']);
        if (lines.length > 0) await jar.take(got.response.finalUrl, lines);
      }
      return got;
    },
  };
}

/** FetchResult joins several Set-Cookie headers with '\n' (a cookie's Expires has commas, never a line break). */
export function setCookieLines(header: string | undefined): string[] {
  return header === undefined ? [] : header.split('\n').filter((l) => l.trim() !== '');
}
