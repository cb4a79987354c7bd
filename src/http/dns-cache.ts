// Name resolution for the crawler's connections: DNS queries on the event
// loop, answers cached for as long as their TTL says.
//
// Why not dns.lookup (net's default): it is getaddrinfo on libuv's thread
// pool, four threads shared with file I/O and zlib, and it caches nothing,
// so every new connection of a crawl of a thousand hosts queues a blocking
// lookup behind the WARC writer's gzip. Node's dns.Resolver is c-ares: it
// sends the queries itself, never blocks a thread, and reports each record's
// TTL.
//
// Why not undici's interceptors.dns: it rewrites a request's origin to the
// IP it picked, so undici pools connections per address instead of per host.
// Hosts sharing a CDN address would share one pool (its connection limit,
// and a TLS connection torn down at every change of server name), and the
// --resolve pins, which are per host and port, could no longer be told from
// a DNS answer in the connector. This cache plugs in where dns.lookup was
// (net.connect's `lookup`), so pooling, pins and the address policy (which
// wraps this lookup and checks every address it returns, cached or not) are
// unchanged.
//
// Names are looked up as the system would for the sources that matter: the
// hosts file first (read here, re-read when it changes: a name it holds never
// reaches the DNS, whose NXDOMAIN would otherwise be final), then the DNS.
// getaddrinfo (dns.lookup) is asked only for what the DNS cannot answer
// (single-label names, localhost, name servers that cannot be asked), at most
// a couple at a time, so a burst of such names cannot take the thread pool
// from WARC compression and file writes.
import * as dns from 'node:dns';
import { promises as fsp } from 'node:fs';
import { isIP, type LookupFunction } from 'node:net';

/** The part of dns.promises.Resolver the cache uses (tests point one at a DNS server on loopback). */
export interface DnsResolver {
  resolve4(hostname: string, options: { ttl: true }): Promise<dns.RecordWithTtl[]>;
  resolve6(hostname: string, options: { ttl: true }): Promise<dns.RecordWithTtl[]>;
}

export interface DnsCacheOptions {
  /** Default: a c-ares resolver using the system's name servers (/etc/resolv.conf). */
  resolver?: DnsResolver;
  /**
   * A hosts file (`/etc/hosts` format) asked before anything else; null =
   * none. A worker's shared cache reads CRAWLER_HOSTS_FILE (src/worker/crawler-worker.ts).
   */
  hostsFile?: string | null;
  /** How often the hosts file is checked for changes (by its size and modification time). Default 5 s. */
  hostsRecheckMs?: number;
  /**
   * For names the DNS does not answer: single-label names (a container's
   * service name), `localhost`, and any name when the name servers cannot
   * be asked at all. Default dns.lookup (getaddrinfo).
   */
  systemLookup?: LookupFunction;
  /**
   * systemLookup calls at once; the rest wait their turn. dns.lookup blocks
   * one of libuv's four threads for each call. Default 2.
   */
  systemConcurrency?: number;
  /** How long a systemLookup failure other than "no such name" is remembered. Default 5 s. */
  failureTtlMs?: number;
  /** A TTL longer than this is cut to it, so a moved site is followed within it. Default 1 h. */
  maxTtlMs?: number;
  /** How long "no such name" is remembered (the answer carries no TTL we see). Default 30 s. */
  negativeTtlMs?: number;
  /** How long a systemLookup answer is kept (getaddrinfo reports no TTL). Default 60 s. */
  systemTtlMs?: number;
  /** Names kept at most; the least recently used goes first. Default 20,000. */
  maxEntries?: number;
  now?: () => number;
}

interface Entry {
  expires: number;
  answer: Promise<dns.LookupAddress[]>;
}

/**
 * What DNS itself said: the name or its addresses do not exist; or the name
 * cannot exist (EBADNAME: a label over 63 octets, rejected without a query).
 */
const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'NOTFOUND', 'NODATA', 'EBADNAME']);

export class DnsCache {
  readonly #resolver: DnsResolver;
  readonly #systemLookup: LookupFunction;
  readonly #hosts: HostsFile | null;
  readonly #systemSlots: Limiter;
  readonly #failureTtlMs: number;
  readonly #maxTtlMs: number;
  readonly #negativeTtlMs: number;
  readonly #systemTtlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();
  /** Queries sent: per name, one resolution (A and AAAA together) counts once. */
  resolutions = 0;

