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
import type { LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { Readable, Transform } from 'node:stream';
import * as zlib from 'node:zlib';
import { Client, Pool, type buildConnector, type Dispatcher } from 'undici';
import type { RenderReason } from '../browser/adaptive';
import type { FrameDocument } from '../browser/frames';
import type { RenderHookRun } from '../browser/page-hook';
import type { ScrollReport } from '../browser/scroll';
import { AddressRefusedError, createAddressPolicy, type AddressPolicy } from './address-policy';
import { sharedDnsCache, type DnsCache } from './dns-cache';
import { FetchError, classifyError } from './fetch-error';
import { createResolvingConnector, defaultPort, findOverride, parseResolveEntries, type ResolveOverrides } from './resolve-overrides';
import type { Credentials } from './credentials';
import { OriginPools } from './origin-pools';
import { ProxyRouter, type ProxyOptions } from './proxy-router';

export const DEFAULT_ACCEPT = 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8';
// Only what node:zlib can decode on Node 20 (zstd arrived in Node 22).
export const ACCEPT_ENCODING = 'gzip, deflate, br';

/**
 * A cap on requests in flight per IP address. The crawler's is a Redis
 * semaphore shared by all workers (src/redis/address-slots.ts).
 */
export interface AddressGate {
  /**
   * Resolves once a request to `address` may go, with the function that
   * frees its slot; while the address is full it waits, and rejects with
   * `signal`'s reason if that aborts first.
   */
  acquire(address: string, signal: AbortSignal): Promise<AddressSlotRelease>;
}

/**
 * Frees a request's slot at its address. `othersInFlight`: requests to the
 * same address that held a slot when this one got its own (when the gate
 * knows): an address shared by several at once keeps no idle connection, so
 * the connections open to it stay within its cap of requests in flight.
 */
export type AddressSlotRelease = (() => Promise<void>) & { othersInFlight?: number };

export interface HttpClientOptions {
  userAgent: string;
  /**
   * curl-style `HOST:PORT:ADDR` pins, see resolve-overrides.ts. A pinned
   * address is trusted: the address policy does not apply to it.
   */
  resolve?: string[];
  /**
   * Refuse to connect to loopback, private (RFC 1918, fc00::/7), link-local,
   * cloud-metadata, CGNAT, unspecified, multicast, broadcast and reserved
   * addresses, including IPv4-mapped/NAT64 forms of them; such fetches fail
   * with FetchError 'ADDRESS_REFUSED'. Checked for every connection (every
   * redirect hop, every DNS answer actually dialled). Default true.
   */
  refusePrivateAddresses?: boolean;
  /**
   * CIDRs exempt from the refusal, e.g. ['10.0.0.0/8', '127.0.0.1/32',
   * '::1/128']. A bad entry throws AddressPolicyError at construction.
   */
  allowAddresses?: string[];
  /**
   * DNS lookup for hosts without a pin, instead of the DNS cache; must honour
   * `options.all`. The address policy applies to what it returns. Meant for
   * tests and custom resolvers.
   */
  lookup?: LookupFunction;
  /**
   * Where names without a pin are resolved when `lookup` is not given:
   * default the process's shared cache (dns-cache.ts: queries on the event
   * loop, answers kept for their TTL). The address policy applies to every
   * address it returns, cached or fresh, at every connection.
   */
  dnsCache?: DnsCache;
  /** TCP (+TLS) connect timeout. Default 10 s. */
  connectTimeoutMs?: number;
  /**
   * From request sent to complete response headers. Default 30 s. undici runs
   * headers/body timeouts on its ~1 s resolution timer wheel, so sub-second
   * values fire late; totalTimeoutMs uses a precise timer.
   */
  headersTimeoutMs?: number;
  /** Max idle gap between body chunks (undici semantics). Default 30 s. */
  bodyTimeoutMs?: number;
  /** Hard cap per fetch() call, redirects and body included. Default 120 s. */
  totalTimeoutMs?: number;
  /**
   * Cap on the body, counted twice: decoded bytes, and bytes received on the
   * wire before content decoding (a compressed stream that decodes to almost
   * nothing would otherwise be bounded only by time). Whichever is reached
   * first cuts the body, marked truncated='length', with what was decoded up
   * to the cut. Default 10 MiB.
   */
  maxBodyBytes?: number;
  /** Redirects followed before TOO_MANY_REDIRECTS. Default 5. */
  maxRedirects?: number;
  /** Max parallel connections per origin. Default: unlimited (undici's default). */
  connectionsPerOrigin?: number;
  /**
   * Taken for the address each request (each redirect hop) is about to be
   * sent to, and given back once its response is over (read, failed or
   * aborted). A fetch that cannot get a slot before its total timeout fails
   * with the retryable FetchError 'ADDRESS_BUSY'. The address is the one the
   * connection dials: the --resolve pin, the IP literal, or the first DNS
   * answer the address policy allows. Default: no cap.
   */
  addressGate?: AddressGate;
  /**
   * Origins that may keep an idle keep-alive connection open to one address
   * at once, in this client; requests of other origins to that address close
   * their connection after the response. Wildcard subdomains of one server
   * are one origin each: without this each would leave an idle socket open
   * on that server. Default: unlimited.
   */
  keepAliveOriginsPerAddress?: number | null;
  acceptLanguage?: string;
  /** Sent with every request (fetch.headers; lower-cased names); a request's own `headers` override them. */
  headers?: Readonly<Record<string, string>>;
  /**
   * Per-origin credentials (credentials.ts), added to each request whose
   * origin, scheme, host and port, is theirs; checked per request, so a
   * redirect to another origin never carries them.
   */
  credentials?: Credentials;
  /**
   * Send every request through these forward proxies, each host through its
   * own (src/http/proxies.ts). The targets' names go to the proxies
   * unresolved; IP-literal targets are still checked against the address
   * policy. addressGate and keepAliveOriginsPerAddress do not apply (the
   * crawler does not know a target's address). Default: direct.
   */
  proxies?: ProxyOptions;
}

/** What the crawler sends: reads (GET, HEAD) and POST, whose body a login form or a page's script sends to read an answer. */
export type HttpMethod = 'GET' | 'HEAD' | 'POST';

export interface FetchOptions {
  /** Accept header. Default DEFAULT_ACCEPT. */
  accept?: string;
  /** Asked before each redirect is followed; false returns the 3xx itself. Default: follow. */
  followRedirect?: (from: string, to: string) => boolean;
  signal?: AbortSignal;
  /** Extra request headers; they override the defaults (names are case-insensitive). */
  headers?: Record<string, string>;
  /** Default GET. POST exists for a handler's login form (src/handlers/api.ts) and a rendered page's requests (HEAD too); pages are always GET. */
  method?: HttpMethod;
  /** The request body (POST): sent with its Content-Length; its Content-Type is the caller's header. */
  body?: Buffer;
}

export interface RedirectHop {
  /** The URL that answered with the redirect. */
  url: string;
  status: number;
  /** The Location header resolved against `url` (fragment removed). */
  location: string;
}

export interface FetchResult {
  /** As requested. */
  url: string;
  /** URL of the response returned (after redirects, fragment removed). */
  finalUrl: string;
  status: number;
  statusText: string;
  /** Lower-cased names; repeated headers joined with ', ', set-cookie with '\n'. */
  headers: Record<string, string>;
  /** Content-decoded body, at most maxBodyBytes. */
  body: Buffer;
  /**
   * Body bytes received from the server before content decoding. Reading stops
   * at the chunk that passes maxBodyBytes, so this exceeds it by at most one chunk.
   */
  rawBytes: number;
  truncated: 'length' | 'time' | null;
  /** The Content-Encoding header as received, or null. */
  contentEncoding: string | null;
  /** Redirects followed, in order. */
  redirects: RedirectHop[];
  /** Set when followRedirect declined: status/headers/body are the 3xx's. */
  stoppedRedirect?: { from: string; to: string; status: number };
  /** The peer's address; null through a proxy (the peer is the proxy, not the target). */
  remoteAddress: string | null;
  /** The id of the proxy that carried the final request (no credentials); absent when direct. */
  proxy?: string;
  /** The final request's method (absent: GET); a POST answered by a followed 301/302/303 became a GET. */
  method?: HttpMethod;
  /** The final request's body, when it had one: the WARC request record holds it (redacted, src/storage/request-body.ts). */
  requestBody?: Buffer;
  /**
   * Headers handed to undici for the final request (lower-cased). undici adds
   * only connection-management framing (`connection: keep-alive`) itself.
   */
  requestHeaders: Record<string, string>;
  /** Names in requestHeaders whose values came from the credentials file: the WARC redacts them (src/storage/warc-writer.ts). */
  secretHeaders?: string[];
  httpVersion: string;
  /** Epoch ms. */
  startedAt: number;
  endedAt: number;
  /**
   * Set by the browser fetcher (src/browser/browser-fetcher.ts) on a page it
   * rendered: the DOM after the page's scripts ran, which link extraction
   * and the handler read. Everything else here (the body above included)
   * stays the document as the server sent it, which is what the WARC holds.
   */
  rendered?: RenderedDocument;
}

/** What rendering made of a page (docs/rendering.md). */
export interface RenderedDocument {
  /** The serialized DOM of the main frame; null when rendering failed (the page keeps its HTTP body). */
  html: string | null;
  /** The page's URL when its DOM was taken (the History API may have changed it; same origin). */
  url: string;
  /** quiet: `load`, then browser.quietMs without a request in flight and the page's thread idle; deadline: browser.pageTimeoutMs came first; failed: see `error`. */
  done: 'quiet' | 'deadline' | 'failed';
  /** From the navigation to the DOM taken. */
  ms: number;
  /** Requests of the page answered from the network (the document excluded), each archived. */
  requests: number;
  error?: { code: string; message: string };
  /** render: auto: why this page was rendered (src/browser/adaptive.ts); absent under render: browser, which renders every page. */
  reason?: RenderReason;
  /** The DOM of the page's other frames, each with the URL its links resolve against (src/browser/frames.ts; bounded). */
  frames?: FrameDocument[];
  /** browser.scroll: how far the page was scrolled and why it stopped (src/browser/scroll.ts). */
  scroll?: ScrollReport;
  /** The handler's onRender, when the page had one: how it ended and what it returned (merged with onPage's in the classify stage). */
  hook?: RenderHookRun;
}

export interface HttpClient {
  fetch(url: string, opts?: FetchOptions): Promise<FetchResult>;
  close(): Promise<void>;
  /**
   * The host (`name[:port]`, as URL.host) has nothing more to fetch here for now: its idle
   * connections are let go instead of kept alive (src/http/origin-pools.ts). Through a proxy, nothing.
   */
  releaseHost?(host: string): void;
}

const DEFAULTS = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  totalTimeoutMs: 120_000,
  maxBodyBytes: 10 * 1024 * 1024,
  maxRedirects: 5,
};

