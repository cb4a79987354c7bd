// `npm run bench`: throughput and politeness figures on the local test web,
// with the embedded stack on free ports. Prints figures; asserts nothing.
//   npm run bench -- [--workers 2] [--only a,b,c,d]   (c and d are long and only run when asked for)
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { LOCAL_DIR } from '../src/stack/paths';
import { startStack } from '../src/stack/stack';
import { connectClient } from '../src/temporal/connect';
import { startCampaign } from '../src/temporal/campaign-client';
import { ensureWorkflowBundle } from '../src/worker/workflow-bundle';
import { WorkerPool } from '../src/worker/worker-pool';
import { generateSites, startTestWeb } from '../test/web/test-web';
import { createRedis } from '../src/redis/client';
import { hostKeys } from '../src/redis/keys';
import type { RedisLike } from '../src/redis/scripts';
import { hostKey } from '../src/url/normalize';

interface Scenario {
  name: string;
  hosts: number;
  pages: number;
  delayMs: number;
  fanOut?: number;
  /** Campaign page budget; the scenario then measures a crawl cut short on purpose. */
  maxPages?: number;
  /** Not run by default (long); ask for it with --only. */
  optIn?: boolean;
}

const SCENARIOS: Record<string, Scenario> = {
  a: { name: '(a) 200 hosts × 20 pages, 1 s delay', hosts: 200, pages: 20, delayMs: 1000 },
  b: { name: '(b) 100 hosts × 50 pages, 0 delay', hosts: 100, pages: 50, delayMs: 0 },
  c: { name: '(c) 2000 hosts × 3 pages, 1 s delay', hosts: 2000, pages: 3, delayMs: 1000, optIn: true },
  // (a) with a quarter of the hosts: what the crawler achieves when the dev
  // server has timer capacity to spare (docs/benchmarks.md, "the ceiling").
  e: { name: '(e) 50 hosts × 20 pages, 1 s delay', hosts: 50, pages: 20, delayMs: 1000, optIn: true },
  d: { name: '(d) one host, 200k pages, fan-out 20 (frontier ≥ 100k), first 10k pages', hosts: 1, pages: 200_000, fanOut: 20, delayMs: 0, maxPages: 10_000, optIn: true },
};

/** RSS of a process and its descendants (a worker with children of its own counts them too), in MB. */
function treeRssMb(pid: number): number {
  let kb = 0;
  const visit = (p: number) => {
    try {
      const status = fs.readFileSync(`/proc/${p}/status`, 'utf8');
      kb += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      for (const t of fs.readdirSync(`/proc/${p}/task`)) {
        const kids = fs.readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').trim();
        for (const k of kids ? kids.split(/\s+/) : []) visit(Number(k));
      }
    } catch {
      /* gone */
    }
  };
  visit(pid);
  return kb / 1024;
}

