// A campaign seeded from a list: read by an activity in batches straight
// into the frontiers (never through workflow input or history), the list's
// hosts defining a same-host scope, bad lines recorded as problems.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { CampaignNudger, NUDGE_HOLD_MS } from '../../activities/nudge';
import type { WorkerRuntime } from '../../activities/runtime';
import { CampaignHosts } from '../../src/redis/campaign-hosts';
import { isSharedSegment } from '../../src/redis/frontier-spill';
import { hostKeys } from '../../src/redis/keys';
import { purgeCampaign } from '../../src/redis/retention';
import { removeSegmentsOf } from '../../src/storage/frontier-segment-store';
import { hostKey } from '../../src/url/normalize';
import { defineScripts } from '../../src/redis/scripts';
import { startCampaign } from '../../src/temporal/campaign-client';
import type { CrawlCampaignInput } from '../../workflows/crawl-campaign';
import { campaignStatusQuery, cancelSignal, pauseCampaignUpdate, resumeCampaignUpdate } from '../../workflows/messages';
import { activityResults, signalsOf } from '../fixtures/histories/coverage';
import { createHarness, fetchedUrls, launch, outputOf, pageRequests, type Harness } from '../support/harness';
import { generateSites } from '../web/test-web';

const EventType = temporal.api.enums.v1.EventType;
type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

jest.setTimeout(240_000);

const LISTED = 24;
/** Hosts of the long list (one page each), read a few per loadSeeds call. */
const LONG = 40;
/** Hosts whose pages are all listed (no links between them), read a few seeds a call: past the first call, into shared seed segments. */
const SEGMENTED = 5;
const PAGES = 4;
let h: Harness;
beforeAll(async () => {
  h = await createHarness('seed-list', { workers: 1 });
  // Listed hosts link to each other and to one host the list does not name.
  for (const spec of generateSites({ count: LISTED, pages: 3, fanOut: 2, crossPerPage: 1, hostPattern: (i) => `s${i}.list.test`, seed: 7 })) h.web.addSite(spec);
  h.web.addSite({ host: 'unlisted.list.test', pages: 3, fanOut: 2 });
  for (let i = 0; i < LONG; i++) h.web.addSite({ host: `l${i}.long.test`, pages: 1, fanOut: 0 });
  h.web.addSite({ host: 'slow.nudge.test', pages: 30, fanOut: 1 });
  for (let i = 0; i < SEGMENTED; i++) h.web.addSite({ host: `g${i}.seg.test`, pages: PAGES, fanOut: 0 });
  defineScripts(h.redis);
});
afterAll(() => h?.close());

test('a gzip seed list of many hosts is crawled in full, its hosts are the scope, bad lines are problems', async () => {
  const hosts = Array.from({ length: LISTED }, (_, i) => `s${i}.list.test`);
  const lines = ['# the seed list', '', ...hosts.map((x) => h.web.url(x, '/')), 'not a url', 'ftp://s0.list.test/'];
  const file = path.join(h.outDir, 'seeds.txt.gz');
  fs.writeFileSync(file, zlib.gzipSync(lines.join('\n')));
  const handle = await launch(h, { seedsFile: file, scope: { mode: 'same-host' }, politeness: { minDelayMs: 50 }, sitemaps: 'off' });
  // The list never enters the workflow's input.
  const started = (await handle.fetchHistory()).events![0].workflowExecutionStartedEventAttributes!.input!.payloads![0].data!;
  expect(Buffer.from(started).toString()).not.toContain(h.web.url('s1.list.test', '/'));
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.hosts).toBe(LISTED);
  const expected = new Set(hosts.flatMap((x) => [...h.web.expectedPages([h.web.url(x, '/')], { hosts: [x] })]));
  expect(new Set(fetchedUrls(await outputOf(h, handle.workflowId).index()))).toEqual(expected);
  // Linked from listed hosts, but not on the list: out of scope.
  expect(pageRequests(h.web.requests()).filter((r) => r.host === 'unlisted.list.test')).toEqual([]);
  expect(result.problems).toEqual(expect.arrayContaining([expect.stringMatching(/^seed not a url: /), expect.stringMatching(/^seed ftp:\/\/s0\.list\.test\/: /)]));
});

