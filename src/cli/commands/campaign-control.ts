import type { Command } from 'commander';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { clientEndpoints, connectClient, TemporalUnavailableError } from '../../temporal/connect';
import { SteeringError, validateHostRequest } from '../../config/steering';
import {
  campaignStatusQuery,
  cancelSignal,
  pauseCampaignUpdate,
  pauseHostUpdate,
  resumeCampaignUpdate,
  resumeHostUpdate,
  type CampaignStatus,
} from '../../../workflows/messages';
import { UsageError } from '../usage-error';

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

/** A steering request the campaign refused (its validator's words), or the CLI refused before sending. */
export class SteeringRejected extends UsageError {}

/**
 * Sends a validated update to a running campaign and waits for its answer.
 * A validator's rejection becomes a UsageError with the validator's message
 * (exit 2); nothing changed in the campaign.
 */
export async function steerCampaign<Ret, Args extends unknown[]>(campaignId: string, update: UpdateDefinition<Ret, Args>, ...args: Args): Promise<Ret> {
  return withCampaign(campaignId, async (h: WorkflowHandle) => {
    try {
      // executeUpdate's overloads tell "no arguments" and "some" apart; a generic Args is neither.
      return await h.executeUpdate(update as unknown as UpdateDefinition<Ret, [unknown]>, { args: args as unknown as [unknown] });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new UsageError(`no running campaign ${campaignId}`);
      if (err instanceof WorkflowUpdateFailedError) {
        const cause = err.cause;
        if (cause instanceof ApplicationFailure && cause.type === 'SteeringError') throw new SteeringRejected(cause.message);
        throw new Error(`${update.name} failed: ${cause?.message ?? err.message}`, { cause: err });
      }
      throw err;
    }
  });
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

type HostRow = CampaignStatus['hosts'][number];

/**
 * How much a host needs an operator's attention, most first: backing off
 * (the server is refusing us now), still crawling with failures, in a long
 * sleep, paused, crawling, idle; finished hosts last, those with failures
 * before clean ones.
 */
export function attentionRank(h: HostRow): number {
  const finished = h.state === 'closed' || h.state === 'done' || h.domainState === 'done';
  if (finished) return h.stats.failed > 0 ? 6 : 7;
  if (h.domainState === 'backing-off') return 0;
  if (h.stats.failed > 0) return 1;
  if (h.domainState === 'sleeping') return 2;
  if (h.domainState === 'paused') return 3;
  if (h.state === 'idle' || h.domainState === 'idle') return 5;
  return 4;
}

/** The per-host table, sorted by attentionRank, then most failures, then name. */
export function formatStatus(s: CampaignStatus): string {
  const hosts = [...s.hosts].sort((a, b) => attentionRank(a) - attentionRank(b) || b.stats.failed - a.stats.failed || a.host.localeCompare(b.host));
  const lines = [
    `campaign ${s.campaignId}: ${s.status}${s.paused ? ' (paused)' : ''}, started ${s.startedAt}`,
    `pages ${s.totals.fetched}, failed ${s.totals.failed}, skipped ${s.totals.skipped}, bytes ${s.totals.bytes}, hosts ${s.totals.hosts} (${s.totals.activeHosts} active)`,
    '',
    ['HOST', 'STATE', 'DOMAIN', 'PAGES', 'FAILED', 'SKIPPED', 'FRONTIER'].join('\t'),
    ...hosts.map((h) => [h.host, h.state, h.domainState, h.stats.fetched, h.stats.failed, h.stats.skipped, h.frontier ?? '-'].join('\t')),
  ];
  return lines.join('\n');
}

export function registerCampaignControlCommands(program: Command): void {
  program
    .command('status <campaign>')
    .description('show a campaign\'s progress, per host')
    .option('--json', 'print the status as JSON')
    .action(async (campaignId: string, opts: { json?: boolean }) => {
      const s = await withCampaign(campaignId, (h) => h.query(campaignStatusQuery));
      process.stdout.write(opts.json ? `${JSON.stringify(s)}\n` : `${formatStatus(s)}\n`);
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
      await withCampaign(campaignId, (h) => h.signal(cancelSignal, { reason: opts.reason }));
      process.stdout.write(`cancel sent to ${campaignId}\n`);
    });
}
