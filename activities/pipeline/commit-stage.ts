// The last stage of every URL taken from a frontier, whatever became of it
// (fetched, skipped, failed, or failed for good in processing): the session
// still owns the host, the revisit plan, the index line, the frontier commit
// and the metrics, in that order, in one place. A session superseded since
// its claim (it was presumed dead and runs again elsewhere) writes none of
// them. Before the commit: a worker dying between the steps
// re-fetches the URL, which at worst writes a second index line (the seal
// keeps the committed one) and adapts an interval twice; it never loses it.
import type { RevisitSettings } from '../../src/config/campaign';
import type { EnqueueItem, FrontierEntry } from '../../src/redis/frontier';
import { planNotRequested, planRevisit, type Observation, type RevisitMeta, type RevisitPlan } from '../../src/revisit/adapt';
import type { IndexEntry, IndexOutcome } from '../../src/storage/index-writer';
import { impliedHops } from '../../src/url/hop-path';
import { OUTCOME, type Counted } from './outcome';
import { embedCounted, isPageCounted } from '../../src/stats/counters';

/** The claimed URL a commit is for: plain data. */
export interface CommitTarget {
  campaignId: string;
  host: string;
  /** The frontier member claimed. */
  member: string;
  entry: FrontierEntry;
  fp: string;
  /** This attempt's id: in its index line and, if its commit is the one that counts, stored by it (src/storage/seal.ts). */
  attemptId: string;
}

/** What became of the URL. */
export interface PageRecord {
  outcome: IndexOutcome;
  counted: Counted;
  /**
   * A request went out for the URL (for an internal error: the attempts
   * that failed on it): its next visit is planned from what it saw (`seen`,
   * or its status). Not requested: a revisit URL robots.txt or the address
   * policy kept us from stays on its schedule; a budget's skip is final.
   */
  requested: boolean;
  /** The index line's own fields (status, error, warc, …); the claim's come from the target. */
  fields?: Partial<IndexEntry>;
  /** Same-host links, enqueued atomically with the commit. */
  links?: EnqueueItem[];
  seen?: Observation;
  /** The index may be what failed (storage that cannot be written): a failed append is logged and the URL committed anyway, so its host goes on. */
  indexMayFail?: boolean;
}

export interface CommitDeps {
  index: { append(entry: IndexEntry): Promise<unknown> };
  frontier: {
    /** Throws (SessionSupersededError) when another session attempt owns the host now: nothing is written. */
    assertOwner(): Promise<void>;
    /** Throws as assertOwner does, nothing committed, when the host changed owner since. */
    commit(member: string, counted: Counted, bytes: number, links: EnqueueItem[], attempt: { fp: string; id: string }): Promise<{ remaining: number }>;
  };
  /** The host's revisit schedule and the campaign's revisit settings; null outside continuous crawling. */
  revisit: {
    settings: RevisitSettings;
    /** The URL's revisit state before this visit (the fetch's conditional headers came from it). */
    previous: RevisitMeta | null;
    set(member: string, fp: string, plan: RevisitPlan): Promise<void>;
  } | null;
  metrics?: {
    recordFetch(o: { outcome: string; status?: number | null; bytes?: number; durationMs?: number | null }): void;
    recordError(code: string): void;
    setFrontierSize(host: string, n: number): void;
  };
  log: { info(msg: string, fields?: Record<string, unknown>): void; error(msg: string, fields?: Record<string, unknown>): void };
}

export interface Committed {
  /** The outcome written: a revisit page that kept answering 404/410 is `gone`. */
  outcome: IndexOutcome;
  counted: Counted;
  status: number | null;
  bytes: number;
}

/** Outcomes whose URL was not requested but stays on a revisit schedule (robots.txt and addresses change; budgets do not come back). */
const KEPT_ON_SCHEDULE: ReadonlySet<IndexOutcome> = new Set([OUTCOME.robotsDisallowed, OUTCOME.refused, OUTCOME.robotsUnavailable]);

export async function commitPage(deps: CommitDeps, target: CommitTarget, rec: PageRecord): Promise<Committed> {
  const { fields = {}, links = [] } = rec;
  // Before the writes no script fences (the revisit plan, the index line); the commit checks again, atomically.
  await deps.frontier.assertOwner();
  // An embed counts in the embed classes whoever decided its outcome (a skip, a failure, a response).
  const counted = target.entry.kind === 'embed' && isPageCounted(rec.counted) ? embedCounted(rec.counted) : rec.counted;
  let outcome = rec.outcome;
  const status = fields.status ?? null;
  const bytes = fields.bytes ?? 0;
  let change: string | undefined;
  const rv = deps.revisit;
  if (rv && rec.requested) {
    const plan = planRevisit(rv.previous, rec.seen ?? { status }, rv.settings);
    // A page that kept answering 404/410 leaves the schedule, recorded as gone.
    if (plan.verdict === 'gone') outcome = OUTCOME.gone;
    await rv.set(target.member, target.fp, plan);
    change = plan.verdict;
  } else if (rv && KEPT_ON_SCHEDULE.has(outcome)) {
    // The due-move took it off, and the seen-set would never let it back.
    const plan = planNotRequested(rv.previous, rv.settings);
    if (plan) await rv.set(target.member, target.fp, plan);
  }
  const line = indexLine(target, outcome, change ? { ...fields, change } : fields);
  try {
    await deps.index.append(line);
  } catch (err) {
    if (!rec.indexMayFail) throw err;
    deps.log.error('index line could not be written', { url: target.entry.url, error: String(err) });
  }
  const c = await deps.frontier.commit(target.member, counted, bytes, links, { fp: target.fp, id: target.attemptId });
  deps.metrics?.setFrontierSize(target.host, c.remaining);
  deps.metrics?.recordFetch({ outcome, status, bytes, durationMs: rec.requested ? (fields.fetchMs ?? null) : null });
  // crawler_fetch_errors_total is for failures without a response; an HTTP error shows in the status label instead.
  if (fields.error && status === null) deps.metrics?.recordError(fields.error.code);
  deps.log.info('page', { outcome, status, bytes, fetchMs: fields.fetchMs, depth: target.entry.depth, error: fields.error?.code });
  return { outcome, counted, status, bytes };
}

/** The index line of a claimed URL: what every outcome has, then the outcome's own fields. */
export function indexLine(target: CommitTarget, outcome: IndexOutcome, fields: Partial<IndexEntry>): IndexEntry {
  const { entry } = target;
  return {
    url: entry.url,
    fp: target.fp,
    attemptId: target.attemptId,
    host: target.host,
    campaignId: target.campaignId,
    status: null,
    outcome,
    contentType: null,
    bytes: 0,
    contentHash: null,
    fetchedAt: new Date().toISOString(),
    depth: entry.depth,
    referrer: entry.referrer,
    hops: entry.hops ?? impliedHops(entry.depth),
    ...(entry.kind && entry.kind !== 'page' ? { kind: entry.kind } : {}),
    ...(entry.label ? { label: entry.label } : {}),
    ...fields,
  };
}