test('a seed list that cannot be read ends the campaign with the reason, not a hang', async () => {
  const handle = await launch(h, {
    seeds: [h.web.url('s0.list.test', '/')],
    seedsFile: path.join(h.outDir, 'no-such-list.txt'),
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 50 },
    sitemaps: 'off',
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.problems[0]).toMatch(/^seed list .*no-such-list\.txt: .*/);
  // The inline seed was crawled all the same.
  expect(result.pages).toBe(3);
});

/** Every run of a campaign's chain, first to last, with its history (followed through continue-as-new). */
async function runsOf(h: Harness, workflowId: string, firstRunId: string): Promise<{ runId: string; history: History; input: CrawlCampaignInput }[]> {
  const runs: { runId: string; history: History; input: CrawlCampaignInput }[] = [];
  for (let runId: string | null | undefined = firstRunId; runId;) {
    const history: History = await h.client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events: NonNullable<History['events']> = history.events ?? [];
    const payload = events[0].workflowExecutionStartedEventAttributes!.input!.payloads![0];
    const input = defaultPayloadConverter.fromPayload<CrawlCampaignInput>(payload as Parameters<typeof defaultPayloadConverter.fromPayload>[0]);
    runs.push({ runId, history, input });
    runId = events[events.length - 1].workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
  }
  return runs;
}

test('a seed list too long for one run is read over several, continuing as new between batches: every host crawled, every run short', async () => {
  // Test-only limits (CrawlCampaignInput.testLimits): 2 seeds a call, a new run past 60 events.
  const maxHistoryEvents = 60;
  const hosts = Array.from({ length: LONG }, (_, i) => `l${i}.long.test`);
  const file = path.join(h.outDir, 'long-seeds.txt');
  fs.writeFileSync(file, hosts.map((x) => h.web.url(x, '/')).join('\n'));
  const campaignId = `long-list-${process.pid}-${Date.now().toString(36)}`;
  const input: CrawlCampaignInput & { campaignId: string } = {
    campaignId,
    seedsFile: file,
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 50 },
    sitemaps: 'off',
    fetch: { resolve: h.web.resolveArgs() },
    output: { dir: path.join(h.outDir, campaignId) },
    testLimits: { maxHistoryEvents, seedsPerCall: 2 },
  };
  const handle = await startCampaign(h.client, h.taskQueue, input);
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.hosts).toBe(LONG);
  expect(new Set(fetchedUrls(await outputOf(h, campaignId).index()))).toEqual(new Set(hosts.map((x) => h.web.url(x, '/'))));

  const runs = await runsOf(h, campaignId, handle.firstExecutionRunId);
  // Each run's history: the threshold plus what one loop turn, the batch in flight and nudges meanwhile add.
  const lengths = runs.map((r) => r.history.events!.length);
  process.stderr.write(`long seed list: ${runs.length} runs, history lengths ${lengths.join(', ')}\n`);
  expect({ lengths, over: lengths.filter((n) => n > maxHistoryEvents + 40) }).toEqual({ lengths, over: [] });
  // Runs that began with the list still being read, from where the run before stopped.
  const whileSeeding = runs.filter((r) => r.input.carry?.seeds && !r.input.carry.seeds.done);
  expect(whileSeeding.length).toBeGreaterThanOrEqual(2);
  const cursors = whileSeeding.map((r) => r.input.carry!.seeds!.next.seeds);
  expect(cursors).toEqual([...cursors].sort((a, b) => a - b));
  expect(cursors[0]).toBeGreaterThan(0);
  expect(cursors[cursors.length - 1]).toBeLessThan(LONG);
  // Every seed read once across the runs, each call one bounded batch.
  const calls = runs.flatMap((r) => activityResults<{ seeds: number }>(r.history, 'loadSeeds'));
  expect(calls.reduce((n, c) => n + c.seeds, 0)).toBe(LONG);
  expect(Math.max(...calls.map((c) => c.seeds))).toBe(2);
});

