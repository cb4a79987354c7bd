// The deployment's topology for real: `crawler cluster up` builds (or reuses)
// the Temporal server, starts PostgreSQL, the server with its shards, a Redis
// Cluster with a replica per master and workers; `crawl`, told only
// TEMPORAL_ADDRESS and REDIS_URL, crawls the test web on it; `cluster down`
// leaves no process behind. Timings go to stderr for the CI decision.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import Redis from 'ioredis';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { clusterDown, clusterStatus, clusterUp, readClusterState, type ClusterState } from '../../src/worker/cluster';
import { processIdentity } from '../../src/stack/stack';
import { HISTORY_SHARDS, NAMESPACE, REDIS_CLUSTER, TEMPORAL_DYNAMIC_CONFIG_FILE, TEMPORAL_SERVER_VERSION, WORKER_ENV } from '../../src/stack/topology';
import { ensureTemporalBinaries } from '../../src/stack/temporal-server';
import { CRAWL_SEARCH_ATTRIBUTES } from '../../src/temporal/search-attributes';
import { readIndex } from '../../src/storage/index-writer';
import { generateSites, startTestWeb, type TestWeb } from '../web/test-web';

// The first run builds the Temporal server: allow for it on a busy machine.
jest.setTimeout(60 * 60_000);
const run = promisify(execFile);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawler-cluster-'));
// PostgreSQL runs as its own user when we are root: it must be able to enter the folder.
fs.chmodSync(dir, 0o755);
let state: ClusterState;
/** The campaign the crawl test ran, looked for again after a restart. */
let campaignId: string | undefined;
let web: TestWeb;
const timings: Record<string, number> = {};
const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
  const t = Date.now();
  try {
    return await fn();
  } finally {
    timings[name] = Math.round((Date.now() - t) / 1000);
  }
};

beforeAll(async () => {
  web = await startTestWeb();
  for (const spec of generateSites({ count: 3, pages: 12, fanOut: 3, hostPattern: (i) => `c${i}.cluster.test`, seed: 16 })) web.addSite(spec);
  state = await timed('up', () => clusterUp({ dataDir: dir, workers: 2, freePorts: true, log: (m) => process.stderr.write(`cluster: ${m}\n`) }));
});

afterAll(async () => {
  await clusterDown({ dataDir: dir, deleteData: true }).catch(() => undefined);
  await web?.close();
  process.stderr.write(`cluster test timings (s): ${JSON.stringify({ ...timings, firstUpSteps: state?.timings })}\n`);
});

test('every process serves: PostgreSQL, the Temporal server, six Redis nodes, two workers', async () => {
  const s = await clusterStatus({ dataDir: dir });
  expect(s.processes.filter((p) => !p.serving)).toEqual([]);
  const roles = s.processes.map((p) => p.role);
  const redisNodes = REDIS_CLUSTER.masters * (1 + REDIS_CLUSTER.replicasPerMaster);
  expect(roles.sort()).toEqual(['postgres', 'temporal', ...Array<string>(redisNodes).fill('redis'), 'worker', 'worker'].sort());
  expect(s.redisClusterState).toBe('ok');
  expect(s.up).toBe(true);
  // Status reports each node's current role: as formed, the masters first.
  const redisRoles = s.processes.filter((p) => p.role === 'redis').map((p) => p.redisRole);
  expect(redisRoles).toEqual(state.redisNodes.map((n) => n.role));
});

test('the Redis Cluster has its masters, each with a replica that follows it', async () => {
  const first = state.redisNodes[0];
  const c = new Redis({ host: '127.0.0.1', port: first.port });
  try {
    const nodes = ((await c.call('CLUSTER', 'NODES')) as string)
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    const masters = nodes.filter((n) => n[2].includes('master'));
    const replicas = nodes.filter((n) => n[2].includes('slave'));
    expect(masters).toHaveLength(REDIS_CLUSTER.masters);
    expect(replicas).toHaveLength(REDIS_CLUSTER.masters * REDIS_CLUSTER.replicasPerMaster);
    // Every master is followed: a replica names each master's node id.
    expect(new Set(replicas.map((r) => r[3]))).toEqual(new Set(masters.map((m) => m[0])));
  } finally {
    c.disconnect();
  }
});

