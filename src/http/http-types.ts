// What the HTTP layer's callers name: the client's options, a request's
// options, the response (FetchResult) and the client itself. The client
// (http-client.ts) implements them on undici; the rest of the crawler
// depends on these types alone.
import type { LookupFunction } from 'node:net';
import type { Credentials } from './credentials';
import type { DnsCache } from './dns-cache';
import type { ProxyOptions } from './proxy-router';

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
   * default the process's shared cache of the system's hosts file
   * (dns-cache.ts: queries on the event loop, answers kept for their TTL). The address policy applies to every
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
  /**
   * Called just before each request of the fetch (each redirect hop) is sent, once its address
   * slot is held: a host session's last word on whether it may still send (its host clock, stamped
   * with the send time). What it throws ends the fetch as it is, unclassified: nothing was sent.
   */
  beforeSend?: () => Promise<void>;
  /**
   * The longest this fetch waits for its address's slot (addressGate), when shorter than half
   * the total timeout (the default bound): a session with little time left waits no longer than
   * that. Past it the fetch fails with the retryable FetchError 'ADDRESS_BUSY', nothing sent.
   */
  maxSlotWaitMs?: number;
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
