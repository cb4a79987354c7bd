// Chaos on the production topology (`npm run chaos -- --cluster`): a campaign
// crawls the test web on `crawler cluster up`'s PostgreSQL-backed Temporal
// server, Redis Cluster (a replica per master) and workers, while faults hit
// the real processes:
//
//   kill-worker        SIGKILL a cluster worker; `cluster up` starts it again
//   kill-redis         SIGKILL the Redis node that is master of the most slots;
//                      its replica takes over (cluster-node-timeout), then
//                      `cluster up` starts the killed node again and it rejoins as a replica
//   restart-temporal   SIGKILL the Temporal server; `cluster up` starts it again on PostgreSQL
//
// The verdict is the one the single-machine chaos run gives (report.ts): every
// page stored, no politeness violation, duplicates within the documented bound,
// and per fault how long until the component served again and until the crawl went on.
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { clusterDown, clusterUp, readClusterState, stillRunning, type ClusterState } from '../../src/worker/cluster';
import { LOCAL_DIR } from '../../src/stack/paths';
import { WORKER_ENV } from '../../src/stack/topology';
import { readIndex } from '../../src/storage/index-writer';
import { startCampaign } from '../../src/temporal/campaign-client';
import { connectClient } from '../../src/temporal/connect';
import type { CampaignResult } from '../../workflows/messages';
import { generateSites, startTestWeb, type SiteRequest } from '../web/test-web';
import { buildReport, isHousekeeping, type ChaosReport, type InjectedFault, type Served } from './report';

export const CLUSTER_FAULT_KINDS = ['kill-worker', 'kill-redis', 'restart-temporal'] as const;
export type ClusterFaultKind = (typeof CLUSTER_FAULT_KINDS)[number];

