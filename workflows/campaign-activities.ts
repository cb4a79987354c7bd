// The activities the campaign workflow calls and their options: timeouts
// and bounded retries declared once.
import { ActivityFailure, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { CrawlerActivities } from '../activities/types';
import { ACTIVITY_RETRY } from '../src/config/retry-policy';
import { FailureType } from './messages';

// The campaign's bookkeeping (seeding, dispatch rounds, steering, the
// summary) is short Redis and Temporal calls: local activities, so it never
// waits in the task queue behind host sessions (its own or other
// campaigns') and costs one history event each instead of three.
export const acts = proxyLocalActivities<CrawlerActivities>({
  startToCloseTimeout: '5 minutes',
  retry: {
    ...ACTIVITY_RETRY.bookkeeping,
    nonRetryableErrorTypes: [FailureType.invalidCampaignInput, FailureType.steeringRefused],
  },
});
// Reading a seed list can take a while per call (a large gzip file re-read
// to its position): a regular activity that heartbeats its position.
export const { loadSeeds } = proxyActivities<CrawlerActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { ...ACTIVITY_RETRY.loadSeeds, nonRetryableErrorTypes: [FailureType.invalidCampaignInput] },
});

/**
 * The campaign's local activities, one at a time in call order. Two local
 * activities in flight together (a dispatch round and an operator's update)
 * resolve in the order they finish when the workflow runs, but in the order
 * they were scheduled when it is replayed: the commands that follow them
 * would then come in another order than the history's, a nondeterminism
 * error (it happened: an addSeeds update at the first task of a run continued
 * as new, beside that run's first dispatch). Queued, they cannot overlap.
 * One per workflow execution (the queue is workflow state).
 */
export function oneAtATime(local: typeof acts): typeof acts {
  let queue: Promise<unknown> = Promise.resolve();
  return new Proxy(local, {
    get(target, name: keyof typeof acts) {
      const call = target[name] as (...args: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => {
        const run = queue.then(() => call(...args));
        queue = run.catch(() => undefined);
        return run;
      };
    },
  });
}

/** What an activity's failure says (its cause), for the campaign's status and summary. */
export const failureMessage = (err: unknown): string => (err instanceof ActivityFailure && err.cause ? err.cause.message : String(err));