// Only these carry a Location we should follow; 300/304/305 etc. are returned
// to the caller as ordinary responses.
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

// What a redirect response body may cost us to keep the connection reusable;
// beyond that undici destroys the socket instead.
const REDIRECT_DRAIN_LIMIT = 64 * 1024;

// How long undici keeps an idle connection at most (its own default is 10
// minutes, or what the server's Keep-Alive header says, less a second). It
// bounds how long an origin counts as holding an idle connection at its
// address (keepAliveOriginsPerAddress).
const KEEP_ALIVE_MAX_MS = 30_000;

export function createHttpClient(opts: HttpClientOptions): HttpClient {
  return new UndiciHttpClient(opts);
}

/** Facts about the socket a client currently uses, captured at connect time. */
interface ConnectionInfo {
  remoteAddress: string | null;
  alpnProtocol: string | null;
}

/**
 * Rides along as the request's `opaque` (undici's documented per-request user
 * slot, passed untouched from Agent to Pool to Client) so the Client that ends
 * up serving the request can tell us which connection it is. undici's request
 * API never exposes the socket, and keying by origin would be wrong once a
 * pool holds several connections to different addresses.
 */
class ConnectionProbe {
  connection: { current: ConnectionInfo | null } | null = null;
}

class ProbingClient extends Client {
  readonly #connection: { current: ConnectionInfo | null };

