// `crawler cluster up|down|status`: the production topology of
// docker-compose.yml run natively on one machine. PostgreSQL, a Temporal
// server on it (several history shards, built from source at the pinned
// release), a Redis Cluster of masters with a replica each, an S3 object
// store (SeaweedFS, built from source too) and N workers, each with its own
// spool and cache and no folder shared with another, all detached, on
// loopback, with their data under .crawler/cluster. Every
// setting comes from src/stack/topology.ts, which the compose file is checked
// against. cluster.json records each process with the command that started
// it, so `up` restarts exactly what is gone and `down` stops exactly what
// `up` started.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import Redis from 'ioredis';
import { Client, Connection } from '@temporalio/client';
import { awaitSearchAttributesServed, ensureSearchAttributes } from '../temporal/connect';
import { ensureWorkerBundle, workerNodeArgs, workerProcessEnv } from './worker-bundle';
import { ensureWorkflowBundle } from './workflow-bundle';
import { ManagedProcess } from '../stack/managed-process';
import { freePort, portOpen, waitFor } from '../stack/ports';
import { startPostgres } from '../stack/postgres';
import { startRedisCluster } from '../stack/redis-cluster';
import { redisReachable } from '../stack/redis-server';
import { CLUSTER_DIR, clusterStateFile, readClusterState, stillRunning, type ClusterProcess, type ClusterRole, type ClusterState, type Readiness } from '../stack/cluster-state';
import { processIdentity } from '../stack/stack';
import { StackError } from '../stack/stack-error';
import { temporalReachable } from '../stack/temporal-dev-server';
import { credentialsEnv, ensureClusterCredentials, readClusterCredentials } from '../stack/cluster-credentials';
import { ensureWeedBinary, objectStoreServes, startObjectStoreServer } from '../stack/seaweedfs';
import { ensureNamespace, ensureTemporalBinaries, migrateTemporalSchema, startTemporalServer } from '../stack/temporal-server';
import {
  defaultTemporalPorts,
  NAMESPACE,
  OBJECT_STORE,
  PORTS,
  POSTGRES,
  REDIS_CLUSTER,
  TEMPORAL_DYNAMIC_CONFIG_FILE,
  temporalServerEnv,
  workerEnv,
  type TemporalPortVar,
} from '../stack/topology';
import { findOrInstallPostgres } from '../stack/tools';

export { CLUSTER_DIR, readClusterState, runningClusterEndpoints, stillRunning, type ClusterProcess, type ClusterRole, type ClusterState } from '../stack/cluster-state';

function writeState(dir: string, state: ClusterState): void {
  fs.mkdirSync(dir, { recursive: true });
  const tmp = `${clusterStateFile(dir)}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(state, null, 2));
  fs.renameSync(tmp, clusterStateFile(dir));
}

async function isReady(r: Readiness): Promise<boolean> {
  switch (r.kind) {
    case 'postgres': {
      const bins = await findOrInstallPostgres();
      return spawnSync(bins.pgIsready, ['-q', '-h', '127.0.0.1', '-p', String(r.port), '-t', '2'], { stdio: 'ignore' }).status === 0;
    }
    case 'temporal':
      return temporalReachable(r.address);
    case 'redis':
      return redisReachable(`redis://127.0.0.1:${r.port}`);
    case 'http':
      try {
        return (await fetch(r.url, { signal: AbortSignal.timeout(2000) })).ok;
      } catch {
        return false;
      }
    case 's3': {
      const c = readClusterCredentials(r.credentialsDir);
      return c !== null && objectStoreServes(r.endpoint, [r.bucket], { accessKeyId: c.accessKey, secretAccessKey: c.secretKey });
    }
  }
}

/** The entry for a process started through ManagedProcess (its command as spawned). */
function record(
  proc: ManagedProcess,
  role: ClusterRole,
  ready: Readiness,
  env: Record<string, string> = {},
  cwd?: string,
  stopSignal: 'SIGTERM' | 'SIGINT' = 'SIGTERM',
): ClusterProcess {
  const identity = processIdentity(proc.pid);
  return {
    name: proc.name,
    role,
    pid: proc.pid,
    ...(identity ? { identity } : {}),
    command: proc.child.spawnfile,
    args: proc.child.spawnargs.slice(1),
    env,
    ...(cwd ? { cwd } : {}),
    logFile: proc.logFile,
    ready,
    stopSignal,
  };
}

const WORKER_READY_TIMEOUT_MS = 180_000;

/** A worker's own spool: on its own disk, as on a machine of its own (a restarted worker finds and uploads what it left). */
export const workerSpoolDir = (dir: string, index: number) => path.join(dir, 'workers', `worker-${index}`, 'spool');

