import type { Command } from 'commander';
import { WorkflowNotFoundError } from '@temporalio/client';
import { clientEndpoints, connectClient } from '../../temporal/connect';
import { campaignStatusQuery, cancelSignal, pauseSignal, resumeSignal, type CampaignStatus } from '../../../workflows/messages';
import { UsageError } from '../usage-error';

async function handleFor(campaignId: string) {
  const { temporalAddress } = clientEndpoints();
  const client = await connectClient(temporalAddress).catch((err: Error) => {
    throw new UsageError(`cannot reach Temporal at ${temporalAddress} (${err.message}); is the stack up? (npm run crawler -- stack up)`);
  });
  return { client, handle: client.workflow.getHandle(campaignId) };
}

async function withCampaign<T>(campaignId: string, fn: (h: Awaited<ReturnType<typeof handleFor>>['handle']) => Promise<T>): Promise<T> {
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

/** Hosts that need attention first: failing, then backing off, then busy. */
export function formatStatus(s: CampaignStatus): string {
  const rank = (h: CampaignStatus['hosts'][number]) =>
    (h.stats.failed > 0 ? 0 : 10) + (h.domainState === 'backing-off' ? 0 : h.state === 'running' ? 1 : 2);
  const hosts = [...s.hosts].sort((a, b) => rank(a) - rank(b) || b.stats.failed - a.stats.failed || a.host.localeCompare(b.host));
  const lines = [
    `campaign ${s.campaignId}: ${s.status}${s.paused ? ' (paused)' : ''}, started ${s.startedAt}`,
    `pages ${s.totals.fetched}, failed ${s.totals.failed}, skipped ${s.totals.skipped}, bytes ${s.totals.bytes}, hosts ${s.totals.hosts} (${s.totals.activeHosts} active)`,
    '',
    ['HOST', 'STATE', 'DOMAIN', 'PAGES', 'FAILED', 'SKIPPED'].join('\t'),
    ...hosts.map((h) => [h.host, h.state, h.domainState, h.stats.fetched, h.stats.failed, h.stats.skipped].join('\t')),
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
  for (const [name, signal, what] of [
    ['pause', pauseSignal, 'stop fetching (in-flight requests finish); state is kept'],
    ['resume', resumeSignal, 'continue a paused campaign'],
  ] as const) {
    program
      .command(`${name} <campaign>`)
      .description(what)
      .action(async (campaignId: string) => {
        await withCampaign(campaignId, (h) => h.signal(signal));
        process.stdout.write(`${name} sent to ${campaignId}\n`);
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
