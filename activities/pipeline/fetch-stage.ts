// Stage 1 of a page: may the URL be requested (robots.txt, the host's and the
// campaign's budgets), the request, and whether a failure is retried. It
// runs while the session holds the host clock and returns what the clock
// needs (`hostPauseMs`, null when nothing was requested); it never touches
// the clock itself (activities/crawl-session.ts owns it). A handler's login
// is no request of the page's: the stage only says that one must come first
// (`login-needed`), and the session runs it in clock turns of its own.
import type { PageFetcher, PageOutcome, PageResponse } from '../../src/browser/page-fetcher';
import type { FetchError } from '../../src/http/fetch-error';
import { parseRetryAfter } from '../../src/http/retry-after';
import { PAGE_RETRY, pageBackoffMs } from '../../src/config/retry-policy';
import type { EntryKind } from '../../src/redis/frontier';
import { OUTCOME, PAGE_CODE, httpCode } from './outcome';

export interface FetchStageInput {
  url: string;
  kind: EntryKind;
  /** The entry's label and depth, for a fetcher that runs the handler's render hook (src/browser/page-steps.ts). */
  label?: string | null;
  depth?: number;
  /** Claims of the entry so far, this one included. */
  attempt: number;
  /** The host's pause between requests now. */
  delayMs: number;
  /** Robots rules for the host, null when robots.txt is not respected. */
  allowedByRobots: ((url: string) => boolean) | null;
  maxPagesPerHost: number | null;
  maxPages: number | null;
  /** budgets.maxEmbeds: embed requests across the campaign. */
  maxEmbeds: number | null;
  /** fetch.maxRetries of the campaign. */
  maxRetries: number;
  /** Conditional headers of a revisit. */
  headers?: Record<string, string>;
  /**
   * The session's time left (a host's first session, run inside its workflow task): the request
   * waits no longer for its address slot; one that got none in time is `unsent`. Absent: the HTTP
   * client's own bound (half the total timeout), and ADDRESS_BUSY a retry like any other.
   */
  maxSlotWaitMs?: number;
}

export interface FetchStageDeps {
  fetcher: PageFetcher;
  /** Requests made to the host so far (its fetched and failed URLs). */
  hostRequests(): Promise<number>;
  /** Takes one of the campaign's page requests (keyed by the URL, so a retry takes none); false when they are spent. */
  reserveCampaignBudget(): Promise<boolean>;
  /** The same for an embed, against budgets.maxEmbeds. */
  reserveEmbedBudget(): Promise<boolean>;
  /** The handler's login for this page (activities/login.ts); null without a login hook. */
  login?: LoginGate | null;
  /**
   * Called just before the request goes out, its address slot held (the session's stamp on its host
   * clock): what it throws, the stage throws, nothing sent.
   */
  beforeSend?: () => Promise<void>;
  signal: AbortSignal;
}

/** Why the handler's login must run before the page's request: none yet, or the site answered logged out. */
export type LoginReason = 'first' | 'logged-out';

/**
 * The handler's login as one page's fetch sees it: whether a login must come
 * before the request, and what the response says of it. Neither touches the
 * host clock. `failure`: the page fails with it (LOGIN_FAILED) as a request
 * that got no usable answer.
 */
export interface LoginGate {
  /** Before the request: a login first, the page failed without asking again (its login failed), or null: request it. */
  before(): { login: 'first' } | { failure: FetchError } | null;
  /** A response: null when it got through; a login and then the page again; or the page failed. */
  after(res: PageResponse): Promise<{ login: 'logged-out' } | { failure: FetchError } | null>;
}

type Failure = { code: string; message: string };

/**
 * `hostPauseMs`: how long the host clock keeps the host quiet after this
 * step (the delay, or a longer Retry-After); null when no request went out,
 * so the lease is given back unused.
 */