test('crawlMarkReady counts the hosts that became ready, not those already waiting', async () => {
  const hosts = new CampaignHosts(h.redis, `mark-ready-${process.pid}-${Date.now().toString(36)}`);
  expect(await hosts.markReady(['a.test', 'b.test'])).toBe(2);
  // Both wait already: no news (a session linking to them has nobody to nudge for).
  expect(await hosts.markReady(['a.test', 'b.test'])).toBe(0);
  const [, before] = await hosts.readyBatch(2).then((b) => b.map((x) => Number(x.seq)));
  expect(await hosts.markReady(['b.test', 'c.test'])).toBe(1);
  // A host already ready still moves to a newer sequence number (a dispatch in flight must not drop it).
  const after = new Map((await hosts.readyBatch(3)).map((x) => [x.host, Number(x.seq)]));
  expect(after.get('b.test')).toBeGreaterThan(before);
  expect(await hosts.readyCount()).toBe(3);
});

test('many sessions nudging a campaign add about one history event per dispatch round, not one per session and second', async () => {
  // A host crawled slowly keeps the campaign running while the nudges are sent.
  const handle = await launch(h, { seeds: [h.web.url('slow.nudge.test', '/')], scope: { mode: 'same-host' }, politeness: { minDelayMs: 1_000 }, sitemaps: 'off' });
  let campaignKey = '';
  while (!campaignKey) campaignKey = (await handle.query(campaignStatusQuery).catch(() => null))?.campaignKey ?? '';
  const rt = { deps: { redis: h.redis, temporal: h.client }, log: { warn: () => undefined } } as unknown as WorkerRuntime;
  const SESSIONS = 20;
  const nudgers = Array.from({ length: SESSIONS }, () => new CampaignNudger(rt, handle.workflowId, campaignKey));
  const from = Date.now();
  // Each "session" has news ten times a second for four seconds: at most one nudge a second each.
  while (Date.now() - from < 4_000) {
    for (const n of nudgers) n.nudge();
    await new Promise((r) => setTimeout(r, 100));
  }
  await Promise.all(nudgers.map((n) => n.flush()));
  await handle.signal(cancelSignal, {});
  await handle.result();
  const history = await handle.fetchHistory();
  const nudges = signalsOf(history).filter((s) => s === 'nudge').length;
  const rounds = activityResults(history, 'dispatchHosts').length;
  const events = history.events ?? [];
  const span = Number(events[events.length - 1].eventTime!.seconds) - Number(events[0].eventTime!.seconds) + 1;
  // Each nudge after the first needs a round (or the key's expiry) since the one before.
  const bound = rounds + 1 + Math.ceil((span * 1000) / NUDGE_HOLD_MS);
  process.stderr.write(`nudges: ${SESSIONS} sessions x 4 s sent ${nudges} nudge signals over ${rounds} dispatch rounds (${events.length} events)\n`);
  expect({ nudges, within: nudges <= bound }).toEqual({ nudges, within: true });
  expect(events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED).length).toBeLessThan(SESSIONS);
});

