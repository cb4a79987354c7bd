// The operators' promise, tested: kill anything at any time and the crawl
// still finishes with nothing lost, nothing stored twice and no host hit
// faster than allowed. runChaos starts its own stack (Temporal SQLite and
// Redis AOF on disk under .crawler/chaos-runs/), a generated test web and a
// pool of worker processes, starts a campaign, and while it runs injects
// faults at seeded random intervals:
//
//   kill-worker        SIGKILL a random worker, start a replacement
//   kill-redis         SIGKILL redis-server, start it again on the same port and AOF
//   restart-temporal   SIGKILL the Temporal dev server, start it again on the same port and SQLite file
//   reset-connections  for a few seconds the test web resets (RST) a share of page requests
//
// and, asked for by name, faults of the worker holding the most sessions (its lease's records):
//
//   kill-busiest-worker  SIGKILL it, start a replacement restartAfterMs later (or never)
//   freeze-worker        SIGSTOP it for freezeMs, then SIGCONT
//   term-worker          SIGTERM it (it drains and hands its hosts back), start a replacement
//
// Afterwards it checks the request log and the output index and returns a report.
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import Redis from 'ioredis';
import { LOCAL_DIR } from '../../src/stack/paths';
import { readIndex } from '../../src/storage/index-writer';
import { connectClient } from '../../src/temporal/connect';
import { startCampaign } from '../../src/temporal/campaign-client';
import { ensureWorkflowBundle } from '../../src/worker/workflow-bundle';
import { WorkerPool, type WorkerProcess } from '../../src/worker/worker-pool';
import { campaignStatusQuery, type CampaignResult } from '../../workflows/messages';
import { CampaignHosts } from '../../src/redis/campaign-hosts';
import { createRedis } from '../../src/redis/client';
import { workerKeys } from '../../src/redis/keys';
import { identityOf } from '../../activities/worker-liveness';
import { generateSites, startTestWeb, type SiteRequest, type TestWeb } from '../web/test-web';
import { buildReport, isHousekeeping, type ChaosReport, type FaultKind, type InjectedFault, type Served } from './report';
import { RestartableStack } from './restartable-stack';

export { ALL_FAULT_KINDS, FAULT_KINDS, WORKER_FAULT_KINDS, formatReport, type ChaosReport, type FaultKind, type FaultRecord } from './report';

