// A crawl campaign: validates its input, seeds the frontiers, dispatches
// hosts into slots (each host is its own workflow, started or woken by an
// activity), applies operators' steering and completes when no host holds
// or waits for a slot, or a budget or cancel stops it. A thin shell: the
// rules are in CampaignBook (workflows/campaign-state.ts), per-host state in Redis.
//
// Every await of the campaign's own run stays in crawlCampaign (or in the
// same async function it had before): an extra async wrapper around one
// would add microtask turns, which can reorder the commands of concurrent
// handlers and the main loop, and recorded histories would stop replaying.
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  type WorkflowInfo,
} from '@temporalio/workflow';
import type { CampaignSnapshot, CampaignSummary, PrepareCampaignResult } from '../activities/types';
import { acts as localActivities, failureMessage, loadSeeds, oneAtATime } from './campaign-activities';
import type { CampaignInput, CampaignSettings } from '../src/config/campaign';
/**
 * The settings schema (zod and every field's rules), loaded only when a
 * campaign resolves its input. Each workflow keeps module state of its own
 * in the worker's reused V8 context, so a module every workflow imports is
 * evaluated once per cached workflow: with the schema imported at the top,
 * each host workflow built its own copy (bench (b), 100 hosts: peak worker
 * RSS 380 MB against 247 MB loaded here).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const settingsSchema = () => require('../src/config/campaign') as typeof import('../src/config/campaign');
import { CrawlCampaign, CrawlErrors, CrawlPages, CrawlState } from '../src/temporal/search-attributes';
import { CampaignBook, FINISH_WAIT_MS, type CampaignCarry, type CampaignTestLimits } from './campaign-state';
import { registerSteering } from './campaign-steering';
import { campaignNudgeSignal, campaignStatusQuery, cancelSignal, FailureType, type CampaignResult } from './messages';

export type CrawlCampaignInput = CampaignInput & {
  carry?: CampaignCarry;
  /** Test-only (CampaignTestLimits): small limits so a test continues as new while seeding, or meets timers in seconds. Carried through continue-as-new. */
  testLimits?: CampaignTestLimits;
};

type Acts = typeof localActivities;

/** The lost-page check before a drained campaign finishes (activities/requeue-lost.ts); runs of older releases go without. */
const REQUEUE_LOST_PATCH = 'requeue-lost-pages';

/**
 * Back-to-back dispatch rounds (hosts started and more ready) are parted by a short timer: the
 * workflow task then ends with the round's result, and a query or an operator's update that
 * came meanwhile is taken in the next one. Without it one workflow task ran round after round,
 * answered nothing until the SDK's heartbeat of the task (8 s), and on a loaded server timed out
 * and ran its round again. Runs of older releases go without.
 */
const ROUND_GAP_PATCH = 'round-gap';
const ROUND_GAP_MS = 100;

export async function crawlCampaign(input: CrawlCampaignInput): Promise<CampaignResult> {
  const info = workflowInfo();
  const settings = settingsOf(input, info.workflowId);
  const { campaignId } = settings;
  // Redis keys are namespaced by the first run, so re-using a campaign ID after it finished starts clean.
  const book = new CampaignBook(settings, `${campaignId}.${info.firstExecutionRunId.slice(0, 8)}`, Date.now(), input.carry, input.testLimits);
  const campaignKey = book.carry.campaignKey;
  const acts = oneAtATime(localActivities);

  setHandler(campaignNudgeSignal, () => book.onNudge());
  setHandler(campaignStatusQuery, () => book.statusView(campaignId));
  setHandler(cancelSignal, () => book.requestStop('cancelled'));
  // ---- Operator steering: validated updates; a rejected one changes nothing. ----
  registerSteering(book, acts, campaignId, campaignKey);

  const { showCard, publishTotals, dispatch, guarded } = rounds(book, acts, info, campaignId);
  try {
    if (!input.carry) {
      publishStart(settings);
      const prep = await acts.prepareCampaign({ settings, campaignKey });
      assertSomeSeed(prep, settings);
    }
    book.status = 'running';
    showCard();
    const seeding = readSeedList(book);
    for (;;) {
      await condition(() => book.due || book.shouldContinueAsNew(workflowInfo()), book.tickMs);
      if (book.stopReason !== null) break;
      if (book.shouldContinueAsNew(workflowInfo())) {
        // The batch being read (if any) finishes first, so its cursor is the one carried.
        book.continuing = true;
        await seeding;
        await condition(allHandlersFinished);
        // A cancel taken meanwhile (the batch may take minutes) is not in the carry: it ends this run instead.
        if (book.stopReason !== null) break;
        // Only the settings and small counters travel: seeds are in Redis already.
        return await continueAsNew<typeof crawlCampaign>({ ...input, seeds: settings.seeds.slice(0, 1), carry: book.carry });
      }
      book.nudged = false;
      const snap = await guarded(dispatch, () => book.stopReason !== null);
      if (!snap) continue;
      const next = book.onSnapshot(snap, Date.now());
      publishTotals();
      if (next === 'done') {
        // An output in a bucket: pages committed by a worker whose disk was lost before their
        // lines went up are put back and crawled before the campaign finishes.
        if (book.lostCheckDue && patched(REQUEUE_LOST_PATCH)) {
          let requeued = 0;
          try {
            requeued = (await acts.requeueLostPages({ campaignKey })).requeued;
          } catch (err) {
            if (isCancellation(err)) throw err;
            // Not fatal: the summary's seal counts those pages as missing, as before.
            log.warn('the lost-page check failed; the campaign finishes without it', { campaignId, error: failureMessage(err) });
          }
          book.lostChecked(requeued);
          if (requeued > 0) continue;
        }
        break;
      }
      if (next === 'again' && snap.dispatched > 0 && patched(ROUND_GAP_PATCH)) await sleep(ROUND_GAP_MS);
    }
    await seeding;
  } catch (err) {
    if (!isCancellation(err)) throw err;
    book.requestStop('cancelled');
  }

  book.finishing = true;
  book.status = book.finalStatus();
  const result = await CancellationScope.nonCancellable(finisher(book, acts, info, campaignId, showCard, guarded));
  await condition(allHandlersFinished);
  log.info('campaign finished', { campaignId, status: result.status, pages: result.pages });
  return result;
}