  constructor(origin: string | URL, options: Client.Options, connection: { current: ConnectionInfo | null }) {
    super(origin, options);
    this.#connection = connection;
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const opaque = (options as { opaque?: unknown }).opaque;
    if (opaque instanceof ConnectionProbe) opaque.connection = this.#connection;
    return super.dispatch(options, handler);
  }
}

// One h1 Client owns at most one socket at a time, so remembering the last
// socket its connector produced identifies the connection a response came on.
function probingClientFactory(origin: string | URL, options: object): Dispatcher {
  const clientOptions = options as Client.Options;
  const baseConnect = clientOptions.connect as buildConnector.connector;
  const connection: { current: ConnectionInfo | null } = { current: null };
  const connect: buildConnector.connector = (connectOptions, callback) => {
    baseConnect(connectOptions, (...args) => {
      const socket = args[1];
      if (socket) {
        // Read now: remoteAddress is gone once the socket is destroyed.
        connection.current = {
          remoteAddress: socket.remoteAddress ?? null,
          alpnProtocol: 'alpnProtocol' in socket && typeof socket.alpnProtocol === 'string' ? socket.alpnProtocol : null,
        };
      }
      callback(...args);
    });
  };
  return new ProbingClient(origin, { ...clientOptions, connect }, connection);
}

