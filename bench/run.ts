// `npm run bench`: throughput and politeness figures on the local test web,
// with the embedded stack on free ports. Prints figures; asserts nothing.
//   npm run bench -- [--workers 2] [--only a,b,c,d]   (c, d, e, a2, l, k, s, r, p, v, m only run when asked for)
//   npm run bench -- --server cluster --only s          (on `crawler cluster up`'s topology instead of the dev server)
//   npm run bench -- --only s --crawlee [--crawlee-storage memory,disk] [--crawlee-concurrency 200] [--crawlee-min-concurrency 1] [--crawlee-ignore-robots] [--crawlee-only]
//   npm run bench -- --only p --crawlee --scrapy [--scrapy-concurrency 200] [--hosts 8]   (p: real pages, a Debian package's HTML manual)
//   npm run bench -- --only p --workers 1 --cpu-prof   (workers write CPU profiles; bench/profile-summary.ts reads them)
//   npm run bench -- --only v --crawlee [--quiet-ms 500] [--pages-at-once 4] [--hosts 10]   (rendering: ours in render: browser, Crawlee's PlaywrightCrawler)
//   npm run bench -- --only k --workers 2 --crawlee [--hosts 3000] [--max-active-hosts 300]   (many one-page hosts; --hosts sets any scenario's host count)
//   npm run bench -- --only a --hosts 20 --pages 600   (--pages sets a generated scenario's pages a host: long hosts show what sessions cost)
//   npm run bench -- --only floor [--hosts 2000]   (workflows that do nothing: the least a host workflow costs the server and a worker)
//   npm run bench -- --only b --out-store s3 [--upload-age-ms 2000]   (the archive in a bucket of a SeaweedFS server started for the run, not a folder)
//   npm run bench -- --only m [--hosts 100 --pages 500] [--frontier-urls 1000000 --frontier-hosts 10000] [--memory-runs crawl,frontier] [--spill-above N|off]
//       [--seen bloom [--seen-rate 0.01]]
//       (Redis memory, issue 40: bytes a crawled page kept and at peak, a seen URL, a host, by key family; then bytes a waiting URL of a seeded frontier;
//       with --seen bloom the campaigns' seen sets are Bloom filters, and the crawl says how many pages it missed beside the expected skips)
// With --crawlee, Crawlee's CheerioCrawler (PlaywrightCrawler for v) crawls a
// fresh copy of the same test web after ours, and with --scrapy a Scrapy
// CrawlSpider after it (not for v: Scrapy renders nothing); one JSON line per
// scenario holds them all and ours ÷ each, and a table of the same goes to stderr.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import type { Redis } from 'ioredis';
import { temporal } from '@temporalio/proto';
import { processSetting } from '../src/config/env';
import { SESSION_HEARTBEAT } from '../src/config/retry-policy';
import { DOMAIN_WORKFLOWS } from '../src/temporal/workflow-types';
import { LOCAL_DIR } from '../src/stack/paths';
import { clusterDown, clusterUp } from '../src/worker/cluster';
import { startStack } from '../src/stack/stack';
import { connectClient } from '../src/temporal/connect';
import { startCampaign } from '../src/temporal/campaign-client';
import { ensureWorkflowBundle } from '../src/worker/workflow-bundle';
import { WorkerPool } from '../src/worker/worker-pool';
import { workerCommand, workerNodeArgs } from '../src/worker/worker-bundle';
import { generateSites, startTestWeb, type LatencySpec, type TestWeb } from '../test/web/test-web';
import { createRedis } from '../src/redis/client';
import { hostKeys } from '../src/redis/keys';
import type { RedisLike } from '../src/redis/scripts';
import { hostKey } from '../src/url/normalize';
import { runCrawlee, type CrawleeFigures, type CrawleeStorage } from './crawlee';
import { SHARED_STATIC_PATHS, sharedStaticSite } from './shared-static-site';
import { folderPages, folderSite, loadFolder, type FolderFiles } from '../test/web/folder-site';
import { CORPUS_PACKAGE, ensureCorpus } from './corpus';
import { writeSeedList } from './seed-list';
import { memoryCrawlRun, memoryFrontierRun } from './memory-scenarios';
import { ensureScrapy, runScrapy, SCRAPY_VERSION, type ScrapyFigures } from './scrapy';
import { spaSite } from '../test/web/spa-site';
import { findOrInstallChromium } from '../src/stack/chromium';
import { renderFigures } from './render-figures';
import { identityPid, tallySessions, type WorkerSessions } from './session-placement';
import { workflowFloorRun } from './workflow-floor';
import { folderSealedAt, openBenchOutput, openSealedIndex, outputBytes, sealedIndexFigures, watchBucket, type BenchOutput, type OutStore } from './output-store';
import {
  cpuSeconds,
  embedFigures,
  firstTaskFigures,
  waitFigures,
  logFigures,
  pacedRequests,
  peakRssMb,
  politeness,
  politenessCeiling,
  politenessFigures,
  redisCommandsPerPage,
  treeCpuSeconds,
  treePssMb,
  treeRssMb,
  CpuGroup,
} from './figures';

interface Scenario {
  name: string;
  hosts: number;
  pages: number;
  /** Delay between two requests to one host. */
  delayMs: number;
  /**
   * Where the delay comes from: the campaign's politeness.minDelayMs (default),
   * or every site's robots.txt `Crawl-delay` (the campaign's minimum is then 0).
   * Crawlee reads no Crawl-delay: it always gets the delay as sameDomainDelaySecs.
   */
  delayFrom?: 'campaign' | 'robots';
  /** Server latency of the test web. */
  latency?: LatencySpec;
  fanOut?: number;
  /** Campaign page budget; the scenario then measures a crawl cut short on purpose. */
  maxPages?: number;
  /** Not run by default (long); ask for it with --only. */
  optIn?: boolean;
  sitemaps?: 'off' | 'robots';
  /**
   * The sites: generated link lists (default), pages sharing their static
   * files (bench/shared-static-site.ts), a real documentation corpus
   * (bench/corpus.ts) served from a folder on every host, whose `pages` is
   * what the folder holds (set once the corpus is there), or client-rendered
   * sites (test/web/spa-site.ts: a shell whose script builds the page from JSON).
   */
  site?: 'generated' | 'shared-static' | 'corpus' | 'spa';
  /** Our crawl renders every page in Chromium (render: browser); Crawlee runs its PlaywrightCrawler on the same Chromium. */
  render?: 'browser';
  /** browser.* settings of our campaign (bench options --quiet-ms, --pages-at-once), to show what they change. */
  browser?: { quietMs?: number; maxPagesAtOnce?: number };
  /** The campaign's requisites setting; a shared-static scenario runs once with each. */
  requisites?: 'on' | 'off';
  /** Measures Redis memory (bench/memory-scenarios.ts) instead of throughput: the crawl, then a seeded frontier. */
  memory?: boolean;
  /** Generated sites: a paragraph of this many words on every page (test/web/test-web.ts), so the content index gets SimHash entries. */
  words?: number;
}