export interface ClusterChaosOptions {
  hosts: number;
  pages: number;
  workers: number;
  faults: ClusterFaultKind[];
  /** Faults in all: rounds of every kind, at progress points between 15 % and 85 % of the crawl. */
  count: number;
  seed: number;
  delayMs: number;
  log?: (line: string) => void;
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function clusterNodes(ports: number[]): Promise<{ port: number; master: boolean; slots: number; fail: boolean }[]> {
  for (const port of ports) {
    const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
    c.on('error', () => undefined);
    try {
      await c.connect();
      const text = (await c.call('CLUSTER', 'NODES')) as string;
      return text
        .trim()
        .split('\n')
        .map((l) => l.split(' '))
        .map((f) => ({
          port: Number(/:(\d+)@/.exec(f[1])![1]),
          master: f[2].includes('master'),
          fail: /\bfail\b/.test(f[2]),
          slots: f.slice(8).reduce((n, r) => {
            const [a, b] = r.split('-').map(Number);
            return Number.isFinite(a) ? n + (Number.isFinite(b) ? b - a + 1 : 1) : n;
          }, 0),
        }));
    } catch {
      /* next node */
    } finally {
      c.disconnect();
    }
  }
  throw new Error('no Redis node answers');
}

async function clusterOk(port: number): Promise<boolean> {
  const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return /cluster_state:ok/.test((await c.call('CLUSTER', 'INFO')) as string);
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

function kill9(state: ClusterState, name: string): number {
  const p = state.processes.find((x) => x.name === name)!;
  process.kill(p.pid, 'SIGKILL');
  return p.pid;
}

async function waitGone(dir: string, name: string): Promise<void> {
  const p = readClusterState(dir)!.processes.find((x) => x.name === name)!;
  while (stillRunning(p)) await sleep(20);
}

export async function runClusterChaos(opts: ClusterChaosOptions): Promise<ChaosReport> {
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const dataDir = path.join(LOCAL_DIR, 'chaos-runs', `cluster-${new Date().toISOString().replace(/[:.]/g, '-')}-s${opts.seed}`);
  const dir = path.join(dataDir, 'cluster');
  fs.mkdirSync(dir, { recursive: true });
  log(`cluster chaos: data in ${dataDir}`);
  const up = () => clusterUp({ dataDir: dir, workers: opts.workers, freePorts: true, log: (m) => log(`cluster: ${m}`) });
  const web = await startTestWeb();
  try {
    let state = await up();
    const served: Served[] = [];
    let pagesServed = 0;
    const handler = (ctx: SiteRequest): boolean => {
      served.push({ host: ctx.host, path: ctx.target, t: now() });
      if (!isHousekeeping(ctx.path)) pagesServed++;
      return false;
    };
    const sites = generateSites({ count: opts.hosts, pages: opts.pages, fanOut: 3, hostPattern: (i) => `k${i}.cluster-chaos.test`, seed: opts.seed, latencyMs: 20 });
    for (const spec of sites) web.addSite({ ...spec, handler });
    const seed = web.url(sites[0].host, '/');
    const expected = web.expectedPages([seed]);

    const client = await connectClient(state.temporalAddress, WORKER_ENV.TEMPORAL_NAMESPACE);
    const campaignId = `cluster-chaos-${opts.seed}-${Date.now().toString(36)}`;
    const outDir = path.join(dataDir, 'output', campaignId);
    const t0 = now();
    await startCampaign(client, WORKER_ENV.CRAWLER_TASK_QUEUE, {
      campaignId,
      seeds: [seed],
      scope: { mode: 'any' },
      politeness: { minDelayMs: opts.delayMs },
      fetch: { resolve: web.resolveArgs() },
      output: { dir: outDir },
    });
    log(`cluster chaos: campaign ${campaignId}: ${opts.hosts} hosts × ${opts.pages} pages (${expected.size}), ${opts.workers} workers, delay ${opts.delayMs} ms`);

    const injected: InjectedFault[] = [];
    const points = Array.from({ length: opts.count }, (_, i) => Math.floor((0.15 + (0.7 * (i + 0.5)) / opts.count) * expected.size));
    const inject = async (kind: ClusterFaultKind): Promise<InjectedFault> => {
      state = readClusterState(dir)!;
      if (kind === 'kill-worker') {
        const workers = state.processes.filter((p) => p.role === 'worker');
        const victim = workers[injected.length % workers.length];
        const at = now();
        const pid = kill9(state, victim.name);
        await waitGone(dir, victim.name);
        await up();
        return { kind, at, restoredAt: now(), detail: `killed ${victim.name} (pid ${pid}); cluster up started it again` };
      }
      if (kind === 'kill-redis') {
        const ports = state.redisNodes.map((n) => n.port);
        const victim = (await clusterNodes(ports)).filter((n) => n.master && !n.fail).sort((a, b) => b.slots - a.slots)[0];
        const name = state.processes.find((p) => p.role === 'redis' && (p.ready as { port: number }).port === victim.port)!.name;
        const at = now();
        const pid = kill9(state, name);
        await waitGone(dir, name);
        const others = ports.filter((p) => p !== victim.port);
        // Failed over: a surviving node sees the cluster whole again, its slots on the promoted replica.
        for (;;) {
          const nodes = await clusterNodes(others).catch(() => []);
          const promoted = nodes.find((n) => n.master && !n.fail && n.port !== victim.port && n.slots === victim.slots);
          if (promoted && (await clusterOk(others[0]))) break;
          await sleep(50);
        }
        const failedOver = now();
        await up();
        return {
          kind,
          at,
          restoredAt: failedOver,
          detail: `killed master ${name} (pid ${pid}, ${victim.slots} slots); replica promoted after ${((failedOver - at) / 1000).toFixed(1)} s; node back as a replica ${((now() - failedOver) / 1000).toFixed(1)} s later`,
        };
      }
      const at = now();
      const pid = kill9(state, 'temporal-server');
      await waitGone(dir, 'temporal-server');
      await up();
      return { kind, at, restoredAt: now(), detail: `killed temporal-server (pid ${pid}); cluster up started it again on PostgreSQL` };
    };

    let finished = false;
    const faultLoop = (async () => {
      for (let i = 0; i < opts.count && !finished; i++) {
        while (!finished && pagesServed < points[i]) await sleep(50);
        if (finished) return;
        const kind = opts.faults[i % opts.faults.length];
        const f = await inject(kind);
        injected.push(f);
        log(`cluster chaos: fault ${injected.length} ${kind} at +${((f.at - t0) / 1000).toFixed(1)} s: ${f.detail}; back after ${((f.restoredAt - f.at) / 1000).toFixed(1)} s`);
        await sleep(2_000);
      }
    })();
    const handle = client.workflow.getHandle(campaignId);
    let status = 'TIMED_OUT';
    while (now() - t0 < 20 * 60_000) {
      try {
        const d = await handle.describe();
        if (d.status.name !== 'RUNNING') {
          status = d.status.name;
          break;
        }
      } catch {
        /* the server is restarting */
      }
      await sleep(1_000);
    }
    const endedAt = now();
    finished = true;
    await faultLoop;
    let campaignStatus = status;
    if (status === 'COMPLETED') campaignStatus = ((await handle.result()) as CampaignResult).status;
    await client.connection.close();
    const index = await readIndex(path.join(outDir, 'index'));
    const sealedDir = path.join(outDir, 'sealed');
    const sealed = fs.existsSync(sealedDir) ? await readIndex(sealedDir, (f) => f.endsWith('.index.jsonl')) : null;
    const report = buildReport({
      sealed,
      opts: { hosts: opts.hosts, pages: opts.pages, seed: opts.seed, workers: opts.workers, delayMs: opts.delayMs },
      campaignId,
      campaignStatus,
      dataDir,
      durationMs: Math.round(endedAt - t0),
      t0,
      faults: injected,
      expected,
      index,
      requests: web.requests(),
      served,
      resets: [],
      unexpectedExits: [],
      ackedWritesLost: 0,
      web,
    });
    fs.writeFileSync(path.join(dataDir, 'report.json'), JSON.stringify(report, null, 2));
    return report;
  } finally {
    await web.close();
    await clusterDown({ dataDir: dir, log: (m) => log(`cluster: ${m}`) });
  }
}
