// One long-running workflow per politeness key (host): runs host sessions
// (one activity crawls a run of the host's URLs) and sleeps durably between
// them for every wait at or above the durable-sleep threshold. A thin shell:
// the rules live in DomainBook (workflows/domain-state.ts).
//
// Two workflow types run this code. `hostCrawl`, which the dispatch starts,
// runs the host's first session as a local activity inside its first
// workflow task and upserts CrawlState only when it differs from what the
// run started with: a host done in one session costs six history events
// (started, one workflow task, the session's marker, completed). `domainCrawl`
// is the type of releases before, kept command for command so that their
// runs still open replay (docs/operations.md, "Upgrading workflow code"). A
// new type rather than patched(): the SDK records a patch as a marker and a
// TemporalChangeVersion upsert in every run, two events of those six, and an
// old worker fails a task of a type it does not know (so it never writes an
// old-shaped history under the new type), where it would run a patch's old
// branch.
import {
  allHandlersFinished,
  CancellationScope,
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
import type { CrawlerActivities, SessionResult } from '../activities/types';
import { ACTIVITY_RETRY, SESSION_HEARTBEAT } from '../src/config/retry-policy';
import { CrawlDueDay, CrawlErrors, CrawlNextDue, CrawlPages, CrawlState } from '../src/temporal/search-attributes';
import { DomainBook, PAUSE_RECHECK_MS, type DomainCrawlInput, type DomainCrawlResult } from './domain-state';
import { domainStatusQuery, FailureType, finishSignal, sessionLostSignal, steerSignal, wakeSignal } from './messages';
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
  heartbeatTimeout: SESSION_HEARTBEAT.timeoutMs,
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
// (Runs of the legacy type only.)
const { crawlSession: firstCrawlSession } = proxyActivities<CrawlerActivities>({ ...sessionOptions, allowEagerDispatch: true });
// hostCrawl: the first session runs on the worker that runs the workflow's
// first task (the one that started it eagerly, most often), inside that task:
// no activity task, one marker. It ends at session.firstLocalMs (≤ 8 s) after
// its page in flight; a worker that dies in it lets the task time out (10 s)
// and the next attempt runs it again elsewhere, taking the host over. Its
// attempt is bounded like a session's: one slow page at most (fetch and
// render timeouts), retried as a session is.
const { crawlSession: localFirstSession } = proxyLocalActivities<CrawlerActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { ...ACTIVITY_RETRY.session, nonRetryableErrorTypes: [FailureType.invalidCampaignInput] },
});

/** The host's workflow, as the dispatch starts it. */
export async function hostCrawl(input: DomainCrawlInput): Promise<DomainCrawlResult> {
  return crawlHost(input, false);
}

/** The host's workflow of releases before hostCrawl: runs still open replay on it. */
export async function domainCrawl(input: DomainCrawlInput): Promise<DomainCrawlResult> {
  return crawlHost(input, true);
}

async function crawlHost(input: DomainCrawlInput, legacy: boolean): Promise<DomainCrawlResult> {
  const book = new DomainBook(input, !legacy);
  const lost = listen(book);

  /** `state`: false when closing (a closed host's state is its ExecutionStatus: only the legacy type writes 'done'). */
  const publish = (sleepMs = 0, state = true) => {
    // The Web UI's status card: no history event, read with the workflow's metadata.
    setCurrentDetails(hostCard(book.status()));
    const shown = state ? book.takeStateChange(sleepMs) : null;
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
      const r = await runSession(book, legacy, lost);
      next = r === LOST ? book.onSessionLost() : book.onSession(r);
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
  publish(0, legacy);
  // Told to finish while it slept or waited on a pause: no session gave the slot up.
  if (!book.released) {
    const { campaignKey, campaignWorkflowId, host } = input;
    await releaseHost({ campaignKey, campaignWorkflowId, host, gen: book.gen });
  }
  await condition(allHandlersFinished);
  return book.result();
}

/** The host's messages: each signal and query reaches the book, a lost session the wait of the session it names. */
function listen(book: DomainBook): LostSessions {
  setHandler(wakeSignal, ({ gen }) => book.onWake(gen));
  setHandler(finishSignal, ({ reason }) => book.onFinish(reason));
  setHandler(steerSignal, ({ configVersion }) => book.onSteer(configVersion));
  setHandler(domainStatusQuery, () => book.status());
  const lost = new LostSessions();
  setHandler(sessionLostSignal, ({ session }) => lost.onLost(session));
  return lost;
}

/** The next session: the host's first runs locally (hostCrawl) or eagerly dispatched (legacy), the others through the task queue. */
function runSession(book: DomainBook, legacy: boolean, lost: LostSessions): Promise<SessionResult | typeof LOST> {
  if (!book.firstSession) return regularSession(book, crawlSession, lost);
  return legacy ? regularSession(book, firstCrawlSession, lost) : localFirstSession(book.sessionInput(true));
}

/** What a regular session ends with when its worker was found dead. */
const LOST = Symbol('lost');

/** Resolves the wait of the regular session running now when a lost-session message names it. */
class LostSessions {
  private waiting: { session: number; resolve: () => void } | null = null;

  /** Settles when session `session` is reported lost (never, if it is not). */
  wait(session: number): Promise<void> {
    return new Promise((resolve) => (this.waiting = { session, resolve }));
  }

  done(): void {
    this.waiting = null;
  }

  onLost(session: number): void {
    if (this.waiting?.session !== session) return;
    this.waiting.resolve();
    this.waiting = null;
  }
}

/**
 * A regular session (an activity through the task queue), in its own cancellation scope: when the
 * worker running it is found dead (sessionLostSignal, from a live worker: activities/worker-liveness.ts)
 * the run cancels it and moves on at once. The cancel (TRY_CANCEL, the SDK's default) settles here at
 * once without waiting for the dead worker, and records the request, so the server never retries that
 * attempt once its heartbeat times out: it cannot come back and take the host from the next session.
 * A run that hears nothing issues the same commands as before this existed (its histories replay).
 */
async function regularSession(book: DomainBook, activity: typeof crawlSession, lost: LostSessions): Promise<SessionResult | typeof LOST> {
  const input = book.sessionInput();
  const scope = new CancellationScope();
  const session = scope.run(() => activity(input));
  if (input.session === undefined) return session;
  try {
    const first = await Promise.race([session, lost.wait(input.session).then((): typeof LOST => LOST)]);
    if (first !== LOST) return first;
  } finally {
    lost.done();
  }
  // Its rejection (cancelled) is expected and nobody else's.
  session.catch(() => undefined);
  scope.cancel();
  return LOST;
}