const SCENARIOS: Record<string, Scenario> = {
  a: { name: '(a) 200 hosts × 20 pages, 1 s delay', hosts: 200, pages: 20, delayMs: 1000 },
  b: { name: '(b) 100 hosts × 50 pages, 0 delay', hosts: 100, pages: 50, delayMs: 0 },
  c: { name: '(c) 2000 hosts × 3 pages, 1 s delay', hosts: 2000, pages: 3, delayMs: 1000, optIn: true },
  // (a) with a quarter of the hosts: what the crawler achieves when the dev
  // server has timer capacity to spare (docs/benchmarks-history.md, "the ceiling").
  e: { name: '(e) 50 hosts × 20 pages, 1 s delay', hosts: 50, pages: 20, delayMs: 1000, optIn: true },
  d: { name: '(d) one host, 200k pages, fan-out 20 (frontier ≥ 100k), first 10k pages', hosts: 1, pages: 200_000, fanOut: 20, delayMs: 0, maxPages: 10_000, optIn: true },
  // Real-web shapes: a server that takes its time, and the delay asked for by robots.txt.
  a2: {
    name: '(a′) 300 hosts × 21 pages, robots.txt Crawl-delay 1, 100 ms latency',
    hosts: 300,
    pages: 21,
    delayMs: 1000,
    delayFrom: 'robots',
    latency: { fixedMs: 100 },
    optIn: true,
  },
  l: { name: '(l) 500 hosts × 10 pages, 1 s delay, 300 ms–1 s latency', hosts: 500, pages: 10, delayMs: 1000, latency: { fixedMs: 300, randomMs: 700, seed: 1 }, optIn: true },
  // A campaign of many hosts (issue: a campaign of any size): one page each, the campaign's bookkeeping is the load.
  k: { name: '(k) 10,000 hosts × 1 page, 1 s delay', hosts: 10_000, pages: 1, delayMs: 1000, sitemaps: 'off', optIn: true },
  // Small enough to try the bench (and Crawlee beside it) in seconds.
  s: { name: '(s) 5 hosts × 10 pages, 1 s delay, 100 ms latency', hosts: 5, pages: 10, delayMs: 1000, latency: { fixedMs: 100 }, optIn: true },
  // Requisites on, then off, on pages that share their stylesheets, scripts, images and font: what embeds cost per page.
  r: { name: '(r) 4 hosts × 20 pages sharing 12 static files, 1 s delay', hosts: 4, pages: 20, delayMs: 1000, site: 'shared-static', optIn: true },
  // Real pages, bound by CPU: a Debian package's HTML manual on 8 hosts, no delay (issue 27).
  p: { name: `(p) 8 hosts × Debian's ${CORPUS_PACKAGE} HTML, no delay`, hosts: 8, pages: 0, delayMs: 0, site: 'corpus', optIn: true },
  // Rendering (issue 26): client-rendered sites, every page rendered in Chromium by both crawlers.
  // 10 hosts × 20 pages at 1 s: enough hosts for several pages to render at once (ours: up to
  // browser.maxPagesAtOnce per worker), few enough that neither crawler's browsers saturate two
  // cores, and a crawl of about a minute, so a browser's start is a small part of it.
  v: { name: '(v) 10 client-rendered hosts × 20 pages, 1 s delay, rendered in Chromium', hosts: 10, pages: 20, delayMs: 1000, site: 'spa', render: 'browser', optIn: true },
  // Redis memory (issue 40): 30,000 distinct pages crawled in a minute or two on two cores; `--pages 500` makes it 50,000.
  // Pages of 80 words of their own: a SimHash each (the crawler takes none under 50 words), so the content index holds band entries as for real pages.
  m: { name: '(m) 100 hosts × 300 pages of 80 words, no delay, Redis memory', hosts: 100, pages: 300, delayMs: 0, words: 80, memory: true, optIn: true },
};

/** The corpus's files and its pages, read once for every run of a corpus scenario. */
let corpusSite: { files: FolderFiles; pages: string[]; label: string } | null = null;

/** A scenario ready to run: a corpus one gets its corpus (downloaded on first use) and its page count. */
function prepare(s: Scenario): Scenario {
  if (s.site !== 'corpus') return s;
  if (!corpusSite) {
    const corpus = ensureCorpus((m) => process.stderr.write(`${m}\n`));
    const files = loadFolder(corpus.dir);
    corpusSite = { files, pages: folderPages(files), label: `${corpus.package} ${corpus.version}` };
  }
  return { ...s, name: `${s.name} (${corpusSite.label}, ${corpusSite.pages.length} pages a host)`, pages: corpusSite.pages.length };
}

/** The runs of a scenario: a shared-static one with requisites on and off, any other once. */
function runsOf(s: Scenario): Scenario[] {
  if (s.site !== 'shared-static') return [s];
  return (['on', 'off'] as const).map((requisites) => ({ ...s, name: `${s.name}, requisites ${requisites}`, requisites }));
}

/**
 * A fresh test web for one crawler's run of a scenario: the same seeds, hosts
 * and pages every time. Each host is its own registrable domain
 * (`bench<i>.test`), because Crawlee keeps its delay per registrable domain:
 * `b<i>.bench.test` would make every site one domain to it.
 */
async function scenarioWeb(s: Scenario): Promise<{ web: TestWeb; seeds: string[]; expected: Set<string> | null; isPage?: (path: string) => boolean }> {
  const web = await startTestWeb({ latency: s.latency });
  if (s.site === 'corpus') {
    const { files, pages } = corpusSite!;
    const hosts = Array.from({ length: s.hosts }, (_, i) => `bench${i}.test`);
    for (const host of hosts) web.addSite(folderSite(host, files));
    return { web, seeds: hosts.map((h) => web.url(h, '/')), expected: new Set(hosts.flatMap((h) => pages.map((p) => web.url(h, p)))) };
  }
  if (s.site === 'spa') {
    const sites = Array.from({ length: s.hosts }, (_, i) => spaSite(`bench${i}.test`, { pages: s.pages }));
    for (const x of sites) web.addSite(x.spec);
    // Pages are the routes; the script, the JSON and the image every page loads are not.
    const routes = new Set(sites[0].pages.map((p) => p.path));
    return {
      web,
      seeds: sites.map((x) => web.url(x.host, '/')),
      expected: new Set(sites.flatMap((x) => x.pages.map((p) => web.url(x.host, p.path)))),
      isPage: (p) => routes.has(p.replace(/[?#].*$/, '')),
    };
  }
  if (s.site === 'shared-static') {
    const sites = Array.from({ length: s.hosts }, (_, i) => sharedStaticSite(`bench${i}.test`, s.pages));
    for (const x of sites) web.addSite(x.spec);
    return {
      web,
      seeds: sites.map((x) => web.url(x.spec.host, '/')),
      expected: new Set(sites.flatMap((x) => x.pagePaths.map((p) => web.url(x.spec.host, p)))),
    };
  }
  const robots = s.delayFrom === 'robots' ? { crawlDelaySec: s.delayMs / 1000 } : undefined;
  const sites = generateSites({
    count: s.hosts,
    pages: s.pages,
    fanOut: s.fanOut ?? 3,
    crossPerPage: s.hosts > 1 ? 1 : 0,
    hostPattern: (i) => `bench${i}.test`,
    robots,
    seed: 1,
    ...(s.words ? { words: s.words } : {}),
  });
  for (const spec of sites) web.addSite(spec);
  const seeds = sites.map((x) => web.url(x.host, '/'));
  // Which pages a page budget leaves out depends on crawl order: no expected set then.
  return { web, seeds, expected: s.maxPages ? null : web.expectedPages(seeds) };
}

/**
 * Every run of every workflow of the campaign: history events in all, the
 * largest run, the largest payload (a workflow's input or an activity's
 * result), and the Temporal Cloud actions they amount to, in all and by what
 * they are for (`actionsBy`, keyed `campaign:…` or `host:…`). Actions are
 * counted the way Temporal Cloud bills them (docs/architecture.md, "What
 * costs actions"), from history: a workflow started (a signal-with-start
 * that starts one is one action, not two), a signal, an update, an activity
 * started (retries included), the local activities of one workflow task
 * (one action, however many markers), a timer, a search-attribute or memo
 * upsert, a child workflow; plus the heartbeats an activity with a heartbeat
 * timeout sends. A host session beats on a timer of its own, first after
 * SESSION_HEARTBEAT.throttleMs and then that often: its running time ÷ that
 * (a host's first session, a local activity, sends none). Other activities
 * that heartbeat (the campaign's long ones) are counted as if they beat all
 * the time: the SDK sends the first at once and then one per throttle (the
 * smaller of 80 % of the activity's heartbeat timeout and the worker's
 * SESSION_HEARTBEAT.throttleMs), so 1 + their running time ÷ the throttle.
 * Queries (none here) are actions too but leave no event.
 */
async function historyFigures(
  client: Client,
  campaignId: string,
): Promise<{
  total: number;
  largest: number;
  actions: number;
  heartbeats: number;
  actionsBy: Record<string, number>;
  largestPayload: number;
  firstTaskWaitsMs: number[];
  sessionsByWorker: Map<string, WorkerSessions>;
  sessionQueueWaitsMs: number[];
}> {
  const E = temporal.api.enums.v1.EventType;
  const billable = new Map<number, string>([
    [E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 'started'],
    [E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, 'signal'],
    [E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, 'update'],
    [E.EVENT_TYPE_TIMER_STARTED, 'timer'],
    [E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, 'upsert'],
    [E.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED, 'memo'],
    [E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, 'child'],
  ]);
  let total = 0;
  let largest = 0;
  let actions = 0;
  let heartbeats = 0;
  const actionsBy: Record<string, number> = {};
  let largestPayload = 0;
  const firstTaskWaitsMs: number[] = [];
  const sessionsByWorker = new Map<string, WorkerSessions>();
  const sessionQueueWaitsMs: number[] = [];
  const seen = new Set<string>();
  const size = (p?: temporal.api.common.v1.IPayloads | null) => (p?.payloads ?? []).reduce((n, x) => n + (x.data?.length ?? 0), 0);
  const ms = (d?: { seconds?: unknown; nanos?: number | null } | null) => Number(d?.seconds ?? 0) * 1000 + Math.round((d?.nanos ?? 0) / 1e6);
  for (const query of [`WorkflowId = '${campaignId}'`, `CrawlCampaign = '${campaignId}'`]) {
    // Every run counts: continue-as-new starts new runs.
    for await (const wf of client.workflow.list({ query })) {
      if (seen.has(wf.runId)) continue;
      seen.add(wf.runId);
      const kind = DOMAIN_WORKFLOWS.includes(wf.type) ? 'host' : 'campaign';
      const count = (what: string, n = 1) => {
        if (n <= 0) return;
        actions += n;
        actionsBy[`${kind}:${what}`] = (actionsBy[`${kind}:${what}`] ?? 0) + n;
      };
      const events = (await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory()).events ?? [];
      total += events.length;
      largest = Math.max(largest, events.length);
      tallySessions(events, sessionsByWorker, sessionQueueWaitsMs);
      const startedAt = new Map<number, number>();
      // Scheduled event id → the activity's type and heartbeat throttle (0: it has no heartbeat timeout).
      const scheduled = new Map<number, { type: string; throttleMs: number }>();
      let runStarted: number | null = null;
      // The workflow task whose completion last recorded a marker: its other markers cost nothing more.
      let lastTaskCompleted = -1;
      let markedTask = -2;
      for (const e of events) {
        const id = Number(e.eventId);
        const what = billable.get(e.eventType!);
        // A signal-with-start that started the run: one action with its start (its signal is the run's second event).
        if (what && !(e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && id === 2)) count(what);
        const t = Number(e.eventTime?.seconds ?? 0) * 1000 + Math.round((e.eventTime?.nanos ?? 0) / 1e6);
        if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) lastTaskCompleted = id;
        if (e.eventType === E.EVENT_TYPE_MARKER_RECORDED && markedTask !== lastTaskCompleted) {
          markedTask = lastTaskCompleted;
          count('local activities');
        }
        if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
          const a = e.activityTaskScheduledEventAttributes!;
          const hb = ms(a.heartbeatTimeout);
          scheduled.set(id, { type: a.activityType?.name ?? '?', throttleMs: hb > 0 ? Math.min(hb * 0.8, SESSION_HEARTBEAT.throttleMs) : 0 });
        }
        if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
          const from = Number(e.activityTaskStartedEventAttributes!.scheduledEventId);
          startedAt.set(from, t);
          // Each attempt is an action; a retried one's history shows only its last (attempt counts them all).
          count(`activity ${scheduled.get(from)?.type ?? '?'}`, e.activityTaskStartedEventAttributes!.attempt ?? 1);
        }
        const ended =
          e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes ?? e.activityTaskCanceledEventAttributes ?? null;
        if (ended && 'scheduledEventId' in ended) {
          const from = Number(ended.scheduledEventId);
          const began = startedAt.get(from);
          const act = scheduled.get(from);
          if (began !== undefined && act && act.throttleMs > 0) {
            const n = act.type === 'crawlSession' ? Math.floor((t - began) / SESSION_HEARTBEAT.throttleMs) : 1 + Math.floor((t - began) / act.throttleMs);
            heartbeats += n;
            count(`heartbeats ${act.type}`, n);
          }
        }
        if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) largestPayload = Math.max(largestPayload, size(e.activityTaskCompletedEventAttributes!.result));
        if (e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) {
          const a = e.workflowExecutionStartedEventAttributes!;
          largestPayload = Math.max(largestPayload, size(a.input));
          // A host's first run (not a continued one): how long its first workflow task waited.
          if (DOMAIN_WORKFLOWS.includes(a.workflowType?.name ?? '') && !a.continuedExecutionRunId) runStarted = t;
        }
        if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED && runStarted !== null) {
          firstTaskWaitsMs.push(t - runStarted);
          runStarted = null;
        }
      }
    }
  }
  return { total, largest, actions, heartbeats, actionsBy, largestPayload, firstTaskWaitsMs, sessionsByWorker, sessionQueueWaitsMs };
}