/** Starts worker `index` of the cluster: the current worker and workflow bundles, detached. */
async function startWorker(dir: string, index: number, metricsPort: number, state: Pick<ClusterState, 'temporalAddress' | 'redisUrl' | 'objectStore'>): Promise<ClusterProcess> {
  if (!state.objectStore) throw new StackError('START_FAILED', 'the cluster has no object store for its workers to upload to');
  const bundle = await ensureWorkerBundle();
  const own = path.join(dir, 'workers', `worker-${index}`);
  const env = {
    ...workerEnv({
      temporalAddress: state.temporalAddress,
      redisUrl: state.redisUrl,
      metricsPort,
      metricsHost: '127.0.0.1',
      s3Endpoint: state.objectStore.endpoint,
      spoolDir: workerSpoolDir(dir, index),
    }),
    // Its own cache of the bucket's objects too (a seal on this worker reads through it): nothing shared.
    CRAWLER_CACHE_DIR: path.join(own, 'cache'),
    CRAWLER_WORKFLOW_BUNDLE: await ensureWorkflowBundle(),
  };
  const credentials = readClusterCredentials(dir);
  if (!credentials) throw new StackError('START_FAILED', "the cluster's object store credentials file is missing: `crawler cluster down --delete-data` and `up` again");
  // The credentials go to the process, not into `env`: that is recorded in cluster.json.
  const proc = ManagedProcess.start(`worker-${index}`, process.execPath, [...workerNodeArgs(), bundle], {
    logFile: path.join(dir, 'workers', `worker-${index}.log`),
    detached: true,
    env: workerProcessEnv({ ...process.env, ...env, ...credentialsEnv(credentials) }),
  });
  const ready: Readiness = { kind: 'http', url: `http://127.0.0.1:${metricsPort}/healthz` };
  try {
    await waitFor(
      `worker ${index}`,
      () => isReady(ready),
      WORKER_READY_TIMEOUT_MS,
      () => proc.deadReason(),
    );
  } catch (err) {
    // Not recorded yet: left running, `down` would never stop it.
    await proc.stop();
    throw err;
  }
  return record(proc, 'worker', ready, env);
}