export interface ChaosOptions {
  hosts: number;
  pages: number;
  workers?: number;
  /** Faults are injected during this long after the campaign starts; default: until it completes. */
  durationMs?: number;
  faults: FaultKind[];
  seed: number;
  /** Campaign minimum delay between two requests to one host; default 150. */
  delayMs?: number;
  /** Server think time per request; default 20. */
  latencyMs?: number;
  /** Pause between the end of one fault and the next, drawn uniformly; default 3–8 s. */
  minIntervalMs?: number;
  maxIntervalMs?: number;
  /**
   * Inject exactly this many faults, at progress points (pages served) drawn
   * at random between 5 % and 90 % of the crawl, instead of at timed
   * intervals: on a fast machine a timed schedule may end before every kind
   * had its turn. Kinds still come in shuffled rounds.
   */
  faultCount?: number;
  /** With faultCount: at least this long between the end of one fault and the next, so each one's effects can be told apart; default 2 s. */
  settleMs?: number;
  /** How long a reset-connections fault lasts and the share of page requests it resets; default 3 s, 0.5. */
  resetWindowMs?: number;
  resetShare?: number;
  /** kill-busiest-worker: start a replacement this long after the kill; null: never (the pool is one smaller from then on). Default 1 s. */
  restartAfterMs?: number | null;
  /** freeze-worker: how long the worker stays stopped (SIGSTOP) before SIGCONT; default 40 s. */
  freezeMs?: number;
  /** Give up waiting for the campaign after this long; default 20 min. */
  timeoutMs?: number;
  /** Default: a fresh folder under .crawler/chaos-runs/. */
  dataDir?: string;
  /**
   * Make the two strict checks required: "each page in the raw index exactly
   * once" and "duplicate fetches ≤ kills". Off by default because the crawler
   * does not promise either: a kill re-runs every step it interrupted (one per
   * host at most), and a step interrupted between its index append and its
   * Redis commit stores the page again in the raw files (docs/guarantees.md);
   * the sealed index has each page once whatever happens, and is checked always.
   */
  strict?: boolean;
  /** Delete the data dir afterwards when every check passed; default false. */
  cleanupOnSuccess?: boolean;
  /**
   * Keep it all the same when the campaign took longer than this (ms): a run that passed but was
   * slow leaves its histories, worker logs and requests to be read (one acceptance run in five once
   * took 334 s against 30-50 s, and left nothing behind).
   */
  keepWhenSlowerThanMs?: number;
  log?: (line: string) => void;
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** mulberry32: small, seeded, good enough to pick faults and intervals. */
function rngOf(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Faults the test web injects itself: a handler on every site. */
class ConnectionChaos {
  private until = 0;
  private readonly resetOnce = new Set<string>();
  readonly served: Served[] = [];
  readonly resets: Served[] = [];

  constructor(
    private readonly rnd: () => number,
    private readonly share: number,
  ) {}

  startWindow(ms: number): void {
    this.until = now() + ms;
  }

  readonly handler = (ctx: SiteRequest): boolean => {
    const t = now();
    const key = `${ctx.host} ${ctx.target}`;
    // Each URL is reset at most once, and never robots.txt: a URL that kept
    // failing would be recorded as failed after fetch.maxRetries, and a host
    // whose robots.txt keeps failing is skipped on purpose (RFC 9309).
    if (t < this.until && !isHousekeeping(ctx.path) && !this.resetOnce.has(key) && this.rnd() < this.share) {
      this.resetOnce.add(key);
      this.resets.push({ host: ctx.host, path: ctx.target, t });
      ctx.socket.resetAndDestroy();
      return true;
    }
    this.served.push({ host: ctx.host, path: ctx.target, t });
    if (!isHousekeeping(ctx.path)) this.pagesServed++;
    return false;
  };

  pagesServed = 0;
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const deletes = (r: ChaosReport) => r.ok && !!opts.cleanupOnSuccess && !(opts.keepWhenSlowerThanMs !== undefined && r.durationMs > opts.keepWhenSlowerThanMs);
  const workers = opts.workers ?? 3;
  const delayMs = opts.delayMs ?? 150;
  const minInterval = opts.minIntervalMs ?? 3_000;
  const maxInterval = Math.max(minInterval, opts.maxIntervalMs ?? 8_000);
  const resetWindowMs = opts.resetWindowMs ?? 3_000;
  const timeoutMs = opts.timeoutMs ?? 20 * 60_000;
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const rnd = rngOf(opts.seed);
  const faultKinds = opts.faults.length ? [...new Set(opts.faults)] : [];
  const dataDir = opts.dataDir ?? path.join(LOCAL_DIR, 'chaos-runs', `${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}-s${opts.seed}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const workerLog = fs.createWriteStream(path.join(dataDir, 'workers.log'), { flags: 'a' });

  log(`chaos: data in ${dataDir}`);
  const [stack, bundle] = await Promise.all([
    RestartableStack.start({ dataDir: path.join(dataDir, 'stack'), log: (m) => workerLog.write(`[stack] ${m}\n`) }),
    ensureWorkflowBundle(),
  ]);
  let report: ChaosReport | undefined;
  /** Set once the run is over: workers stopped from here on did not die on their own. */
  let stopping = false;
  let web: TestWeb | undefined;
  let client: Client | undefined;
  let pool: WorkerPool | undefined;
  try {
    web = await startTestWeb();
    const conn = new ConnectionChaos(rngOf(opts.seed ^ 0x5eed), opts.resetShare ?? 0.5);
    const sites = generateSites({
      count: opts.hosts,
      pages: opts.pages,
      fanOut: 3,
      hostPattern: (i) => `c${i}.chaos.test`,
      seed: opts.seed,
      latencyMs: opts.latencyMs ?? 20,
    });
    for (const spec of sites) web.addSite({ ...spec, handler: conn.handler });
    const seed = web.url(sites[0].host, '/');
    const expected = web.expectedPages([seed]);

    const taskQueue = `chaos-${opts.seed}-${process.pid}`;
    pool = new WorkerPool(
      { TEMPORAL_ADDRESS: stack.temporalAddress, REDIS_URL: stack.redisUrl, CRAWLER_TASK_QUEUE: taskQueue, CRAWLER_WORKFLOW_BUNDLE: bundle },
      { onLog: (l) => workerLog.write(`${new Date().toISOString()} ${l}\n`) },
    );
    const killedByUs = new Set<WorkerProcess>();
    const unexpectedExits: ChaosReport['totals']['unexpectedWorkerExits'] = [];
    let t0 = now();
    const watch = (w: WorkerProcess) =>
      void w.exited.then((code) => {
        if (killedByUs.has(w) || stopping) return;
        unexpectedExits.push({ worker: w.index, code, at: Math.round(now() - t0) });
        log(`chaos: worker #${w.index} exited on its own (code ${code}); see ${path.join(dataDir, 'workers.log')}`);
      });
    const startWorker = async () => watch(await pool!.startOne());
    await Promise.all(Array.from({ length: workers }, startWorker));
    /** Replaces workers that died on their own, so the pool stays at its size. */
    // Faults and top-ups run one at a time.
    let lock: Promise<unknown> = Promise.resolve();
    const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
      const p = lock.then(fn);
      lock = p.catch(() => undefined);
      return p;
    };
    /** The pool's size: one less for each worker killed and not restarted. */
    let target = workers;
    const topUp = () =>
      exclusive(async () => {
        while (!stopping && pool!.alive().length < target) await startWorker();
      });

