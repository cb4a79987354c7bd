// The campaign's side of host bookkeeping, as activities: dispatching ready
// hosts into free slots (starting or waking their workflows), telling every
// host to stop, and the summary. The state itself is in Redis
// (src/redis/campaign-hosts.ts), so the campaign workflow holds none of it.
import { Context } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowStartOptions } from '@temporalio/client';
import { CampaignHosts, type CampaignControl } from '../src/redis/campaign-hosts';
import { CampaignConfigMissingError, loadCampaignSettings } from '../src/redis/campaign-store';
import { CampaignEpoch } from '../src/redis/epoch';
import { Frontier } from '../src/redis/frontier';
import { expireCampaign, retainCampaignSummary, workingStateDropped } from '../src/redis/retention';
import { removeCampaignSegments } from '../src/redis/frontier-spill';
import { outputStoreOf } from '../src/storage/frontier-segment-store';
import { countersOf, countsOf, PAGE_COUNTS } from '../src/stats/counters';
import { fairnessKeyOf } from '../src/temporal/campaign-client';
import { CrawlCampaign, CrawlHost, CrawlState } from '../src/temporal/search-attributes';
import { signalIfRunning } from '../src/temporal/signal';
import { DOMAIN_WORKFLOW } from '../src/temporal/workflow-types';
import { domainWorkflowId } from '../workflows/ids';
import { finishSignal, wakeSignal } from '../workflows/messages';
import type { DomainCrawlInput, hostCrawl } from '../workflows/domain-crawl';
import { HOST_STARTED_AS } from '../workflows/domain-state';
import { hostStaticDetails, hostStaticSummary } from '../workflows/status-card';
import type { RedisLike } from '../src/redis/scripts';
import { findClosedDomains } from './domain-watch';
import { sealCampaign } from './seal-campaign';
import { warmRobots } from './robots';
import type { WorkerRuntime } from './runtime';
import { CampaignNudger, nudgesSeen, wakeSleepingHolders } from './nudge';
import { SWEEP_EVERY_MS, sweepAfterRedisLoss } from './redis-recovery';
import type { CampaignSnapshot, CampaignSummary, DispatchInput, FinishCampaignInput, ReleaseHostInput } from './types';
import { outputSizes, tallyOutputIndex } from './output-read';
import { SEEN_SKIPPED_FIELD } from '../src/redis/seen-bloom';

/** Hosts started or woken per dispatch round: bounds the activity's time; the campaign runs another round at once if more are ready. */
export const DISPATCH_BATCH = 500;
/**
 * A round stops starting hosts this long after it began; the hosts it did not reach stay ready
 * and the campaign runs another round at once. A local activity holds the campaign's workflow
 * task open until it ends: while 10,000 host workflows start on a loaded server, one round of
 * 500 starts outlived the workflow task's 10 s timeout, was run again from the start after every
 * timeout and never ended, and steering (queued behind it) got no answer in a minute
 * (bench (m), 1M seeds over 10,000 hosts). A round that ends in seconds is recorded whatever
 * the load, and an operator's update waits at most that long for it.
 */
export const DISPATCH_ROUND_MS = 2_000;
/** Workflow starts and signals in flight at once. */
const CONCURRENCY = 50;
/** Problems listed in the summary (all of them are counted). */
const SUMMARY_PROBLEMS = 100;

/**
 * Runs `fn` over `items`, CONCURRENCY at a time: a new call starts as soon as one ends (no wave
 * waits for its slowest call); the first failure stops it, and no call starts at or after
 * `deadline` (epoch ms), leaving the rest to the caller's next round.
 */
export async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>, deadline = Infinity): Promise<void> {
  let next = 0;
  let done = 0;
  let failed = false;
  const lane = async (): Promise<void> => {
    // After one call fails the round fails (and is retried): the other lanes take nothing more.
    while (next < items.length && !failed && Date.now() < deadline) {
      try {
        await fn(items[next++]);
      } catch (err) {
        failed = true;
        throw err;
      }
      if (++done % CONCURRENCY === 0) heartbeat();
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, lane));
  heartbeat();
}

