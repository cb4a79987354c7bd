// Operators steering running campaigns through validated updates: the rate
// of one host, pausing one host, more seeds, a lower page budget, `crawler
// list` — through the real CLI, and through Temporal for the rejections.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { domainWorkflowId } from '../../workflows/ids';
import { addSeedsUpdate, campaignStatusQuery, domainStatusQuery, pauseHostUpdate, setBudgetsUpdate, setConcurrencyUpdate, setPolitenessUpdate } from '../../workflows/messages';
import { generateSites, type RequestRecord } from '../web/test-web';
import { createHarness, fetchedUrls, launch, outputOf, pageRequests, sleep, type CampaignHandle, type Harness } from '../support/harness';
import { crawlerInProcess } from '../support/in-process-cli';
import { CampaignHosts } from '../../src/redis/campaign-hosts';

jest.setTimeout(120_000);
// The CLI's commands run in this process (the same program and exit codes, without a process's second of start-up).
const crawler = (...args: string[]) => crawlerInProcess(args);

const site = (host: string, pages: number) => generateSites({ count: 1, pages, fanOut: 3, crossPerPage: 0, hostPattern: () => host, seed: 5 })[0];

let h: Harness;
beforeAll(async () => {
  h = await createHarness('steering', { workers: 1 });
  h.web.addSite(site('a0.steer.test', 8)); // slowed down by an operator
  h.web.addSite(site('a1.steer.test', 15)); // paused and resumed on its own
  h.web.addSite(site('n0.steer.test', 6)); // only reachable as an added seed
  h.web.addSite(site('x.elsewhere.test', 3)); // out of scope
  h.web.addSite(site('b0.steer.test', 60)); // the budget campaign
  for (let i = 0; i < CONCURRENCY_HOSTS; i++) h.web.addSite(site(`c${i}.steer.test`, 5)); // the concurrency campaign
});
const CONCURRENCY_HOSTS = 5;
afterAll(() => h?.close());

const key = (host: string) => `${host}:${h.web.port}`;
const pagesOf = (host: string, reqs: RequestRecord[] = h.web.requests()) => pageRequests(reqs).filter((r) => r.host === host);

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 45_000): Promise<void> {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The reason a rejected update gives, or a failure if it was accepted. */
async function rejection(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    return (err as WorkflowUpdateFailedError).cause?.message ?? '';
  }
  throw new Error('the update was accepted');
}

