// Pause, resume, cancel and the status query, through the real CLI commands
// and through Temporal directly.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { campaignStatusQuery, cancelSignal, FailureType, type CampaignStatus, type HostStatus } from '../../workflows/messages';
import { CampaignHosts } from '../../src/redis/campaign-hosts';
import { generateSites } from '../web/test-web';
import { createHarness, launch, pageRequests, sleep, type Harness } from '../support/harness';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { crawlerInProcess, runCrawlerInProcess } from '../support/in-process-cli';
import { startCampaign } from '../../src/temporal/campaign-client';
import { WorkerPool } from '../../src/worker/worker-pool';

jest.setTimeout(240_000);
// The CLI's commands run in this process (the same program and exit codes, without a process's
// second of start-up), but for `list` below, whose process must exit on its own.
const crawler = (...args: string[]) => crawlerInProcess(args);

let h: Harness;
beforeAll(async () => {
  h = await createHarness('control', { workers: 1 });
  for (const spec of generateSites({ count: 3, pages: 40, fanOut: 3, hostPattern: (i) => `p${i}.control.test`, seed: 11 })) h.web.addSite(spec);
});
afterAll(() => h?.close());

test('pause stops requests, resume continues, status reports per-domain progress, cancel ends with a summary', async () => {
  const seed = h.web.url('p0.control.test', '/');
  const handle = await launch(h, { seeds: [seed], scope: { mode: 'any' }, politeness: { minDelayMs: 300 } });
  const id = handle.workflowId;
  while (pageRequests(h.web.requests()).length < 6) await sleep(100);

  // An update: the command returns once the campaign has taken the pause.
  expect((await crawler('pause', id)).stdout).toBe(`${id} paused\n`);
  expect((await handle.query(campaignStatusQuery)).paused).toBe(true);
  // Every live host's record says 'paused' once its session saw the pause (between two pages).
  const records = new CampaignHosts(h.redis, (await handle.query(campaignStatusQuery)).campaignKey);
  const liveRecords = async () => (await records.page(0, 50)).filter((x) => x.state !== 'done');
  for (let t0 = Date.now(); ; await sleep(100)) {
    const live = await liveRecords();
    if (live.length > 0 && live.every((x) => x.state === 'paused')) break;
    if (Date.now() - t0 > 30_000) throw new Error(`hosts not all paused: ${JSON.stringify(live)}`);
  }
  const paused = pageRequests(h.web.requests()).length;
  await sleep(1_500); // long enough for several requests at 300 ms, were any made
  expect(pageRequests(h.web.requests()).length).toBe(paused);

  // Status while paused, through the CLI as JSON: every live host says so,
  // with the progress it had when it paused.
  const { stdout } = await crawler('status', id, '--json');
  const status = JSON.parse(stdout) as CampaignStatus & { hosts: HostStatus[] };
  expect(status.campaignId).toBe(id);
  expect(status.paused).toBe(true);
  expect(status.hosts.map((x) => x.host)).toContain(`p0.control.test:${h.web.port}`);
  const live = status.hosts.filter((x) => x.state !== 'done');
  expect(live.length).toBeGreaterThanOrEqual(1);
  expect(live.map((x) => x.state)).toEqual(live.map(() => 'paused'));
  // The host table and the totals agree (both from the records in Redis).
  expect((await records.totals()).fetched).toBe(status.hosts.reduce((n, x) => n + x.fetched, 0));
  expect(status.hosts.reduce((n, x) => n + x.fetched, 0)).toBeGreaterThan(0);

  expect((await crawler('resume', id)).stdout).toBe(`${id} resumed\n`);
  const t0 = Date.now();
  while (pageRequests(h.web.requests()).length <= paused && Date.now() - t0 < 30_000) await sleep(100);
  expect(pageRequests(h.web.requests()).length).toBeGreaterThan(paused);

  // A worker polls this queue: the cancel says nothing more.
  expect((await crawler('cancel', id)).stdout).toBe(`cancel sent to ${id}\n`);
  const result = await handle.result();
  expect(result.status).toBe('cancelled');
  const atCancel = pageRequests(h.web.requests()).length;
  expect(result.pages).toBeLessThan(h.web.expectedPages([seed]).size);
  await sleep(1_000); // again several requests' time
  expect(pageRequests(h.web.requests()).length).toBe(atCancel);
  // Every domain workflow of the campaign closed with it.
  const open = [];
  for await (const wf of h.client.workflow.list({ query: `CrawlCampaign = '${id}' AND ExecutionStatus = 'Running'` })) open.push(wf.workflowId);
  expect(open).toEqual([]);
  // Steering a campaign that has ended is refused with a clear message.
  await expect(crawler('pause', id)).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining(id) });
});

