// `npm run bench`: throughput and politeness figures on the local test web,
// with the embedded stack on free ports. Prints figures; asserts nothing.
//   npm run bench -- [--workers 2] [--only a|b]
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

interface Scenario {
  name: string;
  hosts: number;
  pages: number;
  delayMs: number;
}

const SCENARIOS: Record<string, Scenario> = {
  a: { name: '(a) 200 hosts × 20 pages, 1 s delay', hosts: 200, pages: 20, delayMs: 1000 },
  b: { name: '(b) 100 hosts × 50 pages, 0 delay', hosts: 100, pages: 50, delayMs: 0 },
};

/** RSS of a process and its descendants (tsx runs node as a child), in MB. */
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

async function historyEvents(client: Client, campaignId: string): Promise<number> {
  let total = 0;
  const seen = new Set<string>();
  for (const query of [`WorkflowId = '${campaignId}'`, `CrawlCampaign = '${campaignId}'`]) {
    // Every run counts: continue-as-new and idle restarts start new runs.
    for await (const wf of client.workflow.list({ query })) {
      if (seen.has(wf.runId)) continue;
      seen.add(wf.runId);
      total += (await client.workflow.getHandle(wf.workflowId, wf.runId).describe()).historyLength;
    }
  }
  return total;
}

async function runScenario(s: Scenario, workers: number, client: Client, env: Record<string, string>) {
  const web = await startTestWeb();
  const sites = generateSites({ count: s.hosts, pages: s.pages, fanOut: 3, crossPerPage: 1, hostPattern: (i) => `b${i}.bench.test`, seed: 1 });
  for (const spec of sites) web.addSite(spec);
  const seeds = sites.map((x) => web.url(x.host, '/'));
  const queue = `bench-${Date.now()}`;
  const pool = new WorkerPool({ ...env, CRAWLER_TASK_QUEUE: queue });
  await pool.start(workers);
  const campaignId = `bench-${Date.now().toString(36)}`;
  let peakRss = 0;
  const rssTimer = setInterval(() => {
    for (const w of pool.alive()) peakRss = Math.max(peakRss, treeRssMb(w.child.pid!));
  }, 500);
  const t0 = Date.now();
  const handle = await startCampaign(client, queue, {
    campaignId,
    seeds,
    scope: { mode: 'any' },
    politeness: { minDelayMs: s.delayMs },
    fetch: { resolve: web.resolveArgs() },
    output: { dir: path.join(LOCAL_DIR, 'bench-output', campaignId) },
    idleCloseMs: 10_000,
  });
  const result = await handle.result();
  // The crawl is over when the last page is stored; the campaign then waits for idle domains to close.
  const lastRequest = Math.max(...web.requests().map((r) => r.t));
  const seconds = (lastRequest - t0) / 1000;
  const totalSeconds = (Date.now() - t0) / 1000;
  clearInterval(rssTimer);
  const reqs = web.requests().filter((r) => r.path !== '/robots.txt');
  const urls = reqs.map((r) => `${r.host}${r.path}`);
  const byHost = new Map<string, number[]>();
  for (const r of web.requests()) byHost.set(r.host, [...(byHost.get(r.host) ?? []), r.t]);
  let violations = 0;
  for (const ts of byHost.values()) {
    ts.sort((a, b) => a - b);
    for (let i = 1; i < ts.length; i++) if (ts[i] - ts[i - 1] < s.delayMs) violations++;
  }
  const events = await historyEvents(client, campaignId);
  // Ideal: each host's requests (robots.txt + pages) back to back at its delay.
  const ideal = (s.pages * s.delayMs) / 1000;
  await pool.stopAll();
  await web.close();
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
    historyEventsPerPage: Number((events / Math.max(1, result.pages)).toFixed(1)),
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
    for (const key of values.only ? [values.only] : Object.keys(SCENARIOS)) {
      const r = await runScenario(SCENARIOS[key], workers, client, env);
      process.stdout.write(`${JSON.stringify(r)}\n`);
    }
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
