// One long-running workflow per politeness key (host): runs host sessions
// (one activity crawls a run of the host's URLs) and sleeps durably between
// them for every wait at or above the durable-sleep threshold. A thin shell:
// the rules live in DomainBook (workflows/domain-state.ts).
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import type { CrawlerActivities } from '../activities/types';
import { ACTIVITY_RETRY } from '../src/config/retry-policy';
import { CrawlDueDay, CrawlErrors, CrawlNextDue, CrawlPages, CrawlState } from '../src/temporal/search-attributes';
import { DomainBook, PAUSE_RECHECK_MS, type DomainCrawlInput, type DomainCrawlResult } from './domain-state';
import { domainStatusQuery, FailureType, finishSignal, steerSignal, wakeSignal } from './messages';
import { hostCard, sleepSummary } from './status-card';

export type { DomainCrawlInput, DomainCrawlResult } from './domain-state';

/** Giving the slot up when the workflow ends without a session that did: one short Redis call. */
const { releaseHost } = proxyLocalActivities<CrawlerActivities>({
  startToCloseTimeout: '1 minute',
  retry: ACTIVITY_RETRY.bookkeeping,
});

const sessionOptions: ActivityOptions = {
  // A session is bounded by its time cap plus one page's fetch; the heartbeat
  // timeout is what hands a killed worker's session to another worker.
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '15 seconds',
  retry: { ...ACTIVITY_RETRY.session, nonRetryableErrorTypes: [FailureType.invalidCampaignInput] },
};
// Through the task queue, never handed straight back to this worker: the
// queue's fairness (one key per campaign) decides which campaign's session
// gets a free slot, so a large campaign cannot keep every slot to itself.
const { crawlSession } = proxyActivities<CrawlerActivities>({ ...sessionOptions, allowEagerDispatch: false });
// A host's very first session is the exception: it goes straight to the
// worker that started the workflow (eagerly, from the dispatch) if that worker
// has a free slot, saving a round through the task queue while hundreds of
// hosts start at once. It is one session per host, and it takes a slot only
// when one is free, so the queue still decides every session after it.
const { crawlSession: firstCrawlSession } = proxyActivities<CrawlerActivities>({ ...sessionOptions, allowEagerDispatch: true });

export async function domainCrawl(input: DomainCrawlInput): Promise<DomainCrawlResult> {
  const book = new DomainBook(input);
  setHandler(wakeSignal, ({ gen }) => book.onWake(gen));
  setHandler(finishSignal, ({ reason }) => book.onFinish(reason));
  setHandler(steerSignal, ({ configVersion }) => book.onSteer(configVersion));
  setHandler(domainStatusQuery, () => book.status());

  const publish = (sleepMs = 0) => {
    // The Web UI's status card: no history event, read with the workflow's metadata.
    setCurrentDetails(hostCard(book.status()));
    const shown = book.takeStateChange(sleepMs);
    const revisit = book.takeRevisitChange();
    if (shown === null && revisit === null) return;
    upsertSearchAttributes([
      ...(shown === null
        ? []
        : [
            { key: CrawlState, value: shown },
            { key: CrawlPages, value: book.stats.fetched },
            { key: CrawlErrors, value: book.stats.failed },
          ]),
      // A revisit host's queue: filter on what is due soon (`CrawlNextDue < '…'`) or on how much (CrawlDueDay).
      ...(revisit === null
        ? []
        : [
            { key: CrawlNextDue, value: revisit.nextDueAt === null ? null : new Date(revisit.nextDueAt) },
            { key: CrawlDueDay, value: revisit.dueDay },
          ]),
    ]);
  };
  /**
   * A durable wait that a finish (and `also`) cuts short; its timer is named
   * after its reason in the Web UI. `sleptAsLong`: report the time actually
   * slept when cut short (a woken revisit sleep), not the planned one.
   */
  const waitFor = async (ms: number, summary: string, also: () => boolean = () => false, sleptAsLong = false) => {
    const from = Date.now();
    book.sleeping(from, ms);
    publish(ms);
    const early = await condition(() => book.finish !== null || also(), ms, { summary });
    book.slept(early && sleptAsLong ? Math.min(ms, Date.now() - from) : ms);
  };

  while (book.finish === null) {
    if (book.shouldContinueAsNew(workflowInfo())) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof domainCrawl>(book.carry());
    }
    if (book.waitingForResume) {
      publish();
      await condition(() => !book.waitingForResume || book.finish !== null, PAUSE_RECHECK_MS, { summary: 'paused by an operator — waiting for resume' });
      book.resumed();
      continue;
    }
    let next;
    try {
      next = book.onSession(await (book.firstSession ? firstCrawlSession : crawlSession)(book.sessionInput()));
    } catch (err) {
      if (isCancellation(err)) throw err;
      next = book.onSessionFailed(err instanceof Error ? err.message : String(err));
    }
    if (next.kind === 'done') break;
    if (next.kind === 'sleep') {
      // A revisit host's sleep for its next due URL ends on a wake (new URLs for it).
      const wakeable = next.wakeable === true;
      await waitFor(next.ms, sleepSummary(book.delayReason, next.ms), () => wakeable && book.wakePending, wakeable);
    } else if (next.kind === 'await-wake') await waitFor(next.ms, 'waiting for the wake of a newer dispatch', () => book.wakePending);
    else publish();
  }
  book.state = 'done';
  publish();
  // Told to finish while it slept or waited on a pause: no session gave the slot up.
  if (!book.released) {
    const { campaignKey, campaignWorkflowId, host } = input;
    await releaseHost({ campaignKey, campaignWorkflowId, host, gen: book.gen });
  }
  await condition(allHandlersFinished);
  return book.result();
}
