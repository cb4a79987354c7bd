import path from 'node:path';
import type { Command } from 'commander';
import { CAMPAIGN_ID_PATTERN, CAMPAIGN_PLACEHOLDER, type CampaignInput } from '../../config/campaign';
import { processSettings } from '../../config/env';
import {
  createSchedule,
  describeSchedule,
  listSchedules,
  OVERLAP_POLICIES,
  ScheduleError,
  steerSchedule,
  type OverlapName,
  type ScheduleRow,
  type ScheduleVerb,
} from '../../temporal/schedules';
import { UsageError } from '../usage-error';
import { connectCli } from './campaign-control';
import { campaignOptions, clusterBucketByDefault, outputDirArg, prepareCrawlInput, type CrawlIo, type CrawlOptions } from './crawl';
import { isLocationUrl } from '../../storage/output-location-rules';

/** What Temporal appends to a scheduled run's workflow ID: "-" and an RFC 3339 time. */
const RUN_SUFFIX_EXAMPLE = '-2026-01-01T00:00:00Z';

export interface CreateOptions extends Omit<CrawlOptions, 'workers'> {
  cron: string[];
  every: string[];
  overlap: string;
  paused?: boolean;
  note?: string;
}

const collect = (v: string, acc: string[]) => [...acc, v];

async function withClient<T>(fn: (client: Awaited<ReturnType<typeof connectCli>>) => Promise<T>): Promise<T> {
  const client = await connectCli();
  try {
    return await fn(client);
  } catch (err) {
    // Unknown names, a taken name, a calendar the server cannot read: the operator's to fix.
    if (err instanceof ScheduleError) throw new UsageError(err.message);
    throw err;
  } finally {
    await client.connection.close();
  }
}

export function formatSchedules(rows: ScheduleRow[]): string {
  if (rows.length === 0) return 'no crawl schedules';
  const header = ['schedule', 'state', 'when', 'overlap', 'runs', 'skipped', 'running', 'next run'].join('\t');
  return [
    header,
    ...rows.map((r) =>
      [
        r.name,
        r.paused ? `paused${r.note ? ` (${r.note})` : ''}` : 'active',
        [...r.cron.map((c) => `cron ${c}`), ...r.every.map((e) => `every ${e}`)].join(', '),
        r.overlap,
        r.runs,
        r.skippedOverlap,
        r.running.join(',') || '-',
        r.nextRuns[0] ?? '-',
      ].join('\t'),
    ),
  ].join('\n');
}

/**
 * The campaign every run of a schedule starts with, from `schedule create`'s
 * flags: checked like a crawl's, with a run's ID standing in for the real
 * ones, and the output folder `<out>/{campaign}` so each run gets its own.
 */
export async function scheduledCampaign(name: string, seeds: string[], o: CreateOptions, io: CrawlIo): Promise<{ out: string; campaign: CampaignInput }> {
  const problems: string[] = [];
  if (!CAMPAIGN_ID_PATTERN.test(`${name}${RUN_SUFFIX_EXAMPLE}`)) {
    problems.push(`schedule name ${JSON.stringify(name)}: letters, digits, dot, dash, underscore or colon, at most ${80 - RUN_SUFFIX_EXAMPLE.length} characters`);
  }
  if (!(o.overlap in OVERLAP_POLICIES)) problems.push(`--overlap must be one of ${Object.keys(OVERLAP_POLICIES).join(', ')}`);
  if (o.cron.length === 0 && o.every.length === 0) problems.push('give when it runs: --cron "EXPR" and/or --every DURATION');
  if (o.seedsFile === '-') problems.push('--seeds-file -: a schedule runs later, without this terminal; give a file or URL');
  // A revisit campaign never ends on its own: every run after the first would be skipped (or pile up).
  if (o.revisit) problems.push('--revisit: a revisit campaign runs until cancelled, so a schedule of them makes no sense; start it once with `crawl --revisit`');
  if (problems.length) throw new UsageError(problems.join('\n'));
  // On a cluster, a prefix per run in its bucket (as `crawl` there); else a folder per run under a folder, or a prefix per run under a prefix.
  const clusterBucket = clusterBucketByDefault(o);
  if (clusterBucket) Object.assign(o, { out: `s3://${clusterBucket.bucket}`, s3Endpoint: clusterBucket.endpoint, s3PathStyle: true });
  const parent = outputDirArg(o.out ?? 'crawl-output');
  const out = isLocationUrl(parent) ? `${parent.replace(/\/+$/, '')}/${CAMPAIGN_PLACEHOLDER}` : path.join(parent, CAMPAIGN_PLACEHOLDER);
  const { campaignId: _example, ...campaign } = await prepareCrawlInput(seeds, { ...o, id: `${name}${RUN_SUFFIX_EXAMPLE}`, out, workers: 0 } as CrawlOptions, io);
  // The folder as typed, `{campaign}` unreplaced (the example ID stood in for it); the rest of output (warcKeepSecrets) as the flags set it.
  return { out, campaign: { ...campaign, output: { ...campaign.output, dir: out } } };
}