/** Starts a recorded process again with the command that started it, and waits until it serves. */
async function restart(dir: string, p: ClusterProcess, state: ClusterState): Promise<ClusterProcess> {
  // Workers get the current code: restarting them is how new workflow and activity code is rolled out.
  if (p.role === 'worker') {
    const port = Number(new URL((p.ready as { url: string }).url).port);
    return startWorker(dir, Number(p.name.replace(/^worker-/, '')), port, state);
  }
  const proc = ManagedProcess.start(p.name, p.command, p.args, { logFile: p.logFile, detached: true, cwd: p.cwd, env: { ...process.env, ...p.env } });
  try {
    await waitFor(
      p.name,
      () => isReady(p.ready),
      120_000,
      () => proc.deadReason(),
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { ...record(proc, p.role, p.ready, p.env, p.cwd, p.stopSignal) };
}

export interface ClusterUpOptions {
  dataDir?: string;
  workers?: number;
  /** Any free loopback ports instead of the topology's (several clusters, or a busy machine). */
  freePorts?: boolean;
  log?: (msg: string) => void;
}

/** Whether `port` can be bound on loopback right now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * n distinct free loopback ports. `below` caps them: Temporal stores its
 * membership ports in a PostgreSQL smallint, so they must stay under 32768,
 * where the OS's ephemeral range (which freePort draws from) is not.
 */
async function distinctFree(n: number, taken: Set<number>, below?: number): Promise<number[]> {
  const out: number[] = [];
  while (out.length < n) {
    const p = below ? 10_000 + Math.floor(Math.random() * (below - 10_000)) : await freePort();
    if (taken.has(p) || (below && !(await bindable(p)))) continue;
    taken.add(p);
    out.push(p);
  }
  return out;
}

/**
 * Starts the object store on `port` with the cluster's credentials (made on
 * the first call) and its bucket, its data in the cluster's folder.
 */
async function startObjectStore(dir: string, port: number, log: (msg: string) => void): Promise<{ proc: ClusterProcess; objectStore: NonNullable<ClusterState['objectStore']> }> {
  const credentials = ensureClusterCredentials(dir);
  const dataDir = path.join(dir, 'object-store');
  log(`starting the object store (SeaweedFS) on 127.0.0.1:${port}…`);
  const running = await startObjectStoreServer({ dataDir, s3Port: port, ...credentials, buckets: [OBJECT_STORE.bucket], detached: true, log });
  const ready: Readiness = { kind: 's3', endpoint: running.endpoint, bucket: OBJECT_STORE.bucket, credentialsDir: dir };
  return { proc: record(running.proc, 'object-store', ready, {}, dataDir), objectStore: { endpoint: running.endpoint, bucket: OBJECT_STORE.bucket } };
}

/** `up` on a cluster that is there: whatever of it stopped starts again, and workers are added up to `wantWorkers`. */
async function bringBack(dir: string, existing: ClusterState, wantWorkers: number, opts: ClusterUpOptions, log: (msg: string) => void): Promise<ClusterState> {
  if (!existing.objectStore) {
    // A cluster made before `up` started an object store gets one, before its workers need it.
    const port = opts.freePorts ? (await distinctFree(1, new Set()))[0] : PORTS.objectStoreS3;
    const { proc, objectStore } = await startObjectStore(dir, port, log);
    existing.objectStore = objectStore;
    existing.processes.push(proc);
    writeState(dir, existing);
  }
  for (const [i, p] of existing.processes.entries()) {
    if (stillRunning(p)) continue;
    log(`${p.name}: not running; starting it again`);
    existing.processes[i] = await restart(dir, p, existing);
    writeState(dir, existing);
  }
  const workers = existing.processes.filter((p) => p.role === 'worker');
  const used = new Set(workers.map((w) => Number(new URL((w.ready as { url: string }).url).port)));
  for (let i = workers.length; i < wantWorkers; i++) {
    let port = opts.freePorts ? (await distinctFree(1, used))[0] : PORTS.workerMetrics + i;
    while (used.has(port)) port++;
    used.add(port);
    log(`starting worker ${i}…`);
    existing.processes.push(await startWorker(dir, i, port, existing));
    writeState(dir, existing);
  }
  return existing;
}

/**
 * Brings the topology up, or what of it is down. A first `up` builds the
 * Temporal server if needed, initialises PostgreSQL and migrates the schema,
 * registers the namespace and search attributes, forms the Redis Cluster and
 * starts the workers; later ones (after `down`, a crash, a kill) start again
 * only the processes that are not running, with their recorded commands and
 * data, and add workers up to `workers`.
 */
export async function clusterUp(opts: ClusterUpOptions = {}): Promise<ClusterState> {
  const dir = opts.dataDir ?? CLUSTER_DIR;
  const log = opts.log ?? (() => {});
  const wantWorkers = opts.workers ?? 1;
  const existing = readClusterState(dir);
  if (existing && !existing.complete) {
    throw new StackError(
      'CLUSTER_INCOMPLETE',
      `the last \`cluster up\` stopped half-way (${clusterStateFile(dir)}): run \`crawler cluster down\` first, then \`up\` again (data is kept)`,
    );
  }
  if (existing) return bringBack(dir, existing, wantWorkers, opts, log);

  const timings: Record<string, number> = {};
  const step = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    const out = await fn();
    timings[name] = Math.round((Date.now() - t) / 100) / 10;
    return out;
  };
  const taken = new Set<number>();
  const temporalPorts = defaultTemporalPorts();
  let postgresPort: number = POSTGRES.port;
  let objectStorePort: number = PORTS.objectStoreS3;
  let redisPorts: number[] = Array.from({ length: REDIS_CLUSTER.masters * (1 + REDIS_CLUSTER.replicasPerMaster) }, (_, i) => PORTS.redisFirstNode + i);
  if (opts.freePorts) {
    const keys = Object.keys(temporalPorts) as TemporalPortVar[];
    const free = await distinctFree(keys.length + 1, taken, 32_768);
    keys.forEach((k, i) => (temporalPorts[k] = free[i]));
    postgresPort = free[keys.length];
    objectStorePort = (await distinctFree(1, taken))[0];
    redisPorts = [];
  }

  const binaries = await step('build', () => ensureTemporalBinaries(log));
  if (binaries.builtInSeconds === null) delete timings.build;
  const weed = await step('build object store', () => ensureWeedBinary(log));
  if (weed.builtInSeconds === null) delete timings['build object store'];

  const state: ClusterState = {
    temporalAddress: `127.0.0.1:${temporalPorts.FRONTEND_GRPC_PORT}`,
    redisUrl: '',
    postgresPort,
    temporalPorts,
    redisNodes: [],
    processes: [],
    timings,
    complete: false,
  };
  const save = () => writeState(dir, state);
  try {
    log(`starting PostgreSQL on 127.0.0.1:${postgresPort}…`);
    const pg = await step('postgres', () =>
      startPostgres({ dataDir: path.join(dir, 'postgres'), port: postgresPort, user: POSTGRES.user, password: POSTGRES.password, detached: true, log }),
    );
    state.processes.push(record(pg, 'postgres', { kind: 'postgres', port: postgresPort }, {}, undefined, 'SIGINT'));
    save();

    log('creating and migrating the Temporal schemas…');
    await step('schema', () => migrateTemporalSchema(binaries.sqlTool, { host: '127.0.0.1', port: postgresPort }, path.join(dir, 'schema.log')));

    // The Redis Cluster forms while the Temporal server starts: both take seconds of waiting.
    log(`starting the Temporal server (${Object.keys(temporalPorts).length} ports, frontend ${state.temporalAddress}) and the Redis Cluster…`);
    const temporalDir = path.join(dir, 'temporal');
    const place = { postgresHost: '127.0.0.1', postgresPort, bindIp: '127.0.0.1', dynamicConfigFile: TEMPORAL_DYNAMIC_CONFIG_FILE, ports: temporalPorts };
    const [temporal, redis] = await Promise.allSettled([
      step('temporal', () => startTemporalServer({ binary: binaries.server, place, dataDir: temporalDir, detached: true })),
      step('redis', () =>
        startRedisCluster({
          dataDir: path.join(dir, 'redis'),
          masters: REDIS_CLUSTER.masters,
          replicasPerMaster: REDIS_CLUSTER.replicasPerMaster,
          nodeTimeoutMs: REDIS_CLUSTER.nodeTimeoutMs,
          ...(redisPorts.length ? { ports: redisPorts } : {}),
          detached: true,
          log,
        }),
      ),
    ]);
    if (temporal.status === 'fulfilled') {
      // Its environment is recorded so a restart renders the same config.
      state.processes.push(record(temporal.value, 'temporal', { kind: 'temporal', address: state.temporalAddress }, temporalServerEnv(place), temporalDir));
    }
    if (redis.status === 'fulfilled') {
      state.redisUrl = redis.value.url;
      state.redisNodes = redis.value.layout;
      for (const [i, node] of redis.value.nodes.entries()) state.processes.push(record(node, 'redis', { kind: 'redis', port: redis.value.ports[i] }));
    }
    save();
    if (temporal.status === 'rejected') throw temporal.reason;
    if (redis.status === 'rejected') throw redis.reason;

    // Before the workers: they upload to it, and a restarted one sweeps its spool into it at once.
    const store = await step('object store', () => startObjectStore(dir, objectStorePort, log));
    state.objectStore = store.objectStore;
    state.processes.push(store.proc);
    save();

    log(`registering namespace ${NAMESPACE.name} and the search attributes…`);
    await step('namespace', async () => {
      await ensureNamespace(state.temporalAddress);
      const connection = await Connection.connect({ address: state.temporalAddress });
      try {
        const client = new Client({ connection, namespace: NAMESPACE.name });
        await ensureSearchAttributes(client, NAMESPACE.name);
        // Workers and campaigns may start the moment `up` returns.
        await awaitSearchAttributesServed(client, NAMESPACE.name);
      } finally {
        await connection.close();
      }
    });

    await step('workers', async () => {
      const ports = opts.freePorts ? await distinctFree(wantWorkers, taken) : Array.from({ length: wantWorkers }, (_, i) => PORTS.workerMetrics + i);
      for (const [i, port] of ports.entries()) {
        if (!opts.freePorts && (await portOpen(port))) throw new StackError('PORT_IN_USE', `cannot start worker ${i}: its metrics port 127.0.0.1:${port} is taken`);
        log(`starting worker ${i}…`);
        state.processes.push(await startWorker(dir, i, port, state));
        save();
      }
    });
    state.complete = true;
    save();
    return state;
  } catch (err) {
    save();
    throw new StackError('START_FAILED', `${(err as Error).message}\n(what did start is recorded: \`crawler cluster down\` stops it)`, { cause: err });
  }
}

/** The object store right after the workers: a worker stopping may still be uploading. */
const STOP_ORDER: ClusterRole[] = ['worker', 'object-store', 'temporal', 'redis', 'postgres'];
/** Workers get longer than their own 30 s shutdownGraceTime, so in-flight steps finish. */
const GRACE_MS: Record<ClusterRole, number> = { worker: 45_000, 'object-store': 15_000, temporal: 30_000, redis: 15_000, postgres: 30_000 };

/**
 * Stops every process `up` started, workers first and PostgreSQL last, and
 * waits until each is gone (SIGKILL after its grace period). A pid that now
 * belongs to another process is left alone and reported. Data and
 * cluster.json are kept, so the next `up` starts the same cluster again,
 * unless `deleteData`. After an `up` that stopped half-way the cluster is
 * forgotten instead (its Redis nodes never formed a cluster worth keeping),
 * so the next `up` starts from the start; PostgreSQL's data stays.
 */
export async function clusterDown(opts: { dataDir?: string; deleteData?: boolean; log?: (msg: string) => void } = {}): Promise<string[]> {
  const dir = opts.dataDir ?? CLUSTER_DIR;
  const log = opts.log ?? (() => {});
  const state = readClusterState(dir);
  const stopped: string[] = [];
  if (state) {
    for (const role of STOP_ORDER) {
      const group = state.processes.filter((p) => p.role === role);
      await Promise.all(
        group.map(async (p) => {
          if (!stillRunning(p)) {
            if (processIdentity(p.pid)) log(`${p.name}: pid ${p.pid} now belongs to another process; left alone`);
            return;
          }
          process.kill(p.pid, p.stopSignal);
          const deadline = Date.now() + GRACE_MS[role];
          while (stillRunning(p) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
          if (stillRunning(p)) {
            log(`${p.name}: still running after ${GRACE_MS[role] / 1000} s; killing it`);
            process.kill(p.pid, 'SIGKILL');
            while (stillRunning(p)) await new Promise((r) => setTimeout(r, 50));
          }
          stopped.push(p.name);
        }),
      );
    }
    if (!state.complete) {
      fs.rmSync(clusterStateFile(dir), { force: true });
      fs.rmSync(path.join(dir, 'redis'), { recursive: true, force: true });
    }
  }
  if (opts.deleteData) fs.rmSync(dir, { recursive: true, force: true });
  return stopped;
}

export interface ClusterStatusRow {
  name: string;
  role: ClusterRole;
  pid: number;
  running: boolean;
  serving: boolean;
  where: string;
  /** A Redis node's role now, as the cluster sees it (a failover swaps master and replica). */
  redisRole?: 'master' | 'replica';
}

export interface ClusterStatus {
  up: boolean;
  temporalAddress?: string;
  redisUrl?: string;
  /** CLUSTER INFO's cluster_state as the first answering node sees it. */
  redisClusterState?: string;
  /** The object store's S3 endpoint and bucket (never its credentials). */
  objectStore?: { endpoint: string; bucket: string };
  processes: ClusterStatusRow[];
}

function where(r: Readiness): string {
  switch (r.kind) {
    case 'postgres':
    case 'redis':
      return `127.0.0.1:${r.port}`;
    case 'temporal':
      return r.address;
    case 'http':
      return r.url;
    case 's3':
      return r.endpoint;
  }
}

/** What runs of the recorded cluster, and whether each part serves. */
export async function clusterStatus(opts: { dataDir?: string } = {}): Promise<ClusterStatus> {
  const state = readClusterState(opts.dataDir ?? CLUSTER_DIR);
  if (!state) return { up: false, processes: [] };
  const processes: ClusterStatusRow[] = await Promise.all(
    state.processes.map(async (p) => {
      const running = stillRunning(p);
      return { name: p.name, role: p.role, pid: p.pid, running, serving: running && (await isReady(p.ready)), where: where(p.ready) };
    }),
  );
  let redisClusterState: string | undefined;
  for (const node of state.redisNodes) {
    const c = new Redis({ host: '127.0.0.1', port: node.port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
    c.on('error', () => undefined);
    try {
      await c.connect();
      redisClusterState = /cluster_state:(\w+)/.exec((await c.call('CLUSTER', 'INFO')) as string)?.[1];
      // CLUSTER NODES: id, ip:port@bus[,hostname], flags, …; a failed node keeps its last role with "fail".
      for (const line of ((await c.call('CLUSTER', 'NODES')) as string).trim().split('\n')) {
        const [, addr, flags] = line.split(' ');
        const row = processes.find((p) => p.role === 'redis' && p.where === `127.0.0.1:${/:(\d+)@/.exec(addr)?.[1]}`);
        if (row && !flags.includes('fail')) row.redisRole = flags.includes('master') ? 'master' : 'replica';
      }
      break;
    } catch {
      /* try the next node */
    } finally {
      c.disconnect();
    }
  }
  return {
    up: processes.every((p) => p.serving) && redisClusterState === 'ok',
    temporalAddress: state.temporalAddress,
    redisUrl: state.redisUrl,
    ...(redisClusterState ? { redisClusterState } : {}),
    ...(state.objectStore ? { objectStore: state.objectStore } : {}),
    processes,
  };
}
