import type { Command } from 'commander';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowClient, type WorkflowHandle } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal as proto } from '@temporalio/proto';
import type { UpdateDefinition } from '@temporalio/common';
import { clientEndpoints, clientRedisUrl } from '../../stack/stack';
import { connectClient, TemporalUnavailableError } from '../../temporal/connect';
import { SteeringError, validateHostRequest } from '../../config/steering';
import {
  campaignStatusQuery,
  cancelSignal,
  FailureType,
  pauseCampaignUpdate,
  pauseHostUpdate,
  resumeCampaignUpdate,
  resumeHostUpdate,
  type CampaignStatus,
  type HostStatus,
} from '../../../workflows/messages';
import { CampaignHosts } from '../../redis/campaign-hosts';
import { embedCounts } from '../../stats/counters';
import { revisitTotals, type RevisitTotals } from '../../redis/revisit';
import { createRedis } from '../../redis/client';
import { processSettings } from '../../config/env';
import { UsageError } from '../usage-error';
import { seenFilterLine } from '../../redis/seen-bloom';

export async function connectCli() {
  const { temporalAddress } = clientEndpoints();
  return connectClient(temporalAddress).catch((err: Error) => {
    // Only a server that did not answer is a reason to look at the stack
    // (an unreadable certificate is not); the message names the address.
    if (!(err instanceof TemporalUnavailableError)) throw err;
    throw new UsageError(`${err.message}; is the stack up? (npm run crawler -- stack up)`);
  });
}

async function handleFor(campaignId: string) {
  const client = await connectCli();
  return { client, handle: client.workflow.getHandle(campaignId) };
}

export async function withCampaign<T>(campaignId: string, fn: (h: Awaited<ReturnType<typeof handleFor>>['handle']) => Promise<T>): Promise<T> {
  const { client, handle } = await handleFor(campaignId);
  try {
    return await fn(handle);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new UsageError(`no campaign ${campaignId}`);
    throw err;
  } finally {
    await client.connection.close();
  }
}

/** The campaign's task queue when no worker polls it now, else null. */
async function unpolledTaskQueue(h: WorkflowHandle): Promise<{ taskQueue: string; running: boolean } | null> {
  const d = await h.describe();
  if ((await liveWorkflowPollers(h.client, d.taskQueue)) > 0) return null;
  return { taskQueue: d.taskQueue, running: d.status.name === 'RUNNING' };
}

/** A steering request the campaign refused (its validator's words), or the CLI refused before sending. */
export class SteeringRejected extends UsageError {
  constructor(message: string) {
    super(message, 'STEERING_REFUSED');
  }
}

/**
 * Sends a validated update to a running campaign and waits for its answer.
 * A validator's rejection becomes a UsageError with the validator's message
 * (exit 2); nothing changed in the campaign.
 */
export async function steerCampaign<Ret, Args extends unknown[]>(campaignId: string, update: UpdateDefinition<Ret, Args>, ...args: Args): Promise<Ret> {
  return withCampaign(campaignId, (h) => sendUpdate(h, campaignId, update, ...args));
}

/** steerCampaign on a handle the caller holds: several updates over one connection. */
export async function sendUpdate<Ret, Args extends unknown[]>(h: WorkflowHandle, campaignId: string, update: UpdateDefinition<Ret, Args>, ...args: Args): Promise<Ret> {
  try {
    // executeUpdate's overloads tell "no arguments" and "some" apart; a generic Args is neither.
    return await h.executeUpdate(update as unknown as UpdateDefinition<Ret, [unknown]>, { args: args as unknown as [unknown] });
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new UsageError(`no running campaign ${campaignId}`);
    if (err instanceof WorkflowUpdateFailedError) {
      const cause = err.cause;
      if (cause instanceof ApplicationFailure && cause.type === FailureType.steeringRefused) throw new SteeringRejected(cause.message);
      throw new Error(`${update.name} failed: ${cause?.message ?? err.message}`, { cause: err });
    }
    throw err;
  }
}

/** Runs a pure validator on the CLI side, so obvious mistakes never reach Temporal. */
export function checkLocally<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof SteeringError) throw new SteeringRejected(err.message);
    throw err;
  }
}

/** Hosts per page of `crawler status`. */
export const STATUS_PAGE_SIZE = 50;