/** Each count ÷ `n`, largest first. */
const perUnit = (by: Record<string, number>, n: number, digits: number): Record<string, number> =>
  Object.fromEntries(
    Object.entries(by)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => [k, Number((v / Math.max(1, n)).toFixed(digits))]),
  );

const now = (): number => performance.timeOrigin + performance.now();
/** The machine's 1-minute load average: above the core count, the crawlers measured shared their cores with others. */
const loadAverage = (): number => Number(os.loadavg()[0].toFixed(1));

/** The servers' processes, for their CPU: one of each on the dev stack; every Redis node and PostgreSQL (with its backends) on the cluster. */
interface StackPids {
  server: 'dev' | 'cluster';
  temporal: number[];
  redis: number[];
  database: number[];
  /** The S3 server of `--out-store s3`. */
  objectStore: number[];
}
const sumCpu = (pids: number[], tree = false) => pids.reduce((n, p) => n + (tree ? treeCpuSeconds(p) : cpuSeconds(p)), 0);

/** Redis's command counters (the dev stack's one Redis; a cluster's are spread over its nodes: none). */
async function commandStats(redis: RedisLike, pids: StackPids): Promise<string | null> {
  return pids.server === 'dev' && 'info' in redis ? (redis as Redis).info('commandstats') : null;
}

/** A scenario's campaign: the product's defaults but for what the bench's test web needs. */
function campaignInput(s: Scenario, web: TestWeb, seeds: string[], campaignId: string) {
  return {
    campaignId,
    seeds,
    // Generated sites link across hosts; a real corpus links to the real web, which must never be fetched.
    scope: { mode: s.site === 'corpus' ? ('same-host' as const) : ('any' as const) },
    // With the delay in robots.txt the campaign asks for none of its own: Crawl-delay alone paces the hosts.
    // The test web's hosts share 127.0.0.1 but stand for distinct servers
    // (here and in every campaign below): no cap on requests per address.
    politeness: { minDelayMs: s.delayFrom === 'robots' ? 0 : s.delayMs, maxInFlightPerAddress: null, ...(maxActiveHosts !== null ? { maxActiveHosts } : {}) },
    ...(s.maxPages ? { budgets: { maxPages: s.maxPages } } : {}),
    // Generated pages are link lists that differ only in numbers: near-duplicate
    // detection would call them copies and not follow their links.
    ...(s.hosts === 1 ? { content: { dedup: 'exact' as const } } : {}),
    // robots.txt and pages only, as Crawlee fetches them: no /sitemap.xml probe on every host
    // (the product's default, robots+root, costs one more request per host).
    sitemaps: s.sitemaps ?? 'robots',
    ...(s.requisites ? { requisites: s.requisites } : {}),
    ...(s.render ? { render: s.render, ...(s.browser ? { browser: s.browser } : {}) } : {}),
    fetch: { resolve: web.resolveArgs() },
    output: benchOutput.outputOf(campaignId),
  };
}