/**
 * One per fetch() call: merges the caller's signal with the total deadline
 * into the single signal undici sees, and remembers which of the two fired so
 * errors can be attributed.
 */
class FetchDeadline {
  readonly signal: AbortSignal;
  timedOut = false;
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #userSignal: AbortSignal | undefined;
  readonly #onUserAbort = (): void => this.#controller.abort(this.#userSignal?.reason);

  constructor(totalTimeoutMs: number, userSignal: AbortSignal | undefined) {
    this.signal = this.#controller.signal;
    this.#userSignal = userSignal;
    if (userSignal?.aborted) this.#controller.abort(userSignal.reason);
    else userSignal?.addEventListener('abort', this.#onUserAbort, { once: true });
    this.#timer = setTimeout(() => {
      this.timedOut = true;
      this.#controller.abort(new Error(`total timeout of ${totalTimeoutMs} ms exceeded`));
    }, totalTimeoutMs);
  }

  /** The error to throw for `err`, given which of our signals (if any) fired. */
  classify(err: unknown, url: string): FetchError {
    if (this.timedOut) return new FetchError('TOTAL_TIMEOUT', url, { cause: this.signal.reason });
    if (this.#userSignal?.aborted) return new FetchError('ABORTED', url, { cause: this.#userSignal.reason });
    return classifyError(err, url);
  }

  /** Throws if the fetch must not continue with another request. */
  check(url: string): void {
    if (this.signal.aborted) throw this.classify(this.signal.reason, url);
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#userSignal?.removeEventListener('abort', this.#onUserAbort);
  }
}

/**
 * Which origins may leave an idle connection open at each address: at most
 * `limit` per address, those that used it last (a claim lasts while a
 * request is in flight and KEEP_ALIVE_MAX_MS after, as long as undici can
 * keep the connection idle).
 */