test('a status query on an unknown campaign is a clear error', async () => {
  await expect(crawler('status', 'no-such-campaign')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('no campaign no-such-campaign') });
});

test('a campaign started with invalid settings (the workflow resolves them itself, as a `temporal workflow start` user gives them) fails at once, naming every problem', async () => {
  const handle = await h.client.workflow.start('crawlCampaign', {
    taskQueue: h.taskQueue,
    workflowId: `invalid-input-${process.pid}`,
    args: [{ seeds: [], fetch: { connectTimeoutMs: 0 } }],
  });
  const err: unknown = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
  expect(cause.type).toBe(FailureType.invalidCampaignInput);
  expect(cause.nonRetryable).toBe(true);
  expect(cause.message).toMatch(/seeds must be a non-empty list/);
  expect(cause.message).toMatch(/fetch\.connectTimeoutMs must be at least 1/);
});

test('a domain workflow terminated by hand is given up: the campaign completes and says why', async () => {
  h.web.addSite({ host: 'keep.control.test', pages: 3, fanOut: 2 });
  h.web.addSite({ host: 'term.control.test', pages: 30, fanOut: 2 });
  const keep = h.web.url('keep.control.test', '/');
  const doomed = h.web.url('term.control.test', '/');
  // Slow enough that term.control.test is still crawling when it is terminated.
  // The campaign's watch, which finds it, looks every second tick: a tick
  // of 2 s (test-only testLimits) rather than TICK_MS, so 4 s rather than a minute.
  const handle = await launch(h, { seeds: [keep, doomed], scope: { mode: 'same-host' }, politeness: { minDelayMs: 2_000 }, testLimits: { tickMs: 2_000 } });
  const id = handle.workflowId;
  const host = new URL(doomed).host;
  while (!pageRequests(h.web.requests()).some((r) => r.host === 'term.control.test')) await sleep(100);
  await h.client.workflow.getHandle(`${id}/${host}`).terminate('operator stopped this host');
  const terminatedAt = pageRequests(h.web.requests()).filter((r) => r.host === 'term.control.test').length;
  // The check runs on the campaign's timer.
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.problems).toEqual([expect.stringMatching(new RegExp(`${id}/${host.replace(/[.]/g, '\\.')} ended TERMINATED without reporting`))]);
  // Its session, the host's first (a local activity inside the workflow's
  // task), ends at its few seconds' cap and its task's result is refused (at
  // most a request or two at 2 s apart); the host is never started again,
  // and the other host was crawled in full.
  const afterTerminate = pageRequests(h.web.requests()).filter((r) => r.host === 'term.control.test').length - terminatedAt;
  expect(afterTerminate).toBeLessThanOrEqual(3);
  expect(result.pages).toBeGreaterThanOrEqual(h.web.expectedPages([keep], { hosts: ['keep.control.test'] }).size);
  const records = new CampaignHosts(h.redis, (await handle.query(campaignStatusQuery)).campaignKey);
  expect((await records.get(host))?.state).toBe('given-up');
});

test('a domain workflow terminated by hand while a regular session crawls it: the session stops within a few requests, without a heartbeat', async () => {
  h.web.addSite({ host: 'term3.control.test', pages: 30, fanOut: 2 });
  h.web.addSite({ host: 'keep3.control.test', pages: 30, fanOut: 2 });
  const seed = h.web.url('term3.control.test', '/');
  const host = new URL(seed).host;
  const requests = () => pageRequests(h.web.requests()).filter((r) => r.host === 'term3.control.test').length;
  // The host's first session (a local activity) ends at once: its pages are a regular session's,
  // which heartbeats only once every few minutes (SESSION_HEARTBEAT) and so learns nothing from one
  // here. The campaign's watch looks every 4 s (a 2 s tick). Another host keeps the campaign
  // running, so no campaign-wide stop ends the session either.
  const handle = await launch(h, {
    seeds: [seed, h.web.url('keep3.control.test', '/')],
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 3_000 },
    session: { firstLocalMs: 1 },
    testLimits: { tickMs: 2_000 },
  });
  const wf = h.client.workflow.getHandle(`${handle.workflowId}/${host}`);
  while (requests() < 2) await sleep(100);
  expect((await wf.describe()).raw.pendingActivities).toHaveLength(1);
  await wf.terminate('operator stopped this host');
  const terminatedAt = requests();
  const records = new CampaignHosts(h.redis, (await handle.query(campaignStatusQuery)).campaignKey);
  const t0 = Date.now();
  while ((await records.get(host))?.state !== 'given-up' && Date.now() - t0 < 60_000) await sleep(100);
  expect((await records.get(host))?.state).toBe('given-up');
  // The watch gave the host up in Redis; the session read it between pages and stopped: at most
  // the request in flight then (two more at least, 3 s apart, had it gone on), and at most a
  // request or two before the watch looked.
  const givenUpAt = requests();
  await sleep(7_000);
  expect(requests() - givenUpAt).toBeLessThanOrEqual(1);
  expect(requests() - terminatedAt).toBeLessThanOrEqual(3);
  expect((await handle.describe()).status.name).toBe('RUNNING');
  await handle.signal(cancelSignal, { reason: 'test' });
  const result = await handle.result();
  expect(result.problems).toEqual([expect.stringMatching(/ended TERMINATED without reporting/)]);
});

