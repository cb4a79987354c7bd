// The activities the campaign workflow calls and their options: timeouts
// and bounded retries declared once.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { CrawlerActivities } from '../activities/types';
import { FailureType } from './messages';

// The campaign's bookkeeping (seeding, dispatch rounds, steering, the
// summary) is short Redis and Temporal calls: local activities, so it never
// waits in the task queue behind host sessions (its own or other
// campaigns') and costs one history event each instead of three.
export const acts = proxyLocalActivities<CrawlerActivities>({
  startToCloseTimeout: '5 minutes',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '30 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes: [FailureType.invalidCampaignInput, FailureType.steeringRefused],
  },
});
// Reading a seed list can take a while per call (a large gzip file re-read
// to its position): a regular activity that heartbeats its position.
export const { loadSeeds } = proxyActivities<CrawlerActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 10, nonRetryableErrorTypes: [FailureType.invalidCampaignInput] },
});