async function runScenario(s: Scenario, workers: number, client: Client, env: Record<string, string>, redis: RedisLike, pids: StackPids) {
  const { web, seeds, expected, isPage } = await scenarioWeb(s);
  const queue = `bench-${Date.now()}`;
  // Supervised like `crawl`'s workers: a worker that dies (say, under a heap
  // cap set through CRAWLER_WORKER_NODE_ARGS) is replaced and counted, and one
  // that keeps dying fails the run instead of leaving it waiting.
  const pool = new WorkerPool(
    { ...env, CRAWLER_TASK_QUEUE: queue },
    {
      supervise: true,
      onLog: (l) => {
        if (!l.startsWith('worker#') || processSetting('benchVerbose')) process.stderr.write(`${l}\n`);
      },
      // As `crawl` starts them for a campaign that renders.
      renders: s.render === 'browser',
      ...(extraWorkerNodeArgs.length ? { command: await workerCommand([...workerNodeArgs(process.env, s.render === 'browser'), ...extraWorkerNodeArgs]) } : {}),
    },
  );
  await pool.start(workers);
  // The workers in a cgroup of their own (CpuGroup), so their Chromium's processes are counted whatever becomes of them.
  let group = CpuGroup.open('ours');
  if (group && !pool.alive().every((w) => group!.add(w.child.pid!))) {
    group.close();
    group = null;
  }
  const campaignId = `bench-${Date.now().toString(36)}`;
  let peakTotalRss = 0;
  // By worker process (a replaced worker is one more entry).
  const peakRssOf = new Map<number, number>();
  let peakPss = 0;
  const rssTimer = setInterval(() => {
    const each = pool.alive().map((w) => treeRssMb(w.child.pid!));
    pool.alive().forEach((w, i) => peakRssOf.set(w.child.pid!, Math.max(peakRssOf.get(w.child.pid!) ?? 0, each[i])));
    peakTotalRss = Math.max(
      peakTotalRss,
      each.reduce((a, b) => a + b, 0),
    );
    // A worker's Chromium is a dozen processes sharing their binary: PSS says what they take.
    if (s.render) peakPss = Math.max(peakPss, ...pool.alive().map((w) => treePssMb(w.child.pid!)));
  }, 500);
  // Every 10 s: worker RSS (is memory flat?) and, for one-host scenarios, the frontier size.
  // With each worker's CPU seconds so far: where the work went over time (one busy worker shows).
  const samples: { s: number; rssMb: number[]; cpuS: number[]; frontier?: number }[] = [];
  let peakFrontier = 0;
  let frontierKey: string | null = null;
  const sampleTimer = setInterval(() => {
    void (async () => {
      const frontier = frontierKey ? await redis.zcard(frontierKey) : undefined;
      if (frontier !== undefined) peakFrontier = Math.max(peakFrontier, frontier);
      samples.push({
        s: Math.round((now() - t0) / 1000),
        rssMb: pool.alive().map((w) => Math.round(treeRssMb(w.child.pid!))),
        cpuS: pool.alive().map((w) => Math.round(treeCpuSeconds(w.child.pid!) - (workerCpu0.get(w.child.pid!) ?? 0))),
        frontier,
      });
    })();
  }, 10_000);
  // Worker CPU counted per process from its value now; a worker that dies takes its share with it (see workerRestarts).
  const workerCpu0 = new Map(pool.alive().map((w) => [w.child.pid!, treeCpuSeconds(w.child.pid!)]));
  // The worker processes alone, without their browsers: the rest of the tree is Chromium's.
  const workerOwnCpu0 = new Map(pool.alive().map((w) => [w.child.pid!, cpuSeconds(w.child.pid!)]));
  const groupCpu0 = group?.seconds() ?? 0;
  const temporalCpu0 = sumCpu(pids.temporal);
  const redisCpu0 = sumCpu(pids.redis);
  const databaseCpu0 = sumCpu(pids.database, true);
  const commands0 = await commandStats(redis, pids);
  // This process serves the test web (and samples the others).
  const benchCpu0 = process.cpuUsage();
  const storeCpu0 = sumCpu(pids.objectStore);
  // An output in a bucket: when its seal lands there (a folder's is read from its files' times afterwards).
  const sealWatch = benchOutput.kind === 's3' ? watchBucket(benchOutput.storeOf(campaignId), campaignId) : null;
  const t0 = now();
  const handle = await startCampaign(client, queue, campaignInput(s, web, seeds, campaignId));
  if (s.hosts === 1) frontierKey = hostKeys(`${campaignId}.${handle.firstExecutionRunId.slice(0, 8)}`, hostKey(seeds[0])).frontier;
  const release = async () => {
    sealWatch?.stop();
    clearInterval(sampleTimer);
    clearInterval(rssTimer);
    await pool.stopAll();
    group?.close();
    await web.close();
  };
  let result;
  try {
    result = await Promise.race([handle.result(), pool.failed()]);
  } catch (err) {
    // Workers kept dying: nothing to measure, and nothing left running.
    await release();
    throw err;
  }
  clearInterval(sampleTimer);
  clearInterval(rssTimer);
  const wall = (now() - t0) / 1000;
  const temporalCpu = sumCpu(pids.temporal) - temporalCpu0;
  const redisCpu = sumCpu(pids.redis) - redisCpu0;
  const databaseCpu = sumCpu(pids.database, true) - databaseCpu0;
  const storeCpu = sumCpu(pids.objectStore) - storeCpu0;
  const commands1 = await commandStats(redis, pids);
  const benchCpuUs = process.cpuUsage(benchCpu0);
  const benchCpu = (benchCpuUs.user + benchCpuUs.system) / 1e6;
  let workerCpu = 0;
  let workerOwnCpu = 0;
  const cpuOf = new Map<number, number>();
  for (const w of pool.alive()) {
    cpuOf.set(w.child.pid!, treeCpuSeconds(w.child.pid!) - (workerCpu0.get(w.child.pid!) ?? 0));
    workerCpu += cpuOf.get(w.child.pid!)!;
    workerOwnCpu += cpuSeconds(w.child.pid!) - (workerOwnCpu0.get(w.child.pid!) ?? 0);
    peakRssOf.set(w.child.pid!, Math.max(peakRssOf.get(w.child.pid!) ?? 0, peakRssMb(w.child.pid!)));
  }
  // The kernel's count for the workers' cgroup where there is one; the trees' sums give each worker's share either way.
  const workersCpu = group ? group.seconds() - groupCpu0 : workerCpu;
  const peakRss = Math.max(0, ...peakRssOf.values());
  const perPage = (seconds: number): number => Number(((seconds * 1000) / Math.max(1, result.pages)).toFixed(2));
  // The crawl is over when the last page is stored; the campaign then waits for idle domains to close.
  const fromLog = logFigures(web.requests(), web.port, expected, t0, s.delayMs, isPage);
  const requestsPerPage = Number((web.requests().length / Math.max(1, result.pages)).toFixed(2));
  const embeds = s.site === 'shared-static' ? sharedStaticFigures(web, s) : null;
  // A polite crawl's ideal span counts every request a host must take, its embeds too.
  const target = embeds ? { ...s, pages: embeds.requestsPerHost } : s;
  const polite = politeness(target, web.meanLatencyMs(), fromLog.crawlSeconds);
  const ceiling = politenessCeiling(pacedRequests(web.requests(), isPage), target, web.meanLatencyMs(), (host, target, nth) => web.latencyFor(host, target, nth));
  const history = await historyFigures(client, campaignId);
  // The archive as the campaign published it (the folder, or the bucket): its sealed index, its size, when the seal was in place.
  const sealedIndexFile = result.sealedIndex?.file ?? null;
  const sealed = await sealedIndexFigures(await openSealedIndex(benchOutput, campaignId, sealedIndexFile), expected);
  const rendered = s.render ? await renderFigures(await openSealedIndex(benchOutput, campaignId, sealedIndexFile)) : null;
  const seen = sealWatch ? await sealWatch.seen() : { sealAt: folderSealedAt(benchOutput.outputOf(campaignId).dir, campaignId), lastUploadAt: null };
  const stored = await outputBytes(benchOutput, campaignId);
  const afterCrawl = (at: number | null): number | null => (at === null ? null : Number(((at - t0) / 1000 - fromLog.crawlSeconds).toFixed(2)));
  await release();
  if (sealed && sealed.expectedPagesStored !== null && sealed.expectedPagesStored !== result.pages) {
    process.stderr.write(`bench: the sealed index holds ${sealed.expectedPagesStored} of the expected pages, the campaign counted ${result.pages}\n`);
  }
  return {
    scenario: s.name,
    server: pids.server,
    workers,
    pages: result.pages,
    expectedPages: s.hosts * s.pages,
    // From the test web's log, as the other crawlers' pages are counted: distinct expected pages requested.
    pagesRequested: fromLog.pagesFetched,
    crawlSeconds: fromLog.crawlSeconds,
    campaignSeconds: Number(wall.toFixed(1)),
    // Where the archive went, what the sealed index read from there holds, and its size by area
    // (warc, index, datasets: what the workers wrote, uploaded for s3; sealed: the seal's products).
    outStore: benchOutput.kind,
    sealedIndex: sealed,
    outputBytes: stored,
    // From the test web's last request to the seal in place (its last file in the folder; its manifest seen in the bucket).
    sealSecondsAfterCrawl: afterCrawl(seen.sealAt),
    // s3: from the last request to the workers' last raw file (warc/, index/, datasets/) seen in the bucket; at the end's flush unless a file rolled over later.
    ...(sealWatch ? { lastUploadSecondsAfterCrawl: afterCrawl(seen.lastUploadAt) } : {}),
    pagesPerSec: Number((result.pages / Math.max(fromLog.crawlSeconds, 0.001)).toFixed(1)),
    // The campaign's own count of embeds (fetched, failed, skipped) and of revisit records, beside what the test web saw.
    ...(embeds ? { requisites: s.requisites, embeds: { ...embeds.figures, campaign: result.embeds ?? null, revisitRecords: result.revisits?.records ?? 0 } } : {}),
    ...politenessFigures(fromLog, polite),
    politenessCeiling: ceiling,
    requestsPerPage,
    ...(rendered ? { render: { ...rendered, settings: s.browser ?? {} } } : {}),
    loadAverage1m: loadAverage(),
    peakWorkerRssMb: Math.round(peakRss),
    peakRssPerWorkerMb: [...peakRssOf.values()].map(Math.round),
    peakWorkersTotalRssMb: Math.round(peakTotalRss),
    ...(s.render ? { peakWorkerPssMb: Math.round(peakPss) } : {}),
    workerRestarts: pool.restarts,
    cpuMsPerPage: perPage(workersCpu),
    ...(s.render ? { browserCpuMsPerPage: perPage(workersCpu - workerOwnCpu) } : {}),
    cpuCountedBy: group ? 'cgroup' : 'process tree',
    temporalCpuMsPerPage: perPage(temporalCpu + databaseCpu),
    ...(pids.objectStore.length ? { objectStoreCpuMsPerPage: perPage(storeCpu) } : {}),
    redisCpuMsPerPage: perPage(redisCpu),
    ...(commands0 !== null && commands1 !== null ? { redisCommandsPerPage: redisCommandsPerPage(commands0, commands1, result.pages) } : {}),
    stackCpuMsPerPage: perPage(workersCpu + temporalCpu + redisCpu + databaseCpu),
    testWebCpuMsPerPage: perPage(benchCpu),
    allCpuMsPerPage: perPage(workersCpu + temporalCpu + redisCpu + databaseCpu + storeCpu + benchCpu),
    historyEventsPerPage: Number((history.total / Math.max(1, result.pages)).toFixed(2)),
    largestHistoryEvents: history.largest,
    billableActionsPerPage: Number((history.actions / Math.max(1, result.pages)).toFixed(2)),
    heartbeatsPerPage: Number((history.heartbeats / Math.max(1, result.pages)).toFixed(2)),
    // What the actions are for, a page and a host (docs/architecture.md, "What costs actions").
    actionsPerPageBy: perUnit(history.actionsBy, result.pages, 3),
    actionsPerHostBy: perUnit(history.actionsBy, s.hosts, 2),
    billableActionsPerHost: Number((history.actions / Math.max(1, s.hosts)).toFixed(2)),
    largestPayloadBytes: history.largestPayload,
    historyEventsPerHost: Number((history.total / Math.max(1, s.hosts)).toFixed(1)),
    firstTaskWaitSeconds: firstTaskFigures(history.firstTaskWaitsMs),
    sessionQueueWaitSeconds: waitFigures(history.sessionQueueWaitsMs),
    perWorker: perWorkerFigures(cpuOf, workerCpu, history.sessionsByWorker),
    temporalServerCpuPercent: Math.round((temporalCpu / wall) * 100),
    // The cluster's Temporal keeps its data in PostgreSQL (the dev server's SQLite is inside its own process).
    ...(pids.server === 'cluster' ? { postgresCpuPercent: Math.round((databaseCpu / wall) * 100) } : {}),
    redisCpuPercent: Math.round((redisCpu / wall) * 100),
    temporalActionsPerSec: Number((history.actions / wall).toFixed(1)),
    ...(frontierKey ? { peakFrontier } : {}),
    ...(s.optIn ? { samples } : {}),
  };
}

