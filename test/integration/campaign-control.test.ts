// Pause, resume, cancel and the status query, through the real CLI commands
// and through Temporal directly.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { campaignStatusQuery } from '../../workflows/messages';
import { generateSites } from '../web/test-web';
import { createHarness, launch, pageRequests, sleep, type Harness } from '../support/harness';
import { crawlerCommand } from '../../src/cli/crawler-command';

jest.setTimeout(240_000);
const run = promisify(execFile);
const crawler = (...args: string[]) => {
  const cmd = crawlerCommand(args);
  return run(cmd.command, cmd.args, { env: process.env });
};

let h: Harness;
beforeAll(async () => {
  h = await createHarness('control', { workers: 1 });
  for (const spec of generateSites({ count: 3, pages: 40, fanOut: 3, hostPattern: (i) => `p${i}.control.test`, seed: 11 })) h.web.addSite(spec);
});
afterAll(() => h?.close());

test('pause stops requests, resume continues, status reports per-domain progress, cancel ends with a summary', async () => {
  const seed = h.web.url('p0.control.test', '/');
  const handle = await launch(h, { seeds: [seed], scope: { mode: 'any' }, politeness: { minDelayMs: 300 }, idleCloseMs: 60_000 });
  const id = handle.workflowId;
  while (pageRequests(h.web.requests()).length < 6) await sleep(100);

  await crawler('pause', id);
  await sleep(1_500); // in-flight steps finish
  const paused = pageRequests(h.web.requests()).length;
  await sleep(2_500);
  expect(pageRequests(h.web.requests()).length).toBe(paused);
  const st = await handle.query(campaignStatusQuery);
  expect(st.paused).toBe(true);

  await crawler('resume', id);
  const t0 = Date.now();
  while (pageRequests(h.web.requests()).length <= paused && Date.now() - t0 < 30_000) await sleep(100);
  expect(pageRequests(h.web.requests()).length).toBeGreaterThan(paused);

  // Status: per-host progress, through the CLI as JSON.
  await sleep(8_000); // progress reports come every 25 pages or on state changes
  const { stdout } = await crawler('status', id, '--json');
  const status = JSON.parse(stdout);
  expect(status.campaignId).toBe(id);
  expect(status.hosts.length).toBeGreaterThanOrEqual(1);
  expect(status.hosts.map((x: { host: string }) => x.host)).toContain(`p0.control.test:${h.web.port}`);
  expect(status.totals.fetched).toBeGreaterThan(0);

  await crawler('cancel', id);
  const result = await handle.result();
  expect(result.status).toBe('cancelled');
  const atCancel = pageRequests(h.web.requests()).length;
  expect(result.pages).toBeLessThan(h.web.expectedPages([seed]).size);
  await sleep(2_000);
  expect(pageRequests(h.web.requests()).length).toBe(atCancel);
  // Every domain workflow of the campaign closed with it.
  const open = [];
  for await (const wf of h.client.workflow.list({ query: `CrawlCampaign = '${id}' AND ExecutionStatus = 'Running'` })) open.push(wf.workflowId);
  expect(open).toEqual([]);
});

test('a status query on an unknown campaign is a clear error', async () => {
  await expect(crawler('status', 'no-such-campaign')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('no campaign no-such-campaign') });
});
