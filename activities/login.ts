// A handler's login (docs/handlers.md, "Logging in"): the hook runs before a
// host's first page request and again when a page says the crawler is logged
// out (401, or 403 and the handler's isLoggedOut), after which that page is
// requested once more. The hook's requests go where a page's go: the host's
// cookie jar (so the session cookie it earns is the crawl's), its proxy and
// credentials (the campaign's HTTP client), robots.txt and the address
// policy, and the host clock, one request at a time, each spaced by the
// host's delay; each is stored in the WARC. The clock is the session's: the
// page's fetch stage only says a login is needed (`gateFor`), and the session
// runs it as a turn of its own, sending the hook's requests one clock turn
// each (`start`, activities/login-run.ts).
//
// Whether the host is logged in is kept in Redis (the host's `login` key),
// so a session resumed elsewhere, or the next session of a polite crawl that
// ends one after each page, does not log in again while the cookies still
// work. A login that fails, and one after which the site still answers
// logged out, set the host's login aside for LOGIN_RETRY_MS for every worker:
// until then pages that answer logged out are recorded as failed with code
// LOGIN_FAILED, and a login is only tried again once a page got through
// after the last one, so a broken login can never loop.
import { hostKeys } from '../src/redis/keys';
import { CrawlerError } from '../src/errors';
import { FetchError } from '../src/http/fetch-error';
import type { FetchResult } from '../src/http/http-types';
import { headerProblem, isSecretHeaderName } from '../src/http/header-rules';
import type { Handler, LoginContext, LoginRequestInit, LoginResponse } from '../src/handlers/api';
import { handlerLog } from '../src/handlers/handler-log';
import { isLoggedOutResponse, runLogin } from '../src/handlers/runner';
import { decodeBody } from '../src/parse/decode';
import { hostKey } from '../src/url/normalize';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import { exchangeOf } from '../src/storage/exchange-of';
import type { LoginGate, LoginReason } from './pipeline/fetch-stage';
import { LoginRequests, type LoginRun } from './login-run';

/** Requests one login may make, redirect hops included: a hook that loops runs out of them. */
export const MAX_LOGIN_REQUESTS = 20;
/** A failed login is not tried again on this host, by any worker, for this long. */
export const LOGIN_RETRY_MS = 10 * 60_000;
/** Redirects of a login request bigger than fetch.maxRedirects are not followed, nor more than this. */
const MAX_LOGIN_REDIRECTS = 10;

export type LoginErrorCode = 'LOGIN_REQUEST_FAILED' | 'LOGIN_OFF_HOST' | 'LOGIN_TOO_MANY_REQUESTS' | 'LOGIN_ROBOTS_DISALLOWED' | 'LOGIN_OVER';

/** What the hook's fetch throws: a request that got no answer, or one it may not make. */
export class LoginError extends CrawlerError<LoginErrorCode> {
  constructor(code: LoginErrorCode, message: string) {
    super(code, message);
    this.name = 'LoginError';
  }
}

/** The host's login as Redis keeps it: logged in (since `at`), or failed and set aside until `until`. */
type Stored = { s: 'in'; at: number } | { s: 'failed'; code: string; message: string; until: number };

type State = { s: 'none' } | { s: 'in'; good: number } | { s: 'failed'; code: string; message: string; until: number };

export interface LoginDeps {
  rt: WorkerRuntime;
  campaign: CampaignRuntime;
  host: string;
  handler: Handler;
  /** robots.txt's verdict for the host; null when robots.txt is not respected. */
  allows: ((url: string) => boolean) | null;
}

/** The page a login is for: its URL, and its depth and label for the handler's isLoggedOut. */
export interface LoginPage {
  url: string;
  depth: number;
  label: string | null;
}

/** One page's login: the fetch stage's gate, and the login runs the session starts when the gate asks for one. */
export interface PageLogin extends LoginGate {
  /**
   * The hook, as a run of requests for the session to send. `delayMs`, the host's delay,
   * bounds the run's time with the hook's limit (each request waits its turn on the clock).
   */
  start(reason: LoginReason, o: { delayMs: number; signal: AbortSignal }): LoginRun;
}

