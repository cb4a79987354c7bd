// How many times a claimed URL may be processed before it is recorded as
// failed for good (INTERNAL_ERROR), so that one URL whose processing throws,
// or kills its worker, cannot hold its host (and worker after worker) forever.
// Claims that ended in a deliberate retry (a 503, a reset connection) are not
// processing failures: the network's retries are the fetch stage's to count.
import { PAGE_RETRY } from '../src/config/retry-policy';
import { SessionSupersededError } from '../src/redis/frontier';
import { isRedisUnavailable } from './redis-outage';

/** A URL whose processing failed this many times for a reason other than the network is recorded as INTERNAL_ERROR. */
export const MAX_PAGE_ATTEMPTS = PAGE_RETRY.maxProcessingAttempts;

/** What the policy needs of a claim: its claims so far (this one included), and those of them that ended in a retry. */
export interface ClaimCount {
  attempts: number;
  retried: number;
}

/** Processing attempts: this claim and the earlier ones that did not end in a retry. */
export function processingAttempts(c: ClaimCount): number {
  return c.attempts - c.retried;
}

/**
 * Before the page is requested: the message it is recorded INTERNAL_ERROR with, unrequested, when it
 * was claimed again and again without a commit and without an error to catch (its processing killed
 * the worker, out of memory or a crash, or blocked it past the heartbeat timeout); null: go on.
 */
export function claimedTooOften(c: ClaimCount): string | null {
  const processing = processingAttempts(c);
  if (processing <= MAX_PAGE_ATTEMPTS) return null;
  return `claimed ${c.attempts} times without finishing: ${processing - 1} processing attempts ended without a commit (the worker died or was blocked past its heartbeat timeout); not requested again`;
}

/**
 * The page's processing threw: the message it is recorded INTERNAL_ERROR with, or null when the
 * error goes up instead (the session was cancelled or superseded, Redis is unreachable, or the URL
 * has attempts left: the session fails and its next attempt claims the URL again). A superseded
 * session records nothing: the URL is the newer attempt's, and its commit would be refused anyway.
 * An outage of Redis is not the URL's failure: the session rides it out (activities/redis-outage.ts),
 * and recording the URL would need Redis anyway.
 */
export function failedForGood(c: ClaimCount, err: unknown, cancelled: boolean): string | null {
  const processing = processingAttempts(c);
  if (cancelled || err instanceof SessionSupersededError || isRedisUnavailable(err) || processing < MAX_PAGE_ATTEMPTS) return null;
  return `processing failed ${processing} times: ${err instanceof Error ? err.message : String(err)}`;
}

/**
 * One claimed URL under the policy: `run` it, unless it was claimed too often already (then
 * `unrequested` gives the host clock's lease back, and it is recorded failed for good without a
 * request); an error `run` throws goes up while the URL has attempts left, and is recorded for
 * good (`recordFailed`, INTERNAL_ERROR) on its last one. A cancellation always goes up.
 */
export async function underAttemptPolicy<T>(
  claim: ClaimCount,
  signal: AbortSignal,
  o: { run: () => Promise<T>; unrequested: () => Promise<void>; recordFailed: (message: string) => Promise<T> },
): Promise<T> {
  const worn = claimedTooOften(claim);
  if (worn) {
    // Not requested again, or it would take its host (and worker after worker) down forever.
    await o.unrequested();
    return o.recordFailed(worn);
  }
  try {
    return await o.run();
  } catch (err) {
    const why = failedForGood(claim, err, signal.aborted);
    if (why === null) throw err;
    return o.recordFailed(why);
  }
}
