// Which requests share one politeness clock. By default every host has its
// own; `domain` makes a whole registrable domain one "site" (a.example.com and
// b.example.com together), and `ip` makes hosts that resolve to one address
// share a clock, since they share the server that has to bear the load.
import { sharedDnsCache, type DnsCache } from '../http/dns-cache';
import { findOverride, type ResolveOverrides } from '../http/resolve-overrides';
import { registrableDomain } from '../url/scope';

export type PolitenessKeyMode = 'host' | 'domain' | 'ip';

/** Addresses are looked up again after this long, so a moved site is followed. */
const IP_CACHE_MS = 60_000;
/** Hosts whose address is kept at once (about 200 bytes each); the oldest go first past it. */
const IP_CACHE_MAX = 50_000;

export interface PolitenessKeysOptions {
  /** The cache the fetches resolve names with (default the process's cache of the system's hosts file): `ip` mode keys a host by the address they will dial. */
  dnsCache?: DnsCache;
  /** Bound on hosts kept (default IP_CACHE_MAX). */
  maxEntries?: number;
  /** The clock, for tests. */
  now?: () => number;
}

export class PolitenessKeys {
  /**
   * By host key, in the order of their lookups: a host looked up again (a miss, or its entry
   * expired) moves to the end, a hit does not. So `at` grows from front to back, and the sweep
   * can stop at the first entry that is neither expired nor over the bound.
   */
  private readonly ips = new Map<string, { at: number; key: Promise<string> }>();
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly dns: DnsCache;

  constructor(
    private readonly mode: PolitenessKeyMode,
    private readonly overrides: ResolveOverrides,
    opts: PolitenessKeysOptions = {},
  ) {
    this.maxEntries = opts.maxEntries ?? IP_CACHE_MAX;
    this.now = opts.now ?? Date.now;
    this.dns = opts.dnsCache ?? sharedDnsCache();
  }

  /** Hosts whose address is cached now (ip mode). */
  get cachedHosts(): number {
    return this.ips.size;
  }

  /** The clock key for a host key (`hostname[:port]`, as hostKey() returns it). */
  keyFor(hostKey: string): Promise<string> {
    if (this.mode === 'host') return Promise.resolve(hostKey);
    const { hostname, port } = splitHostKey(hostKey);
    if (this.mode === 'domain') return Promise.resolve(`domain:${registrableDomain(hostname)}`);
    const now = this.now();
    const hit = this.ips.get(hostKey);
    if (hit && now - hit.at < IP_CACHE_MS) return hit.key;
    const entry = {
      at: now,
      key: this.resolve(hostname, port).then(
        (address) => `ip:${address}`,
        // No address: the fetch will fail with a typed DNS error; until then
        // the host keeps its own clock, and the next request looks again.
        () => {
          if (this.ips.get(hostKey) === entry) this.ips.delete(hostKey);
          return hostKey;
        },
      ),
    };
    this.ips.delete(hostKey);
    this.ips.set(hostKey, entry);
    // Oldest first, as long as they are expired or too many: the Map keeps
    // insertion order, and every insert is at the end, so the front is the
    // oldest. Not a wholesale clear at the bound, which made every host of a
    // broad crawl look its address up again at once.
    for (const [k, e] of this.ips) {
      if (this.ips.size <= this.maxEntries && now - e.at < IP_CACHE_MS) break;
      this.ips.delete(k);
    }
    return entry.key;
  }

  /** The address a host's requests go to: its --resolve pin, its literal address, or the first the fetches' DNS cache gives. */
  private async resolve(hostname: string, port: number | null): Promise<string> {
    // A host key without a port stands for the scheme's default port, and it
    // names the host whatever the scheme: a pin for either default port counts.
    const pinned = port !== null ? findOverride(this.overrides, hostname, port) : (findOverride(this.overrides, hostname, 443) ?? findOverride(this.overrides, hostname, 80));
    if (pinned) return pinned.address;
    if (/^[\d.]+$/.test(hostname) || hostname.includes(':')) return hostname;
    // The cache the fetches use: no thread-pool lookup, and the address the
    // fetch will dial first.
    const [first] = await this.dns.resolve(hostname);
    if (!first) throw new Error('no address');
    return first.address;
  }
}

/** `port` null: the host key has none (a default port: 80 for http, 443 for https). */
function splitHostKey(hostKey: string): { hostname: string; port: number | null } {
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(hostKey);
  const hostname = (m?.[1] ?? hostKey).replace(/^\[|\]$/g, '');
  const port = m?.[2] ? Number(m[2]) : null;
  return { hostname, port };
}