/**
 * Where one page stands with its login: nothing yet; after a first login
 * (whatever it came to, the page is requested); after a login for a
 * logged-out answer that got in (the page is requested once more), or that
 * failed (the page fails without another request).
 */
type PagePhase = 'start' | 'after-first' | 'after-logged-out' | 'logged-out-failed';

/** One session's view of its host's login. */
export class HostLogin {
  private state: State;
  private readonly key: string;

  private constructor(
    private readonly d: LoginDeps,
    stored: Stored | null,
  ) {
    this.key = hostKeys(d.campaign.key, d.host).login;
    // A login another session made is trusted for one logged-out answer: the cookies may have expired since.
    this.state = stored === null ? { s: 'none' } : stored.s === 'in' ? { s: 'in', good: 1 } : stored;
  }

  /** The host's login, or null when the handler has no login hook. */
  static async open(d: LoginDeps): Promise<HostLogin | null> {
    if (!d.handler.login) return null;
    const raw = await d.rt.deps.redis.get(hostKeys(d.campaign.key, d.host).login);
    let stored: Stored | null;
    try {
      stored = raw ? (JSON.parse(raw) as Stored) : null;
    } catch {
      // Unreadable: as if there were none (the next login writes it anew).
      stored = null;
    }
    return new HostLogin(d, stored);
  }

  /**
   * The login around one page's request: a login first if due; on a
   * logged-out answer a login again (when allowed), then the page once more.
   * A page that still cannot get in is a failure with code LOGIN_FAILED (not
   * retried: the login is set aside).
   */
  gateFor(page: LoginPage): PageLogin {
    let phase: PagePhase = 'start';
    return {
      before: () => {
        if (phase === 'start' && this.due()) return { login: 'first' };
        return phase === 'logged-out-failed' ? { failure: this.failure(page.url) } : null;
      },
      after: async (res) => {
        if (!this.loggedOut(res, page)) {
          if (this.state.s === 'in') this.state.good++;
          return null;
        }
        if (phase === 'after-logged-out') {
          await this.setAside('LOGIN_FAILED', 'the site still answers logged out right after the login hook logged in');
          return { failure: this.failure(page.url) };
        }
        return this.mayLogInAgain() ? { login: 'logged-out' } : { failure: this.failure(page.url) };
      },
      start: (reason, o) => {
        const run = new LoginRequests();
        const done = this.login(run, reason, page.url, o).then((ok) => {
          phase = reason === 'first' ? 'after-first' : ok ? 'after-logged-out' : 'logged-out-failed';
          return ok;
        });
        run.endWith(done, () => new LoginError('LOGIN_OVER', 'the login is over: no more requests'));
        return run;
      },
    };
  }

  /** A login is due: none yet, or a failed one whose time out is over. */
  private due(): boolean {
    return this.state.s === 'none' || (this.state.s === 'failed' && Date.now() >= this.state.until);
  }

  /** Only once a page got through since the last login: a login that lets nobody in must not run again for every page. */
  private mayLogInAgain(): boolean {
    if (this.state.s === 'in') return this.state.good > 0;
    return this.due();
  }

  private failure(url: string): FetchError {
    const why = this.state.s === 'failed' ? `${this.state.code}: ${this.state.message}` : 'not logged in';
    return new FetchError('LOGIN_FAILED', url, { detail: why });
  }

  private loggedOut(res: FetchResult, page: LoginPage): boolean {
    if (res.status !== 401 && res.status !== 403) return false;
    const contentType = res.headers['content-type'] ?? null;
    return isLoggedOutResponse(this.d.handler, {
      url: res.url,
      finalUrl: res.finalUrl,
      depth: page.depth,
      label: page.label,
      status: res.status,
      headers: res.headers,
      contentType,
      body: res.body,
      text: decodeBody(res.body, contentType).text,
      log: this.log(res.url),
    });
  }

