// Recurring campaigns as Temporal Schedules: the server starts a campaign
// workflow on the schedule's calendar, durably, whether or not any CLI is
// running, and the Web UI's Schedules page shows and steers them. Each run
// is a campaign of its own: its workflow ID (and so its campaign ID) is the
// schedule's name plus the time Temporal appends, and its output goes to a
// folder of its own (`{campaign}` in output.dir).
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client, type ScheduleSpec } from '@temporalio/client';
import type { CampaignInput } from '../config/campaign';
import type { crawlCampaign } from '../../workflows/crawl-campaign';
import { campaignStaticDetails, campaignStaticSummary } from '../../workflows/status-card';
import { CrawlerError } from '../errors';
import { CrawlState } from './search-attributes';
import { CAMPAIGN_WORKFLOW } from './workflow-types';

/** What the CLI calls the overlap policies (Temporal's names, in kebab case). */
export const OVERLAP_POLICIES = {
  skip: ScheduleOverlapPolicy.SKIP,
  'buffer-one': ScheduleOverlapPolicy.BUFFER_ONE,
  'buffer-all': ScheduleOverlapPolicy.BUFFER_ALL,
  'cancel-other': ScheduleOverlapPolicy.CANCEL_OTHER,
  'terminate-other': ScheduleOverlapPolicy.TERMINATE_OTHER,
  'allow-all': ScheduleOverlapPolicy.ALLOW_ALL,
} as const;
export type OverlapName = keyof typeof OVERLAP_POLICIES;

export interface CreateScheduleInput {
  name: string;
  /** Cron expressions (standard 5 fields, or Temporal's with seconds) and/or fixed intervals ("6h", "30s"). */
  cron: string[];
  every: string[];
  overlap: OverlapName;
  paused: boolean;
  note?: string;
  taskQueue: string;
  /** The campaign every run starts, without an ID (each run's is its workflow ID). */
  campaign: Omit<CampaignInput, 'campaignId'>;
}

export class ScheduleError extends CrawlerError<'SCHEDULE_NOT_FOUND' | 'SCHEDULE_EXISTS' | 'SCHEDULE_INVALID'> {
  constructor(code: 'SCHEDULE_NOT_FOUND' | 'SCHEDULE_EXISTS' | 'SCHEDULE_INVALID', message: string) {
    super(code, message);
    this.name = 'ScheduleError';
  }
}

export async function createSchedule(client: Client, s: CreateScheduleInput): Promise<void> {
  if (s.cron.length === 0 && s.every.length === 0) throw new ScheduleError('SCHEDULE_INVALID', 'give when it runs: --cron "EXPR" and/or --every DURATION');
  const spec: ScheduleSpec = { cronExpressions: s.cron, intervals: s.every.map((every) => ({ every: every as `${number}s` })) };
  const display = { campaignId: `${s.name}-<time>`, ...s.campaign };
  try {
    await client.schedule.create<typeof crawlCampaign>({
      scheduleId: s.name,
      spec,
      action: {
        type: 'startWorkflow',
        workflowType: CAMPAIGN_WORKFLOW,
        workflowId: s.name,
        taskQueue: s.taskQueue,
        args: [s.campaign],
        workflowTaskTimeout: '30 seconds',
        typedSearchAttributes: [{ key: CrawlState, value: 'starting' }],
        memo: { schedule: s.name, seeds: (s.campaign.seeds ?? []).slice(0, 20) },
        staticSummary: `${campaignStaticSummary(display)} (schedule ${s.name})`,
        staticDetails: campaignStaticDetails(s.campaign),
      },
      // A run missed while the server was down is started when it is back, if within a day.
      policies: { overlap: OVERLAP_POLICIES[s.overlap], catchupWindow: '1 day' },
      state: { paused: s.paused, ...(s.note ? { note: s.note } : {}) },
      // The calendar as the operator wrote it (the server keeps it only in structured form).
      memo: { kind: 'crawl-campaign-schedule', cron: s.cron, every: s.every },
    });
  } catch (err) {
    if (err instanceof ScheduleAlreadyRunning) throw new ScheduleError('SCHEDULE_EXISTS', `a schedule named ${s.name} exists already`);
    if (err instanceof Error && /invalid|parse|cron/i.test(err.message)) throw new ScheduleError('SCHEDULE_INVALID', `schedule ${s.name}: ${err.message}`);
    throw err;
  }
}

export interface ScheduleRow {
  name: string;
  paused: boolean;
  note: string | null;
  cron: string[];
  every: string[];
  overlap: string;
  nextRuns: string[];
  /** Runs started so far, and runs skipped because one was still going. */
  runs: number;
  skippedOverlap: number;
  running: string[];
  recent: { workflowId: string; startedAt: string }[];
}

export async function describeSchedule(client: Client, name: string): Promise<ScheduleRow> {
  const d = await withSchedule(name, () => client.schedule.getHandle(name).describe());
  const overlap = Object.entries(OVERLAP_POLICIES).find(([, v]) => v === d.policies.overlap)?.[0] ?? String(d.policies.overlap);
  return {
    name,
    paused: d.state.paused,
    note: d.state.note ?? null,
    cron: stringList(d.memo?.cron),
    every: stringList(d.memo?.every),
    overlap,
    nextRuns: d.info.nextActionTimes.slice(0, 3).map((t) => t.toISOString()),
    runs: d.info.numActionsTaken,
    skippedOverlap: d.info.numActionsSkippedOverlap,
    running: d.info.runningActions.map((a) => a.workflow.workflowId),
    recent: d.info.recentActions.slice(-5).map((a) => ({ workflowId: a.action.workflow.workflowId, startedAt: a.takenAt.toISOString() })),
  };
}

/** Schedules that start crawl campaigns (other schedules on the namespace are left out). */
export async function listSchedules(client: Client): Promise<ScheduleRow[]> {
  const rows: ScheduleRow[] = [];
  for await (const s of client.schedule.list()) {
    if (s.action?.type !== 'startWorkflow' || s.action.workflowType !== CAMPAIGN_WORKFLOW) continue;
    rows.push(await describeSchedule(client, s.scheduleId));
  }
  return rows;
}

export type ScheduleVerb = 'pause' | 'unpause' | 'delete' | 'trigger';

export async function steerSchedule(client: Client, name: string, verb: ScheduleVerb, note?: string): Promise<void> {
  const h = client.schedule.getHandle(name);
  await withSchedule(name, async () => {
    if (verb === 'pause') await h.pause(note);
    else if (verb === 'unpause') await h.unpause(note);
    else if (verb === 'delete') await h.delete();
    // Now, under the schedule's own overlap policy (a trigger left without
    // one is started whatever runs): a run still going means this one is skipped.
    else await h.trigger((await h.describe()).policies.overlap);
  });
}

const stringList = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);

async function withSchedule<T>(name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) throw new ScheduleError('SCHEDULE_NOT_FOUND', `no schedule named ${name}`);
    throw err;
  }
}
