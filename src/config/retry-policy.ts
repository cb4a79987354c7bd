// Every retry and back-off setting of the crawler, in one table (like
// undici's retryOpts): the Temporal retry policies the workflows give their
// activities, a page's own retries inside a session, the host workflow's
// back-off after a failed session and the worker pool's restart back-off.
// Pure data (workflows import it): no Node built-ins, no I/O. How often a
// page may be fetched again is the campaign's `fetch.maxRetries`; the rest
// is here.

/** Temporal's retry policy fields we use (durations as Temporal strings). */
export interface ActivityRetry {
  initialInterval: string;
  backoffCoefficient?: number;
  maximumInterval: string;
  /** Always bounded: an activity retried without limit kept its host from ever finishing. */
  maximumAttempts: number;
}

/** The retry policy of each activity group the workflows proxy (test/unit/activity-retries.test.ts checks every proxy uses one). */
export const ACTIVITY_RETRY = {
  /** The campaign's bookkeeping (local activities: seeding, dispatch, steering, summary) and releaseHost: short Redis and Temporal calls. */
  bookkeeping: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
  /** Reading a seed list: a long call that resumes from its heartbeat. */
  loadSeeds: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 10 },
  /** A host session: a retry resumes the claimed URL; past these the host workflow backs off durably (HOST_FAILURE_BACKOFF). */
  session: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
} as const satisfies Record<string, ActivityRetry>;

/**
 * A host session's heartbeats: a safety net of minutes, no longer how a dead
 * worker's hosts are found. Each heartbeat is a billable action on Temporal
 * Cloud (none a history event), and at one every 20 s they were a third of
 * what a polite crawl paid per page (docs/architecture.md, "What costs
 * actions"). A worker's hosts move on within seconds through its lease in
 * Redis; pause, stop, new settings and a host whose workflow was ended by
 * hand reach a session through its control read (activities/session-control.ts).
 * What is left to the heartbeat: a session whose worker is alive but which
 * itself hangs, or one the liveness watch missed, is run again elsewhere
 * after `timeoutMs`; and Temporal's own cancel, reset or pause of the
 * activity reaches it at its next beat.
 * `throttleMs`: a session sends its first heartbeat this long after it
 * started and then one this often (the SDK's throttle too), so a session of
 * the default `session.maxMs` (2 min) sends none; half the timeout, so one
 * beat late or lost (a long pause of the process) does not time it out.
 */
export const SESSION_HEARTBEAT = { timeoutMs: 5 * 60_000, throttleMs: 150_000 } as const;

/**
 * A session whose Redis is unreachable (a cluster master failing over: its node timeout plus an
 * election; a restart) rides it out (activities/redis-outage.ts): it probes the keys it needs this
 * often, each probe given this long, for at most `rideOutMs`, then its next attempt starts
 * `retryAfterMs` later instead of after Temporal's growing back-off. `rideOutMs` covers Redis's
 * default cluster-node-timeout (15 s) plus an election; longer outages go to the retry policy.
 */
export const REDIS_OUTAGE = { rideOutMs: 30_000, probeEveryMs: 250, probeTimeoutMs: 1_000, retryAfterMs: 100 } as const;

/** A page's retries inside its host session (activities/pipeline/fetch-stage.ts). */
export const PAGE_RETRY = {
  /** Processing attempts (claims minus claims that ended in a deliberate retry) before a URL is recorded INTERNAL_ERROR. */
  maxProcessingAttempts: 3,
  /** Attempts a URL answered with 429 gets beyond fetch.maxRetries: a 429 is the server pacing us, not the URL failing. */
  throttleExtraAttempts: 5,
  /** Back-off after a retryable failure: base × 2^attempt, capped, never below the host's delay. */
  backoffBaseMs: 1_000,
  backoffMaxMs: 5 * 60_000,
} as const;

/** robots.txt that keeps failing (5xx, 429, network, timeout): tried this often, with this back-off between tries (durable sleeps), before its host is crawled not at all (RFC 9309). */
export const ROBOTS_RETRY = { attempts: 3, backoffBaseMs: 10_000 } as const;

/** The wait before robots.txt's next try after its `fails`-th failure in a row, never undercutting the host's pause. */
export function robotsBackoffMs(fails: number, floorMs: number): number {
  return Math.max(floorMs, ROBOTS_RETRY.backoffBaseMs * 2 ** (fails - 1));
}

/** The host workflow's own durable back-off when a session fails for good (Redis down, a bug): growing, capped. */
export const HOST_FAILURE_BACKOFF = { initialMs: 30_000, maxMs: 10 * 60_000 } as const;

/** The worker pool's wait before restarting a crashed worker process (n = crashes in its window). */
export const WORKER_RESTART_BACKOFF = { initialMs: 1_000, maxMs: 15_000 } as const;

/** A wait at least this long shows as `sleeping` rather than `crawling` (operators filter on it; the state does not flap per page). */
export const LONG_SLEEP_MS = 10_000;

/** A page's back-off before its next attempt: exponential, capped, never undercutting the host's crawl-delay. */
export function pageBackoffMs(attempt: number, delayMs: number): number {
  return Math.max(delayMs, Math.min(PAGE_RETRY.backoffBaseMs * 2 ** attempt, PAGE_RETRY.backoffMaxMs));
}

/** The host workflow's back-off after its `failures`-th failed session in a row. */
export function hostFailureBackoffMs(failures: number): number {
  return Math.min(HOST_FAILURE_BACKOFF.initialMs * 2 ** (failures - 1), HOST_FAILURE_BACKOFF.maxMs);
}

/** The worker pool's restart back-off after `crashes` crashes. */
export function workerRestartBackoffMs(crashes: number): number {
  return Math.min(WORKER_RESTART_BACKOFF.maxMs, WORKER_RESTART_BACKOFF.initialMs * 2 ** (crashes - 1));
}