/** The list of the SEGMENTED hosts: page after page, host after host, one page listed twice and every host's root again at the end. */
function segmentedList(): { lines: string[]; hosts: string[]; urls: string[] } {
  const hosts = Array.from({ length: SEGMENTED }, (_, i) => `g${i}.seg.test`);
  const lines: string[] = [];
  for (let p = 0; p < PAGES; p++) for (const x of hosts) lines.push(h.web.url(x, p === 0 ? '/' : `/page/${p}`));
  lines.splice(7, 0, h.web.url('g1.seg.test', '/page/1'));
  lines.push(...hosts.map((x) => h.web.url(x, '/')));
  const urls = hosts.flatMap((x) => Array.from({ length: PAGES }, (_, p) => h.web.url(x, p === 0 ? '/' : `/page/${p}`)));
  return { lines, hosts, urls };
}

/** Objects under the campaign output's frontier/ (spilled tails, shared seed segments). */
function frontierObjects(campaignId: string): string[] {
  const dir = path.join(outputOf(h, campaignId).dir, 'frontier');
  return fs.existsSync(dir) ? (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.endsWith('.seg') || f.endsWith('.seeds')) : [];
}

/** Starts a campaign on the segmented list, paused at once, and resolves once its list is read: its handle and key. */
async function seededWhilePaused(name: string) {
  const { lines } = segmentedList();
  const file = path.join(h.outDir, `${name}.txt`);
  fs.writeFileSync(file, lines.join('\n'));
  const handle = await launch(h, {
    campaignId: `${name}-${process.pid}-${Date.now().toString(36)}`,
    seedsFile: file,
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 20 },
    sitemaps: 'off',
    // Test-only: 3 seeds a call, so every call past the first lands a chunk of its own.
    testLimits: { seedsPerCall: 3 },
  });
  await handle.executeUpdate(pauseCampaignUpdate);
  for (;;) {
    const loads = activityResults<{ done: boolean }>(await handle.fetchHistory(), 'loadSeeds');
    if (loads.some((l) => l.done)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  let campaignKey = '';
  while (!campaignKey) campaignKey = (await handle.query(campaignStatusQuery)).campaignKey;
  return { handle, campaignKey };
}

test('a seed list past its first call lands in shared seed segments: every seed fetched once, nothing left under frontier/ at the end', async () => {
  const { hosts, urls } = segmentedList();
  const { handle, campaignKey } = await seededWhilePaused('seg-list');
  // Read while paused: the hosts' seeds wait in shared segments (one object a call), registered with their hosts.
  const objects = frontierObjects(handle.workflowId);
  expect(objects.filter((f) => f.endsWith('.seeds')).length).toBeGreaterThanOrEqual(5);
  for (const x of hosts) expect((await h.redis.zrange(hostKeys(campaignKey, hostKey(h.web.url(x, '/'))).spill, 0, -1)).some(isSharedSegment)).toBe(true);
  await handle.executeUpdate(resumeCampaignUpdate);
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.pages).toBe(urls.length);
  // Each listed page fetched once, whether listed once or twice.
  const fetched = pageRequests(h.web.requests())
    .filter((r) => hosts.includes(r.host))
    .map((r) => h.web.url(r.host, r.path));
  expect(fetched.sort()).toEqual([...urls].sort());
  expect(new Set(fetchedUrls(await outputOf(h, handle.workflowId).index()))).toEqual(new Set(urls));
  // The campaign's end removed its segments, the shared ones too.
  expect(frontierObjects(handle.workflowId)).toEqual([]);
});

test("purge removes a campaign's shared seed segments from its output with its keys", async () => {
  const { handle, campaignKey } = await seededWhilePaused('seg-purge');
  const objects = frontierObjects(handle.workflowId).length;
  expect(objects).toBeGreaterThan(0);
  // What `crawler purge --force` does.
  expect(await removeSegmentsOf(h.redis, campaignKey)).toBe(objects);
  await purgeCampaign(h.redis, campaignKey);
  expect(frontierObjects(handle.workflowId)).toEqual([]);
  // Run again with the keys gone: the store is no longer known, nothing to do.
  expect(await removeSegmentsOf(h.redis, campaignKey)).toBeNull();
  await handle.signal(cancelSignal, {});
  await handle.result().catch(() => undefined);
});