class KeepAliveOrigins {
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
        const hop = await this.#openHop(current, deadline);
        try {
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
  async #openHop(target: URL, deadline: FetchDeadline): Promise<{ keepAlive: boolean; close: () => Promise<void> }> {
    // Through a proxy the target's address is the proxy's business: resolving it here would be a lookup the proxy exists to avoid.
    if (this.#proxies || (!this.#gate && !this.#keepAlive)) return { keepAlive: true, close: async () => undefined };
    const address = await this.#addressOf(target);
    // No address: the connect fails with its own typed error (DNS, refused).
    if (address === null) return { keepAlive: true, close: async () => undefined };
    let release: AddressSlotRelease | null = null;
    if (this.#gate) {
      // The wait for a slot takes at most half the total timeout: the request
      // keeps the other half, rather than a few seconds won at the very end.
      const slotWait = AbortSignal.timeout(Math.max(1, Math.floor(this.#totalTimeoutMs / 2)));
      try {
        release = await this.#gate.acquire(address, AbortSignal.any([deadline.signal, slotWait]));
      } catch (err) {
        if (deadline.timedOut || (slotWait.aborted && !deadline.signal.aborted)) {
          throw new FetchError('ADDRESS_BUSY', target.href, {
            detail: `${address} had as many requests in flight as politeness.maxInFlightPerAddress allows for half the total timeout`,
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
    let stoppedRedirect: FetchResult['stoppedRedirect'];
    if (REDIRECT_STATUSES.has(status)) {
      const target = this.#redirectTarget(response, current);
      if (opts.followRedirect && !opts.followRedirect(current.href, target.href)) {
        stoppedRedirect = { from: current.href, to: target.href, status };
      } else {
        if (seen.has(target.href)) {
          discard(response.body);
          throw new FetchError('REDIRECT_LOOP', current.href, {
            detail: `${current.href} redirects back to ${target.href} after ${redirects.length} redirect(s)`,
          });
        }
        if (redirects.length >= this.#maxRedirects) {
          discard(response.body);
          throw new FetchError('TOO_MANY_REDIRECTS', current.href, {
            detail: `more than ${this.#maxRedirects} redirects, last ${current.href} -> ${target.href}`,
          });
        }
        // Drain rather than destroy so the keep-alive connection survives
        // (same-origin redirects are the common case).
        await response.body.dump({ limit: REDIRECT_DRAIN_LIMIT }).catch(() => undefined);
        await connectionReleased();
        redirects.push({ url: current.href, status, location: target.href });
        seen.add(target.href);
        return target;
      }
    }

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

  #redirectTarget(response: Dispatcher.ResponseData<ConnectionProbe>, current: URL): URL {
    const raw = headerValue(response.headers.location);
    const location = raw === undefined ? undefined : utf8IfValid(raw);
    if (location === undefined || location.trim() === '') {
      discard(response.body);
      throw new FetchError('INVALID_REDIRECT', current.href, { detail: `${response.statusCode} without a Location header` });
    }
    try {
      return parseHttpUrl(location.trim(), current.href, 'INVALID_REDIRECT', current);
    } catch (err) {
      discard(response.body);
      throw err;
    }
  }
}

function withoutBody(opts: FetchOptions): FetchOptions {
  const headers = Object.fromEntries(Object.entries(opts.headers ?? {}).filter(([n]) => n.toLowerCase() !== 'content-type'));
  return { ...opts, method: 'GET', body: undefined, headers };
}

function lookupAll(lookup: LookupFunction, hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    lookup(hostname, { all: true }, (err, result, family) => {
      if (err) reject(err);
      else resolve(typeof result === 'string' ? [{ address: result, family: family ?? isIP(result) }] : result);
    });
  });
}

function parseHttpUrl(input: string, errorUrl: string, code: 'INVALID_URL' | 'INVALID_REDIRECT', base?: URL): URL {
  let parsed: URL;
  try {
    parsed = new URL(input, base);
  } catch (err) {
    throw new FetchError(code, errorUrl, { cause: err, detail: `cannot parse ${JSON.stringify(input)}` });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new FetchError(code, errorUrl, { detail: `unsupported scheme in ${JSON.stringify(input)}` });
  }
  // Fragments never reach the server; dropping them keeps loop detection honest.
  parsed.hash = '';
  return parsed;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * undici hands header values over as Latin-1, one character per byte. Servers
 * send Location paths as raw UTF-8 (PHP, IIS, rewrite rules), and browsers
 * read them as UTF-8: so do we when the bytes are valid UTF-8, else they stay
 * Latin-1 (and are percent-encoded as such).
 */
function utf8IfValid(value: string): string {
  if (!/[\x80-\xff]/.test(value)) return value;
  try {
    return strictUtf8.decode(Buffer.from(value, 'latin1'));
  } catch {
    return value;
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : value;
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    // Cookies may contain ', ' (Expires=Wed, 21 Oct ...), so join them on a
    // character that cannot occur inside a header value.
    flat[key] = Array.isArray(value) ? value.join(key === 'set-cookie' ? '\n' : ', ') : value;
  }
  return flat;
}

/**
 * undici hands a finished h1 connection back to its pool one event-loop turn
 * after the response completes (a setImmediate in client-h1, to catch servers
 * that close despite keep-alive). A request dispatched before that finds the
 * client busy and makes the Pool open a second socket, so back-to-back
 * fetches to one host (redirect hops, a sequential crawl) would churn
 * connections. Waiting one turn ourselves lets the next request reuse it.
 */
function connectionReleased(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function discard(body: Readable): void {
  body.on('error', () => undefined);
  body.destroy();
}

type Coding = 'gzip' | 'deflate' | 'br';

/** Codings in the order they must be undone (reverse of application order). */
function parseContentCodings(header: string | undefined, body: Readable, url: string): Coding[] {
  if (!header) return [];
  const codings: Coding[] = [];
  for (const raw of header.split(',')) {
    const token = raw.trim().toLowerCase();
    if (token === '' || token === 'identity') continue;
    if (token === 'gzip' || token === 'x-gzip') codings.push('gzip');
    else if (token === 'deflate') codings.push('deflate');
    else if (token === 'br') codings.push('br');
    else {
      // Do not download a body we cannot decode.
      discard(body);
      throw new FetchError('UNSUPPORTED_CONTENT_ENCODING', url, { detail: `Content-Encoding ${JSON.stringify(header)}` });
    }
  }
  return codings.reverse();
}

function createDecoder(coding: Coding, firstChunk: Buffer | null): Transform {
  // Lenient flushing, as browsers do: a stream cut short (missing gzip
  // trailer) yields what was decodable instead of "unexpected end of file".
  switch (coding) {
    case 'gzip':
      return zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH });
    case 'br':
      return zlib.createBrotliDecompress({
        flush: zlib.constants.BROTLI_OPERATION_FLUSH,
        finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH,
      });
    case 'deflate': {
      // "deflate" should be zlib-wrapped (RFC 9110) but some servers send raw
      // DEFLATE; sniff the zlib header (CM=8, header checksum) like browsers.
      const zlibWrapped = firstChunk === null || ((firstChunk[0] & 0x0f) === 8 && (firstChunk.length < 2 || ((firstChunk[0] << 8) | firstChunk[1]) % 31 === 0));
      const options = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
      return zlibWrapped ? zlib.createInflate(options) : zlib.createInflateRaw(options);
    }
  }
}

interface BodyRead {
  body: Buffer;
  rawBytes: number;
  truncated: 'length' | 'time' | null;
}

/**
 * Reads and decodes `source`, keeping at most `limit` decoded bytes and
 * decoding at most `limit` wire bytes. Hitting either limit destroys the
 * undici body, which aborts the request and closes the socket, so the rest of
 * a huge, zip-bombed, or endlessly padded compressed response is never
 * received. At the wire limit the decoders are ended on the bytes before it,
 * so the body is what those decode to (they flush leniently), truncated='length'.
 * Expiry of the total deadline returns what was read (truncated='time').
 */
function readBody(source: Readable, codings: Coding[], limit: number, url: string, deadline: FetchDeadline): Promise<BodyRead> {
  return new Promise<BodyRead>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    let rawBytes = 0;
    let settled = false;
    // Set when the wire limit is reached: the rest of the source is ignored
    // (including the abort error destroying it raises) while the decoders flush.
    let wireCut = false;
    // Built on the first raw chunk: empty bodies (204, 304, HEAD-like) never
    // reach zlib, and deflate needs that chunk to sniff its framing.
    let decoders: Transform[] | null = null;

    const stop = (): void => {
      source.destroy();
      for (const decoder of decoders ?? []) decoder.destroy();
    };
    const settle = (truncated: BodyRead['truncated']): void => {
      if (settled) return;
      settled = true;
      deadline.signal.removeEventListener('abort', onAbort);
      if (truncated) stop();
      resolve({ body: Buffer.concat(chunks, kept), rawBytes, truncated });
    };
    const fail = (err: FetchError): void => {
      if (settled) return;
      settled = true;
      deadline.signal.removeEventListener('abort', onAbort);
      stop();
      reject(err);
    };
    const keep = (chunk: Buffer): void => {
      if (settled) return;
      if (kept + chunk.length > limit) {
        chunks.push(chunk.subarray(0, limit - kept));
        kept = limit;
        settle('length');
        return;
      }
      chunks.push(chunk);
      kept += chunk.length;
    };
    // Listening ourselves (not only via undici destroying the body) also
    // covers a deadline that fires while the decoders are still flushing.
    function onAbort(): void {
      if (deadline.timedOut) settle('time');
      else fail(deadline.classify(deadline.signal.reason, url));
    }

    const buildDecoders = (firstChunk: Buffer): Transform[] => {
      const chain = codings.map((coding, i) => createDecoder(coding, i === 0 ? firstChunk : null));
      chain.forEach((decoder, i) => {
        decoder.on('error', (err) => fail(new FetchError('DECOMPRESSION_FAILED', url, { cause: err })));
        if (i + 1 < chain.length) decoder.pipe(chain[i + 1]);
      });
      const first = chain[0];
      const last = chain[chain.length - 1];
      first.on('drain', () => source.resume());
      last.on('data', keep);
      last.on('end', () => settle(wireCut ? 'length' : null));
      return chain;
    };

    if (deadline.signal.aborted) {
      onAbort();
      return;
    }
    deadline.signal.addEventListener('abort', onAbort, { once: true });

    // Stays attached after settling: destroying an unfinished undici body
    // emits RequestAbortedError, which must not go unhandled.
    source.on('error', (err) => {
      if (wireCut) return;
      if (deadline.timedOut) settle('time');
      else fail(deadline.classify(err, url));
    });
    source.on('data', (chunk: Buffer) => {
      if (settled || wireCut) return;
      const before = rawBytes;
      rawBytes += chunk.length;
      if (codings.length === 0) {
        // Wire bytes are the decoded bytes here: keep() enforces the limit.
        keep(chunk);
        return;
      }
      if (rawBytes > limit) {
        wireCut = true;
        const last = chunk.subarray(0, limit - before);
        decoders ??= buildDecoders(last);
        source.destroy();
        decoders[0].end(last);
        return;
      }
      decoders ??= buildDecoders(chunk);
      if (!decoders[0].write(chunk)) source.pause();
    });
    source.on('end', () => {
      if (wireCut) return;
      if (decoders) decoders[0].end();
      else settle(null);
    });
  });
}