/** These run as local activities (the campaign's bookkeeping), which have no heartbeat of their own; as regular ones they heartbeat. */
function heartbeat(): void {
  const ctx = Context.current();
  if (!ctx.info.isLocal) ctx.heartbeat();
}

export function dispatchHostsActivity(rt: WorkerRuntime) {
  return async function dispatchHosts(input: DispatchInput): Promise<CampaignSnapshot> {
    const deadline = Date.now() + DISPATCH_ROUND_MS;
    rt.localShare.touch(input.campaignKey);
    const hosts = new CampaignHosts(rt.deps.redis, input.campaignKey);
    // Before anything is read: news written from here on is nudged again (activities/nudge.ts).
    await nudgesSeen(rt.deps.redis, input.campaignKey);
    const givenUp = input.watch ? await giveUpClosedHosts(rt, hosts, input) : 0;
    const control = await hosts.control();
    await afterRedisRestart(rt, hosts, input.campaignId, !control.stop && !control.paused);
    const round = { dispatched: 0, deadline };
    if (!control.stop && !control.paused) await hosts.exclusiveDispatch(() => dispatchReady(rt, hosts, input, control, round));
    const [c, totals, problems] = await Promise.all([hosts.counts(), hosts.totals(), hosts.problems(0)]);
    const { dispatched } = round;
    return { dispatched, active: c.active, ready: c.ready, paused: control.paused, stop: control.stop, configVersion: control.version, totals, problems: problems.count, givenUp };
  };
}

/**
 * Host workflows terminated by an operator, failed or timed out never release their slot: their
 * hosts are given up, so they neither hold a slot nor keep the campaign from completing. Returns
 * how many were.
 */
async function giveUpClosedHosts(rt: WorkerRuntime, hosts: CampaignHosts, input: DispatchInput): Promise<number> {
  let givenUp = 0;
  for (const { host, status } of await findClosedDomains(rt, { campaignId: input.campaignId, since: input.watchSince })) {
    // Given up whether it still held a slot or not (its session may have given it up on
    // the way out): its remaining URLs are not crawled, and the summary says so.
    const problem = `domain workflow ${domainWorkflowId(input.campaignId, host)} ended ${status} without reporting: ${host} is not crawled further`;
    if (await hosts.giveUp(host, problem)) {
      givenUp++;
      const r = await hosts.get(host);
      if (r) await hosts.record(host, { ...r, state: 'given-up', updatedAt: new Date().toISOString() });
    }
  }
  return givenUp;
}

/**
 * One dispatch round under the campaign's dispatch lock: ready hosts into the free slots, their
 * workflows started or woken (`round.dispatched` counts them) until `round.deadline`. A host
 * not reached stays ready (readyBatch reads, `dispatched` takes a host out); the generation
 * numbers taken for it go unused, which only leaves a gap in them.
 */