/** Total history events of every run of every workflow of the campaign, and the largest single run. */
async function historyEvents(client: Client, campaignId: string): Promise<{ total: number; largest: number }> {
  let total = 0;
  let largest = 0;
  const seen = new Set<string>();
  for (const query of [`WorkflowId = '${campaignId}'`, `CrawlCampaign = '${campaignId}'`]) {
    // Every run counts: continue-as-new and idle restarts start new runs.
    for await (const wf of client.workflow.list({ query })) {
      if (seen.has(wf.runId)) continue;
      seen.add(wf.runId);
      const n = (await client.workflow.getHandle(wf.workflowId, wf.runId).describe()).historyLength;
      total += n;
      largest = Math.max(largest, n);
    }
  }
  return { total, largest };
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

async function runScenario(s: Scenario, workers: number, client: Client, env: Record<string, string>, redis: RedisLike, temporalPid: number) {
  const web = await startTestWeb();
  const sites = generateSites({ count: s.hosts, pages: s.pages, fanOut: s.fanOut ?? 3, crossPerPage: s.hosts > 1 ? 1 : 0, hostPattern: (i) => `b${i}.bench.test`, seed: 1 });
  for (const spec of sites) web.addSite(spec);
  const seeds = sites.map((x) => web.url(x.host, '/'));
  const queue = `bench-${Date.now()}`;
  // Supervised like `crawl`'s workers: a worker that dies (say, under a heap
  // cap set through CRAWLER_WORKER_NODE_ARGS) is replaced and counted, and one
  // that keeps dying fails the run instead of leaving it waiting.
  const pool = new WorkerPool({ ...env, CRAWLER_TASK_QUEUE: queue }, { supervise: true, onLog: (l) => { if (!l.startsWith('worker#')) process.stderr.write(`${l}\n`); } });
  await pool.start(workers);
  const campaignId = `bench-${Date.now().toString(36)}`;
  let peakRss = 0;
  const rssTimer = setInterval(() => {
    for (const w of pool.alive()) peakRss = Math.max(peakRss, treeRssMb(w.child.pid!));
  }, 500);
  // Every 10 s: worker RSS (is memory flat?) and, for one-host scenarios, the frontier size.
  const samples: { s: number; rssMb: number[]; frontier?: number }[] = [];
  let peakFrontier = 0;
  let frontierKey: string | null = null;
  const sampleTimer = setInterval(() => {
    void (async () => {
      const frontier = frontierKey ? await redis.zcard(frontierKey) : undefined;
      if (frontier !== undefined) peakFrontier = Math.max(peakFrontier, frontier);
      samples.push({ s: Math.round((Date.now() - t0) / 1000), rssMb: pool.alive().map((w) => Math.round(treeRssMb(w.child.pid!))), frontier });
    })();
  }, 10_000);
  const cpu0 = cpuSeconds(temporalPid);
  const t0 = Date.now();
  const handle = await startCampaign(client, queue, {
    campaignId,
    seeds,
    scope: { mode: 'any' },
    politeness: { minDelayMs: s.delayMs },
    ...(s.maxPages ? { budgets: { maxPages: s.maxPages } } : {}),
    // Generated pages are link lists that differ only in numbers: near-duplicate
    // detection would call them copies and not follow their links.
    ...(s.hosts === 1 ? { content: { dedup: 'exact' as const } } : {}),
    fetch: { resolve: web.resolveArgs() },
    output: { dir: path.join(LOCAL_DIR, 'bench-output', campaignId) },
    idleCloseMs: 10_000,
  });
  if (s.hosts === 1) frontierKey = hostKeys(`${campaignId}.${handle.firstExecutionRunId.slice(0, 8)}`, hostKey(seeds[0])).frontier;
  const release = async () => {
    clearInterval(sampleTimer);
    clearInterval(rssTimer);
    await pool.stopAll();
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
  const temporalCpu = (cpuSeconds(temporalPid) - cpu0) / ((Date.now() - t0) / 1000);
  // The crawl is over when the last page is stored; the campaign then waits for idle domains to close.
  const lastRequest = Math.max(...web.requests().map((r) => r.t));
  const seconds = (lastRequest - t0) / 1000;
  const totalSeconds = (Date.now() - t0) / 1000;
  clearInterval(rssTimer);
  const reqs = web.requests().filter((r) => r.path !== '/robots.txt' && r.path !== '/sitemap.xml');
  const urls = reqs.map((r) => `${r.host}${r.path}`);
  const byHost = new Map<string, number[]>();
  for (const r of web.requests()) byHost.set(r.host, [...(byHost.get(r.host) ?? []), r.t]);
  let violations = 0;
  for (const ts of byHost.values()) {
    ts.sort((a, b) => a - b);
    for (let i = 1; i < ts.length; i++) if (ts[i] - ts[i - 1] < s.delayMs) violations++;
  }
  const { total: events, largest } = await historyEvents(client, campaignId);
  // Ideal: each host's requests (robots.txt + pages) back to back at its delay.
  const ideal = (s.pages * s.delayMs) / 1000;
  await release();
  return {
    scenario: s.name,
    workers,
    pages: result.pages,
    expectedPages: s.hosts * s.pages,
    crawlSeconds: Number(seconds.toFixed(1)),
    campaignSeconds: Number(totalSeconds.toFixed(1)),
    pagesPerSec: Number((result.pages / seconds).toFixed(1)),
    politenessEfficiency: s.delayMs > 0 ? Number((ideal / seconds).toFixed(3)) : null,
    politenessViolations: violations,
    duplicateFetches: urls.length - new Set(urls).size,
    peakWorkerRssMb: Math.round(peakRss),
    workerRestarts: pool.restarts,
    historyEventsPerPage: Number((events / Math.max(1, result.pages)).toFixed(1)),
    largestHistoryEvents: largest,
    temporalServerCpuPercent: Math.round(temporalCpu * 100),
    ...(frontierKey ? { peakFrontier } : {}),
    ...(s.optIn ? { samples } : {}),
  };
}

async function main() {
  const { values } = parseArgs({ options: { workers: { type: 'string', default: '2' }, only: { type: 'string' } } });
  const workers = Number(values.workers);
  const dataDir = path.join(LOCAL_DIR, 'bench-stack', String(Date.now()));
  const stack = await startStack({ dataDir, headless: true, log: (m) => process.stderr.write(`${m}\n`) });
  const bundle = await ensureWorkflowBundle();
  const client = await connectClient(stack.temporalAddress);
  const env = { TEMPORAL_ADDRESS: stack.temporalAddress, REDIS_URL: stack.redisUrl, CRAWLER_WORKFLOW_BUNDLE: bundle };
  try {
    const redis = createRedis(stack.redisUrl);
    const temporalPid = stack.processes.find((p) => p.name === 'temporal')?.pid ?? -1;
    const keys = values.only ? values.only.split(',') : Object.keys(SCENARIOS).filter((k) => !SCENARIOS[k].optIn);
    for (const key of keys) {
      if (!SCENARIOS[key]) throw new Error(`no scenario ${key}; choose from ${Object.keys(SCENARIOS).join(', ')}`);
      const r = await runScenario(SCENARIOS[key], workers, client, env, redis, temporalPid);
      process.stdout.write(`${JSON.stringify(r)}\n`);
    }
    redis.disconnect();
  } finally {
    await client.connection.close();
    await stack.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
  process.exit(1);
});
