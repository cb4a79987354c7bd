// Sends one request of the HTTP client through the host's proxy, and on to
// the host's next proxy when that one fails before the target saw anything.
// Which proxy: rankProxies (rendezvous hashing, src/http/proxies.ts) minus
// the ones set aside; how: ProxyDispatchers (src/http/proxy-connect.ts).
import type { Dispatcher } from 'undici';
import { MemoryProxyHealth, rankProxies, type ProxyEndpoint, type ProxyHealth } from './proxies';
import { ProxyDispatchers, ProxyFailure, findProxyFailure, forwardFailure, type ProxyDispatchersOptions } from './proxy-connect';

/** How long a proxy that failed is left out, for every worker of the campaign. Then its hosts come back to it. */
export const PROXY_SET_ASIDE_MS = 60_000;
/**
 * Proxies one request tries (its host's own, then its next ones) while each
 * fails before the request reached the target: a failover costs the target
 * nothing, but a fetch is not the place to probe a whole list.
 */
export const PROXY_TRIES_PER_REQUEST = 3;

export interface ProxyOptions {
  list: readonly ProxyEndpoint[];
  /** Default: a table of this process only. */
  health?: ProxyHealth;
  /** Default PROXY_SET_ASIDE_MS. */
  setAsideMs?: number;
}

export interface ProxiedRequest<T> extends Omit<Dispatcher.RequestOptions<T>, 'origin' | 'path'> {
  headers: Record<string, string>;
}

export class ProxyRouter {
  readonly #list: readonly ProxyEndpoint[];
  readonly #health: ProxyHealth;
  readonly #setAsideMs: number;
  readonly #dispatchers: ProxyDispatchers;

  constructor(opts: ProxyOptions, dispatchers: ProxyDispatchersOptions) {
    if (opts.list.length === 0) throw new RangeError('a proxy router needs at least one proxy');
    this.#list = opts.list;
    this.#health = opts.health ?? new MemoryProxyHealth();
    this.#setAsideMs = opts.setAsideMs ?? PROXY_SET_ASIDE_MS;
    this.#dispatchers = new ProxyDispatchers(dispatchers);
  }

  /**
   * Sends `request` to `target` through the host's proxy. A proxy that
   * cannot be reached or refuses our credentials is set aside and the next
   * one tried; every other failure (the target's, or a proxy's "cannot reach
   * the target") is thrown for the caller to classify. Resolves with the
   * response and the id of the proxy that carried it.
   */
  async request<T>(target: URL, request: ProxiedRequest<T>): Promise<{ response: Dispatcher.ResponseData<T>; proxyId: string }> {
    const down = await this.#health.setAside().catch(() => new Set<string>());
    const ranked = rankProxies(target.hostname.toLowerCase(), this.#list).filter((p) => !down.has(p.id));
    if (ranked.length === 0)
      throw new ProxyFailure(
        `list (${this.#list.length})`,
        'unreachable',
        `has every proxy set aside after failures; they come back within ${Math.round(this.#setAsideMs / 1000)} s`,
      );
    let last: ProxyFailure | null = null;
    for (const proxy of ranked.slice(0, PROXY_TRIES_PER_REQUEST)) {
      // The fetch's deadline or the caller's abort ends the failover too.
      if (request.signal instanceof AbortSignal) request.signal.throwIfAborted();
      const route = this.#dispatchers.route(proxy, target);
      try {
        const response = await route.dispatcher.request<T>({
          ...request,
          origin: route.origin,
          path: route.path,
          headers: { ...request.headers, ...route.proxyHeaders },
        } as Dispatcher.RequestOptions<T>);
        const failure = route.forward ? forwardFailure(proxy, response.statusCode, response.headers) : null;
        if (!failure) return { response, proxyId: proxy.id };
        response.body.on('error', () => undefined);
        response.body.destroy();
        throw failure;
      } catch (err) {
        const failure = findProxyFailure(err);
        if (!failure || failure.kind === 'gateway') throw err;
        await this.#health.markFailed(proxy.id, this.#setAsideMs).catch(() => undefined);
        last = failure;
      }
    }
    throw last!;
  }

  async close(): Promise<void> {
    await this.#dispatchers.close();
  }
}
