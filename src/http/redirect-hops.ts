// Redirects, followed by hand (no undici redirect interceptor): each hop is
// its own request under the fetch's one deadline, its Location resolved as
// browsers do, loops and chains past maxRedirects refused with their own
// codes, and a declined redirect handed back as the response it is.
import type { Dispatcher } from 'undici';
import { discard } from './body-reader';
import { connectionReleased } from './connection-probe';
import { FetchError } from './fetch-error';
import type { FetchOptions, FetchResult, RedirectHop } from './http-types';
import { headerValue } from './response-headers';

// Only these carry a Location we should follow; 300/304/305 etc. are returned
// to the caller as ordinary responses.
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

// What a redirect response body may cost us to keep the connection reusable;
// beyond that undici destroys the socket instead.
const REDIRECT_DRAIN_LIMIT = 64 * 1024;

/** The redirects of one fetch so far: the hops followed, the URLs requested, and how many may be followed. */
export interface RedirectTrail {
  redirects: RedirectHop[];
  seen: Set<string>;
  maxRedirects: number;
}

/**
 * What a response is as a hop of the fetch: undefined when it is no
 * redirect (it is the result); the next hop's URL once this one's body is
 * drained and the hop is on the trail; or, when followRedirect declined it,
 * the redirect not followed (the 3xx is the result).
 */
export async function redirectOf(
  response: Dispatcher.ResponseData<unknown>,
  current: URL,
  followRedirect: FetchOptions['followRedirect'],
  trail: RedirectTrail,
): Promise<URL | NonNullable<FetchResult['stoppedRedirect']> | undefined> {
  const status = response.statusCode;
  if (!REDIRECT_STATUSES.has(status)) return undefined;
  const target = redirectTarget(response, current);
  if (followRedirect && !followRedirect(current.href, target.href)) return { from: current.href, to: target.href, status };
  if (trail.seen.has(target.href)) {
    discard(response.body);
    throw new FetchError('REDIRECT_LOOP', current.href, {
      detail: `${current.href} redirects back to ${target.href} after ${trail.redirects.length} redirect(s)`,
    });
  }
  if (trail.redirects.length >= trail.maxRedirects) {
    discard(response.body);
    throw new FetchError('TOO_MANY_REDIRECTS', current.href, {
      detail: `more than ${trail.maxRedirects} redirects, last ${current.href} -> ${target.href}`,
    });
  }
  // Drain rather than destroy so the keep-alive connection survives
  // (same-origin redirects are the common case).
  await response.body.dump({ limit: REDIRECT_DRAIN_LIMIT }).catch(() => undefined);
  await connectionReleased();
  trail.redirects.push({ url: current.href, status, location: target.href });
  trail.seen.add(target.href);
  return target;
}

function redirectTarget(response: Dispatcher.ResponseData<unknown>, current: URL): URL {
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

/** As browsers do (RFC 9110 15.4): a POST answered 301, 302 or 303 goes on as a GET without its body or its Content-Type. */
export function withoutBody(opts: FetchOptions): FetchOptions {
  const headers = Object.fromEntries(Object.entries(opts.headers ?? {}).filter(([n]) => n.toLowerCase() !== 'content-type'));
  return { ...opts, method: 'GET', body: undefined, headers };
}

export function parseHttpUrl(input: string, errorUrl: string, code: 'INVALID_URL' | 'INVALID_REDIRECT', base?: URL): URL {
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