export type FetchStageResult =
  /** Not requested on purpose: a budget or robots.txt. `budget-exhausted` also ends the campaign. */
  | {
      kind: 'skipped';
      hostPauseMs: null;
      outcome: typeof OUTCOME.robotsDisallowed | typeof OUTCOME.hostBudgetExhausted | typeof OUTCOME.budgetExhausted | typeof OUTCOME.embedBudgetExhausted;
      error?: Failure;
    }
  /** A transient failure: the URL stays claimed, the session waits `waitMs` (≥ the delay, ≥ Retry-After) before its next attempt. */
  | { kind: 'retry'; hostPauseMs: number; waitMs: number; reason: string; status: number | null; code: string }
  /** A failure without a response, final. A refused address sent nothing (`requested` false). */
  | { kind: 'failed'; hostPauseMs: number; outcome: typeof OUTCOME.error | typeof OUTCOME.refused; requested: boolean; error: Failure }
  /** A response to classify and store. `hostRequests`: the host's requests before this one, when its budget is counted. */
  | { kind: 'response'; hostPauseMs: number; response: PageResponse; hostRequests?: number; hostIdleMs?: number }
  /**
   * The handler's login must run, then the page is requested once more. `first`: nothing was
   * requested (null: the clock the session holds is the login's first request's); `logged-out`:
   * the logged-out answer was a request, the host quiet for its delay after it.
   */
  | { kind: 'login-needed'; reason: LoginReason; hostPauseMs: number | null }
  /**
   * Not sent: no address slot within the session's time left (`maxSlotWaitMs`). The URL stays
   * claimed for the host's next session, this claim a retry; the lease goes back unused.
   */
  | { kind: 'unsent'; hostPauseMs: null; reason: string };