async function dispatchReady(
  rt: WorkerRuntime,
  hosts: CampaignHosts,
  input: DispatchInput,
  control: CampaignControl,
  round: { dispatched: number; deadline: number },
): Promise<void> {
  // The cap in force (setConcurrency changes it here), for sessions deciding whether to park.
  if (control.maxActiveHosts !== input.maxActiveHosts) await hosts.setControl({ maxActiveHosts: input.maxActiveHosts });
  // Revisit hosts that gave their slot up (parked) and are due now queue for one again.
  await hosts.unparkDue();
  const c = await hosts.counts();
  // A host paused on its own gives its slot up (resuming it may briefly exceed the cap).
  const free = input.maxActiveHosts === null ? DISPATCH_BATCH : Math.min(DISPATCH_BATCH, input.maxActiveHosts - Math.max(0, c.active - c.pausedActive));
  const batch = await hosts.readyBatch(free);
  // No slot free while hosts wait: revisit hosts asleep on theirs are woken, and give them up (park) when nothing is due.
  if (free <= 0 && c.ready > 0) await wakeSleepingForSlots(rt, hosts, input, c.ready);
  if (batch.length === 0) return;
  // Settings for the robots.txt warm-ups (cached per worker); a campaign whose settings cannot be read just skips them.
  const campaign = await rt.campaign(input.campaignKey, control.version).catch(() => null);
  const eager = startsEagerly(rt.deps.eagerStart === true, campaign?.settings.render ?? null);
  const names = batch.map((b) => b.host);
  // Read once for the batch, not per host: only this activity's watch gives hosts up (before
  // the batch is read), and a host given up leaves the ready set, so one seen here stays so.
  const [last, known, givenUp] = await Promise.all([hosts.nextGens(batch.length), hosts.haveRecords(names), hosts.givenUpOf(names)]);
  await inBatches(
    batch.map((b, i) => ({ ...b, gen: last - batch.length + 1 + i, known: known[i], givenUp: givenUp[i] })).filter((b) => !b.givenUp),
    async ({ host, seq, gen, known }) => {
      const { firstTaskHere } = await startHostWorkflow(rt.deps.temporal, hostStart(input, host, gen, control.version), gen, !known && eager);
      await hosts.dispatched(host, seq, gen);
      round.dispatched++;
      // A host without a record has had no session: its warm-up skips the reads that could only find nothing.
      // Its connection is kept for the session only when that session is sure to run here.
      if (campaign) warmRobots(rt, campaign, host, !known, firstTaskHere);
    },
    round.deadline,
  );
}

/**
 * Whether new hosts' workflows are started eagerly on this worker (their first workflow task, and so their first session,
 * here). Not for a campaign that renders (`browser` or `auto`; `null`: its settings could not be read, as before): eager
 * starts put every first session on the dispatching worker, whose one Chromium then renders for all while the other
 * workers' sit idle (bench (v): 10 first sessions of 10 on one worker, its pages queued for a render slot); through the
 * task queue they spread over the pool. Seconds of rendering a page dwarf the poll a start through the queue costs.
 */
export function startsEagerly(workerAllows: boolean, render: string | null): boolean {
  return workerAllows && (render === null || render === 'off');
}

/** How a host's workflow is started for dispatch generation `gen`. */
function hostStart(input: DispatchInput, host: string, gen: number, configVersion: number): WorkflowStartOptions<typeof hostCrawl> {
  const args: DomainCrawlInput = { campaignId: input.campaignId, campaignKey: input.campaignKey, campaignWorkflowId: input.campaignWorkflowId, host, gen, configVersion };
  return {
    workflowId: domainWorkflowId(input.campaignId, host),
    taskQueue: input.taskQueue,
    args: [args] as [DomainCrawlInput],
    typedSearchAttributes: [
      { key: CrawlCampaign, value: input.campaignId },
      { key: CrawlHost, value: host },
      // What its first session shows: a host done in that session never upserts it (DomainBook).
      { key: CrawlState, value: HOST_STARTED_AS },
    ],
    // No memo: it said what the search attributes say, and a payload stored per host (history,
    // mutable state, visibility) that nothing read.
    staticSummary: hostStaticSummary(host, input.campaignId),
    staticDetails: hostStaticDetails(host, input.campaignId),
    // Host workflows started here inherit nothing from the campaign: its key, so its sessions share the workers fairly.
    priority: { fairnessKey: fairnessKeyOf(input.campaignId) },
  };
}

