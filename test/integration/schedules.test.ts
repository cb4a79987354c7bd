// Recurring campaigns on Temporal Schedules, driven through the CLI as an
// operator would: a schedule runs its campaign again and again (each run a
// campaign of its own, with its own output folder), a run due while the
// last one still goes is skipped, and pause / trigger / delete work.
import path from 'node:path';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { generateSites } from '../web/test-web';
import { createHarness, sleep, type Harness } from '../support/harness';
import { crawlerInProcess } from '../support/in-process-cli';
import type { ScheduleRow } from '../../src/temporal/schedules';
import { readIndex } from '../../src/storage/index-writer';
import type { CampaignResult } from '../../workflows/messages';

jest.setTimeout(300_000);

let h: Harness;
const FAST = 'fast.sched.test';
const SLOW = 'slow.sched.test';

const taskQueueBefore = process.env.CRAWLER_TASK_QUEUE;
beforeAll(async () => {
  h = await createHarness('sched', { workers: 1 });
  process.env.CRAWLER_TASK_QUEUE = h.taskQueue;
  for (const spec of generateSites({ count: 1, pages: 4, fanOut: 2, crossPerPage: 0, hostPattern: () => FAST, seed: 3 })) h.web.addSite(spec);
  for (const spec of generateSites({ count: 1, pages: 40, fanOut: 2, crossPerPage: 0, hostPattern: () => SLOW, seed: 4 })) h.web.addSite(spec);
});
afterAll(async () => {
  if (taskQueueBefore === undefined) delete process.env.CRAWLER_TASK_QUEUE;
  else process.env.CRAWLER_TASK_QUEUE = taskQueueBefore;
  await h?.close();
});

// The CLI's commands run in this process (the same program and exit codes, without a process's second of start-up),
// with the harness's task queue (CRAWLER_TASK_QUEUE, set for this file in beforeAll).
const crawler = async (...args: string[]) => (await crawlerInProcess(args)).stdout;
const describe_ = async (name: string) => JSON.parse(await crawler('schedule', 'describe', name, '--json')) as ScheduleRow;
const runsOf = async (name: string, status?: string) => {
  const runs: WorkflowExecutionInfo[] = [];
  const query = `TemporalScheduledById = '${name}'${status ? ` AND ExecutionStatus = '${status}'` : ''}`;
  for await (const wf of h.client.workflow.list({ query })) runs.push(wf);
  return runs;
};
async function until<T>(what: string, get: () => Promise<T>, ok: (v: T) => boolean, ms = 180_000): Promise<T> {
  for (const end = Date.now() + ms; ; await sleep(500)) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
  }
}
const pins = () => h.web.resolveArgs().flatMap((r) => ['--resolve', r]);

test('a schedule runs its campaign again and again, each run complete and in a folder of its own', async () => {
  const name = `fast-${process.pid}`;
  const out = path.join(h.outDir, 'fast');
  const seed = h.web.url(FAST, '/');
  const created = await crawler('schedule', 'create', name, seed, '--every', '2s', '--delay-ms', '50', '--out', out, ...pins());
  expect(created).toContain(`schedule ${name} created`);
  const done = await until(
    'two completed runs',
    () => runsOf(name, 'Completed'),
    (r) => r.length >= 2,
  );
  const expected = h.web.expectedPages([seed]).size;
  const dirs = new Set<string>();
  for (const wf of done.slice(0, 2)) {
    expect(wf.workflowId.startsWith(`${name}-`)).toBe(true);
    const result = (await h.client.workflow.getHandle(wf.workflowId).result()) as CampaignResult;
    const index = await readIndex(path.join(result.outputDir, 'index'));
    expect(index.filter((e) => e.outcome !== 'fetched' && e.outcome !== 'sitemap').map((e) => `${e.url} ${e.outcome} ${e.error?.code} ${e.error?.message}`)).toEqual([]);
    expect(new Set(index.filter((e) => e.outcome === 'fetched').map((e) => e.url))).toEqual(h.web.expectedPages([seed]));
    expect(result).toMatchObject({ campaignId: wf.workflowId, status: 'completed', pages: expected, failed: 0 });
    expect(result.outputDir).toBe(path.join(out, wf.workflowId));
    dirs.add(result.outputDir);
  }
  expect(dirs.size).toBe(2);

  // Paused, it starts nothing more; listed with its state.
  await crawler('schedule', 'pause', name, '--note', 'maintenance');
  const listed = JSON.parse(await crawler('schedule', 'list', '--json')) as ScheduleRow[];
  expect(listed.find((r) => r.name === name)).toMatchObject({ paused: true, note: 'maintenance', every: ['2s'], overlap: 'skip' });
  const taken = (await describe_(name)).runs;
  // Two intervals and more.
  await sleep(4_500);
  expect((await describe_(name)).runs).toBe(taken);
  await crawler('schedule', 'delete', name);
  await expect(crawler('schedule', 'describe', name)).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining(`no schedule named ${name}`) });
});

test('a run due while the last one still goes is skipped (overlap policy skip), and so is a trigger', async () => {
  const name = `slow-${process.pid}`;
  await crawler('schedule', 'create', name, h.web.url(SLOW, '/'), '--every', '2s', '--delay-ms', '1000', '--out', path.join(h.outDir, 'slow'), ...pins());
  await until(
    'a running run',
    () => runsOf(name, 'Running'),
    (r) => r.length === 1,
  );
  const skipped = await until(
    'runs skipped for overlap',
    () => describe_(name),
    (d) => d.skippedOverlap >= 2,
  );
  expect(skipped.running).toHaveLength(1);
  await crawler('schedule', 'trigger', name);
  await until(
    'the trigger skipped too',
    () => describe_(name),
    (d) => d.skippedOverlap > skipped.skippedOverlap,
  );
  // Still one run of this schedule, whatever came due meanwhile.
  expect(await runsOf(name)).toHaveLength(1);
  const [running] = await runsOf(name, 'Running');
  await crawler('schedule', 'delete', name);
  await crawler('cancel', running!.workflowId);
  const result = (await h.client.workflow.getHandle(running!.workflowId).result()) as CampaignResult;
  expect(result.status).toBe('cancelled');
});

test('bad schedules are refused before anything is created', async () => {
  await expect(crawler('schedule', 'create', 'no-calendar', 'http://example.test/')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--cron') });
  await expect(crawler('schedule', 'create', 'bad overlap', 'http://example.test/', '--every', '1h', '--overlap', 'never')).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/schedule name[\s\S]*--overlap must be one of/),
  });
  await expect(crawler('schedule', 'create', 'bad-seed', 'not a url', '--every', '1h')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('seed "not a url"') });
  const names = (JSON.parse(await crawler('schedule', 'list', '--json')) as ScheduleRow[]).map((r) => r.name);
  expect(names).not.toEqual(expect.arrayContaining(['no-calendar', 'bad overlap', 'bad-seed']));
});