    client = await connectClient(stack.temporalAddress);
    const campaignId = `chaos-${opts.seed}-${Date.now().toString(36)}`;
    const outDir = path.join(dataDir, 'output', campaignId);
    t0 = now();
    await startCampaign(client, taskQueue, {
      campaignId,
      seeds: [seed],
      scope: { mode: 'any' },
      politeness: { minDelayMs: delayMs },
      fetch: { resolve: web.resolveArgs() },
      output: { dir: outDir },
    });
    log(
      `chaos: campaign ${campaignId}: ${opts.hosts} hosts × ${opts.pages} pages (${expected.size} in scope), ${workers} workers, delay ${delayMs} ms, faults ${faultKinds.join(', ') || 'none'}, seed ${opts.seed}`,
    );

    // ---- fault injection ---------------------------------------------------
    let finished = false;
    let faultInProgress = false;
    let ackedWritesLost = 0;
    const injected: InjectedFault[] = [];
    const rel = (t: number) => `+${((t - t0) / 1000).toFixed(1)} s`;
    const inject = async (kind: FaultKind): Promise<InjectedFault> => {
      if (kind === 'kill-worker') {
        const alive = pool!.alive();
        const victim = alive[Math.floor(rnd() * alive.length)];
        killedByUs.add(victim);
        const at = now();
        await pool!.kill9(victim);
        await startWorker();
        return { kind, at, restoredAt: now(), detail: `killed worker #${victim.index} (pid ${victim.child.pid})` };
      }
      if (kind === 'kill-busiest-worker' || kind === 'freeze-worker' || kind === 'term-worker') {
        const { victim, sessions } = await busiestWorker(pool!, stack.redisUrl, rnd);
        killedByUs.add(victim);
        const at = now();
        const what = `worker #${victim.index} (pid ${victim.child.pid}, ${sessions} session(s) recorded under its lease)`;
        if (kind === 'freeze-worker') {
          const freezeMs = opts.freezeMs ?? 40_000;
          victim.child.kill('SIGSTOP');
          await sleep(freezeMs);
          victim.child.kill('SIGCONT');
          // Woken, it goes on as a worker of the pool.
          killedByUs.delete(victim);
          return { kind, at, restoredAt: now(), detail: `froze ${what} for ${freezeMs / 1000} s` };
        }
        if (kind === 'term-worker') {
          await pool!.terminate(victim);
          await startWorker();
          return { kind, at, restoredAt: now(), detail: `SIGTERM to ${what}; a replacement started` };
        }
        await pool!.kill9(victim);
        const restartAfterMs = opts.restartAfterMs === undefined ? 1_000 : opts.restartAfterMs;
        if (restartAfterMs === null) {
          target--;
          return { kind, at, restoredAt: now(), detail: `killed ${what}, not restarted` };
        }
        await sleep(Math.max(0, restartAfterMs - (now() - at)));
        await startWorker();
        return { kind, at, restoredAt: now(), detail: `killed ${what}, restarted ${restartAfterMs} ms later` };
      }
      if (kind === 'kill-redis') {
        const pid = stack.pids().redis;
        // A probe counter incremented as fast as replies come back: after the
        // restart, the persisted value shows how many acknowledged writes the
        // kill took with it (appendfsync everysec).
        const probe = await startRedisProbe(stack.redisUrl);
        await sleep(300);
        const d = await stack.restartRedis('kill');
        const acked = await probe.stop();
        const persisted = await readProbe(stack.redisUrl);
        const lost = Math.max(0, acked - persisted);
        ackedWritesLost += lost;
        return { kind, at: d.downAt, restoredAt: d.upAt, detail: `killed redis-server pid ${pid}, restarted on ${stack.redisUrl}; acked probe writes lost: ${lost} of ${acked}` };
      }
      if (kind === 'restart-temporal') {
        const pid = stack.pids().temporal;
        const d = await stack.restartTemporal('kill');
        return { kind, at: d.downAt, restoredAt: d.upAt, detail: `killed temporal pid ${pid}, restarted on ${stack.temporalAddress}` };
      }
      const at = now();
      conn.startWindow(resetWindowMs);
      const before = conn.resets.length;
      await sleep(resetWindowMs);
      return { kind, at, restoredAt: now(), detail: `${conn.resets.length - before} requests reset in ${resetWindowMs} ms` };
    };
    // When the next fault is due: a timed pause, or a progress point.
    const progressPoints =
      opts.faultCount === undefined ? null : Array.from({ length: opts.faultCount }, () => Math.floor((0.05 + 0.85 * rnd()) * expected.size)).sort((a, b) => a - b);
    const waitForNextFault = async (): Promise<boolean> => {
      if (progressPoints) {
        const point = progressPoints.shift();
        if (point === undefined) return false;
        const settled = now() + (opts.settleMs ?? 2_000);
        while (!finished && (conn.pagesServed < point || now() < settled)) await sleep(50);
      } else {
        const until = now() + minInterval + rnd() * (maxInterval - minInterval);
        while (!finished && now() < until) await sleep(200);
      }
      return !finished && (opts.durationMs === undefined || now() - t0 <= opts.durationMs);
    };
    const faultLoop = (async () => {
      let bag: FaultKind[] = [];
      while (faultKinds.length > 0) {
        if (!(await waitForNextFault())) return;
        await topUp();
        // Every kind once per round, in a seeded order: short runs still see each kind.
        if (bag.length === 0) bag = shuffle([...faultKinds], rnd);
        const kind = bag.shift()!;
        faultInProgress = true;
        try {
          const f = await exclusive(() => inject(kind));
          injected.push(f);
          log(`chaos: fault ${injected.length} ${kind} at ${rel(f.at)}: ${f.detail}; back after ${((f.restoredAt - f.at) / 1000).toFixed(1)} s`);
        } catch (err) {
          log(`chaos: injecting ${kind} failed: ${String(err)}`);
          throw err;
        } finally {
          faultInProgress = false;
        }
      }
    })();
    const topUpLoop = (async () => {
      while (!finished) {
        await sleep(2_000);
        // Only between faults: a server restart is no time to start workers.
        if (!finished && !faultInProgress) await topUp().catch(() => undefined);
      }
    })();