/** The campaign's line, its totals, and a page of hosts in order of attention (src/redis/campaign-hosts.ts). */
export function formatStatus(s: CampaignStatus, hosts: HostStatus[] | null, page = 1, revisits: RevisitTotals | null = null): string {
  const t = s.totals;
  const lines = [
    `campaign ${s.campaignId}: ${s.status}${s.paused ? ' (paused)' : ''}, started ${s.startedAt}, as of ${s.updatedAt}`,
    `pages ${t.fetched}, failed ${t.failed}, skipped ${t.skipped}, bytes ${t.bytes}, hosts ${t.hosts} (${t.activeHosts} active, ${t.readyHosts} waiting for a slot), frontier ${t.frontier}` +
      (s.problems ? `, problems ${s.problems}` : ''),
  ];
  const embeds = embedCounts(t);
  if (embeds) lines.push(`embeds ${embeds.fetched}, failed ${embeds.failed}, skipped ${embeds.skipped} (page requisites)`);
  if (t.seenFilter) lines.push(seenFilterLine(t.seenFilter));
  if (s.dispatchError) {
    lines.push(`dispatch failing ${s.dispatchError.failures}× since ${s.dispatchError.at} (tried again every 10 s; hosts already running go on): ${s.dispatchError.message}`);
  }
  if (revisits) {
    lines.push(
      `revisits: ${revisits.scheduled} scheduled, due now ${revisits.dueNow}, within an hour ${revisits.dueHour}, within a day ${revisits.dueDay}` +
        (revisits.nextDueAt ? `, next ${revisits.nextDueAt}` : ''),
    );
  }
  lines.push('');
  if (hosts === null) {
    lines.push("(per-host table: no Redis found; set REDIS_URL to the campaign's Redis)");
  } else {
    lines.push(['HOST', 'STATE', 'PAGES', 'FAILED', 'SKIPPED', 'FRONTIER', 'DELAY', 'WHY'].join('\t'));
    lines.push(...hosts.map((h) => [h.host, h.state, h.fetched, h.failed, h.skipped, h.frontier, `${h.delayMs} ms`, h.reason + renderNote(h) + revisitNote(h)].join('\t')));
    if (hosts.length >= STATUS_PAGE_SIZE) lines.push(`(page ${page}; --page ${page + 1} for more)`);
  }
  return lines.join('\n');
}

/** An operator's render mode for the host (`crawler set-render`), after its WHY. */
function renderNote(h: HostStatus): string {
  return h.render ? `; render ${h.render} (set-render)` : '';
}

/** A host's revisit queue as its last session left it, after its WHY. */
function revisitNote(h: HostStatus): string {
  const r = h.revisit;
  if (!r) return '';
  return ` (revisits: ${r.scheduled} scheduled, ${r.dueHour} due within an hour, ${r.dueDay} within a day${r.nextDueAt ? `, next ${r.nextDueAt}` : ''})`;
}

/**
 * A page of the campaign's hosts from Redis, and for a revisit campaign its
 * revisit queue over every host; null when no Redis is named or it does not answer.
 */