  private log(url?: string) {
    return handlerLog(this.d.rt.log, { campaign: this.d.campaign.settings.campaignId, host: this.d.host, ...(url ? { url } : {}), login: true });
  }

  /** Runs the hook, its requests sent by the session through `line`; true when it resolved. The outcome goes to Redis for the other sessions of the host. */
  private async login(line: LoginRequests, reason: LoginReason, pageUrl: string, o: { delayMs: number; signal: AbortSignal }): Promise<boolean> {
    const s = this.d.campaign.settings;
    const origin = new URL(pageUrl).origin;
    const over = new AbortController();
    const stop = AbortSignal.any([o.signal, over.signal]);
    const count = { requests: 0 };
    const log = this.log();
    const fetch = (url: string, init: LoginRequestInit = {}) => {
      const answer = this.hookFetch(line, { origin, stop, count }, url, init);
      // A hook that fires a request without awaiting it (then returns, or passes its limit) must not
      // leave an unhandled rejection behind to take the worker down: the hook still sees the failure
      // wherever it awaits the promise.
      answer.catch(() => undefined);
      return answer;
    };
    const ctx: LoginContext = { host: this.d.host, origin, reason, fetch, log, credentials: this.d.campaign.credentials.loginFor(new URL(origin)) };
    // The hook's own limit, plus the host's delay for each request it may make (they wait their turn on the clock).
    const limit = s.handlerTimeoutMs + MAX_LOGIN_REQUESTS * o.delayMs;
    const overAtLimit = () => over.abort(new LoginError('LOGIN_OVER', 'the login is over (its time limit passed): no more requests'));
    const run = await runLogin(this.d.handler, ctx, limit, overAtLimit);
    // A hook left behind at its time limit (or one that did not await its fetch) makes no more requests.
    line.close(new LoginError('LOGIN_OVER', 'the login is over: no more requests'));
    over.abort(new LoginError('LOGIN_OVER', 'the login is over: no more requests'));
    o.signal.throwIfAborted();
    this.d.rt.deps.metrics?.recordHandlerRun(run.ok ? 'ok' : 'failed');
    const { requests } = count;
    if (run.ok) {
      this.state = { s: 'in', good: 0 };
      await this.d.rt.deps.redis.set(this.key, JSON.stringify({ s: 'in', at: Date.now() } satisfies Stored));
      log.info('logged in', { reason, requests, ms: run.ms });
      return true;
    }
    log.warn('login failed', { reason, requests, ms: run.ms, code: run.code, error: run.message.slice(0, 500) });
    await this.setAside(run.code, run.message);
    return false;
  }