/**
 * Starts a host's workflow, or wakes the one that runs, and says whether its
 * first workflow task came to this worker with the start.
 *
 * `eager` (a host never crawled yet most likely has no workflow): start it
 * eagerly, its first workflow task handed straight to this worker in the
 * answer instead of through the task queue (hundreds of hosts starting at
 * once are where a loaded server shows). Otherwise, or when its workflow
 * exists, one signal-with-start starts it or wakes it: no race between "it
 * is closing" and "it gets new URLs" to handle here.
 *
 * `firstTaskHere` is the answer's, not "the start succeeded": the server
 * hands the first task over only while this worker has a workflow-task slot
 * free; otherwise the task goes through the queue, maybe to another worker,
 * and a robots.txt warm-up here must not keep the host's connection for a
 * session that runs elsewhere (issue 27: 533 idle pools on the dispatching
 * worker in bench (k)).
 */
export async function startHostWorkflow(client: Client, start: WorkflowStartOptions<typeof hostCrawl>, gen: number, eager: boolean): Promise<{ firstTaskHere: boolean }> {
  if (eager) {
    try {
      const handle = await client.workflow.start(DOMAIN_WORKFLOW, { ...start, requestEagerStart: true, workflowIdConflictPolicy: 'FAIL' });
      return { firstTaskHere: handle.eagerlyStarted };
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
  await client.workflow.signalWithStart(DOMAIN_WORKFLOW, { ...start, signal: wakeSignal, signalArgs: [{ gen }] });
  return { firstTaskHere: false };
}

/**
 * Hosts wait for a slot and none is free: up to `wanted` revisit hosts that
 * sleep on theirs until a revisit is due are woken. Their session finds
 * nothing due, sees hosts waiting, and parks (gives the slot up); without
 * this a host could wait the sleeper's whole revisit interval, days.
 * Revisit campaigns only; the scan is over the slots, which maxActiveHosts bounds.
 */
async function wakeSleepingForSlots(rt: WorkerRuntime, hosts: CampaignHosts, input: DispatchInput, wanted: number): Promise<void> {
  const campaign = await rt.campaign(input.campaignKey, 0).catch(() => null);
  if (!campaign?.settings.revisit?.enabled) return;
  const sleeping: string[] = [];
  for await (const page of hosts.activeHosts()) {
    const records = await hosts.getMany(page.map(({ host }) => host));
    page.forEach(({ host }, i) => records[i]?.state === 'sleeping' && sleeping.push(host));
  }
  // All candidates, at most `wanted` woken: one asleep on a Crawl-delay, or woken already, sends nothing.
  await wakeSleepingHolders(rt, input.campaignKey, input.campaignId, sleeping, wanted);
}

/**
 * Whether Redis restarted under the campaign (src/redis/epoch.ts), and if it
 * ever did, the sweep for hosts a lost write left behind
 * (activities/redis-recovery.ts): when the restart is first seen, at most
 * every SWEEP_EVERY_MS after that, and whenever no host holds a slot or
 * waits for one (the campaign would complete on this snapshot). `wake` false
 * (stopping, paused) only releases slots of completed workflows.
 */
async function afterRedisRestart(rt: WorkerRuntime, hosts: CampaignHosts, campaignId: string, wake: boolean): Promise<void> {
  const epoch = new CampaignEpoch(rt.deps.redis, hosts.campaignKey);
  const seen = await epoch.check();
  if (seen.changed) {
    await hosts.addProblem(
      `Redis restarted during the campaign (restart ${seen.restarts}): with appendfsync everysec its last second of writes may be lost; stranded hosts are looked for again and the summary is recounted from the index`,
    );
  }
  if (seen.restarts === 0) return;
  const now = Date.now();
  const c = await hosts.counts();
  if (!seen.changed && c.active + c.ready > 0 && now - (await epoch.lastSweep()) < SWEEP_EVERY_MS) return;
  const r = await sweepAfterRedisLoss(rt, hosts, campaignId, wake);
  await epoch.swept(now);
  if (r.released.length + r.woken.length > 0) {
    rt.log.warn('after a Redis restart: stranded hosts found', { campaignId, released: r.released.slice(0, 20), woken: r.woken.slice(0, 20) });
  }
}

export function finishCampaignActivity(rt: WorkerRuntime) {
  return async function finishCampaign(input: FinishCampaignInput): Promise<{ signalled: number }> {
    const hosts = new CampaignHosts(rt.deps.redis, input.campaignKey);
    // Sessions see the stop between pages; sleeping host workflows need the signal.
    const stop = await hosts.requestStop(input.reason);
    let signalled = 0;
    for await (const page of hosts.activeHosts()) {
      await inBatches(page, async ({ host }) => {
        if (await signalIfRunning(rt.deps.temporal, domainWorkflowId(input.campaignId, host), finishSignal, { reason: stop ?? input.reason })) signalled++;
      });
    }
    // Parked revisit hosts have no workflow to tell: their records stop saying they sleep.
    for await (const page of hosts.parkedHosts()) {
      const records = await hosts.getMany(page);
      for (const [i, host] of page.entries()) {
        const r = records[i];
        if (r?.state === 'sleeping') await hosts.record(host, { ...r, state: 'done', nextWakeAt: null, updatedAt: new Date().toISOString() });
      }
    }
    return { signalled };
  };
}

/**
 * Brings every host's record up to its counters (a page of hosts at a time):
 * the records are written at the end of every session, and a host whose
 * workflow was given up mid-session may lag them.
 */
export async function reconcileHostRecords(redis: RedisLike, campaignKey: string, onPage: () => void = () => undefined): Promise<void> {
  const hosts = new CampaignHosts(redis, campaignKey);
  // Once the campaign's end deleted its frontiers (retention.keep summary), a record's frontier count is the last word on what was left.
  const frontierGone = await workingStateDropped(redis, campaignKey);
  for await (const page of hosts.records()) {
    await Promise.all(
      page.map(async ({ host, ...r }) => {
        const f = new Frontier(redis, campaignKey, host);
        const [st, size] = await Promise.all([f.stats(), frontierGone ? (r.frontier ?? 0) : f.size()]);
        const counts = { ...countersOf(st), frontier: size, ...(st[SEEN_SKIPPED_FIELD] ? { seenSkipped: st[SEEN_SKIPPED_FIELD] } : {}) };
        if ((Object.keys(counts) as (keyof typeof counts)[]).some((k) => counts[k] !== (r[k] ?? 0))) await hosts.record(host, { ...r, ...counts });
      }),
    );
    onPage();
  }
}

/** Attempts of the summary whose failed seal is retried; after them the summary names the failure and the campaign completes unsealed. */
const SEAL_ATTEMPTS = 3;
/**
 * Largest raw index the summary seals itself (about 3.7 million URLs): 1
 * million URLs (540 MiB) sealed in 23 s on the 2-core test machine, so this
 * fits the summary's 5-minute local activity with room for slower disks.
 * Beyond it the summary says to run `crawler seal`.
 */
export const SEAL_IN_SUMMARY_MAX_BYTES = 2 * 1024 ** 3;
/**
 * Largest WARC total the summary indexes for replay itself (reading and
 * gunzipping every record): beyond it the summary says to run `crawler cdxj`.
 */
export const CDXJ_IN_SUMMARY_MAX_BYTES = 8 * 1024 ** 3;
/**
 * The same for WARCs in a bucket, which are downloaded into the worker's
 * cache before they are indexed (at 100 MB/s, 2 GiB take about 20 s more).
 */
export const CDXJ_FROM_BUCKET_IN_SUMMARY_MAX_BYTES = 2 * 1024 ** 3;
/** Other campaigns' lines in a shared folder's index.cdxj are sorted in again: past this size, `crawler cdxj` does it. */
const CDXJ_KEPT_IN_SUMMARY_MAX_BYTES = 1024 ** 3;
/** The summary runs within a local activity's 5 minutes: it waits this long for another writer of the folder's index, then leaves it. */
const SUMMARY_CDXJ_LOCK_WAIT_MS = 60_000;
/** A campaign left unsealed keeps its Redis keys at least this long: `crawler seal` needs them. */
const UNSEALED_RETENTION_MS = 7 * 24 * 3_600_000;

export function summarizeCampaignActivity(rt: WorkerRuntime) {
  return async function summarizeCampaign(input: { campaignKey: string; problems: number }): Promise<CampaignSummary> {
    const redis = rt.deps.redis;
    const hosts = new CampaignHosts(redis, input.campaignKey);
    await reconcileHostRecords(redis, input.campaignKey, heartbeat);
    const { sealed, sealError } = await sealForSummary(rt, hosts, input.campaignKey);
    const [totals, c, problems] = await Promise.all([hosts.totals(), hosts.counts(), hosts.problems(Math.min(input.problems, SUMMARY_PROBLEMS) || SUMMARY_PROBLEMS)]);
    if (sealError) {
      problems.list.push(sealError);
      problems.count++;
    }
    // After a Redis restart the counters may lack their last commits while
    // the index, written before each commit, has the pages: the index counts.
    // Without a restart the counters are exact and the index is not read.
    let counted = totals;
    const { restarts } = await new CampaignEpoch(redis, input.campaignKey).check();
    if (restarts > 0) {
      const { settings } = await rt.campaign(input.campaignKey, 0);
      const t = await tallyOutputIndex(settings, rt.deps.outputCacheRoot, heartbeat);
      rt.log.warn('summary recounted from the index after a Redis restart', {
        campaignKey: input.campaignKey,
        redis: countsOf(PAGE_COUNTS, totals),
        index: countsOf(PAGE_COUNTS, t),
      });
      counted = { ...totals, ...countersOf(t) };
    }
    // The summary is the campaign's last look at its keys: from here they
    // only cost memory. What nothing reads after the end goes now (keep
    // summary), the rest gets the campaign's retention. A retried summary
    // finds what it reads still there (the retention is at least a minute,
    // and reconcileHostRecords knows the frontiers are gone).
    const stored = await loadCampaignSettings(redis, input.campaignKey).then(
      ({ settings }) => settings,
      // Settings gone (Redis wiped or purged): nothing is left to expire.
      (err: unknown) => {
        if (err instanceof CampaignConfigMissingError) return null;
        throw err;
      },
    );
    const retention = stored?.retention ?? null;
    // Its frontier segments (spilled tails, shared seed segments) are read by nothing once it has
    // ended: they go now, whatever its retention, so nothing is left under the output's `frontier/`.
    // A store that is down leaves them (the summary is not failed for it): `crawler purge` removes them later.
    if (stored)
      await removeCampaignSegments(outputStoreOf(stored.output, rt.deps.spool ?? null), input.campaignKey, heartbeat).catch((err: unknown) =>
        rt.log.warn('summary: cannot remove the frontier segments from the output store; `crawler purge` removes them', { campaignKey: input.campaignKey, err }),
      );
    // Unsealed, the campaign's keys must outlive the operator's `crawler seal`.
    const ttl = retention?.redisMs == null ? null : sealed ? retention.redisMs : Math.max(retention.redisMs, UNSEALED_RETENTION_MS);
    if (retention?.keep === 'summary') await retainCampaignSummary(redis, input.campaignKey, ttl, heartbeat);
    else if (ttl !== null) await expireCampaign(redis, input.campaignKey, ttl, heartbeat);
    return { totals: counted, active: c.active, problems, sealed };
  };
}

/**
 * The final index: one line per URL, the committed one (src/storage/seal.ts).
 * A seal that keeps failing (a full disk) does not fail the campaign: the
 * summary says so (`sealError`), and `crawler seal` can be run once it is fixed.
 */
async function sealForSummary(rt: WorkerRuntime, hosts: CampaignHosts, campaignKey: string): Promise<{ sealed: CampaignSummary['sealed']; sealError: string | null }> {
  const redis = rt.deps.redis;
  let sealed: CampaignSummary['sealed'] = null;
  let sealError: string | null = null;
  try {
    const control = await hosts.control();
    const { settings } = await loadCampaignSettings(redis, campaignKey);
    const sizes = await outputSizes(settings);
    if (sizes.rawIndexBytes > SEAL_IN_SUMMARY_MAX_BYTES) {
      // This runs as a local activity (5 min a try): a seal of this size may not fit, and must not fail the campaign.
      sealError = `the raw index is ${Math.round(sizes.rawIndexBytes / 2 ** 20)} MiB, too much to seal within the campaign's summary: run \`crawler seal ${settings.campaignId}\``;
    } else {
      // The folder's index.cdxj is rewritten with the other campaigns' lines (a shared folder): those count too.
      // WARCs in a bucket are downloaded first, so fewer of them fit the summary's time.
      const warcLimit = sizes.inBucket ? CDXJ_FROM_BUCKET_IN_SUMMARY_MAX_BYTES : CDXJ_IN_SUMMARY_MAX_BYTES;
      const cdxj = sizes.warcBytes <= warcLimit && sizes.keptCdxjBytes <= CDXJ_KEPT_IN_SUMMARY_MAX_BYTES;
      const r = await sealCampaign(redis, campaignKey, {
        info: { stop: control.stop, by: 'campaign end' },
        onProgress: heartbeat,
        cdxj,
        cdxjLockWaitMs: SUMMARY_CDXJ_LOCK_WAIT_MS,
        cacheRoot: rt.deps.outputCacheRoot,
      });
      sealed = { file: r.file, lines: r.lines, dropped: r.dropped, missing: r.missing, revisits: r.revisits, rendered: r.rendered };
      // `crawler cdxj` looks in crawl-output/ unless told: a bucket is named.
      const cdxjCommand = `crawler cdxj ${settings.campaignId}${sizes.inBucket ? ` --out ${settings.output.dir}` : ''}`;
      if (!cdxj) sealError = `the WARC files or the folder's index.cdxj are too large to index for replay within the campaign's summary: run \`${cdxjCommand}\``;
      else if (r.cdxjSkipped) sealError = `the replay index was not written (${r.cdxjSkipped}): run \`${cdxjCommand}\``;
      // Workers that still held files of the bucket when the seal ran: their pages show as missing until it is sealed again.
      if (r.flush && !r.flush.complete) {
        const late = `${r.flush.waitingOn.length} worker(s) had not uploaded their last files when the index was sealed: run \`crawler seal ${settings.campaignId}\` once they have`;
        sealError = sealError ? `${sealError}; ${late}` : late;
      }
    }
  } catch (err) {
    if (Context.current().info.attempt < SEAL_ATTEMPTS) throw err;
    sealError = `the sealed index could not be written (${err instanceof Error ? err.message : String(err)}); run \`crawler seal\` once fixed`;
    rt.log.error('seal failed', { campaignKey, error: String(err) });
  }
  return { sealed, sealError };
}

/**
 * A host workflow that ends without a session that gave its slot up (told to
 * finish while it slept or waited on a pause) gives it up here, so the
 * campaign does not wait for it. Only its own generation's slot.
 */
export function releaseHostActivity(rt: WorkerRuntime) {
  return async function releaseHost(input: ReleaseHostInput): Promise<{ released: boolean }> {
    const hosts = new CampaignHosts(rt.deps.redis, input.campaignKey);
    const r = await hosts.release(input.host, input.gen);
    const rec = await hosts.get(input.host);
    if (rec && rec.state !== 'done') await hosts.record(input.host, { ...rec, state: 'done', nextWakeAt: null, updatedAt: new Date().toISOString() });
    if (r.released && (r.active === 0 || r.ready > 0)) {
      const nudger = new CampaignNudger(rt, input.campaignWorkflowId, input.campaignKey);
      nudger.nudge();
      await nudger.flush();
    }
    return { released: r.released };
  };
}
