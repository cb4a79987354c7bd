// Typed failures of the HTTP layer. Temporal is the only retry layer in the
// crawler, so this module never retries anything: it turns whatever undici or
// Node threw into a stable `code` plus a `retryable` verdict and leaves the
// decision to the caller (the activity maps `retryable: false` to a
// non-retryable ApplicationFailure).
import { CrawlerError } from '../errors';

export type FetchErrorCode =
  | 'DNS_FAILURE'
  | 'CONNECTION_REFUSED'
  | 'CONNECTION_RESET'
  | 'CONNECT_TIMEOUT'
  | 'HEADERS_TIMEOUT'
  | 'BODY_TIMEOUT'
  | 'TOTAL_TIMEOUT'
  | 'TLS_ERROR'
  | 'PROTOCOL_ERROR'
  | 'TOO_MANY_REDIRECTS'
  | 'REDIRECT_LOOP'
  | 'INVALID_REDIRECT'
  | 'INVALID_URL'
  | 'INVALID_REQUEST'
  | 'UNSUPPORTED_CONTENT_ENCODING'
  | 'DECOMPRESSION_FAILED'
  | 'ABORTED'
  | 'CLIENT_CLOSED'
  | 'ADDRESS_REFUSED'
  | 'ADDRESS_BUSY'
  | 'PROXY_ERROR'
  | 'LOGIN_FAILED'
  | 'NETWORK_ERROR';

// The default verdict per code. Transient network trouble is worth another
// attempt; anything that will come out the same way next time is not.
const RETRYABLE: Readonly<Record<FetchErrorCode, boolean>> = {
  DNS_FAILURE: true, // overridden to false for NXDOMAIN in classifyError
  CONNECTION_REFUSED: true, // servers restart; a refused port often comes back
  CONNECTION_RESET: true,
  CONNECT_TIMEOUT: true,
  HEADERS_TIMEOUT: true,
  BODY_TIMEOUT: true,
  TOTAL_TIMEOUT: true,
  TLS_ERROR: false, // bad or mismatched certificates do not fix themselves in seconds
  PROTOCOL_ERROR: false, // a malformed response is a property of the server
  TOO_MANY_REDIRECTS: false,
  REDIRECT_LOOP: false,
  INVALID_REDIRECT: false,
  INVALID_URL: false,
  INVALID_REQUEST: false,
  UNSUPPORTED_CONTENT_ENCODING: false,
  DECOMPRESSION_FAILED: false,
  ABORTED: false, // the caller asked us to stop; retrying would defy it
  CLIENT_CLOSED: true, // local shutdown, the fetch itself never got a verdict
  ADDRESS_REFUSED: false, // policy, not luck: see address-policy.ts
  ADDRESS_BUSY: true, // the address was full for the whole fetch (maxInFlightPerAddress): a later attempt finds it freer
  PROXY_ERROR: true, // a proxy failed or could not reach the target: a later attempt goes through another, or the same one recovered
  LOGIN_FAILED: false, // the handler's login is set aside for a while (activities/login.ts): a retry now would find it so
  NETWORK_ERROR: true,
};

const DESCRIPTIONS: Readonly<Record<FetchErrorCode, string>> = {
  DNS_FAILURE: 'DNS resolution failed',
  CONNECTION_REFUSED: 'Connection refused',
  CONNECTION_RESET: 'Connection reset',
  CONNECT_TIMEOUT: 'Connect timeout',
  HEADERS_TIMEOUT: 'Headers timeout',
  BODY_TIMEOUT: 'Body timeout',
  TOTAL_TIMEOUT: 'Total fetch timeout',
  TLS_ERROR: 'TLS error',
  PROTOCOL_ERROR: 'Malformed HTTP response',
  TOO_MANY_REDIRECTS: 'Too many redirects',
  REDIRECT_LOOP: 'Redirect loop',
  INVALID_REDIRECT: 'Invalid redirect',
  INVALID_URL: 'Invalid URL',
  INVALID_REQUEST: 'Invalid request',
  UNSUPPORTED_CONTENT_ENCODING: 'Unsupported content encoding',
  DECOMPRESSION_FAILED: 'Decompression failed',
  ABORTED: 'Request aborted',
  CLIENT_CLOSED: 'HTTP client closed',
  ADDRESS_REFUSED: 'Address refused',
  ADDRESS_BUSY: 'Address busy',
  PROXY_ERROR: 'Proxy error',
  LOGIN_FAILED: 'Login failed',
  NETWORK_ERROR: 'Network error',
};

export interface FetchErrorOptions {
  cause?: unknown;
  /** Overrides the per-code default verdict. */
  retryable?: boolean;
  /** Extra detail appended to the message (e.g. the offending header). */
  detail?: string;
}

export class FetchError extends CrawlerError<FetchErrorCode> {
  /** The URL whose request or response failed: a redirect target when a later hop failed. */
  readonly url: string;
  /** Whether another attempt (by Temporal, later) could plausibly succeed. */
  readonly retryable: boolean;

  constructor(code: FetchErrorCode, url: string, options: FetchErrorOptions = {}) {
    const detail = options.detail ?? causeMessage(options.cause);
    super(code, `${DESCRIPTIONS[code]} (${url})${detail ? `: ${detail}` : ''}`, { cause: options.cause });
    this.name = 'FetchError';
    this.url = url;
    this.retryable = options.retryable ?? RETRYABLE[code];
  }
}

export function isFetchError(err: unknown): err is FetchError {
  return err instanceof FetchError;
}