test('rate of one host, rejected values, pause one host, add seeds, list', async () => {
  const seeds = [h.web.url('a0.steer.test', '/'), h.web.url('a1.steer.test', '/')];
  const handle: CampaignHandle = await launch(h, {
    seeds,
    scope: { mode: 'domains', domains: ['steer.test'] },
    politeness: { minDelayMs: 200 },
    sitemaps: 'off',
  });
  const id = handle.workflowId;
  const a1 = h.client.workflow.getHandle(domainWorkflowId(id, key('a1.steer.test')));
  await until('both hosts crawling', () => pagesOf('a0.steer.test').length >= 2 && pagesOf('a1.steer.test').length >= 2);

  // Slow a0 down: from its next pause on, 1.5 s between requests.
  expect(await handle.executeUpdate(setPolitenessUpdate, { args: [{ host: key('a0.steer.test'), minDelayMs: 1_500 }] })).toEqual({ host: key('a0.steer.test'), minDelayMs: 1_500 });
  const tRate = performance.timeOrigin + performance.now();
  // Pause a1 alone: a0 goes on, a1 gets nothing.
  expect(await handle.executeUpdate(pauseHostUpdate, { args: [{ host: 'a1.steer.test' }] })).toEqual({ host: key('a1.steer.test'), paused: true });
  // The host table in Redis (what `crawler status` shows) follows within a session's control check.
  const campaignKey = (await handle.query(campaignStatusQuery)).campaignKey;
  const records = new CampaignHosts(h.redis, campaignKey);
  await until('a0 to show the operator delay', async () => (await records.get(key('a0.steer.test')))?.reason === 'operator set 1500 ms for this host');
  expect(await records.get(key('a0.steer.test'))).toMatchObject({ delayMs: 1_500 });
  await until('a1 to be paused', async () => (await a1.query(domainStatusQuery)).paused);
  expect(await a1.query(domainStatusQuery)).toMatchObject({ delayMs: 200, delayReason: 'minimum delay 200 ms' });
  // State 'paused' is reached only between steps: nothing is in flight any more.
  await until('a1 to stand still', async () => (await a1.query(domainStatusQuery)).state === 'paused');
  const a1Paused = pagesOf('a1.steer.test').length;
  expect(a1Paused).toBeLessThan(15);
  const a0AtPause = pagesOf('a0.steer.test').length;

  // Invalid values are refused with the validator's words, and change nothing.
  expect(await rejection(handle.executeUpdate(setPolitenessUpdate, { args: [{ minDelayMs: -1 }] }))).toMatch(/minDelayMs must be a whole number .* 0 to 3600000 \(got -1\)/);
  expect(await rejection(handle.executeUpdate(setPolitenessUpdate, { args: [{ minDelayMs: 4_000_000, host: key('a0.steer.test') }] }))).toMatch(/got 4000000/);
  expect(await rejection(handle.executeUpdate(setPolitenessUpdate, { args: [{ minDelayMs: 500, host: 'nowhere.test' }] }))).toMatch(
    /host "nowhere.test" is not known to this campaign/,
  );
  expect(await rejection(handle.executeUpdate(setBudgetsUpdate, { args: [{ maxPages: 2.5 }] }))).toMatch(/maxPages must be a whole number ≥ 0, or null/);
  expect(await rejection(handle.executeUpdate(addSeedsUpdate, { args: [{ seeds: [] }] }))).toMatch(/at least one seed/);
  expect(await rejection(handle.executeUpdate(pauseHostUpdate, { args: [{ host: 'nowhere.test' }] }))).toMatch(/not known/);
  // Through the CLI: the campaign's validator speaks (the CLI cannot know the hosts), exit code 2.
  await expect(crawler('set-rate', id, '--delay-ms', '500', '--host', 'nowhere.test')).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining('host "nowhere.test" is not known to this campaign'),
  });
  await expect(crawler('set-rate', id, '--delay-ms', 'soon')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('minDelayMs must be a whole number') });
  // Two changes went through (settings versions 2 and 3); the rejected ones changed nothing.
  expect((await handle.query(campaignStatusQuery)).steering).toEqual({
    configVersion: 3,
    minDelayMs: 200,
    pausedHosts: 1,
    budgets: { maxPages: null, maxDepth: null },
    maxActiveHosts: null,
  });
  expect(await records.hostDelays()).toEqual({ [key('a0.steer.test')]: 1_500 });
  expect(await records.pausedHosts()).toEqual([key('a1.steer.test')]);
  // The memo (Web UI) shows the settings in force, the operator's changes included.
  const memo = (await handle.describe()).memo as Record<string, unknown>;
  expect(memo).toMatchObject({ minDelayMs: 200, paused: false });
  // Unlimited concurrency: upserting null removes the memo field.
  expect(memo.maxActiveHosts ?? null).toBeNull();

  await until('a0 to go on while a1 is paused', () => pagesOf('a0.steer.test').length >= a0AtPause + 2);
  expect(pagesOf('a1.steer.test').length).toBe(a1Paused);

  // More seeds: one new host in scope, one out of scope, one unusable, one known;
  // two of them from a list file (gzip, with a comment).
  const list = path.join(os.tmpdir(), `steering-seeds-${process.pid}.txt`);
  fs.writeFileSync(list, zlib.gzipSync(`# added from a file\n${h.web.url('x.elsewhere.test', '/')}\n\nftp://a0.steer.test/\n`));
  const { stdout: seedOut } = await crawler('add-seeds', id, '--json', h.web.url('n0.steer.test', '/'), seeds[0], '--file', list).finally(() => fs.rmSync(list, { force: true }));
  const added = JSON.parse(seedOut);
  expect(added.accepted).toEqual([h.web.url('n0.steer.test', '/')]);
  expect(added.rejected.map((r: { seed: string }) => r.seed).sort()).toEqual([h.web.url('x.elsewhere.test', '/'), 'ftp://a0.steer.test/', seeds[0]].sort());
  expect(added.rejected.find((r: { seed: string }) => r.seed.startsWith('ftp:')).reason).toMatch(/Unsupported scheme/);
  expect(added.rejected.find((r: { seed: string }) => r.seed.includes('elsewhere')).reason).toMatch(/out of the campaign's scope/);
  expect(added.rejected.find((r: { seed: string }) => r.seed === seeds[0]).reason).toMatch(/already seen/);

  // The campaign is listed while it runs.
  const { stdout: listOut } = await crawler('list', '--json');
  const row = JSON.parse(listOut).find((r: { campaignId: string }) => r.campaignId === id);
  expect(row).toMatchObject({ status: 'RUNNING', state: 'running' });
  expect(row.pages).toBeGreaterThan(0);

  // a1 is still paused while the added host is crawled; resumed, everything completes.
  await until('the added host to be crawled', () => pagesOf('n0.steer.test').length >= 1);
  expect(pagesOf('a1.steer.test').length).toBe(a1Paused);
  const { stdout: resumeOut } = await crawler('resume', id, '--host', key('a1.steer.test'));
  expect(resumeOut).toContain(`${key('a1.steer.test')} resumed`);
  const result = await handle.result();
  expect(result.status).toBe('completed');

  const fetched = new Set(fetchedUrls(await outputOf(h, id).index()));
  for (const host of ['a0.steer.test', 'a1.steer.test', 'n0.steer.test']) {
    for (const url of h.web.expectedPages([h.web.url(host, '/')], { hosts: [host] })) expect(fetched).toContain(url);
  }
  expect(pagesOf('x.elsewhere.test')).toEqual([]);

  // a0's requests after the change are ≥ 1.5 s apart (the first gap may still be the old pause).
  const a0After = pagesOf('a0.steer.test').filter((r) => r.t > tRate);
  expect(a0After.length).toBeGreaterThanOrEqual(3);
  for (let i = 2; i < a0After.length; i++) expect(a0After[i].t - a0After[i - 1].t).toBeGreaterThanOrEqual(1_450);
  // a1 kept the campaign's pace, not a0's new one.
  const a1Times = pagesOf('a1.steer.test').map((r) => r.t);
  expect(a1Times.slice(1).some((t, i) => t - a1Times[i] < 1_450)).toBe(true);

  // Closed campaigns are listed with --all, with their final page count.
  await until('the closed campaign in visibility', async () => {
    const { stdout } = await crawler('list', '--all', '--json');
    const r = JSON.parse(stdout).find((x: { campaignId: string }) => x.campaignId === id);
    return r?.status === 'COMPLETED' && r.state === 'completed' && r.pages === result.pages;
  });
});