    // ---- wait for the campaign (tolerating Temporal being away) ------------
    const handle = client.workflow.getHandle(campaignId);
    let status = 'TIMED_OUT';
    let lastProgress = 0;
    let faultError: unknown = null;
    void faultLoop.catch((err) => {
      faultError = err;
    });
    for (;;) {
      if (faultError) break;
      try {
        const d = await handle.describe();
        if (d.status.name !== 'RUNNING') {
          status = d.status.name;
          break;
        }
      } catch {
        /* Temporal is restarting */
      }
      if (now() - t0 > timeoutMs) break;
      if (now() - lastProgress > 15_000) {
        lastProgress = now();
        log(`chaos: ${rel(now())}: ${conn.served.length} requests served, ${pool.alive().length} workers`);
      }
      await sleep(1_000);
    }
    const endedAt = now();
    finished = true;
    await faultLoop.catch(() => undefined);
    await topUpLoop;
    if (faultError) throw faultError;

    let result: CampaignResult | null = null;
    let campaignStatus = status;
    if (status === 'COMPLETED') {
      result = (await withRetries(() => handle.result())) as CampaignResult;
      campaignStatus = result.status;
    } else if (status === 'TIMED_OUT') {
      const q = await handle.query(campaignStatusQuery).catch(() => null);
      if (q) {
        const redis = createRedis(stack.redisUrl);
        const page = await new CampaignHosts(redis, q.campaignKey).page(0, 50).catch(() => []);
        redis.disconnect();
        const stuck = page.filter((h) => h.state !== 'done').map((h) => `${h.host}:${h.state}`);
        log(`chaos: campaign still ${q.status} after ${timeoutMs} ms; hosts not done: ${stuck.slice(0, 20).join(' ')}`);
      }
    }
    log(`chaos: campaign ${campaignStatus} after ${((endedAt - t0) / 1000).toFixed(1)} s`);

