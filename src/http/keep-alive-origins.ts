// Which origins may keep an idle keep-alive connection open to one address
// (HttpClientOptions.keepAliveOriginsPerAddress): wildcard subdomains of one
// server are one origin each, and without a cap each would leave an idle
// socket open on that server.

// How long undici keeps an idle connection at most (its own default is 10
// minutes, or what the server's Keep-Alive header says, less a second). It
// bounds how long an origin counts as holding an idle connection at its
// address (keepAliveOriginsPerAddress).
export const KEEP_ALIVE_MAX_MS = 30_000;

/**
 * Which origins may leave an idle connection open at each address: at most
 * `limit` per address, those that used it last (a claim lasts while a
 * request is in flight and KEEP_ALIVE_MAX_MS after, as long as undici can
 * keep the connection idle).
 */
export class KeepAliveOrigins {
  readonly #byAddress = new Map<string, Map<string, number>>();

  constructor(private readonly limit: number) {}

  /** Whether a request to `origin` at `address` may keep its connection; claims it until `until`. */
  claim(address: string, origin: string, until: number): boolean {
    const now = Date.now();
    if (this.#byAddress.size > 10_000) for (const a of [...this.#byAddress.keys()]) this.#sweep(a, now);
    const origins = this.#sweep(address, now) ?? new Map<string, number>();
    if (!origins.has(origin) && origins.size >= this.limit) return false;
    origins.set(origin, Math.max(until, origins.get(origin) ?? 0));
    this.#byAddress.set(address, origins);
    return true;
  }

  /** The request is over: its idle connection may last KEEP_ALIVE_MAX_MS from now. */
  done(address: string, origin: string): void {
    const origins = this.#byAddress.get(address);
    if (origins?.has(origin)) origins.set(origin, Date.now() + KEEP_ALIVE_MAX_MS);
  }

  #sweep(address: string, now: number): Map<string, number> | undefined {
    const origins = this.#byAddress.get(address);
    if (!origins) return undefined;
    for (const [origin, until] of origins) if (until <= now) origins.delete(origin);
    if (origins.size === 0) this.#byAddress.delete(address);
    return origins;
  }
}