test('a lower page budget stops a running campaign at it; set-rate campaign-wide', async () => {
  const handle = await launch(h, { seeds: [h.web.url('b0.steer.test', '/')], politeness: { minDelayMs: 150 }, sitemaps: 'off' });
  const id = handle.workflowId;
  const b0 = h.client.workflow.getHandle(domainWorkflowId(id, key('b0.steer.test')));
  await until('the campaign to fetch a few pages', () => pagesOf('b0.steer.test').length >= 3);
  // Paused, so the CLI's start-up time does not decide how many pages are left.
  await handle.signal('pause');
  await until('b0 to be paused', async () => (await b0.query(domainStatusQuery)).paused);
  await sleep(500);
  const atPause = pagesOf('b0.steer.test').length;

  expect(await rejection(handle.executeUpdate(setBudgetsUpdate, { args: [{ maxPages: -1 }] }))).toMatch(/maxPages must be a whole number/);
  await expect(crawler('set-budget', id, '--max-pages', 'lots')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('maxPages must be a whole number') });
  expect((await handle.query(campaignStatusQuery)).steering?.budgets).toEqual({ maxPages: null, maxDepth: null });

  const budget = atPause + 3;
  const before = (await handle.query(campaignStatusQuery)).steering.configVersion;
  const { stdout } = await crawler('set-budget', id, '--max-pages', String(budget), '--max-depth', 'none');
  expect(stdout).toContain(`maxPages ${budget}, maxDepth unlimited (settings version ${before + 1})`);
  const { stdout: rateOut } = await crawler('set-rate', id, '--delay-ms', '300');
  expect(rateOut).toContain('300 ms campaign-wide');

  await handle.signal('resume');
  // The paused host looks again at the resume, with the new settings.
  await until('b0 to show the campaign-wide operator delay', async () => (await b0.query(domainStatusQuery)).delayReason === 'operator set 300 ms');
  const result = await handle.result();
  expect(result.status).toBe('budget-exhausted');
  expect(result.pages).toBeLessThanOrEqual(budget);
  expect(pagesOf('b0.steer.test').length).toBeLessThanOrEqual(budget);
  expect(fetchedUrls(await outputOf(h, id).index()).length).toBeLessThanOrEqual(budget);
});

