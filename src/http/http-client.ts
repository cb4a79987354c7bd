// The crawler's HTTP layer on undici. It performs exactly one attempt per
// fetch: Temporal owns retries, so instead of retrying (no RetryAgent, no
// redirect interceptor) we follow redirects by hand, bound every resource the
// server controls (time, decoded and wire size, redirect count) and report outcomes
// either as a FetchResult or as a classified FetchError. By default it never
// connects to loopback, private, link-local, metadata or other non-public
// addresses (address-policy.ts); the connector enforces that per socket.
// Names are resolved through a TTL-honouring cache (dns-cache.ts), not
// dns.lookup's thread pool. An optional gate caps requests in flight per IP
// address (politeness.maxInFlightPerAddress), whatever host names lead there.
// With proxies (proxy-router.ts), every request goes through its host's
// proxy instead: the crawler dials only the proxies and never resolves a
// target, so the address policy sees the proxies' addresses alone (a proxy
// is operator configuration: allowed), and what a target resolves to is the
// proxy's to police.
//
// Its parts: the types callers name (http-types.ts), the total deadline
// (fetch-deadline.ts), which connection served a response
// (connection-probe.ts), the keep-alive cap per address
// (keep-alive-origins.ts), redirects (redirect-hops.ts) and the body
// (body-reader.ts).
import type { LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Pool, type Dispatcher } from 'undici';
import { AddressRefusedError, createAddressPolicy, type AddressPolicy } from './address-policy';
import { parseContentCodings, readBody } from './body-reader';
import { ConnectionProbe, connectionReleased, probingClientFactory } from './connection-probe';
import { sharedDnsCache } from './dns-cache';
import { FetchDeadline } from './fetch-deadline';
import { FetchError } from './fetch-error';
import type { AddressGate, AddressSlotRelease, FetchOptions, FetchResult, HttpClient, HttpClientOptions, RedirectHop } from './http-types';
import { KEEP_ALIVE_MAX_MS, KeepAliveOrigins } from './keep-alive-origins';
import { parseHttpUrl, redirectOf, withoutBody } from './redirect-hops';
import { createResolvingConnector, defaultPort, findOverride, parseResolveEntries, type ResolveOverrides } from './resolve-overrides';
import type { Credentials } from './credentials';
import { OriginPools } from './origin-pools';
import { ProxyRouter } from './proxy-router';
import { flattenHeaders, headerValue } from './response-headers';

export const DEFAULT_ACCEPT = 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8';
// Only what node:zlib can decode on Node 20 (zstd arrived in Node 22).
export const ACCEPT_ENCODING = 'gzip, deflate, br';

const DEFAULTS = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  totalTimeoutMs: 120_000,
  maxBodyBytes: 10 * 1024 * 1024,
  maxRedirects: 5,
};

export function createHttpClient(opts: HttpClientOptions): HttpClient {
  return new UndiciHttpClient(opts);
}

class UndiciHttpClient implements HttpClient {
  readonly #pools: OriginPools;
  readonly #overrides: ResolveOverrides;
  readonly #policy: AddressPolicy | null;
  readonly #lookup: LookupFunction;
  readonly #gate: AddressGate | null;
  readonly #keepAlive: KeepAliveOrigins | null;
  readonly #userAgent: string;
  readonly #acceptLanguage: string | undefined;
  readonly #totalTimeoutMs: number;
  readonly #maxBodyBytes: number;
  readonly #maxRedirects: number;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #credentials: Credentials | null;
  readonly #proxies: ProxyRouter | null;