test('the Temporal server runs the shards, namespace and search attributes of the topology', async () => {
  const conn = await Connection.connect({ address: state.temporalAddress });
  try {
    const info = await conn.workflowService.getClusterInfo({});
    expect(info.historyShardCount).toBe(HISTORY_SHARDS);
    expect(info.persistenceStore).toMatch(/postgres/);
    const ns = await conn.workflowService.describeNamespace({ namespace: NAMESPACE.name });
    expect(Number(ns.config?.workflowExecutionRetentionTtl?.seconds)).toBe(NAMESPACE.retentionDays * 86_400);
    const sa = await conn.operatorService.listSearchAttributes({ namespace: NAMESPACE.name });
    for (const { name } of CRAWL_SEARCH_ATTRIBUTES) expect(Object.keys(sa.customAttributes ?? {})).toContain(name);
  } finally {
    await conn.close();
  }
});

test("the deployment's dynamic config file names only settings this server release knows", async () => {
  const { server } = await ensureTemporalBinaries();
  await expect(run(server, ['validate-dynamic-config', TEMPORAL_DYNAMIC_CONFIG_FILE])).resolves.toBeDefined();
});

test("the frontend's HTTP API answers the probe docker-compose.yml's health check uses", async () => {
  const res = await fetch(`http://127.0.0.1:${state.temporalPorts.FRONTEND_HTTP_PORT}/api/v1/system-info`);
  expect(res.status).toBe(200);
  expect(((await res.json()) as { serverVersion: string }).serverVersion).toBe(TEMPORAL_SERVER_VERSION);
});

test('crawl, given only TEMPORAL_ADDRESS and REDIS_URL, completes a crawl of the test web on the cluster workers', async () => {
  const seed = web.url('c0.cluster.test', '/');
  const out = path.join(dir, 'crawl-output');
  const resolve = web.resolveArgs().flatMap((r) => ['--resolve', r]);
  const crawl = crawlerCommand(['crawl', seed, '--any-domain', '--delay-ms', '50', '--workers', '0', '--out', out, '--json', ...resolve]);
  const env = { ...process.env, TEMPORAL_ADDRESS: state.temporalAddress, REDIS_URL: state.redisUrl, CRAWLER_TASK_QUEUE: WORKER_ENV.CRAWLER_TASK_QUEUE };
  const { stdout } = await timed('crawl', () => run(crawl.command, crawl.args, { env, maxBuffer: 16 * 1024 * 1024 }));
  const summary = JSON.parse(stdout.trim().split('\n').pop()!) as { campaignId: string; status: string; pages: number };
  campaignId = summary.campaignId;
  const expected = web.expectedPages([seed]);
  expect(summary.status).toBe('completed');
  expect(summary.pages).toBe(expected.size);
  const index = await readIndex(path.join(out, 'index'));
  expect(new Set(index.filter((e) => e.outcome === 'fetched').map((e) => e.url))).toEqual(expected);
  // Bodies went to WARC files the cluster's workers wrote.
  expect(fs.readdirSync(path.join(out, 'warc')).filter((f) => f.endsWith('.warc.gz')).length).toBeGreaterThanOrEqual(1);
});

test('cluster down stops every process it started, and status says so', async () => {
  const recorded = readClusterState(dir)!.processes;
  const stopped = await timed('down', () => clusterDown({ dataDir: dir }));
  expect(stopped.sort()).toEqual(recorded.map((p) => p.name).sort());
  // None of them is alive (a reused pid would have another start time).
  for (const p of recorded) expect({ name: p.name, alive: processIdentity(p.pid)?.startTime === p.identity?.startTime }).toEqual({ name: p.name, alive: false });
  // Nor anything else that runs from the cluster's folder.
  const leftovers = fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => processIdentity(Number(d)))
    .filter((id) => id?.cmdline.includes(dir));
  expect(leftovers).toEqual([]);
  const after = await clusterStatus({ dataDir: dir });
  expect(after.processes.filter((p) => p.running)).toEqual([]);
  expect(after.up).toBe(false);
});

test('cluster up after down starts the same cluster again: same addresses, the finished campaign still there', async () => {
  const again = await timed('up again', () => clusterUp({ dataDir: dir, workers: 2, freePorts: true }));
  expect({ temporal: again.temporalAddress, redis: again.redisUrl }).toEqual({ temporal: state.temporalAddress, redis: state.redisUrl });
  const s = await clusterStatus({ dataDir: dir });
  expect(s.processes.filter((p) => !p.serving)).toEqual([]);
  expect(s.redisClusterState).toBe('ok');
  expect(campaignId).toBeDefined();
  const conn = await Connection.connect({ address: again.temporalAddress });
  try {
    const d = await conn.workflowService.describeWorkflowExecution({ namespace: NAMESPACE.name, execution: { workflowId: campaignId } });
    expect(d.workflowExecutionInfo?.status).toBe(temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED);
  } finally {
    await conn.close();
  }
});