/** [first, last] request time of each host; robots.txt and sitemaps included, as they are requests too. */
function spans(hosts: string[]): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  for (const host of hosts) {
    const ts = h.web
      .requests()
      .filter((r) => r.host === host)
      .map((r) => r.t);
    out.set(host, [Math.min(...ts), Math.max(...ts)]);
  }
  return out;
}
const overlaps = (a: [number, number], b: [number, number]) => a[0] < b[1] && b[0] < a[1];

test('concurrency: at most N hosts at once, steerable while running; bad values rejected', async () => {
  const hosts = Array.from({ length: CONCURRENCY_HOSTS }, (_, i) => `c${i}.steer.test`);
  const handle = await launch(h, {
    seeds: hosts.map((x) => h.web.url(x, '/')),
    scope: { mode: 'domains', domains: ['steer.test'] },
    // Slow enough that hosts are still waiting when the raise lands, however long the CLI takes to start
    // (with one slot, the two last hosts are left until a third host's five pages are done).
    politeness: { minDelayMs: 600, maxActiveHosts: 1 },
    sitemaps: 'off',
  });
  const id = handle.workflowId;
  expect((await handle.query(campaignStatusQuery)).steering?.maxActiveHosts).toBe(1);

  // Rejected, through Temporal and through the CLI: nothing changes.
  expect(await rejection(handle.executeUpdate(setConcurrencyUpdate, { args: [{ maxActiveHosts: 0 }] }))).toMatch(/maxActiveHosts must be a whole number from 1/);
  expect(await rejection(handle.executeUpdate(setConcurrencyUpdate, { args: [{ maxActiveHosts: 2, host: key(hosts[0]!) } as never] }))).toMatch(/one request at a time/);
  await expect(crawler('set-concurrency', id, '--max-hosts', '1.5')).rejects.toMatchObject({ code: 2 });

  // One host at a time: the second starts only once the first is done.
  await until('two hosts crawled', () => hosts.filter((x) => pagesOf(x).length === 5).length >= 2, 90_000);
  const done = hosts.filter((x) => pagesOf(x).length === 5);
  expect(overlaps(spans(done).get(done[0]!)!, spans(done).get(done[1]!)!)).toBe(false);
  expect(hosts.filter((x) => h.web.requests().some((r) => r.host === x)).length).toBeLessThanOrEqual(3);

  // Raised to three: the remaining hosts crawl side by side.
  const { stdout } = await crawler('set-concurrency', id, '--max-hosts', '3');
  expect(stdout).toBe(`${id}: at most 3 host(s) crawled at once\n`);
  expect((await handle.query(campaignStatusQuery)).steering?.maxActiveHosts).toBe(3);
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.pages).toBe(CONCURRENCY_HOSTS * 5);
  // Three hosts were left after the first two (one at a time until then, checked above); with three slots some of them crawled side by side.
  const rest = hosts.filter((x) => !done.includes(x));
  const s = spans(rest);
  const pairs = rest.flatMap((a, i) => rest.slice(i + 1).map((b) => [a, b] as const));
  expect(pairs.some(([a, b]) => overlaps(s.get(a)!, s.get(b)!))).toBe(true);
}, 180_000);

test("an update that arrives with the campaign's first workflow task is answered", async () => {
  // Update-with-start puts the update in the very first workflow task, where
  // handlers run inside setHandler, before the rest of the workflow's setup.
  const campaignId = `first-task-${process.pid}-${Date.now().toString(36)}`;
  const start = new WithStartWorkflowOperation('crawlCampaign', {
    workflowId: campaignId,
    taskQueue: h.taskQueue,
    workflowIdConflictPolicy: 'FAIL',
    args: [
      {
        campaignId,
        seeds: [h.web.url('c0.steer.test', '/')],
        politeness: { minDelayMs: 100 },
        sitemaps: 'off',
        fetch: { resolve: h.web.resolveArgs() },
        output: { dir: path.join(h.outDir, campaignId) },
      },
    ],
  });
  const answer = await h.client.workflow.executeUpdateWithStart(setConcurrencyUpdate, { args: [{ maxActiveHosts: 2 }], startWorkflowOperation: start });
  expect(answer).toEqual({ maxActiveHosts: 2 });
  const handle = await start.workflowHandle();
  expect((await handle.query(campaignStatusQuery)).steering?.maxActiveHosts).toBe(2);
  expect((await handle.result()).status).toBe('completed');
}, 120_000);
