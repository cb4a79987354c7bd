// The deployment's topology for real: `crawler cluster up` builds (or reuses)
// the Temporal server, starts PostgreSQL, the server with its shards, a Redis
// Cluster with a replica per master, the object store and workers; `crawl`,
// told only TEMPORAL_ADDRESS and REDIS_URL, crawls the test web on it into the
// cluster's bucket; a worker killed mid-upload leaves no partial object;
// `cluster down` leaves no process behind. Timings go to stderr for the CI decision.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import Redis from 'ioredis';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { clusterDown, clusterStatus, clusterUp, readClusterState, workerSpoolDir, type ClusterState } from '../../src/worker/cluster';
import { processIdentity } from '../../src/stack/stack';
import { clusterCredentialsFile, readClusterCredentials } from '../../src/stack/cluster-credentials';
import { HISTORY_SHARDS, NAMESPACE, OBJECT_STORE, REDIS_CLUSTER, TEMPORAL_DYNAMIC_CONFIG_FILE, TEMPORAL_SERVER_VERSION, WORKER_ENV } from '../../src/stack/topology';
import { ensureTemporalBinaries } from '../../src/stack/temporal-server';
import { newS3Client } from '../../src/storage/s3-client';
import { readWarcFile } from '../../src/storage/warc-reader';
import { startCampaign } from '../../src/temporal/campaign-client';
import { connectClient } from '../../src/temporal/connect';
import { CRAWL_SEARCH_ATTRIBUTES } from '../../src/temporal/search-attributes';
import { generateSites, startTestWeb, type SiteRequest, type TestWeb } from '../web/test-web';

// The first run builds the Temporal server: allow for it on a busy machine.
jest.setTimeout(60 * 60_000);
const run = promisify(execFile);

// The cluster's folder is `cluster` in a home of its own, so a `crawl` given that home (CRAWLER_HOME) finds it as it finds .crawler/cluster.
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'crawler-cluster-'));
const dir = path.join(home, 'cluster');
fs.mkdirSync(dir);
// PostgreSQL runs as its own user when we are root: it must be able to enter the folder.
fs.chmodSync(home, 0o755);
fs.chmodSync(dir, 0o755);
let state: ClusterState;
let s3: S3Client;
const MIB = 1024 * 1024;
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
  const c = readClusterCredentials(dir)!;
  s3 = newS3Client({
    endpoint: state.objectStore!.endpoint,
    region: OBJECT_STORE.region,
    forcePathStyle: true,
    credentials: { accessKeyId: c.accessKey, secretAccessKey: c.secretKey },
  });
});

afterAll(async () => {
  s3?.destroy();
  await clusterDown({ dataDir: dir, deleteData: true }).catch(() => undefined);
  fs.rmSync(home, { recursive: true, force: true });
  await web?.close();
  process.stderr.write(`cluster test timings (s): ${JSON.stringify({ ...timings, firstUpSteps: state?.timings })}\n`);
});

/** Every key under `prefix` with its size. */
async function listObjects(prefix: string): Promise<{ key: string; size: number }[]> {
  const out: { key: string; size: number }[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: OBJECT_STORE.bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) out.push({ key: o.Key!, size: Number(o.Size) });
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

async function getObject(key: string): Promise<Buffer> {
  const res = await s3.send(new GetObjectCommand({ Bucket: OBJECT_STORE.bucket, Key: key }));
  return Buffer.from(await res.Body!.transformToByteArray());
}

/** The URLs of the newest complete seal's index of `campaign` in the bucket, one entry per line. */
async function sealedUrls(campaign: string): Promise<{ url: string; outcome: string }[]> {
  const manifests = (await listObjects(`${campaign}/sealed/`)).map((o) => o.key).filter((k) => k.endsWith(`/${campaign}.seal.json`));
  expect(manifests.length).toBeGreaterThanOrEqual(1);
  const newest = manifests.sort().pop()!;
  const text = (await getObject(`${newest.slice(0, newest.lastIndexOf('/'))}/${campaign}.index.jsonl`)).toString('utf8');
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { url: string; outcome: string });
}