/** The campaign's settings, or a non-retryable failure naming every problem of the input. */
function settingsOf(input: CrawlCampaignInput, workflowId: string): CampaignSettings {
  try {
    return settingsSchema().resolveCampaignSettings(input, workflowId);
  } catch (err) {
    if (err instanceof settingsSchema().CampaignInputError) throw ApplicationFailure.nonRetryable(err.message, FailureType.invalidCampaignInput, err.problems);
    throw err;
  }
}

/** A new campaign's search attributes and memo (a continued run has them already). */
function publishStart(settings: CampaignSettings): void {
  upsertSearchAttributes([
    { key: CrawlCampaign, value: settings.campaignId },
    { key: CrawlState, value: 'running' },
  ]);
  upsertMemo({
    seeds: settings.seeds.slice(0, 20),
    seedsFile: settings.seedsFile,
    scope: settings.scope,
    budgets: settings.budgets,
    politeness: settings.politeness,
    output: settings.output,
  });
}

function assertSomeSeed(prep: PrepareCampaignResult, settings: CampaignSettings): void {
  if (prep.hosts === 0 && !settings.seedsFile) {
    throw ApplicationFailure.nonRetryable(`no usable seed: ${prep.rejectedSeeds.map((r) => `${r.seed}: ${r.reason}`).join('; ')}`, FailureType.invalidCampaignInput);
  }
}

/**
 * A seed list is read into the frontiers one bounded batch (one
 * activity) at a time while the first hosts already crawl; the cursor is
 * in the carry, so the run may continue as new between two batches and
 * the next run reads on. Until it is read the campaign is not done.
 */
async function readSeedList(book: CampaignBook): Promise<void> {
  try {
    while (book.seedCallDue) book.seeded(await loadSeeds(book.seedInput()));
  } catch (err) {
    if (isCancellation(err)) throw err;
    // An unreadable list (gone, not text, changed under us): the seeds read so far are crawled, and the summary says why the rest are not.
    book.seedListFailed(failureMessage(err));
  }
}

/** The dispatch round and what it shows, shared by the main loop and the finish. */
function rounds(book: CampaignBook, acts: Acts, info: WorkflowInfo, campaignId: string) {
  // The Web UI's status card: no history event, read with the workflow's metadata.
  const showCard = (summary?: CampaignSummary) => setCurrentDetails(book.card(campaignId, summary));
  const publishTotals = () => {
    showCard();
    const t = book.carry.snapshot?.totals;
    if (t)
      upsertSearchAttributes([
        { key: CrawlPages, value: t.fetched },
        { key: CrawlErrors, value: t.failed },
      ]);
  };
  const dispatch = async () => {
    const now = Date.now();
    const watch = book.watchDue(now);
    const snap = await acts.dispatchHosts(book.dispatchInput(info, watch));
    if (watch) book.watchedAt(now);
    return snap;
  };
  // A round failed past its retries (Redis or Temporal down for minutes): shown, retried after a pause (null).
  const guarded = async (round: () => Promise<CampaignSnapshot>, until: () => boolean): Promise<CampaignSnapshot | null> => {
    try {
      return await round();
    } catch (err) {
      if (isCancellation(err)) throw err;
      const waitMs = book.onDispatchFailed(failureMessage(err), Date.now());
      log.warn('dispatch round failed; trying again', { campaignId, ...book.dispatchError });
      showCard();
      return condition(until, waitMs).then(() => null);
    }
  };
  return { showCard, publishTotals, dispatch, guarded };
}

type Rounds = ReturnType<typeof rounds>;

/** The campaign's last steps, run even when it was cancelled (in a non-cancellable scope). */
function finisher(book: CampaignBook, acts: Acts, info: WorkflowInfo, campaignId: string, showCard: Rounds['showCard'], guarded: Rounds['guarded']) {
  const campaignKey = book.carry.campaignKey;
  return async () => {
    await acts.finishCampaign({ campaignKey, campaignId, reason: book.stopReason ?? 'drained' });
    // Wait (bounded) for every host to end its session and give its slot
    // up, so the summary is exact and no host workflow is left waiting for
    // workers that are about to stop. Every round runs the watch, which
    // gives up hosts whose workflow ended without releasing.
    const finishRound = () => acts.dispatchHosts(book.dispatchInput(info, true));
    const deadline = Date.now() + FINISH_WAIT_MS;
    for (let round = 0; Date.now() < deadline; round++) {
      book.nudged = false;
      const snap = await guarded(finishRound, () => false);
      if (!snap) continue;
      if (snap.active === 0) break;
      await condition(() => book.nudged, round === 0 ? '5 seconds' : '15 seconds');
    }
    // A host workflow terminated just before a cancel may not be in
    // visibility yet: look once more, so the summary names it.
    if (book.stopReason === 'cancelled') {
      await sleep('2 seconds');
      await finishRound().catch(() => undefined);
    }
    const summary = await acts.summarizeCampaign({ campaignKey, problems: 100 });
    showCard(summary);
    upsertSearchAttributes([
      { key: CrawlState, value: book.status },
      { key: CrawlPages, value: summary.totals.fetched },
      { key: CrawlErrors, value: summary.totals.failed },
    ]);
    return book.result(campaignId, summary, Date.now());
  };
}