type OurFigures = Awaited<ReturnType<typeof runScenario>>;

/**
 * Each worker's share of the crawl: the host sessions it ran (first ones
 * among them), their pages, and its CPU against all workers' (issue 38: a
 * pool whose sessions all land on one worker uses one core). By process ID;
 * a worker that died and was replaced has sessions but no CPU figure.
 */
function perWorkerFigures(cpuOf: Map<number, number>, workerCpu: number, sessions: Map<string, WorkerSessions>) {
  const byPid = new Map<number, WorkerSessions>();
  for (const [identity, w] of sessions) {
    const pid = identityPid(identity) ?? -1;
    const into = byPid.get(pid) ?? { sessions: 0, firstSessions: 0, pages: 0 };
    byPid.set(pid, { sessions: into.sessions + w.sessions, firstSessions: into.firstSessions + w.firstSessions, pages: into.pages + w.pages });
  }
  const pids = [...new Set([...cpuOf.keys(), ...byPid.keys()])];
  return pids.map((pid) => {
    const cpu = cpuOf.get(pid);
    return {
      pid,
      ...(byPid.get(pid) ?? { sessions: 0, firstSessions: 0, pages: 0 }),
      cpuSeconds: cpu === undefined ? null : Number(cpu.toFixed(1)),
      cpuShare: cpu === undefined ? null : Number((cpu / Math.max(workerCpu, 0.001)).toFixed(2)),
    };
  });
}