export function registerScheduleCommands(program: Command): void {
  const schedule = program.command('schedule').description('recurring campaigns on Temporal Schedules (also in the Web UI, Schedules page)');

  campaignOptions(
    schedule
      .command('create')
      .description('run a campaign on a calendar; each run is a campaign of its own (ID <name>-<time>, output in <out>/<campaign>)')
      .argument('<name>', 'schedule name (letters, digits, . _ - :)')
      .argument('[seeds...]', 'seed URLs (optional with --seeds-file)')
      .option('--cron <expr>', 'when, as a cron expression (e.g. "0 3 * * *": 03:00 UTC daily; repeatable)', collect, [])
      .option('--every <duration>', 'when, as a fixed interval (e.g. 6h, 30m; repeatable)', collect, [])
      .option('--overlap <policy>', `a run due while the last still goes: ${Object.keys(OVERLAP_POLICIES).join(', ')}`, 'skip')
      .option('--paused', 'create it paused')
      .option('--note <text>', 'a note shown with the schedule')
      .option('--seeds-file <file|url>', 'more seeds from a list every run reads: a path every worker can read, or an http(s) URL')
      .option(
        '--out <dir>',
        "parent folder of the runs' output folders, or s3://bucket/prefix above their prefixes (default crawl-output; on a `crawler cluster up` cluster, the cluster's bucket)",
      ),
  ).action(async (name: string, seeds: string[], o: CreateOptions) => {
    const { out, campaign } = await scheduledCampaign(name, seeds, o, { stdin: process.stdin, log: (m) => process.stderr.write(`${m}\n`) });
    const cfg = processSettings();
    await withClient((client) =>
      createSchedule(client, {
        name,
        cron: o.cron,
        every: o.every,
        overlap: o.overlap as OverlapName,
        paused: o.paused ?? false,
        note: o.note,
        taskQueue: cfg.taskQueue,
        campaign,
      }),
    );
    process.stdout.write(`schedule ${name} created${o.paused ? ' (paused)' : ''}; its runs are campaigns ${name}-<time>, output in ${out}\n`);
  });

  schedule
    .command('list')
    .description('crawl schedules: calendar, state, runs, skipped overlapping runs, next run')
    .option('--json', 'print them as JSON')
    .action(async (o: { json?: boolean }) => {
      const rows = await withClient((client) => listSchedules(client));
      process.stdout.write(o.json ? `${JSON.stringify(rows)}\n` : `${formatSchedules(rows)}\n`);
    });

  schedule
    .command('describe')
    .argument('<name>')
    .description('one schedule, with its recent and running campaigns')
    .option('--json', 'print it as JSON')
    .action(async (name: string, o: { json?: boolean }) => {
      const row = await withClient((client) => describeSchedule(client, name));
      if (o.json) process.stdout.write(`${JSON.stringify(row)}\n`);
      else process.stdout.write(`${formatSchedules([row])}\n${row.recent.map((r) => `  run ${r.workflowId} started ${r.startedAt}`).join('\n')}\n`);
    });

  const verbs: [ScheduleVerb, string][] = [
    ['pause', 'stop starting runs (a run going on is not touched)'],
    ['unpause', 'start runs again'],
    ['delete', 'remove the schedule (runs already started go on)'],
    ['trigger', 'start a run now (skipped, under the default policy, while one still goes)'],
  ];
  for (const [verb, description] of verbs) {
    const c = schedule.command(verb).argument('<name>').description(description);
    if (verb === 'pause' || verb === 'unpause') c.option('--note <text>', 'why (shown with the schedule)');
    c.action(async (name: string, o: { note?: string }) => {
      await withClient((client) => steerSchedule(client, name, verb, o.note));
      process.stdout.write(`schedule ${name}: ${verb === 'trigger' ? 'triggered' : `${verb}d`}\n`);
    });
  }
}