export async function fetchStage(input: FetchStageInput, deps: FetchStageDeps): Promise<FetchStageResult> {
  const { url, attempt, delayMs } = input;
  if (input.allowedByRobots && !input.allowedByRobots(url)) return { kind: 'skipped', hostPauseMs: null, outcome: OUTCOME.robotsDisallowed };

  // Budgets count pages; sitemaps are requests but not pages.
  let hostRequests: number | undefined;
  if (input.maxPagesPerHost !== null && input.kind === 'page') {
    hostRequests = await deps.hostRequests();
    if (hostRequests >= input.maxPagesPerHost) {
      const error = { code: PAGE_CODE.hostBudget, message: `host reached its budget of ${input.maxPagesPerHost} pages` };
      return { kind: 'skipped', hostPauseMs: null, outcome: OUTCOME.hostBudgetExhausted, error };
    }
  }
  if (input.maxPages !== null && input.kind === 'page' && !(await deps.reserveCampaignBudget())) {
    const error = { code: PAGE_CODE.pageBudget, message: `the campaign reached its budget of ${input.maxPages} page requests` };
    return { kind: 'skipped', hostPauseMs: null, outcome: OUTCOME.budgetExhausted, error };
  }
  // Embeds have their own budget; spent, the embed is skipped and the campaign goes on.
  if (input.maxEmbeds !== null && input.kind === 'embed' && !(await deps.reserveEmbedBudget())) {
    const error = { code: PAGE_CODE.embedBudget, message: `the campaign reached its budget of ${input.maxEmbeds} embed requests` };
    return { kind: 'skipped', hostPauseMs: null, outcome: OUTCOME.embedBudgetExhausted, error };
  }

  const got = await request(input, deps);
  if ('login' in got)
    return got.login === 'first' ? { kind: 'login-needed', reason: 'first', hostPauseMs: null } : { kind: 'login-needed', reason: 'logged-out', hostPauseMs: delayMs };
  if (!got.ok) {
    const err = got.failure;
    if (err.code === 'ADDRESS_BUSY' && input.maxSlotWaitMs !== undefined) {
      return { kind: 'unsent', hostPauseMs: null, reason: `no address slot for ${url} within the session's time left (${Math.round(input.maxSlotWaitMs)} ms)` };
    }
    // An address kept busy by the crawler's own other requests (the per-address
    // cap) is the crawler pacing itself, not the URL failing: as many extra
    // attempts as a 429 gets.
    const maxAttempts = err.code === 'ADDRESS_BUSY' ? input.maxRetries + PAGE_RETRY.throttleExtraAttempts : input.maxRetries;
    if (err.retryable && attempt <= maxAttempts) {
      return {
        kind: 'retry',
        hostPauseMs: delayMs,
        waitMs: pageBackoffMs(attempt, delayMs),
        reason: `${err.code} on ${url}, retry ${attempt}/${maxAttempts}`,
        status: null,
        code: err.code,
      };
    }
    // A refused address got no request: nothing reached the host (the delay is still kept, as for any failure).
    const refused = err.code === PAGE_CODE.addressRefused;
    return { kind: 'failed', hostPauseMs: delayMs, outcome: refused ? OUTCOME.refused : OUTCOME.error, requested: !refused, error: { code: err.code, message: err.message } };
  }

  const res = got.response;
  const retryAfter = parseRetryAfter(res.headers['retry-after']);
  const overloaded = res.status === 429 || res.status >= 500;
  // Retry-After applies to the whole host: it goes on the shared clock.
  const hostPauseMs = overloaded && retryAfter !== null ? Math.max(delayMs, retryAfter) : delayMs;
  // A 429 is the server pacing us, not the URL failing: it gets a few attempts more before the URL is given up.
  const maxAttempts = res.status === 429 ? input.maxRetries + PAGE_RETRY.throttleExtraAttempts : input.maxRetries;
  if (overloaded && attempt <= maxAttempts) {
    const why = retryAfter !== null ? `HTTP ${res.status} with Retry-After ${Math.round(hostPauseMs / 1000)} s` : `HTTP ${res.status}`;
    return {
      kind: 'retry',
      hostPauseMs,
      waitMs: Math.max(hostPauseMs, pageBackoffMs(attempt, delayMs)),
      reason: `${why} on ${url}, retry ${attempt}/${maxAttempts}`,
      status: res.status,
      code: httpCode(res.status),
    };
  }
  // A rendered page's render went on after its last request to the host: the pause counts from that request.
  const hostIdleMs = overloaded ? 0 : hostIdle(res.rendered?.hostRequestsEndedAt);
  return { kind: 'response', hostPauseMs, response: res, ...(hostRequests !== undefined ? { hostRequests } : {}), ...(hostIdleMs > 0 ? { hostIdleMs } : {}) };
}

/**
 * How long the host has been quiet when a page whose render asked it for its
 * last file at `endedAt` (epoch ms) is done: the delay counts from the
 * host's last request, and what a render does after it (the quiet wait, the
 * idle check, taking the DOM) asks the host nothing, so that time is part of
 * the delay instead of coming before it. 0 for a page not rendered (its
 * request just ended).
 */
export function hostIdle(endedAt: number | undefined, now = Date.now()): number {
  return endedAt === undefined ? 0 : Math.max(0, now - endedAt);
}

/** The page's request, with the login's word before and after it: a login to run, or what the request came to. */
async function request(input: FetchStageInput, deps: FetchStageDeps): Promise<PageOutcome | { login: LoginReason }> {
  const gate = deps.login ?? null;
  const first = gate?.before() ?? null;
  if (first && 'login' in first) return first;
  if (first) return { ok: false, failure: first.failure };
  const got = await deps.fetcher.fetch(
    { url: input.url, headers: input.headers, kind: input.kind, label: input.label, depth: input.depth },
    {
      signal: deps.signal,
      ...(deps.beforeSend ? { beforeSend: deps.beforeSend } : {}),
      ...(input.maxSlotWaitMs !== undefined ? { maxSlotWaitMs: input.maxSlotWaitMs } : {}),
    },
  );
  const verdict = gate && got.ok ? await gate.after(got.response) : null;
  if (!verdict) return got;
  return 'login' in verdict ? verdict : { ok: false, failure: verdict.failure };
}
