// Which requests share one politeness clock. By default every host has its
// own; `domain` makes a whole registrable domain one "site" (a.example.com and
// b.example.com together), and `ip` makes hosts that resolve to one address
// share a clock, since they share the server that has to bear the load.
import { sharedDnsCache } from '../http/dns-cache';
import { findOverride, type ResolveOverrides } from '../http/resolve-overrides';
import { registrableDomain } from '../url/scope';

export type PolitenessKeyMode = 'host' | 'domain' | 'ip';

/** Addresses are looked up again after this long, so a moved site is followed. */
const IP_CACHE_MS = 60_000;
const IP_CACHE_MAX = 50_000;

export class PolitenessKeys {
  private readonly ips = new Map<string, { at: number; key: Promise<string> }>();

  constructor(
    private readonly mode: PolitenessKeyMode,
    private readonly overrides: ResolveOverrides,
  ) {}

  /** The clock key for a host key (`hostname[:port]`, as hostKey() returns it). */
  keyFor(hostKey: string): Promise<string> {
    if (this.mode === 'host') return Promise.resolve(hostKey);
    const { hostname, port } = splitHostKey(hostKey);
    if (this.mode === 'domain') return Promise.resolve(`domain:${registrableDomain(hostname)}`);
    const hit = this.ips.get(hostKey);
    if (hit && Date.now() - hit.at < IP_CACHE_MS) return hit.key;
    const key = this.resolve(hostname, port, hostKey);
    if (this.ips.size >= IP_CACHE_MAX) this.ips.clear();
    this.ips.set(hostKey, { at: Date.now(), key });
    return key;
  }

  private async resolve(hostname: string, port: number | null, hostKey: string): Promise<string> {
    // A host key without a port stands for the scheme's default port, and it
    // names the host whatever the scheme: a pin for either default port counts.
    const pinned = port !== null ? findOverride(this.overrides, hostname, port) : (findOverride(this.overrides, hostname, 443) ?? findOverride(this.overrides, hostname, 80));
    if (pinned) return `ip:${pinned.address}`;
    if (/^[\d.]+$/.test(hostname) || hostname.includes(':')) return `ip:${hostname}`;
    try {
      // The cache the fetches use: no thread-pool lookup, and the address the
      // fetch will dial first.
      const [first] = await sharedDnsCache().resolve(hostname);
      if (!first) throw new Error('no address');
      return `ip:${first.address}`;
    } catch {
      // No address: the fetch will fail with a typed DNS error; until then
      // the host keeps its own clock.
      this.ips.delete(hostKey);
      return hostKey;
    }
  }
}

/** `port` null: the host key has none (a default port: 80 for http, 443 for https). */
function splitHostKey(hostKey: string): { hostname: string; port: number | null } {
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(hostKey);
  const hostname = (m?.[1] ?? hostKey).replace(/^\[|\]$/g, '');
  const port = m?.[2] ? Number(m[2]) : null;
  return { hostname, port };
}