function causeMessage(cause: unknown): string | undefined {
  if (cause instanceof Error) return cause.message || undefined;
  if (typeof cause === 'string') return cause;
  return undefined;
}

interface ErrorLike {
  code?: unknown;
  name?: unknown;
  syscall?: unknown;
  cause?: unknown;
  errors?: unknown;
}

// Node's connect attempts under autoSelectFamily fail with an AggregateError,
// and wrappers such as fetch() hide the real error in `cause`; walk both so
// the most specific code anywhere in the chain wins.
function errorChain(err: unknown): ErrorLike[] {
  const chain: ErrorLike[] = [];
  const queue: unknown[] = [err];
  while (queue.length > 0 && chain.length < 10) {
    const next = queue.shift();
    if (next === null || typeof next !== 'object' || chain.includes(next as ErrorLike)) continue;
    const e = next as ErrorLike;
    chain.push(e);
    if (e.cause !== undefined) queue.push(e.cause);
    if (Array.isArray(e.errors)) queue.push(...e.errors);
  }
  return chain;
}

const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'HOSTNAME_MISMATCH',
  'EPROTO', // OpenSSL alerts / wrong version number surface as EPROTO
]);

function codeFor(e: ErrorLike): { code: FetchErrorCode; retryable?: boolean; detail?: string } | null {
  const code = typeof e.code === 'string' ? e.code : '';
  switch (code) {
    case 'ERR_ADDRESS_REFUSED':
      // Raised by the connector (address-policy.ts); its own message names
      // host, address and class, whatever undici wrapped around it.
      return { code: 'ADDRESS_REFUSED', detail: e instanceof Error ? e.message : undefined };
    case 'ERR_PROXY_FAILED':
      // Raised by the proxy connectors (proxy-connect.ts): the proxy's failure, not the target's; its message names the proxy, never its credentials.
      return { code: 'PROXY_ERROR', detail: e instanceof Error ? e.message : undefined };
    case 'UND_ERR_CONNECT_TIMEOUT':
      return { code: 'CONNECT_TIMEOUT' };
    case 'UND_ERR_HEADERS_TIMEOUT':
      return { code: 'HEADERS_TIMEOUT' };
    case 'UND_ERR_BODY_TIMEOUT':
      return { code: 'BODY_TIMEOUT' };
    case 'ECONNREFUSED':
      return { code: 'CONNECTION_REFUSED' };
    // undici reports "other side closed" and friends as UND_ERR_SOCKET: the
    // peer dropped the connection under us.
    case 'ECONNRESET':
    case 'EPIPE':
    case 'ECONNABORTED':
    case 'UND_ERR_SOCKET':
      return { code: 'CONNECTION_RESET' };
    case 'ENOTFOUND':
    case 'EAI_NONAME':
    case 'EAI_FAIL':
    case 'ENODATA':
      // NXDOMAIN: the name does not exist, asking again will not create it.
      return { code: 'DNS_FAILURE', retryable: false };
    case 'EAI_AGAIN':
    case 'ESERVFAIL':
    case 'ETIMEOUT':
      return { code: 'DNS_FAILURE', retryable: true };
    case 'ETIMEDOUT':
      return { code: e.syscall === 'connect' ? 'CONNECT_TIMEOUT' : 'NETWORK_ERROR' };
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENETDOWN':
    case 'EHOSTDOWN':
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
      return { code: 'NETWORK_ERROR' };
    case 'UND_ERR_HEADERS_OVERFLOW':
    case 'UND_ERR_INFO':
      return { code: 'PROTOCOL_ERROR' };
    case 'UND_ERR_INVALID_ARG':
    case 'ERR_INVALID_URL':
      return { code: 'INVALID_REQUEST' };
    case 'UND_ERR_ABORTED':
    case 'UND_ERR_ABORT':
    case 'ABORT_ERR':
      return { code: 'ABORTED' };
    case 'UND_ERR_DESTROYED':
    case 'UND_ERR_CLOSED':
      return { code: 'CLIENT_CLOSED' };
    case 'Z_DATA_ERROR':
    case 'Z_BUF_ERROR':
      return { code: 'DECOMPRESSION_FAILED' };
  }
  if (code.startsWith('HPE_')) return { code: 'PROTOCOL_ERROR' };
  if (code.startsWith('CERT_') || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || TLS_CODES.has(code)) {
    return { code: 'TLS_ERROR' };
  }
  // Brotli failures carry decoder-state codes such as ERR__ERROR_FORMAT_PADDING_1.
  if (code.startsWith('ERR__ERROR_') || code.startsWith('ERR_BROTLI_') || code.startsWith('ERR_ZLIB_')) {
    return { code: 'DECOMPRESSION_FAILED' };
  }
  if (e.name === 'AbortError' || e.name === 'TimeoutError') return { code: 'ABORTED' };
  return null;
}

/**
 * Maps anything thrown while fetching `url` to a FetchError. FetchErrors pass
 * through untouched; unknown errors become a retryable NETWORK_ERROR because
 * an attempt cap in Temporal bounds the cost of being wrong, while a wrong
 * "never retry" silently loses the page.
 */
export function classifyError(err: unknown, url: string): FetchError {
  if (err instanceof FetchError) return err;
  for (const e of errorChain(err)) {
    if (e instanceof FetchError) return e;
    const mapped = codeFor(e);
    if (mapped) return new FetchError(mapped.code, url, { cause: err, retryable: mapped.retryable, detail: mapped.detail });
  }
  return new FetchError('NETWORK_ERROR', url, { cause: err });
}
