// When a campaign looks for pages lost with a worker's disk before it
// finishes (activities/requeue-lost.ts): a rule of the campaign's state, kept
// apart from the rest of its bookkeeping (workflows/campaign-state.ts).
import type { CampaignSettings } from '../src/config/campaign';
import { isLocationUrl } from '../src/storage/output-location-rules';

/** Looks for lost pages per campaign at most (carried through continue-as-new). */
export const MAX_LOST_CHECKS = 5;

/**
 * Whether a campaign about to finish drained first looks for lost pages: an output in a bucket (a
 * folder's lines are written where every worker reads), not a revisit campaign, not stopped (by a
 * budget or a cancel), and fewer than MAX_LOST_CHECKS looks so far (a worker losing its disk each
 * time must not hold the campaign forever).
 */
export function lostCheckDue(settings: Pick<CampaignSettings, 'output' | 'revisit'>, lostChecks: number | undefined, stopped: boolean): boolean {
  return !stopped && isLocationUrl(settings.output.dir) && !settings.revisit?.enabled && (lostChecks ?? 0) < MAX_LOST_CHECKS;
}