    const index = await readIndex(path.join(outDir, 'index'));
    // Written by the campaign as it completed (src/storage/seal.ts).
    const sealedDir = path.join(outDir, 'sealed');
    const sealed = fs.existsSync(sealedDir) ? await readIndex(sealedDir, (f) => f.endsWith('.index.jsonl')) : null;
    // Raw material for a post-mortem, next to the stack's data and the worker log.
    const dump = (name: string, rows: unknown[]) => fs.writeFileSync(path.join(dataDir, name), rows.map((x) => JSON.stringify(x)).join('\n') + '\n');
    dump(
      'requests.jsonl',
      web.requests().map((q) => ({ ...q, t: Math.round((q.t - t0) * 10) / 10 })),
    );
    dump(
      'resets.jsonl',
      conn.resets.map((q) => ({ ...q, t: Math.round((q.t - t0) * 10) / 10 })),
    );
    dump(
      'faults.jsonl',
      injected.map((f) => ({ ...f, at: Math.round(f.at - t0), restoredAt: Math.round(f.restoredAt - t0) })),
    );
    report = buildReport({
      opts: { ...opts, workers, delayMs },
      campaignId,
      campaignStatus,
      dataDir,
      durationMs: Math.round(endedAt - t0),
      t0,
      faults: injected,
      expected,
      index,
      sealed,
      requests: web.requests(),
      served: conn.served,
      resets: conn.resets,
      unexpectedExits,
      ackedWritesLost,
      web,
    });
    fs.writeFileSync(path.join(dataDir, 'report.json'), JSON.stringify(report, null, 2));
    if (deletes(report)) report.dataDir = `${dataDir} (deleted)`;
    return report;
  } finally {
    stopping = true;
    await pool?.stopAll(20_000).catch(() => undefined);
    await client?.connection.close().catch(() => undefined);
    await web?.close();
    await stack.stop().catch(() => undefined);
    await new Promise((r) => workerLog.end(r));
    if (report && deletes(report)) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The live worker with the most regular sessions recorded under its lease (src/redis/worker-registry.ts); a random one when none has any. */
async function busiestWorker(pool: WorkerPool, redisUrl: string, rnd: () => number): Promise<{ victim: WorkerProcess; sessions: number }> {
  const alive = pool.alive();
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  redis.on('error', () => undefined);
  try {
    const k = workerKeys();
    const counts = new Map<number, number>();
    for (const id of await redis.zrange(k.leases, 0, -1)) {
      const pid = Number(identityOf(id).split('@')[0]);
      counts.set(pid, (counts.get(pid) ?? 0) + (await redis.hlen(k.sessions(id))));
    }
    const ranked = alive.map((w) => ({ victim: w, sessions: counts.get(w.child.pid ?? -1) ?? 0 })).sort((a, b) => b.sessions - a.sessions);
    if (ranked[0] && ranked[0].sessions > 0) return ranked[0];
    return { victim: alive[Math.floor(rnd() * alive.length)], sessions: 0 };
  } finally {
    redis.disconnect();
  }
}

const PROBE_KEY = 'chaos:probe';

/** INCRs a counter back to back until stop(); stop() returns the last value Redis acknowledged. */
async function startRedisProbe(url: string): Promise<{ stop(): Promise<number> }> {
  const r = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    r.once('ready', resolve);
    r.once('error', reject);
  });
  let acked = Number((await r.get(PROBE_KEY)) ?? 0);
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        acked = await r.incr(PROBE_KEY);
      } catch {
        return;
      }
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      r.disconnect();
      return acked;
    },
  };
}

async function readProbe(url: string): Promise<number> {
  const r = new Redis(url, { maxRetriesPerRequest: 3 });
  r.on('error', () => undefined);
  try {
    return Number((await r.get(PROBE_KEY)) ?? 0);
  } finally {
    r.disconnect();
  }
}

async function withRetries<T>(fn: () => Promise<T>, attempts = 30): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= attempts) throw err;
      await sleep(1_000);
    }
  }
}

function shuffle<T>(items: T[], rnd: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}