/** A shared-static scenario's embed figures from the request log, and the requests each host took (robots.txt aside). */
function sharedStaticFigures(web: TestWeb, s: Scenario) {
  const site = sharedStaticSite('x.test', s.pages);
  const pages = new Set(site.pagePaths);
  const log = web.requests();
  const figures = embedFigures(log, {
    isPage: (p) => pages.has(p),
    isShared: (p) => SHARED_STATIC_PATHS.includes(p.replace(/[?#].*$/, '')),
    firstPageEmbeds: SHARED_STATIC_PATHS.length + site.pageImages.get('/')!.length,
  });
  // What a crawler fetching each URL once would make of the later pages: their own images alone.
  const later = site.pagePaths.slice(1).map((p) => site.pageImages.get(p)!.length);
  const ideal = Number((later.reduce((a, b) => a + b, 0) / Math.max(1, later.length)).toFixed(2));
  const requestsPerHost = Math.round(log.filter((r) => r.path !== '/robots.txt').length / Math.max(1, s.hosts));
  return { figures: { ...figures, idealExtraRequestsPerLaterPage: ideal }, requestsPerHost };
}

/**
 * A campaign seeded from a list of 1,000,000 URLs (gzip, 2,000 hosts of the
 * test web × 500 pages named in the list): how long until its first page is
 * fetched, and how small its workflow input is. The crawl is cancelled after
 * its first pages; the figure is the start.
 */
async function seedListRun(workers: number, client: Client, env: Record<string, string>) {
  const web = await startTestWeb();
  const HOSTS = 2_000;
  const PER_HOST = 500;
  for (const spec of generateSites({ count: HOSTS, pages: PER_HOST, fanOut: 3, crossPerPage: 0, hostPattern: (i) => `seed${i}.test`, seed: 1 })) web.addSite(spec);
  const dir = path.join(LOCAL_DIR, 'bench-output', `seeds-${Date.now()}`);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'seeds.txt.gz');
  const list = writeSeedList(file, HOSTS, PER_HOST, (h, p) => web.url(`seed${h}.test`, p === 0 ? '/' : `/page/${p}`));
  const queue = `bench-seeds-${Date.now()}`;
  const pool = new WorkerPool({ ...env, CRAWLER_TASK_QUEUE: queue }, { supervise: true });
  await pool.start(workers);
  try {
    const id = `bench-seeds-${Date.now().toString(36)}`;
    const t0 = now();
    const handle = await startCampaign(client, queue, {
      campaignId: id,
      seedsFile: file,
      scope: { mode: 'same-host' },
      politeness: { minDelayMs: 1000, maxInFlightPerAddress: null },
      sitemaps: 'off',
      fetch: { resolve: web.resolveArgs() },
      output: { dir: path.join(dir, 'out') },
    });
    while (web.requests().filter((r) => r.path !== '/robots.txt').length === 0) await new Promise((r) => setTimeout(r, 100));
    const firstPageSeconds = Number(((now() - t0) / 1000).toFixed(1));
    while (web.requests().length < 2_000 && now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 200));
    const hostsCrawledAt = new Set(web.requests().map((r) => r.host)).size;
    const input = (await handle.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data?.length ?? 0;
    await handle.signal('cancel', { reason: 'bench over' });
    await handle.result().catch(() => undefined);
    return {
      scenario: '(seeds) a campaign seeded from a 1,000,000-line gzip list',
      seeds: list.seeds,
      listBytes: list.listBytes,
      firstPageSeconds,
      hostsWithRequestsAfterFirst2000: hostsCrawledAt,
      workflowInputBytes: input,
    };
  } finally {
    await pool.stopAll();
    await web.close();
  }
}

/**
 * Two campaigns on the same workers: a small one (1 host × 20 pages, 100 ms
 * delay) alone, then the same small one started while a large one (300 hosts
 * × 20 pages, 1 s delay) keeps the workers busy. With fair sharing the small
 * one takes about as long either way.
 */
async function fairnessRun(workers: number, client: Client, env: Record<string, string>) {
  const web = await startTestWeb();
  for (const spec of generateSites({ count: 300, pages: 20, fanOut: 3, crossPerPage: 1, hostPattern: (i) => `large${i}.test`, seed: 1 })) web.addSite(spec);
  for (const spec of generateSites({ count: 2, pages: 20, fanOut: 3, crossPerPage: 0, hostPattern: (i) => `small${i}.test`, seed: 1 })) web.addSite(spec);
  const queue = `bench-fair-${Date.now()}`;
  const pool = new WorkerPool({ ...env, CRAWLER_TASK_QUEUE: queue }, { supervise: true });
  await pool.start(workers);
  const small = async (host: string) => {
    const t = now();
    const id = `bench-small-${Date.now().toString(36)}`;
    const h = await startCampaign(client, queue, {
      campaignId: id,
      seeds: [web.url(host, '/')],
      politeness: { minDelayMs: 100, maxInFlightPerAddress: null },
      sitemaps: 'off',
      fetch: { resolve: web.resolveArgs() },
      output: { dir: path.join(LOCAL_DIR, 'bench-output', id) },
    });
    const r = await h.result();
    return { seconds: Number(((now() - t) / 1000).toFixed(1)), pages: r.pages };
  };
  try {
    const alone = await small('small0.test');
    const largeId = `bench-large-${Date.now().toString(36)}`;
    const large = await startCampaign(client, queue, {
      campaignId: largeId,
      seeds: Array.from({ length: 300 }, (_, i) => web.url(`large${i}.test`, '/')),
      scope: { mode: 'any' },
      politeness: { minDelayMs: 1000, maxInFlightPerAddress: null },
      fetch: { resolve: web.resolveArgs() },
      output: { dir: path.join(LOCAL_DIR, 'bench-output', largeId) },
    });
    while (web.requests().filter((r) => r.host.startsWith('large')).length < 600) await new Promise((r) => setTimeout(r, 200));
    const shared = await small('small1.test');
    const largePagesAtSmallDone = web.requests().filter((r) => r.host.startsWith('large')).length;
    await large.signal('cancel', { reason: 'bench over' });
    await large.result().catch(() => undefined);
    return {
      scenario: '(fair) a small campaign alone, then beside a large one on the same workers',
      workers,
      smallAloneSeconds: alone.seconds,
      smallBesideLargeSeconds: shared.seconds,
      ratio: Number((shared.seconds / alone.seconds).toFixed(2)),
      largeRequestsAtSmallDone: largePagesAtSmallDone,
    };
  } finally {
    await pool.stopAll();
    await web.close();
  }
}

interface CrawleeOptions {
  concurrency: number;
  minConcurrency: number;
  respectRobots: boolean;
}

async function crawleeRun(s: Scenario, storage: CrawleeStorage, o: CrawleeOptions): Promise<CrawleeFigures> {
  const { web, seeds, expected, isPage } = await scenarioWeb(s);
  // The same Chromium as our workers', and (scenario v) a page is rendered once its script has shown its title.
  const browser = s.render ? { executablePath: await findOrInstallChromium(), renderedSelector: '#title' } : undefined;
  try {
    const figures = await runCrawlee(
      web,
      { hosts: s.hosts, pages: s.pages, delayMs: s.delayMs, seeds, expected, maxPages: s.maxPages, isPage, browser },
      { storage, ...o, onLog: (l) => process.stderr.write(`crawlee: ${l}\n`) },
    );
    return { ...figures, loadAverage1m: loadAverage() };
  } finally {
    await web.close();
  }
}

async function scrapyRun(s: Scenario, python: string, o: { concurrency: number; respectRobots: boolean }): Promise<ScrapyFigures> {
  const { web, seeds, expected } = await scenarioWeb(s);
  try {
    const figures = await runScrapy(
      python,
      web,
      { hosts: s.hosts, pages: s.pages, delayMs: s.delayMs, seeds, expected, maxPages: s.maxPages },
      { ...o, onLog: (l) => process.stderr.write(`scrapy: ${l}\n`) },
    );
    // Requests per page as Crawlee's are counted: every request in the test web's log.
    return { ...figures, requestsPerPage: Number((web.requests().length / Math.max(1, figures.pages)).toFixed(2)), loadAverage1m: loadAverage() };
  } finally {
    await web.close();
  }
}

/** What every crawler beside ours reports under the same names (Crawlee in either storage, Scrapy). */
type PeerFigures = CrawleeFigures | ScrapyFigures;
/** Their figures' names: those all have, and Crawlee's rendering ones (PSS, browsers' CPU), which Scrapy never has. */
type PeerKey = (keyof CrawleeFigures & keyof ScrapyFigures) | 'peakPssMb' | 'browserCpuMsPerPage';
const peerFigure = (p: PeerFigures, k: PeerKey): unknown => (p as Partial<Record<PeerKey, unknown>>)[k];
/** The crawlers beside ours in one run, by column: `memory` and `disk` are Crawlee's storages. */
type Peers = Partial<Record<CrawleeStorage | 'scrapy', PeerFigures>>;

/** The figures every crawler has, as [label, ours, theirs]; ratios are ours ÷ theirs. */
const COMPARED: [string, keyof OurFigures, PeerKey][] = [
  ['pages', 'pages', 'pages'],
  ['crawl s', 'crawlSeconds', 'crawlSeconds'],
  ['pages/s', 'pagesPerSec', 'pagesPerSec'],
  ['politeness bound pages/s', 'politenessBoundPagesPerSec', 'politenessBoundPagesPerSec'],
  ['politeness efficiency', 'politenessEfficiency', 'politenessEfficiency'],
  ['politeness ceiling', 'politenessCeiling', 'politenessCeiling'],
  ['violations (all requests)', 'politenessViolations', 'politenessViolations'],
  ['violations (pages only)', 'pageViolations', 'pageViolations'],
  ['closest page gap ms', 'closestPageGapMs', 'closestPageGapMs'],
  ['duplicate fetches', 'duplicateFetches', 'duplicateFetches'],
  ['requests per page', 'requestsPerPage', 'requestsPerPage'],
  ['peak RSS MB (largest process)', 'peakWorkerRssMb', 'peakRssMb'],
  ['peak PSS MB (largest process, rendering)', 'peakWorkerPssMb', 'peakPssMb'],
  ['CPU ms/page (crawler processes)', 'cpuMsPerPage', 'cpuMsPerPage'],
  ['CPU ms/page (of which browsers)', 'browserCpuMsPerPage', 'browserCpuMsPerPage'],
  // Ours with the servers it needs (Temporal, Redis) against theirs alone: the durable crawler's whole cost.
  ['CPU ms/page (ours with Temporal, Redis)', 'stackCpuMsPerPage', 'cpuMsPerPage'],
  ['CPU ms/page (all, test web too)', 'allCpuMsPerPage', 'allCpuMsPerPage'],
  ['machine load (1 min) at the end', 'loadAverage1m', 'loadAverage1m'],
];

function ratio(a: unknown, b: unknown): number | null {
  if (typeof a !== 'number' || typeof b !== 'number' || b === 0) return null;
  return Number((a / b).toFixed(2));
}

/** One scenario's line: ours, each peer, ours ÷ each; `crawlee` and `scrapy` kept apart as before Scrapy joined. */
function comparison(s: Scenario, ours: OurFigures | null, peers: Peers) {
  const ratios: Partial<Record<keyof Peers, Record<string, number | null>>> = {};
  if (ours) {
    for (const [col, p] of Object.entries(peers) as [keyof Peers, PeerFigures][]) {
      // The machine's load is context, not a figure of the crawler: no ratio.
      ratios[col] = Object.fromEntries(COMPARED.map(([, o, k]) => [o, o === 'loadAverage1m' ? null : ratio(ours[o], peerFigure(p, k))]));
    }
  }
  const { scrapy, ...crawlee } = peers;
  return { scenario: s.name, ours, crawlee, ...(scrapy ? { scrapy } : {}), peers, ratio: ratios };
}

const columnName = (col: keyof Peers): string => (col === 'scrapy' ? `scrapy ${SCRAPY_VERSION}` : `crawlee (${col})`);

function table(c: ReturnType<typeof comparison>): string {
  const cols = Object.keys(c.peers) as (keyof Peers)[];
  const head = ['figure', ...(c.ours ? ['ours'] : []), ...cols.map(columnName), ...(c.ours ? cols.map((m) => `ours ÷ ${columnName(m)}`) : [])];
  const show = (v: unknown, expected?: number): string => (v === null || v === undefined ? '–' : expected ? `${v}/${expected}` : String(v));
  // Figures of rendering scenarios only (PSS, browsers' CPU) are left out of the others' tables.
  const had = ([, o, k]: (typeof COMPARED)[number]): boolean => (c.ours?.[o] ?? null) !== null || cols.some((m) => (peerFigure(c.peers[m]!, k) ?? null) !== null);
  const rows = COMPARED.filter(had).map(([label, o, k]) => {
    // Pages read as found/expected.
    const of = (f: { expectedPages: number }): number | undefined => (o === 'pages' ? f.expectedPages : undefined);
    return [
      label,
      ...(c.ours ? [show(c.ours[o], of(c.ours))] : []),
      ...cols.map((m) => show(peerFigure(c.peers[m]!, k), of(c.peers[m]!))),
      ...(c.ours ? cols.map((m) => show(c.ratio[m]?.[o])) : []),
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]): string => r.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ');
  return [c.scenario, line(head), ...rows.map(line), ...(c.ours ? ourCpuLines(c.ours) : [])].join('\n');
}

/** Where our CPU and memory go, process by process: what the comparison's sums are made of. */
function ourCpuLines(o: OurFigures): string[] {
  return [
    `ours, CPU ms/page: workers ${o.cpuMsPerPage}${o.browserCpuMsPerPage !== undefined ? ` (browsers ${o.browserCpuMsPerPage})` : ''} + Temporal ${o.temporalCpuMsPerPage} + Redis ${o.redisCpuMsPerPage} = ${o.stackCpuMsPerPage}; test web ${o.testWebCpuMsPerPage}; the workers' counted by ${o.cpuCountedBy}`,
    `ours, peak RSS MB per worker: ${o.peakRssPerWorkerMb.join(', ')}; pages requested ${o.pagesRequested}/${o.expectedPages}`,
    `ours, per worker: ${o.perWorker
      .map(
        (w) =>
          `pid ${w.pid}: ${w.sessions} sessions (${w.firstSessions} first), ${w.pages} pages, ${w.cpuShare === null ? '?' : Math.round(w.cpuShare * 100)} % of the workers' CPU`,
      )
      .join('; ')}`,
    `ours, actions a page by what for: ${Object.entries(o.actionsPerPageBy)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
    `ours, per page: ${o.historyEventsPerPage} history events, ${o.billableActionsPerPage} actions${
      o.redisCommandsPerPage
        ? `, ${o.redisCommandsPerPage.total} Redis commands (${Object.entries(o.redisCommandsPerPage.byCommand)
            .map(([c, n]) => `${c} ${n}`)
            .join(', ')})`
        : ''
    }`,
  ];
}

/** --max-active-hosts: our campaigns' politeness.maxActiveHosts (default null, unlimited), to see what bounding the hosts in flight changes. */
let maxActiveHosts: number | null = null;

/** --out-store: where scenarios' campaigns write their archive (a folder, or a bucket of a server the bench starts). */
let benchOutput: BenchOutput;

/** Node flags the scenarios' workers get besides their defaults (--cpu-prof). */
let extraWorkerNodeArgs: string[] = [];

/**
 * Every worker a scenario starts writes V8 CPU profiles (one per thread: the
 * main thread and the SDK's workflow thread) when it stops, into a folder of
 * .crawler/profiles/ (out of git); bench/profile-summary.ts reads them. The
 * worker's default node flags are kept, so only the profiler is added.
 */
function profileWorkers(): void {
  const dir = path.join(LOCAL_DIR, 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
  fs.mkdirSync(dir, { recursive: true });
  extraWorkerNodeArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
  process.stderr.write(`bench: workers write CPU profiles into ${dir} (summary: npx tsx bench/profile-summary.ts ${dir})\n`);
}

/** --hosts as given; the floor scenario takes it as its count of workflows. */
let hostsOption: number | undefined;

/** --quiet-ms and --pages-at-once change the rendering scenarios, --hosts every scenario's host count (their names say so: (k) at 3,000 hosts is a quicker k). */
function scenarioOverrides(values: { 'quiet-ms'?: string; 'pages-at-once'?: string; hosts?: string; pages?: string }): void {
  const whole = (flag: string, v: string | undefined, min: number): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} must be a whole number ≥ ${min}, not ${v}`);
    return n;
  };
  const quietMs = whole('quiet-ms', values['quiet-ms'], 0);
  const maxPagesAtOnce = whole('pages-at-once', values['pages-at-once'], 1);
  const hosts = whole('hosts', values.hosts, 1);
  const pages = whole('pages', values.pages, 1);
  hostsOption = hosts;
  for (const s of Object.values(SCENARIOS)) {
    // The name's count may be written with separators (10,000).
    if (hosts !== undefined) s.name = s.name.replace(/^\((\w+)\) [\d,]+/, `($1) ${(s.hosts = hosts).toLocaleString('en-US')}`);
    // Generated sites only (a corpus's pages are what its folder holds): long hosts show what a session costs a page.
    if (pages !== undefined && (s.site ?? 'generated') === 'generated') {
      s.pages = pages;
      s.name = s.name.replace(/^(\(\w+\) [\d,]+ hosts × )[\d,]+/, `$1${pages.toLocaleString('en-US')}`);
    }
    if (!s.render || (quietMs === undefined && maxPagesAtOnce === undefined)) continue;
    s.browser = { ...(quietMs !== undefined ? { quietMs } : {}), ...(maxPagesAtOnce !== undefined ? { maxPagesAtOnce } : {}) };
    s.name += `, browser ${JSON.stringify(s.browser)}`;
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      workers: { type: 'string', default: '2' },
      only: { type: 'string' },
      server: { type: 'string', default: 'dev' },
      crawlee: { type: 'boolean', default: false },
      'crawlee-only': { type: 'boolean', default: false },
      'crawlee-storage': { type: 'string', default: 'memory' },
      'crawlee-concurrency': { type: 'string', default: '200' },
      'crawlee-min-concurrency': { type: 'string', default: '1' },
      'crawlee-ignore-robots': { type: 'boolean', default: false },
      scrapy: { type: 'boolean', default: false },
      'scrapy-concurrency': { type: 'string', default: '200' },
      'cpu-prof': { type: 'boolean', default: false },
      // Rendering scenarios only: our campaign's browser.quietMs and browser.maxPagesAtOnce; --hosts for any scenario.
      'quiet-ms': { type: 'string' },
      'pages-at-once': { type: 'string' },
      hosts: { type: 'string' },
      pages: { type: 'string' },
      'max-active-hosts': { type: 'string' },
      'out-store': { type: 'string', default: 'folder' },
      'upload-age-ms': { type: 'string' },
      // Scenario m's seeded frontier: this many seed URLs over this many hosts; and which of its runs to make.
      'frontier-urls': { type: 'string', default: '1000000' },
      'frontier-hosts': { type: 'string', default: '10000' },
      'memory-runs': { type: 'string', default: 'crawl,frontier' },
      // Scenario m's seeded frontier: the campaign's frontier.spillAbove (a number, or off); absent: the product's default.
      'spill-above': { type: 'string' },
      // Scenario m: the campaigns' frontier.seen and frontier.seenRate (absent: the product's defaults, exact).
      seen: { type: 'string' },
      'seen-rate': { type: 'string' },
    },
  });
  if (values['max-active-hosts'] !== undefined) {
    maxActiveHosts = Number(values['max-active-hosts']);
    if (!Number.isInteger(maxActiveHosts) || maxActiveHosts < 1) throw new Error(`--max-active-hosts must be a whole number ≥ 1, not ${values['max-active-hosts']}`);
  }
  if (values['cpu-prof']) profileWorkers();
  const workers = Number(values.workers);
  if (values.server !== 'dev' && values.server !== 'cluster') throw new Error(`--server takes dev or cluster, not ${values.server}`);
  const outStore = values['out-store'] as OutStore;
  if (outStore !== 'folder' && outStore !== 's3') throw new Error(`--out-store takes folder or s3, not ${values['out-store']}`);
  const uploadAgeMs = values['upload-age-ms'] === undefined ? undefined : Number(values['upload-age-ms']);
  if (uploadAgeMs !== undefined && (outStore !== 's3' || !Number.isInteger(uploadAgeMs) || uploadAgeMs < 1)) {
    throw new Error(`--upload-age-ms takes a whole number ≥ 1 with --out-store s3, not ${values['upload-age-ms']}`);
  }
  const withCrawlee = values.crawlee || values['crawlee-only'];
  const storages = values['crawlee-storage'].split(',').map((m) => m.trim()) as CrawleeStorage[];
  for (const m of storages) if (m !== 'memory' && m !== 'disk') throw new Error(`--crawlee-storage takes memory, disk or both (comma-separated), not ${m}`);
  const concurrency = Number(values['crawlee-concurrency']);
  const minConcurrency = Number(values['crawlee-min-concurrency']);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`--crawlee-concurrency must be a whole number ≥ 1, not ${values['crawlee-concurrency']}`);
  if (!Number.isInteger(minConcurrency) || minConcurrency < 1 || minConcurrency > concurrency) {
    throw new Error(`--crawlee-min-concurrency must be a whole number from 1 to --crawlee-concurrency, not ${values['crawlee-min-concurrency']}`);
  }
  const scrapyConcurrency = Number(values['scrapy-concurrency']);
  if (!Number.isInteger(scrapyConcurrency) || scrapyConcurrency < 1) throw new Error(`--scrapy-concurrency must be a whole number ≥ 1, not ${values['scrapy-concurrency']}`);
  const keys = values.only ? values.only.split(',') : Object.keys(SCENARIOS).filter((k) => !SCENARIOS[k].optIn);
  scenarioOverrides(values);
  for (const key of keys)
    if (!SCENARIOS[key] && key !== 'fair' && key !== 'seeds' && key !== 'floor')
      throw new Error(`no scenario ${key}; choose from ${Object.keys(SCENARIOS).join(', ')}, fair, seeds, floor`);
  // What a scenario needs from outside (a corpus, Scrapy) is set up before anything is measured.
  const scenarios = Object.fromEntries(keys.filter((k) => SCENARIOS[k]).map((k) => [k, prepare(SCENARIOS[k])]));
  const scrapyPython = values.scrapy ? await ensureScrapy((m) => process.stderr.write(`${m}\n`)) : null;

  const runPeers = async (s: Scenario): Promise<Peers> => {
    const out: Peers = {};
    if (withCrawlee) for (const mode of storages) out[mode] = await crawleeRun(s, mode, { concurrency, minConcurrency, respectRobots: !values['crawlee-ignore-robots'] });
    // Scrapy renders nothing: beside a rendering crawl it would only fetch shells.
    if (scrapyPython && !s.render) out.scrapy = await scrapyRun(s, scrapyPython, { concurrency: scrapyConcurrency, respectRobots: !values['crawlee-ignore-robots'] });
    return out;
  };
  if (values['crawlee-only']) {
    // No stack at all: Crawlee (and Scrapy, with --scrapy) need none, and they then have the machine to themselves.
    for (const key of keys) {
      const c = comparison(scenarios[key], null, await runPeers(scenarios[key]));
      process.stdout.write(`${JSON.stringify(c)}\n`);
      process.stderr.write(`\n${table(c)}\n\n`);
    }
    return;
  }

  const dataDir = path.join(LOCAL_DIR, 'bench-stack', String(Date.now()));
  const stack = values.server === 'cluster' ? await benchCluster(dataDir) : await benchDevStack(dataDir);
  benchOutput = await openBenchOutput(outStore, dataDir, (m) => process.stderr.write(`object store: ${m}\n`), { uploadAgeMs });
  const bundle = await ensureWorkflowBundle();
  const client = await connectClient(stack.temporalAddress);
  // Rendering scenarios: the workers and Crawlee are given the same Chromium executable.
  const renders = keys.some((k) => SCENARIOS[k]?.render);
  const chromium = renders ? await findOrInstallChromium({ log: (m) => process.stderr.write(`${m}\n`) }) : null;
  const env = {
    TEMPORAL_ADDRESS: stack.temporalAddress,
    REDIS_URL: stack.redisUrl,
    CRAWLER_WORKFLOW_BUNDLE: bundle,
    ...(chromium ? { CHROMIUM_PATH: chromium } : {}),
    ...benchOutput.env,
  };
  try {
    const redis = createRedis(stack.redisUrl);
    const pids = { ...stack.pids, objectStore: benchOutput.pid === null ? [] : [benchOutput.pid] };
    for (const key of keys) {
      if (key === 'fair') {
        process.stdout.write(`${JSON.stringify(await fairnessRun(workers, client, env))}\n`);
        continue;
      }
      if (key === 'floor') {
        // The server's CPU: the dev server, or the cluster's Temporal and the PostgreSQL it keeps its data in.
        const f = await workflowFloorRun(stack.temporalAddress, [...pids.temporal, ...pids.database], hostsOption ?? 2_000);
        process.stdout.write(`${JSON.stringify(f)}\n`);
        process.stderr.write(
          `\n${f.scenario}: ${f.workflowsPerSec}/s; CPU a workflow: server ${f.serverCpuMsPerWorkflow} ms, worker ${f.workerCpuMsPerWorkflow} ms; two cores could sustain ${f.twoCoreCeilingPerSec}/s\n\n`,
        );
        continue;
      }
      if (key === 'seeds') {
        process.stdout.write(`${JSON.stringify(await seedListRun(workers, client, env))}\n`);
        continue;
      }
      const s = scenarios[key];
      if (s.memory) {
        for (const f of await memoryRuns(s, memoryOptions(values), workers, client, env, redis)) process.stdout.write(`${JSON.stringify(f)}\n`);
        continue;
      }
      if (s.site === 'shared-static') {
        for (const run of runsOf(s)) process.stdout.write(`${JSON.stringify(await runScenario(run, workers, client, env, redis, pids))}\n`);
        continue;
      }
      const ours = await runScenario(s, workers, client, env, redis, pids);
      if (!withCrawlee && !scrapyPython) {
        process.stdout.write(`${JSON.stringify(ours)}\n`);
        if (s.site === 'corpus') process.stderr.write(`\n${[s.name, ...ourCpuLines(ours)].join('\n')}\n\n`);
        continue;
      }
      const c = comparison(s, ours, await runPeers(s));
      process.stdout.write(`${JSON.stringify(c)}\n`);
      process.stderr.write(`\n${table(c)}\n\n`);
    }
    redis.disconnect();
  } finally {
    await client.connection.close();
    await benchOutput.stop();
    await stack.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Scenario m's options: its seeded frontier's size, and which runs to make. */
function memoryOptions(values: { 'frontier-urls': string; 'frontier-hosts': string; 'memory-runs': string; 'spill-above'?: string; seen?: string; 'seen-rate'?: string }) {
  const urls = Number(values['frontier-urls']);
  const hosts = Number(values['frontier-hosts']);
  if (!Number.isInteger(hosts) || hosts < 1) throw new Error(`--frontier-hosts must be a whole number ≥ 1, not ${values['frontier-hosts']}`);
  if (!Number.isInteger(urls) || urls < hosts || urls % hosts !== 0)
    throw new Error(`--frontier-urls must be a whole multiple of --frontier-hosts, not ${values['frontier-urls']}`);
  const runs = values['memory-runs'].split(',').map((r) => r.trim());
  for (const r of runs) if (r !== 'crawl' && r !== 'frontier') throw new Error(`--memory-runs takes crawl, frontier or both (comma-separated), not ${r}`);
  const spill = values['spill-above'];
  const spillAbove = spill === undefined ? undefined : spill === 'off' ? null : Number(spill);
  if (typeof spillAbove === 'number' && !Number.isInteger(spillAbove)) throw new Error(`--spill-above takes a whole number or off, not ${spill}`);
  if (values.seen !== undefined && values.seen !== 'exact' && values.seen !== 'bloom') throw new Error(`--seen takes exact or bloom, not ${values.seen}`);
  const seenRate = values['seen-rate'] === undefined ? undefined : Number(values['seen-rate']);
  if (seenRate !== undefined && (!Number.isFinite(seenRate) || values.seen !== 'bloom'))
    throw new Error(`--seen-rate takes a number, with --seen bloom, not ${values['seen-rate']}`);
  const frontier = values.seen === undefined ? null : { seen: values.seen as 'exact' | 'bloom', ...(seenRate === undefined ? {} : { seenRate }) };
  return { frontierHosts: hosts, frontierUrlsPerHost: urls / hosts, runs, frontier, ...(spillAbove === undefined ? {} : { spillAbove }) };
}

/** Scenario m: the crawl of the generated test web to completion, then the seeded frontier (bench/memory-scenarios.ts). */
async function memoryRuns(s: Scenario, o: ReturnType<typeof memoryOptions>, workers: number, client: Client, env: Record<string, string>, redis: RedisLike) {
  const out = [];
  if (o.runs.includes('crawl')) {
    const { web, seeds, expected } = await scenarioWeb(s);
    out.push(
      await memoryCrawlRun({
        name: s.name,
        hosts: s.hosts,
        pages: s.pages,
        workers,
        client,
        env,
        redis,
        web,
        seeds,
        expected,
        input: (id) => ({ ...campaignInput(s, web, seeds, id), ...(o.frontier ? { frontier: o.frontier } : {}) }),
      }),
    );
  }
  if (o.runs.includes('frontier')) {
    out.push(
      await memoryFrontierRun({
        name: '(m) Redis memory',
        hosts: o.frontierHosts,
        urlsPerHost: o.frontierUrlsPerHost,
        spillAbove: o.spillAbove,
        ...(o.frontier ? { seen: o.frontier } : {}),
        workers,
        client,
        env,
        redis,
      }),
    );
  }
  return out;
}

/** The headless dev server and one Redis, as `crawl` starts them. */
async function benchDevStack(dataDir: string) {
  const stack = await startStack({ dataDir, headless: true, log: (m) => process.stderr.write(`${m}\n`) });
  const pid = (name: string): number => stack.processes.find((p) => p.name === name)?.pid ?? -1;
  return { ...stack, pids: { server: 'dev', temporal: [pid('temporal')], redis: [pid('redis')], database: [] } satisfies Omit<StackPids, 'objectStore'> };
}

/** `crawler cluster up`'s topology on free ports, without its workers (the scenario starts its own). */
async function benchCluster(dataDir: string) {
  const state = await clusterUp({ dataDir, workers: 0, freePorts: true, log: (m) => process.stderr.write(`cluster: ${m}\n`) });
  const pids = (role: string) => state.processes.filter((p) => p.role === role).map((p) => p.pid);
  return {
    temporalAddress: state.temporalAddress,
    redisUrl: state.redisUrl,
    pids: { server: 'cluster', temporal: pids('temporal'), redis: pids('redis'), database: pids('postgres') } satisfies Omit<StackPids, 'objectStore'>,
    stop: async () => {
      await clusterDown({ dataDir });
    },
  };
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
  process.exit(1);
});
