// Operator steering for a crawl campaign: validated updates (and the
// pause/resume signals); a rejected one changes nothing. The handlers only
// delegate: the rules are in CampaignBook, the changes applied in Redis by
// the steerCampaign activity.
import { ActivityFailure, ApplicationFailure, condition, setHandler, upsertMemo } from '@temporalio/workflow';
import type { SteerChange } from '../activities/types';
import { SteeringError, validateAddSeeds, validateHostRequest, validateSetBudgets, validateSetConcurrency, validateSetPoliteness, validateSetRender } from '../src/config/steering';
import type { acts as localActivities } from './campaign-activities';
import type { CampaignBook } from './campaign-state';
import {
  addSeedsUpdate,
  FailureType,
  pauseCampaignUpdate,
  pauseHostUpdate,
  pauseSignal,
  resumeCampaignUpdate,
  resumeHostUpdate,
  resumeSignal,
  setBudgetsUpdate,
  setConcurrencyUpdate,
  setPolitenessUpdate,
  setRenderUpdate,
} from './messages';

/** Publishes the steering state to the workflow's memo. */
export const publishSteering = (book: CampaignBook) => upsertMemo(book.steeringMemo());

/** The add-seeds update: the seeds go in once the campaign has started, counted as work in flight meanwhile. */
function addSeeds(book: CampaignBook, acts: typeof localActivities, campaignKey: string) {
  return async (req: Parameters<typeof validateAddSeeds>[0]) => {
    const { seeds } = validateAddSeeds(req);
    // Work in flight: the campaign must not call itself done while seeds are on their way.
    book.inflight++;
    try {
      await condition(() => book.status !== 'starting');
      const r = await acts.addCampaignSeeds({ campaignKey, configVersion: book.carry.configVersion, seeds });
      book.onNudge();
      return { accepted: r.accepted, rejected: r.rejected };
    } finally {
      book.inflight--;
    }
  };
}

/**
 * Registers every steering handler. Call it before the workflow's first
 * await, so updates and signals already in the first task find a handler.
 * `acts` is the campaign's one-at-a-time queue of local activities.
 */
export function registerSteering(book: CampaignBook, acts: typeof localActivities, campaignId: string, campaignKey: string): void {
  const assertOpen = () => {
    if (!book.open) throw new SteeringError(`campaign ${campaignId} is finishing; nothing can be changed any more`);
  };
  const steer = serialSteer(book, acts, campaignId, campaignKey);

  setHandler(
    setPolitenessUpdate,
    async (req) => {
      const { host, minDelayMs } = validateSetPoliteness(req);
      const r = await steer({ kind: 'delay', host, minDelayMs });
      return { host: r?.host ?? host, minDelayMs };
    },
    { validator: (req) => (assertOpen(), void validateSetPoliteness(req)) },
  );
  // From the host's next session (its running one ends at the new settings version).
  setHandler(
    setRenderUpdate,
    async (req) => {
      const { host, render } = validateSetRender(req);
      const r = (await steer({ kind: 'render', host, render }))!;
      return { host: r.host ?? host, render };
    },
    { validator: (req) => (assertOpen(), void validateSetRender(req)) },
  );
  // Takes effect at the next dispatch: hosts already crawling keep their slot.
  setHandler(
    setConcurrencyUpdate,
    (req) => {
      const { maxActiveHosts } = validateSetConcurrency(req);
      book.carry.maxActiveHosts = maxActiveHosts;
      book.onNudge();
      publishSteering(book);
      return { maxActiveHosts };
    },
    { validator: (req) => (assertOpen(), void validateSetConcurrency(req)) },
  );
  setHandler(
    setBudgetsUpdate,
    async (req) => {
      const r = (await steer({ kind: 'budgets', budgets: validateSetBudgets(req) }))!;
      return { configVersion: r.configVersion, budgets: r.budgets };
    },
    { validator: (req) => (assertOpen(), void validateSetBudgets(req)) },
  );
  setHandler(addSeedsUpdate, addSeeds(book, acts, campaignKey), { validator: (req) => (assertOpen(), void validateAddSeeds(req)) });
  for (const [update, kind] of [
    [pauseHostUpdate, 'pause-host'],
    [resumeHostUpdate, 'resume-host'],
  ] as const) {
    setHandler(
      update,
      async (req) => {
        const r = (await steer({ kind, host: validateHostRequest(req) }))!;
        // A host resumed on its own is still paused while the whole campaign is.
        return { host: r.host!, paused: kind === 'pause-host' || book.carry.paused };
      },
      { validator: (req) => (assertOpen(), void validateHostRequest(req)) },
    );
  }
  const pauseOrResume = async (kind: 'pause' | 'resume') => {
    await steer({ kind }, () => book.carry.paused === (kind === 'pause'));
    return { paused: book.carry.paused };
  };
  setHandler(pauseCampaignUpdate, () => pauseOrResume('pause'), { validator: assertOpen });
  setHandler(resumeCampaignUpdate, () => pauseOrResume('resume'), { validator: assertOpen });
  // Async signal handlers: continue-as-new and completion wait for them (allHandlersFinished).
  setHandler(pauseSignal, async () => void (await pauseOrResume('pause')));
  setHandler(resumeSignal, async () => void (await pauseOrResume('resume')));
}

/**
 * One change at a time, so settings versions follow each other; each is
 * applied in Redis, where sessions look. `unless` is checked once the
 * change has its turn (a resume queued behind a pause must see the pause).
 */
function serialSteer(book: CampaignBook, acts: typeof localActivities, campaignId: string, campaignKey: string) {
  let steering = false;
  return async (change: SteerChange, unless: () => boolean = () => false) => {
    await condition(() => !steering && book.status !== 'starting');
    if (unless()) return null;
    steering = true;
    try {
      const r = await acts.steerCampaign({ campaignKey, campaignId, version: book.nextVersion(), change });
      book.applied(change, r);
      publishSteering(book);
      return r;
    } catch (err) {
      // A change the activity refused (an unknown host): the update fails with the reason.
      if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === FailureType.steeringRefused) {
        throw ApplicationFailure.nonRetryable(err.cause.message, FailureType.steeringRefused);
      }
      throw err;
    } finally {
      steering = false;
    }
  };
}