async function hostPage(campaignKey: string, page: number, revisit: boolean): Promise<{ hosts: HostStatus[]; revisits: RevisitTotals | null } | null> {
  const url = clientRedisUrl();
  if (!url) return null;
  const redis = createRedis(url);
  try {
    const ch = new CampaignHosts(redis, campaignKey);
    const [records, renders] = await Promise.all([ch.page((page - 1) * STATUS_PAGE_SIZE, STATUS_PAGE_SIZE), ch.hostRenders()]);
    // An operator's render mode shows at once, before the host's next session takes it up.
    const hosts = records.map((h): HostStatus => (renders[h.host] ? { ...h, render: renders[h.host] } : h));
    if (!revisit) return { hosts, revisits: null };
    const all: string[] = [];
    for await (const batch of ch.records()) all.push(...batch.map((r) => r.host));
    return { hosts, revisits: await revisitTotals(redis, campaignKey, all) };
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}

/**
 * How recently a worker must have polled to count as polling now. A live
 * worker keeps a long poll open and renews it at least every minute or so,
 * while the server lists a poller for minutes after its worker stopped.
 */
export const LIVE_POLLER_MS = 2 * 60_000;

/** Workers polling `taskQueue` for workflow tasks now (DescribeTaskQueue pollers seen within LIVE_POLLER_MS). */
export async function liveWorkflowPollers(client: WorkflowClient, taskQueue: string, now = Date.now()): Promise<number> {
  const res = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: proto.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return (res.pollers ?? []).filter((p) => now - (optionalTsToMs(p.lastAccessTime) ?? 0) <= LIVE_POLLER_MS).length;
}

/**
 * Says that no worker polls the campaign's task queue and what follows from
 * it: messages, queries and the crawl itself are handled only by a worker.
 */
export function noWorkerMessage(taskQueue: string, defaultTaskQueue: string, consequence: string): string {
  const env = taskQueue === defaultTaskQueue ? '' : `CRAWLER_TASK_QUEUE=${taskQueue} `;
  return `no worker is polling task queue "${taskQueue}": ${consequence} (start one with: ${env}npm run crawler -- worker)`;
}

export function registerCampaignControlCommands(program: Command): void {
  program
    .command('status <campaign>')
    .description("show a campaign's progress, and its hosts most in need of attention first (from REDIS_URL, or the running stack's Redis)")
    .option('--json', 'print the status as JSON')
    .option('--page <n>', 'page of the host table (50 hosts a page)', '1')
    .action(async (campaignId: string, opts: { json?: boolean; page: string }) => {
      const page = Number(opts.page);
      if (!Number.isInteger(page) || page < 1) throw new UsageError(`--page must be a whole number ≥ 1 (got ${opts.page})`);
      const s = await withCampaign(campaignId, async (h) => {
        // Only a worker answers a query: without one the server gives up after
        // half a minute with a bare "Failed to query Workflow". Say why at once.
        const idle = await unpolledTaskQueue(h).catch(() => null);
        if (idle) throw new Error(`${campaignId}: ${noWorkerMessage(idle.taskQueue, processSettings().taskQueue, 'only a worker can answer a status query')}`);
        return h.query(campaignStatusQuery);
      });
      const got = await hostPage(s.campaignKey, page, s.revisit ?? false);
      const hosts = got?.hosts ?? null;
      const revisits = got?.revisits ?? null;
      process.stdout.write(opts.json ? `${JSON.stringify({ ...s, hosts, ...(revisits ? { revisits } : {}) })}\n` : `${formatStatus(s, hosts, page, revisits)}\n`);
    });
  for (const [name, campaignUpdate, hostUpdate, what] of [
    ['pause', pauseCampaignUpdate, pauseHostUpdate, 'stop fetching (in-flight requests finish); state is kept. --host: one host only, the others go on'],
    ['resume', resumeCampaignUpdate, resumeHostUpdate, 'continue a paused campaign, or with --host a host paused on its own'],
  ] as const) {
    program
      .command(`${name} <campaign>`)
      .description(what)
      .option('--host <host>', 'only this host (host[:port], as `crawler status` lists them)')
      .action(async (campaignId: string, opts: { host?: string }) => {
        if (opts.host === undefined) {
          // An update, not a signal: the command returns once the campaign
          // has taken it, and a finishing campaign says so instead.
          const r = await steerCampaign(campaignId, campaignUpdate);
          process.stdout.write(`${campaignId} ${r.paused ? 'paused' : 'resumed'}\n`);
          return;
        }
        checkLocally(() => validateHostRequest({ host: opts.host }));
        const r = await steerCampaign(campaignId, hostUpdate, { host: opts.host });
        const still = name === 'resume' && r.paused ? ' (the campaign as a whole is still paused)' : '';
        process.stdout.write(`${r.host} ${r.paused ? 'paused' : 'resumed'} in ${campaignId}${still}\n`);
      });
  }
  program
    .command('cancel <campaign>')
    .description('stop a campaign for good; it completes with status "cancelled" and a summary')
    .option('--reason <text>', 'why, for the record')
    .action(async (campaignId: string, opts: { reason?: string }) => {
      const hint = await withCampaign(campaignId, async (h) => {
        await h.signal(cancelSignal, { reason: opts.reason });
        // A cancel is a signal: it is recorded now but acted on by a worker.
        // Best effort: the cancel is sent whatever this finds out.
        const idle = await unpolledTaskQueue(h).catch(() => null);
        if (!idle?.running) return null;
        return noWorkerMessage(idle.taskQueue, processSettings().taskQueue, 'the campaign stays running until a worker picks up the cancel');
      });
      process.stdout.write(`cancel sent to ${campaignId}\n${hint ? `${hint}\n` : ''}`);
    });
}