  constructor(opts: HttpClientOptions) {
    // Parse first so a bad --resolve or allowAddresses entry fails at
    // construction, not on the first fetch.
    const overrides = parseResolveEntries(opts.resolve);
    const policy = createAddressPolicy({ allow: opts.allowAddresses });
    this.#userAgent = opts.userAgent;
    this.#acceptLanguage = opts.acceptLanguage;
    this.#totalTimeoutMs = opts.totalTimeoutMs ?? DEFAULTS.totalTimeoutMs;
    this.#maxBodyBytes = opts.maxBodyBytes ?? DEFAULTS.maxBodyBytes;
    this.#maxRedirects = opts.maxRedirects ?? DEFAULTS.maxRedirects;
    this.#headers = opts.headers ?? {};
    this.#credentials = opts.credentials ?? null;
    this.#overrides = overrides;
    this.#policy = opts.refusePrivateAddresses === false ? null : policy;
    this.#lookup = opts.lookup ?? (opts.dnsCache ?? sharedDnsCache()).lookup;
    this.#gate = opts.addressGate ?? null;
    this.#keepAlive = opts.keepAliveOriginsPerAddress != null ? new KeepAliveOrigins(opts.keepAliveOriginsPerAddress) : null;
    const connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs;
    const agentOptions = {
      keepAliveMaxTimeout: KEEP_ALIVE_MAX_MS,
      headersTimeout: opts.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs,
      bodyTimeout: opts.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs,
      connections: opts.connectionsPerOrigin ?? null,
      factory: (origin: string | URL, options: object) => new Pool(origin, { ...(options as Pool.Options), factory: probingClientFactory }),
    };
    // The policy lives in the connector rather than in fetch() so that it
    // sees the address of each socket as it is opened: redirect targets and
    // DNS answers that change between requests included.
    const connect = createResolvingConnector(overrides, { timeout: connectTimeoutMs }, { policy: this.#policy, lookup: this.#lookup });
    const { factory, ...poolOptions } = agentOptions;
    this.#pools = new OriginPools((origin) => factory(origin, { ...poolOptions, connect }));
    this.#proxies =
      opts.proxies && opts.proxies.list.length > 0
        ? new ProxyRouter(opts.proxies, {
            // Pins and the DNS cache serve the proxies' names too; no policy: the operator named them.
            dial: createResolvingConnector(overrides, { timeout: connectTimeoutMs }, { policy: null, lookup: this.#lookup }),
            connectTimeoutMs,
            agent: agentOptions,
            pool: { keepAliveMaxTimeout: KEEP_ALIVE_MAX_MS, headersTimeout: agentOptions.headersTimeout, bodyTimeout: agentOptions.bodyTimeout },
          })
        : null;
  }

  async close(): Promise<void> {
    await Promise.all([this.#pools.close(), this.#proxies?.close()]);
  }

  releaseHost(host: string): void {
    for (const scheme of ['http', 'https']) this.#pools.release(`${scheme}://${host}`);
  }

  async fetch(url: string, opts: FetchOptions = {}): Promise<FetchResult> {
    const startedAt = Date.now();
    let current = parseHttpUrl(url, url, 'INVALID_URL');
    const deadline = new FetchDeadline(this.#totalTimeoutMs, opts.signal);
    const redirects: RedirectHop[] = [];
    const seen = new Set<string>([current.href]);
    let hopOpts = opts;
    try {
      for (;;) {
        deadline.check(current.href);
        const hop = await this.#openHop(current, deadline, opts.maxSlotWaitMs);
        try {
          // After the slot wait, which may be long: the caller's last word comes as late as it can.
          await opts.beforeSend?.();
          const result = await this.#sendHop(url, current, hopOpts, deadline, redirects, seen, hop.keepAlive, startedAt);
          if (result instanceof URL) {
            current = result;
            // As browsers do (RFC 9110 15.4): a POST answered 301, 302 or 303 goes on as a GET without its body; 307 and 308 keep both.
            if (hopOpts.method === 'POST' && ![307, 308].includes(redirects[redirects.length - 1]!.status)) hopOpts = withoutBody(hopOpts);
            continue;
          }
          return result;
        } finally {
          await hop.close();
        }
      }
    } finally {
      deadline.dispose();
    }
  }

  /**
   * Before a request goes to `target`: its address's slot (addressGate),
   * and whether its connection may stay open afterwards. `close` ends both;
   * call it once the response is over, whatever the outcome.
   */
  async #openHop(target: URL, deadline: FetchDeadline, maxSlotWaitMs?: number): Promise<{ keepAlive: boolean; close: () => Promise<void> }> {
    // Through a proxy the target's address is the proxy's business: resolving it here would be a lookup the proxy exists to avoid.
    if (this.#proxies || (!this.#gate && !this.#keepAlive)) return { keepAlive: true, close: async () => undefined };
    const address = await this.#addressOf(target);
    // No address: the connect fails with its own typed error (DNS, refused).
    if (address === null) return { keepAlive: true, close: async () => undefined };
    let release: AddressSlotRelease | null = null;
    if (this.#gate) {
      // The wait for a slot takes at most half the total timeout: the request
      // keeps the other half, rather than a few seconds won at the very end.
      // A caller with less time left than that bounds it further.
      const half = Math.floor(this.#totalTimeoutMs / 2);
      const bounded = maxSlotWaitMs !== undefined && maxSlotWaitMs < half;
      const slotWait = AbortSignal.timeout(Math.max(1, Math.floor(bounded ? maxSlotWaitMs : half)));
      try {
        release = await this.#gate.acquire(address, AbortSignal.any([deadline.signal, slotWait]));
      } catch (err) {
        if (deadline.timedOut || (slotWait.aborted && !deadline.signal.aborted)) {
          throw new FetchError('ADDRESS_BUSY', target.href, {
            detail: `${address} had as many requests in flight as politeness.maxInFlightPerAddress allows for ${bounded ? `the ${maxSlotWaitMs} ms the caller could wait` : 'half the total timeout'}`,
          });
        }
        if (deadline.signal.aborted) throw deadline.classify(err, target.href);
        // Not the page's failure (the semaphore's store is down): the caller's to handle.
        throw err;
      }
    }
    // An address other requests are using right now (wildcard subdomains of
    // one server, each its own origin) gets no idle connection from this
    // one: with one per origin, the sockets open to it would outnumber its
    // cap of requests in flight many times over. An address used by one
    // host at a time (the usual case) keeps its connection.
    const contended = (release?.othersInFlight ?? 0) > 0;
    const keepAlive = !contended && (this.#keepAlive?.claim(address, target.origin, Date.now() + this.#totalTimeoutMs + KEEP_ALIVE_MAX_MS) ?? true);
    return {
      keepAlive,
      close: async () => {
        if (keepAlive) this.#keepAlive?.done(address, target.origin);
        // A slot that cannot be given back (the store is down) frees itself when its lease ends.
        await release?.().catch(() => undefined);
      },
    };
  }

  /** The IP address a connection to `target` dials: its pin, its literal, or the first DNS answer the policy allows. */
  async #addressOf(target: URL): Promise<string | null> {
    const hostname = target.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const pin = findOverride(this.#overrides, hostname, target.port ? Number(target.port) : defaultPort(target.protocol));
    if (pin) return pin.address;
    if (isIP(hostname) !== 0) return hostname;
    const answers = await lookupAll(this.#lookup, hostname).catch(() => []);
    return answers.find((a) => this.#policy === null || this.#policy.check(a.address).allowed)?.address ?? null;
  }

  /** One request of a fetch: the result, or the redirect target to go to next. */
  async #sendHop(
    url: string,
    current: URL,
    opts: FetchOptions,
    deadline: FetchDeadline,
    redirects: RedirectHop[],
    seen: Set<string>,
    keepAlive: boolean,
    startedAt: number,
  ): Promise<FetchResult | URL> {
    const requestHeaders = this.#requestHeaders(current, opts);
    const method = opts.method ?? 'GET';
    const body = method === 'POST' ? (opts.body ?? Buffer.alloc(0)) : undefined;
    // Set here, not by undici, so requestHeaders (the WARC request record) says what framed the body.
    if (body) requestHeaders['content-length'] = String(body.length);
    const probe = new ConnectionProbe();
    let response: Dispatcher.ResponseData<ConnectionProbe>;
    let proxy: string | null = null;
    try {
      const request = {
        method,
        ...(body ? { body } : {}),
        headers: requestHeaders,
        signal: deadline.signal,
        opaque: probe,
        // `connection: close`: the socket goes away with the response.
        ...(keepAlive ? {} : { reset: true }),
      };
      if (this.#proxies) {
        this.#checkLiteral(current);
        ({ response, proxyId: proxy } = await this.#proxies.request(current, request));
      } else {
        response = await this.#pools.for(current.origin).request({ ...request, origin: current.origin, path: current.pathname + current.search });
      }
    } catch (err) {
      throw deadline.classify(err, current.href);
    }

    const status = response.statusCode;
    const hop = await redirectOf(response, current, opts.followRedirect, { redirects, seen, maxRedirects: this.#maxRedirects });
    if (hop instanceof URL) return hop;
    const stoppedRedirect = hop;

    const contentEncoding = headerValue(response.headers['content-encoding']);
    const codings = parseContentCodings(contentEncoding, response.body, current.href);
    const read = await readBody(response.body, codings, this.#maxBodyBytes, current.href, deadline);
    // A cut body destroyed its socket; only a complete one can be reused.
    if (read.truncated === null) await connectionReleased();
    const connection = probe.connection?.current ?? null;
    const result: FetchResult = {
      url,
      finalUrl: current.href,
      status,
      statusText: response.statusText,
      headers: flattenHeaders(response.headers),
      body: read.body,
      rawBytes: read.rawBytes,
      truncated: read.truncated,
      contentEncoding: contentEncoding ?? null,
      redirects,
      remoteAddress: proxy === null ? (connection?.remoteAddress ?? null) : null,
      ...(proxy !== null ? { proxy } : {}),
      method,
      ...(body ? { requestBody: body } : {}),
      requestHeaders,
      ...this.#secretHeaders(current),
      // undici's h1 parser does not surface the status-line version and
      // we never offer h2 (allowH2 off), so the only other possibility is
      // a server-negotiated ALPN we did not ask for.
      httpVersion: connection?.alpnProtocol === 'h2' ? '2' : '1.1',
      startedAt,
      endedAt: Date.now(),
    };
    if (stoppedRedirect) result.stoppedRedirect = stoppedRedirect;
    return result;
  }

  /**
   * Through a proxy the crawler resolves nothing, but an IP-literal target
   * needs no resolving to be checked: http://169.254.169.254/ is refused
   * through a proxy as it is without one.
   */
  #checkLiteral(target: URL): void {
    const host = target.hostname.replace(/^\[|\]$/g, '');
    if (this.#policy === null || isIP(host) === 0) return;
    const verdict = this.#policy.check(host);
    if (!verdict.allowed) throw new AddressRefusedError(host, host, verdict);
  }

  #requestHeaders(target: URL, opts: FetchOptions): Record<string, string> {
    // Host is set explicitly so requestHeaders records exactly what is sent.
    const headers: Record<string, string> = {
      host: target.host,
      'user-agent': this.#userAgent,
      accept: opts.accept ?? DEFAULT_ACCEPT,
      'accept-encoding': ACCEPT_ENCODING,
    };
    if (this.#acceptLanguage) headers['accept-language'] = this.#acceptLanguage;
    for (const [name, value] of Object.entries(this.#headers)) headers[name.toLowerCase()] = value;
    // The origin's own credentials, preemptively: the origin is this hop's, so a redirect elsewhere goes without them.
    for (const [name, value] of Object.entries(this.#credentials?.headersFor(target) ?? {})) headers[name] = value;
    for (const [name, value] of Object.entries(opts.headers ?? {})) headers[name.toLowerCase()] = value;
    return headers;
  }

  #secretHeaders(target: URL): { secretHeaders?: string[] } {
    const own = this.#credentials?.headersFor(target);
    return own ? { secretHeaders: Object.keys(own) } : {};
  }
}

function lookupAll(lookup: LookupFunction, hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    lookup(hostname, { all: true }, (err, result, family) => {
      if (err) reject(err);
      else resolve(typeof result === 'string' ? [{ address: result, family: family ?? isIP(result) }] : result);
    });
  });
}