test('cancelling a campaign whose domain was terminated: the finish names it instead of waiting it out', async () => {
  h.web.addSite({ host: 'term2.control.test', pages: 30, fanOut: 2 });
  const seed = h.web.url('term2.control.test', '/');
  const handle = await launch(h, { seeds: [seed], scope: { mode: 'same-host' }, politeness: { minDelayMs: 2_000 } });
  const id = handle.workflowId;
  const host = new URL(seed).host;
  while (!pageRequests(h.web.requests()).some((r) => r.host === 'term2.control.test')) await sleep(100);
  await h.client.workflow.getHandle(`${id}/${host}`).terminate('operator stopped this host');
  // Before the campaign's minute check: only the finish can find it.
  await handle.signal(cancelSignal, { reason: 'test' });
  const result = await handle.result();
  expect(result.status).toBe('cancelled');
  expect(result.problems).toEqual([expect.stringMatching(/ended TERMINATED without reporting/)]);
});

test('a campaign no worker runs: list exits cleanly, status and cancel say a worker is missing, and a worker then cancels it', async () => {
  // A task queue nobody polls until the end of this test.
  const queue = `${h.taskQueue}-unpolled`;
  const id = `unpolled-${process.pid}`;
  h.web.addSite({ host: 'idle.control.test', pages: 3, fanOut: 2 });
  const handle = await startCampaign(h.client, queue, {
    campaignId: id,
    seeds: [h.web.url('idle.control.test', '/')],
    fetch: { resolve: h.web.resolveArgs() },
    output: { dir: path.join(h.outDir, id) },
  });
  // `list` as a process: the status query of the unanswering campaign is
  // given up inside the command, and the process exits on its own without a
  // stack trace. Status and cancel run here meanwhile (neither changes what
  // list sees while no worker runs).
  const listing = new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const cmd = crawlerCommand(['list']);
    const child = execFile(cmd.command, cmd.args, { env: process.env, encoding: 'utf8' }, (_err, stdout, stderr) => resolve({ status: child.exitCode, stdout, stderr }));
  });

  const status = await runCrawlerInProcess(['status', id]);
  expect(status.code).toBe(1);
  expect(status.stderr).toContain(`no worker is polling task queue "${queue}": only a worker can answer a status query`);
  expect(status.stderr).toContain(`CRAWLER_TASK_QUEUE=${queue} npm run crawler -- worker`);

  const cancel = await runCrawlerInProcess(['cancel', id]);
  expect(cancel.code).toBe(0);
  expect(cancel.stdout).toBe(
    `cancel sent to ${id}\n` +
      `no worker is polling task queue "${queue}": the campaign stays running until a worker picks up the cancel ` +
      `(start one with: CRAWLER_TASK_QUEUE=${queue} npm run crawler -- worker)\n`,
  );
  expect((await handle.describe()).status.name).toBe('RUNNING');

  const list = await listing;
  expect({ status: list.status, stderr: list.stderr }).toEqual({ status: 0, stderr: '' });
  expect(list.stdout).toMatch(new RegExp(`^${id}\trunning\t`, 'm'));

  // What the hint promises: a worker on that queue carries the cancel out.
  const pool = new WorkerPool({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS!,
    REDIS_URL: process.env.REDIS_URL!,
    CRAWLER_TASK_QUEUE: queue,
    CRAWLER_WORKFLOW_BUNDLE: process.env.CRAWLER_WORKFLOW_BUNDLE ?? '',
  });
  try {
    await pool.start(1);
    expect((await handle.result()).status).toBe('cancelled');
  } finally {
    await pool.stopAll();
  }
});