/** Reads every WARC object under `prefix` back with the crawler's WARC reader: each must be whole. */
async function readEveryWarc(prefix: string): Promise<{ key: string; size: number; records: number }[]> {
  const tmp = fs.mkdtempSync(path.join(home, 'warc-check-'));
  try {
    const out: { key: string; size: number; records: number }[] = [];
    for (const o of (await listObjects(`${prefix}warc/`)).filter((x) => x.key.endsWith('.warc.gz'))) {
      const file = path.join(tmp, path.basename(o.key));
      fs.writeFileSync(file, await getObject(o.key));
      // A cut-off tail is an error here, not skipped.
      const records = await readWarcFile(file, { truncatedTail: 'throw' });
      out.push({ key: o.key, size: o.size, records: records.length });
      fs.rmSync(file);
    }
    return out;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

test('every process serves: PostgreSQL, the Temporal server, six Redis nodes, the object store, two workers', async () => {
  const s = await clusterStatus({ dataDir: dir });
  expect(s.processes.filter((p) => !p.serving)).toEqual([]);
  const roles = s.processes.map((p) => p.role);
  const redisNodes = REDIS_CLUSTER.masters * (1 + REDIS_CLUSTER.replicasPerMaster);
  expect(roles.sort()).toEqual(['postgres', 'temporal', ...Array<string>(redisNodes).fill('redis'), 'object-store', 'worker', 'worker'].sort());
  expect(s.objectStore).toEqual({ endpoint: state.objectStore!.endpoint, bucket: OBJECT_STORE.bucket });
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

test("the workers share no folder: each has its own spool and cache, and the store's endpoint and region", () => {
  const workers = readClusterState(dir)!.processes.filter((p) => p.role === 'worker');
  const own = workers.map((w) => [w.env.CRAWLER_SPOOL_DIR, w.env.CRAWLER_CACHE_DIR]);
  expect(new Set(own.flat()).size).toBe(2 * workers.length);
  for (const w of workers) expect(w.env).toMatchObject({ AWS_ENDPOINT_URL_S3: state.objectStore!.endpoint, AWS_REGION: OBJECT_STORE.region });
});

test("the store's identity is in a file of mode 600, and in no record, status or log of the cluster", async () => {
  const c = readClusterCredentials(dir)!;
  expect(fs.statSync(clusterCredentialsFile(dir)).mode & 0o777).toBe(0o600);
  const status = JSON.stringify(await clusterStatus({ dataDir: dir }));
  const logs = readClusterState(dir)!.processes.map((p) => p.logFile);
  for (const [what, text] of [
    ['cluster.json', fs.readFileSync(path.join(dir, 'cluster.json'), 'utf8')],
    ['status', status],
    ...logs.map((f) => [f, fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : ''] as const),
  ] as const) {
    expect({ what, hasSecret: text.includes(c.secretKey) }).toEqual({ what, hasSecret: false });
  }
});

test("crawl, given only TEMPORAL_ADDRESS and REDIS_URL, crawls the test web on the cluster workers into the cluster's bucket", async () => {
  const seed = web.url('c0.cluster.test', '/');
  const resolve = web.resolveArgs().flatMap((r) => ['--resolve', r]);
  // No --out: a campaign on the cluster goes to s3://crawls/<campaign>. CRAWLER_HOME is where this cluster's folder is, as .crawler is for `cluster up`.
  const crawl = crawlerCommand(['crawl', seed, '--any-domain', '--delay-ms', '50', '--workers', '0', '--json', ...resolve]);
  const env = { ...process.env, CRAWLER_HOME: home, TEMPORAL_ADDRESS: state.temporalAddress, REDIS_URL: state.redisUrl, CRAWLER_TASK_QUEUE: WORKER_ENV.CRAWLER_TASK_QUEUE };
  const { stdout } = await timed('crawl', () => run(crawl.command, crawl.args, { env, maxBuffer: 16 * 1024 * 1024, cwd: home }));
  const summary = JSON.parse(stdout.trim().split('\n').pop()!) as { campaignId: string; status: string; pages: number; outputDir: string };
  campaignId = summary.campaignId;
  const expected = web.expectedPages([seed]);
  expect(summary.status).toBe('completed');
  expect(summary.pages).toBe(expected.size);
  expect(summary.outputDir).toMatch(new RegExp(`^s3://${OBJECT_STORE.bucket}/${campaignId}/?$`));
  // Nothing was written to a folder: not where the crawl ran.
  expect(fs.existsSync(path.join(home, 'crawl-output'))).toBe(false);
  // Every page once in the sealed index, read back from the bucket.
  const sealed = await sealedUrls(campaignId);
  const fetched = sealed.filter((e) => e.outcome === 'fetched').map((e) => e.url);
  expect(fetched.length).toBe(new Set(fetched).size);
  expect(new Set(fetched)).toEqual(expected);
  // Bodies went to WARC files the cluster's workers uploaded, each whole.
  const warcs = await readEveryWarc(`${campaignId}/`);
  expect(warcs.length).toBeGreaterThanOrEqual(1);
  expect(warcs.reduce((n, w) => n + w.records, 0)).toBeGreaterThanOrEqual(expected.size);
});

test("schedule create with no --out gives each of its runs a prefix in the cluster's bucket", async () => {
  const seed = web.url('c0.cluster.test', '/');
  const env = { ...process.env, CRAWLER_HOME: home, TEMPORAL_ADDRESS: state.temporalAddress, REDIS_URL: state.redisUrl, CRAWLER_TASK_QUEUE: WORKER_ENV.CRAWLER_TASK_QUEUE };
  const name = `nightly-${Date.now().toString(36)}`;
  const create = crawlerCommand(['schedule', 'create', name, seed, '--every', '24h', '--paused', '--any-domain']);
  const { stdout } = await run(create.command, create.args, { env, cwd: home });
  expect(stdout).toContain(`output in s3://${OBJECT_STORE.bucket}/{campaign}`);
  const client = await connectClient(state.temporalAddress, WORKER_ENV.TEMPORAL_NAMESPACE);
  try {
    const handle = client.schedule.getHandle(name);
    const { action } = await handle.describe();
    // The campaign every run starts with: the cluster's bucket, its endpoint, path-style (as a crawl's there).
    const campaign = (action as { args?: { output?: { dir?: string; s3?: { endpoint?: string; pathStyle?: boolean } } }[] }).args?.[0];
    expect(campaign?.output?.dir).toBe(`s3://${OBJECT_STORE.bucket}/{campaign}`);
    expect(campaign?.output?.s3).toMatchObject({ endpoint: state.objectStore!.endpoint, pathStyle: true });
    await handle.delete();
  } finally {
    await client.connection.close();
  }
});

test('a worker killed while it uploads a file leaves no partial object under the campaign prefix, and uploads the file whole when it starts again', async () => {
  // Bodies of 1 MiB of random bytes (gzip cannot shrink them): files of 40 MiB go up in several parts, which takes a while.
  const bodies = new Map<string, Buffer>();
  const PAGES = 50;
  const big = (ctx: SiteRequest): boolean => {
    if (ctx.path === '/') {
      ctx.send(200, 'text/html', `<html><body>${Array.from({ length: PAGES }, (_, i) => `<a href="/b/${i}">${i}</a>`).join(' ')}</body></html>`);
      return true;
    }
    if (!ctx.path.startsWith('/b/')) return false;
    const key = `${ctx.host}${ctx.path}`;
    if (!bodies.has(key)) bodies.set(key, randomBytes(MIB));
    ctx.send(200, 'application/octet-stream', bodies.get(key)!);
    return true;
  };
  const hosts = ['big0.cluster.test', 'big1.cluster.test'];
  for (const host of hosts) web.addSite({ host, pages: 1, fanOut: 0, handler: big });
  const seeds = hosts.map((h) => web.url(h, '/'));
  const id = `kill-upload-${Date.now().toString(36)}`;
  const prefix = `${id}/`;
  const client = await connectClient(state.temporalAddress, WORKER_ENV.TEMPORAL_NAMESPACE);
  try {
    const handle = await startCampaign(client, WORKER_ENV.CRAWLER_TASK_QUEUE, {
      campaignId: id,
      seeds,
      scope: { mode: 'any' },
      politeness: { minDelayMs: 20 },
      fetch: { resolve: web.resolveArgs() },
      // The two home pages are the same HTML: with dedup on, one is recorded as the other's duplicate (a revisit record), not fetched.
      content: { dedup: 'off' },
      output: {
        dir: `s3://${OBJECT_STORE.bucket}/${id}`,
        s3: { endpoint: state.objectStore!.endpoint, pathStyle: true },
        // Finished by size only: each file is 40 MiB, so its upload is multipart (above 16 MiB).
        upload: { maxFileBytes: 40 * MIB, maxFileAgeMs: 30 * 60_000 },
      },
    });

    // Wait for a multipart upload of a WARC under the prefix, and kill -9 the worker whose spool holds that file.
    const workers = readClusterState(dir)!.processes.filter((p) => p.role === 'worker');
    const spoolOf = (name: string) => workerSpoolDir(dir, Number(name.replace(/^worker-/, '')));
    const spooled = (name: string): string[] => (fs.existsSync(spoolOf(name)) ? (fs.readdirSync(spoolOf(name), { recursive: true }) as string[]) : []);
    let killed: { name: string; key: string; uploadId: string; localSize: number; localDigest: string } | null = null;
    const deadline = Date.now() + 10 * 60_000;
    while (!killed) {
      if (Date.now() > deadline) throw new Error('no multipart upload of a WARC file was seen under the campaign prefix');
      const uploads = (await s3.send(new ListMultipartUploadsCommand({ Bucket: OBJECT_STORE.bucket, Prefix: `${prefix}warc/` }))).Uploads ?? [];
      for (const u of uploads) {
        const name = path.basename(u.Key!);
        const holder = workers.find((w) => spooled(w.name).some((f) => f.endsWith(path.join('warc', 'ready', name))));
        if (!holder) continue;
        process.kill(holder.pid, 'SIGKILL');
        const file = spooled(holder.name).find((f) => f.endsWith(path.join('warc', 'ready', name)))!;
        const bytes = fs.readFileSync(path.join(spoolOf(holder.name), file));
        killed = { name: holder.name, key: u.Key!, uploadId: u.UploadId!, localSize: bytes.length, localDigest: createHash('sha256').update(bytes).digest('hex') };
        break;
      }
      if (!killed) await sleep(20);
    }
    const victim = workers.find((w) => w.name === killed!.name)!;
    while (processIdentity(victim.pid)?.startTime === victim.identity?.startTime) await sleep(20);
    process.stderr.write(`cluster test: killed ${killed.name} while it uploaded ${killed.key} (${killed.localSize} bytes)\n`);

    // The upload was cut off: it is still an unfinished multipart upload, and no object is visible under its key.
    const open = (await s3.send(new ListMultipartUploadsCommand({ Bucket: OBJECT_STORE.bucket, Prefix: killed.key }))).Uploads ?? [];
    expect(open.map((u) => u.UploadId)).toContain(killed.uploadId);
    const listed = await listObjects(prefix);
    expect(listed.map((o) => o.key)).not.toContain(killed.key);
    // Whatever is there is whole: every WARC object reads back to its end.
    const before = await readEveryWarc(prefix);
    for (const w of before) expect({ key: w.key, whole: w.records > 0 }).toEqual({ key: w.key, whole: true });

    // Started again on its own spool, the worker uploads the file; the campaign completes.
    await timed('up after kill', () => clusterUp({ dataDir: dir, workers: 2, freePorts: true }));
    const result = await timed('kill-upload crawl', () => handle.result());
    expect(result.status).toBe('completed');
    const after = await listObjects(prefix);
    const object = after.find((o) => o.key === killed!.key);
    expect(object?.size).toBe(killed.localSize);
    expect(
      createHash('sha256')
        .update(await getObject(killed.key))
        .digest('hex'),
    ).toBe(killed.localDigest);
    const warcs = await readEveryWarc(prefix);
    expect(warcs.map((w) => w.key)).toContain(killed.key);
    for (const w of warcs) expect({ key: w.key, whole: w.records > 0 }).toEqual({ key: w.key, whole: true });
    // Every page once in the sealed index, read back from the bucket.
    const expected = new Set([...seeds, ...hosts.flatMap((h) => Array.from({ length: PAGES }, (_, i) => web.url(h, `/b/${i}`)))]);
    const sealed = await sealedUrls(id);
    const fetched = sealed.filter((e) => e.outcome === 'fetched').map((e) => e.url);
    // No URL twice (robots.txt has its line too), and every page fetched.
    expect(sealed.length).toBe(new Set(sealed.map((e) => e.url)).size);
    expect(fetched.length).toBe(new Set(fetched).size);
    expect(new Set(fetched)).toEqual(expected);
  } finally {
    await client.connection.close();
  }
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