  constructor(opts: DnsCacheOptions = {}) {
    // Shorter than c-ares' defaults (5 s × 4 tries): an unanswered query
    // would otherwise eat most of a connect timeout.
    this.#resolver = opts.resolver ?? new dns.promises.Resolver({ timeout: 2500, tries: 2 });
    this.#systemLookup = opts.systemLookup ?? (dns.lookup as LookupFunction);
    this.#hosts = opts.hostsFile ? new HostsFile(opts.hostsFile, opts.hostsRecheckMs ?? 5_000, opts.now ?? Date.now) : null;
    this.#systemSlots = new Limiter(opts.systemConcurrency ?? 2);
    this.#failureTtlMs = opts.failureTtlMs ?? 5_000;
    this.#maxTtlMs = opts.maxTtlMs ?? 3_600_000;
    this.#negativeTtlMs = opts.negativeTtlMs ?? 30_000;
    this.#systemTtlMs = opts.systemTtlMs ?? 60_000;
    this.#maxEntries = opts.maxEntries ?? 20_000;
    this.#now = opts.now ?? Date.now;
  }

  /** Every address of `hostname`, IPv4 first; a failure is an ENOTFOUND-style error with a `code`. */
  resolve(hostname: string): Promise<dns.LookupAddress[]> {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    const family = isIP(name);
    if (family !== 0) return Promise.resolve([{ address: name, family }]);
    const hit = this.#entries.get(name);
    if (hit && hit.expires > this.#now()) {
      // Most recently used last: the first entry is the one to evict.
      this.#entries.delete(name);
      this.#entries.set(name, hit);
      return hit.answer;
    }
    this.#entries.delete(name);
    this.resolutions++;
    // Entered before it settles (no expiry yet): concurrent connections to
    // one host share one query. The expiry is set when the answer is in.
    const entry: Entry = { expires: Infinity, answer: Promise.resolve([]) };
    entry.answer = this.#query(name).then(
      ({ addresses, ttlMs }) => {
        this.#expire(name, entry, ttlMs);
        return addresses;
      },
      (failure: unknown) => {
        // Anything else (a resolver that threw) is not remembered either.
        const f = failure instanceof Unresolved ? failure : new Unresolved(failure as NodeJS.ErrnoException, 0);
        this.#expire(name, entry, f.ttlMs);
        throw f.error;
      },
    );
    // A failure is its callers' to handle; kept in the cache, it is not unhandled.
    entry.answer.catch(() => undefined);
    this.#entries.set(name, entry);
    while (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value as string);
    return entry.answer;
  }

  /** net.connect's `lookup`: honours options.family and options.all. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname).then(
      (all) => {
        const wanted = options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : all;
        if (wanted.length === 0) {
          callback(notFound(hostname, 'ENODATA'), '');
          return;
        }
        if (options.all) callback(null, wanted);
        else callback(null, wanted[0].address, wanted[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };

  /** Names held now (expired ones count until asked for again or evicted). */
  get size(): number {
    return this.#entries.size;
  }

  #expire(name: string, entry: Entry, ttlMs: number): void {
    // Evicted meanwhile, or replaced: nothing to do.
    if (this.#entries.get(name) !== entry) return;
    if (ttlMs <= 0) this.#entries.delete(name);
    else entry.expires = this.#now() + Math.min(ttlMs, this.#maxTtlMs);
  }

  /** The addresses and how long to keep them; a failure rejects with an Unresolved. */
  async #query(name: string): Promise<{ addresses: dns.LookupAddress[]; ttlMs: number }> {
    const listed = await this.#hosts?.lookup(name);
    if (listed) return { addresses: listed, ttlMs: this.#systemTtlMs };
    if (!name.includes('.') || name === 'localhost' || name.endsWith('.localhost')) return this.#fromSystem(name);
    const [v4, v6] = await Promise.allSettled([this.#resolver.resolve4(name, { ttl: true }), this.#resolver.resolve6(name, { ttl: true })]);
    const records: (dns.RecordWithTtl & { family: 4 | 6 })[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((r) => ({ ...r, family: 4 as const })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((r) => ({ ...r, family: 6 as const })) : []),
    ];
    if (records.length > 0) {
      return { addresses: records.map(({ address, family }) => ({ address, family })), ttlMs: Math.min(...records.map((r) => r.ttl)) * 1000 };
    }
    const codes = [v4, v6].map((r) => (r.status === 'rejected' ? ((r.reason as NodeJS.ErrnoException).code ?? '') : 'ENODATA'));
    if (codes.every((c) => NOT_FOUND.has(c))) {
      // ENODATA only when the name exists with no address at all.
      const code = codes.every((c) => c === 'ENODATA' || c === 'NODATA') ? 'ENODATA' : 'ENOTFOUND';
      throw new Unresolved(notFound(name, code), this.#negativeTtlMs);
    }
    // The name servers could not be asked (none configured, refused, timed
    // out): let the system try its own way before giving up.
    return this.#fromSystem(name);
  }

  #fromSystem(name: string): Promise<{ addresses: dns.LookupAddress[]; ttlMs: number }> {
    return this.#systemSlots.run(() => this.#systemLookupOnce(name));
  }

  #systemLookupOnce(name: string): Promise<{ addresses: dns.LookupAddress[]; ttlMs: number }> {
    return new Promise((resolve, reject) => {
      this.#systemLookup(name, { all: true }, (err, result) => {
        // Remembered briefly, so the sessions of many hosts under one
        // failing name do not each queue a lookup for the same answer.
        if (err) reject(new Unresolved(err, NOT_FOUND.has(err.code ?? '') || err.code === 'EAI_NONAME' ? this.#negativeTtlMs : this.#failureTtlMs));
        else {
          const all = typeof result === 'string' ? [{ address: result, family: isIP(result) }] : [...result];
          all.sort((a, b) => a.family - b.family);
          resolve({ addresses: all, ttlMs: this.#systemTtlMs });
        }
      });
    });
  }
}

/**
 * The hosts file, parsed into name → addresses (IPv4 first). Read when first
 * asked and again when its size or modification time has changed, checked
 * at most every `recheckMs`; a missing or unreadable file holds no names.
 */
class HostsFile {
  #names = new Map<string, dns.LookupAddress[]>();
  #version = '';
  #checkedAt = -Infinity;
  #refreshing: Promise<void> | null = null;

  constructor(
    private readonly path: string,
    private readonly recheckMs: number,
    private readonly now: () => number,
  ) {}

  async lookup(name: string): Promise<dns.LookupAddress[] | undefined> {
    if (!this.#refreshing && this.now() - this.#checkedAt >= this.recheckMs) this.#refreshing = this.#refresh().finally(() => (this.#refreshing = null));
    // Every name asked while the file is being read waits for it: the names
    // it holds are not known before (the first read holds none yet).
    if (this.#refreshing) await this.#refreshing;
    return this.#names.get(name);
  }

  async #refresh(): Promise<void> {
    this.#checkedAt = this.now();
    try {
      const st = await fsp.stat(this.path);
      const version = `${st.size}:${st.mtimeMs}`;
      if (version === this.#version) return;
      const text = await fsp.readFile(this.path, 'utf8');
      this.#names = parseHostsFile(text);
      this.#version = version;
    } catch {
      this.#names = new Map();
      this.#version = '';
    }
  }
}

/** `/etc/hosts` format: an address, then its names, `#` to the end of the line a comment. */
export function parseHostsFile(text: string): Map<string, dns.LookupAddress[]> {
  const names = new Map<string, dns.LookupAddress[]>();
  for (const line of text.split('\n')) {
    const hash = line.indexOf('#');
    const fields = (hash < 0 ? line : line.slice(0, hash)).trim().split(/\s+/);
    if (fields.length < 2) continue;
    const address = fields[0];
    const family = isIP(address.replace(/%.*$/, ''));
    if (family === 0) continue;
    for (const raw of fields.slice(1)) {
      const name = raw.toLowerCase().replace(/\.$/, '');
      const known = names.get(name) ?? [];
      if (!known.some((a) => a.address === address)) known.push({ address, family });
      names.set(name, known);
    }
  }
  for (const all of names.values()) all.sort((a, b) => a.family - b.family);
  return names;
}

/** Runs at most `max` tasks at once, the others in arrival order. */
class Limiter {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(private readonly max: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    // A finishing task hands its place straight to the next in line.
    if (this.#running < this.max) this.#running++;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}

/** A failed resolution and how long to remember it (internal: callers get `error`). */
class Unresolved {
  constructor(
    readonly error: NodeJS.ErrnoException,
    readonly ttlMs: number,
  ) {}
}

function notFound(hostname: string, code: 'ENOTFOUND' | 'ENODATA'): NodeJS.ErrnoException {
  // Shaped like dns.lookup's errors, which fetch-error.ts classifies as DNS failures.
  return Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), { code, hostname, syscall: 'getaddrinfo' });
}

/** The hosts file a cache reads unless its builder names another: the system's (CRAWLER_HOSTS_FILE's default too). */
export const SYSTEM_HOSTS_FILE = '/etc/hosts';

const shared = new Map<string | null, DnsCache>();

/**
 * The process's cache over `hostsFile`: every HTTP client (every campaign)
 * of a worker shares its answers. One per hosts file, so whoever asks first
 * does not decide the file for the others; a worker asks for one alone.
 */
export function sharedDnsCache(hostsFile: string | null = SYSTEM_HOSTS_FILE): DnsCache {
  let cache = shared.get(hostsFile);
  if (!cache) shared.set(hostsFile, (cache = new DnsCache({ hostsFile })));
  return cache;
}