  /**
   * The hook's `fetch`: one request on the host (and each redirect hop on it), robots.txt and
   * MAX_LOGIN_REQUESTS checked before it goes to the session to send, the exchange stored after.
   */
  private async hookFetch(
    line: LoginRequests,
    run: { origin: string; stop: AbortSignal; count: { requests: number } },
    url: string,
    init: LoginRequestInit,
  ): Promise<LoginResponse> {
    if (run.stop.aborted) throw new LoginError('LOGIN_OVER', 'the login is over (its time limit passed): no more requests');
    let target: URL;
    try {
      target = new URL(url, run.origin);
    } catch {
      throw new LoginError('LOGIN_REQUEST_FAILED', `cannot parse ${JSON.stringify(String(url).slice(0, 200))}`);
    }
    const req = loginRequest(init);
    const maxHops = Math.min(this.d.campaign.settings.fetch.maxRedirects, MAX_LOGIN_REDIRECTS);
    for (let hops = 0; ; hops++) {
      if (hostKey(target.href) !== this.d.host) throw new LoginError('LOGIN_OFF_HOST', `${target.href} is not on ${this.d.host}: a login's requests stay on its host`);
      if (++run.count.requests > MAX_LOGIN_REQUESTS) throw new LoginError('LOGIN_TOO_MANY_REQUESTS', `a login may make ${MAX_LOGIN_REQUESTS} requests`);
      if (this.d.allows && !this.d.allows(target.href)) throw new LoginError('LOGIN_ROBOTS_DISALLOWED', `robots.txt disallows ${target.href}`);
      const got = await line.send({ url: target.href, method: req.method, headers: req.headers, ...(req.body ? { body: req.body } : {}) }, run.stop);
      if (!got.ok) throw new LoginError('LOGIN_REQUEST_FAILED', `${target.href}: ${got.failure.code}`);
      const res = got.response;
      await this.store(res, req.secretHeaders);
      const location = res.status >= 300 && res.status < 400 && res.headers.location ? safeUrl(res.headers.location, target) : null;
      // Redirects on the host are followed, as a browser submitting the form would; one elsewhere is the hook's to see.
      if (location && [301, 302, 303, 307, 308].includes(res.status) && hops < maxHops && hostKey(location.href) === this.d.host) {
        if (req.method === 'POST' && res.status !== 307 && res.status !== 308) Object.assign(req, { method: 'GET', body: undefined, headers: withoutContentType(req.headers) });
        target = location;
        continue;
      }
      const contentType = res.headers['content-type'] ?? null;
      return { status: res.status, headers: res.headers, text: decodeBody(res.body, contentType).text, url: res.finalUrl };
    }
  }

  private async setAside(code: string, message: string): Promise<void> {
    const until = Date.now() + LOGIN_RETRY_MS;
    this.state = { s: 'failed', code, message, until };
    await this.d.rt.deps.redis.set(this.key, JSON.stringify({ s: 'failed', code, message, until } satisfies Stored), 'PX', LOGIN_RETRY_MS);
  }

  /** A login exchange into the WARC, like a page's (no index line: it is no frontier URL), marked as the login's in its metadata record. */
  private async store(res: FetchResult, secretHeaders: string[]): Promise<void> {
    const s = this.d.campaign.settings;
    const warc = await this.d.rt.outputs.warc(s.output.dir, s.campaignId, s.output);
    await warc.writeExchange(exchangeOf(res, { url: res.url, metadata: { crawlerRequest: 'login' }, keepSecrets: s.output.warcKeepSecrets, secretHeaders }));
  }
}

/** The hook's request as the fetcher takes it; header names that look secret are redacted in the WARC like Authorization. */
function loginRequest(init: LoginRequestInit): { method: 'GET' | 'POST'; body?: Buffer; headers: Record<string, string>; secretHeaders: string[] } {
  const method = init.method ?? 'GET';
  if (method !== 'GET' && method !== 'POST') throw new LoginError('LOGIN_REQUEST_FAILED', `method ${JSON.stringify(String(method))}: GET or POST`);
  const headers: Record<string, string> = {};
  for (const [n, v] of Object.entries(init.headers ?? {})) {
    // The crawler's own headers (Host, User-Agent, framing) stay its own; secrets are the hook's to send.
    const problem = headerProblem(n, String(v), { secretsAllowed: true });
    if (problem) throw new LoginError('LOGIN_REQUEST_FAILED', `header ${problem}`);
    headers[n.toLowerCase()] = String(v);
  }
  let body: Buffer | undefined;
  if (init.body !== undefined && method === 'POST') {
    if (init.body instanceof URLSearchParams) {
      body = Buffer.from(init.body.toString());
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
    } else body = Buffer.from(String(init.body));
  }
  return { method, ...(body ? { body } : {}), headers, secretHeaders: Object.keys(headers).filter(isSecretHeaderName) };
}

function withoutContentType(headers: Record<string, string>): Record<string, string> {
  const { 'content-type': _drop, ...rest } = headers;
  return rest;
}

function safeUrl(location: string, base: URL): URL | null {
  try {
    const u = new URL(location, base);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : null;
  } catch {
    return null;
  }
}
