import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { localTemporalPath } from '../../src/stack/tools';
// Shared plumbing of the integration tests: a test web, real worker
// processes and a Temporal client against the stack from global-setup.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import Redis from 'ioredis';
import type { CampaignInput } from '../../src/config/campaign';
import { connectClient } from '../../src/temporal/connect';
import { startCampaign } from '../../src/temporal/campaign-client';
import { readIndex, type IndexEntry } from '../../src/storage/index-writer';
import { readWarcDir } from '../../src/storage/warc-reader';
import { WorkerPool, type SuperviseOptions } from '../../src/worker/worker-pool';
import type { crawlCampaign, CrawlCampaignInput } from '../../workflows/crawl-campaign';
import { startTestWeb, type RequestRecord, type TestWeb } from '../web/test-web';
import { stallReport, watchedResult } from './stall-report';
import { workerLog } from './worker-logs';

export const TASK_QUEUE_PREFIX = 'test';

export interface Harness {
  web: TestWeb;
  client: Client;
  pool: WorkerPool;
  taskQueue: string;
  outDir: string;
  redis: Redis;
  /** A line in this test file's worker log (printed when the file fails): where a test was when it stalled. */
  mark(step: string): void;
  close(): Promise<void>;
}

let counter = 0;

/**
 * Each test file gets its own task queue, so its workers only run its campaigns.
 * `redisUrl` points the workers at another Redis (e.g. a redis+cluster:// URL);
 * `Harness.redis` stays a client of the global setup's Redis. `supervise`
 * restarts workers that die (tests whose pages kill workers on purpose).
 */
export async function createHarness(
  name: string,
  opts: { workers?: number; redisUrl?: string; env?: Record<string, string>; supervise?: SuperviseOptions; onLog?: (line: string) => void } = {},
): Promise<Harness> {
  const address = process.env.TEMPORAL_ADDRESS;
  const redisUrl = process.env.REDIS_URL;
  if (!address || !redisUrl) throw new Error('integration tests need the global setup (TEMPORAL_ADDRESS / REDIS_URL)');
  const taskQueue = `${TASK_QUEUE_PREFIX}-${name}-${process.pid}-${counter++}`;
  const web = await startTestWeb();
  const client = await connectClient(address);
  const log = workerLog();
  const pool = new WorkerPool(
    {
      TEMPORAL_ADDRESS: address,
      REDIS_URL: opts.redisUrl ?? redisUrl,
      CRAWLER_TASK_QUEUE: taskQueue,
      CRAWLER_WORKFLOW_BUNDLE: process.env.CRAWLER_WORKFLOW_BUNDLE ?? '',
      ...opts.env,
    },
    {
      onLog: (l) => {
        log(`${name} ${l}`);
        opts.onLog?.(l);
        if (process.env.CRAWLER_TEST_VERBOSE) process.stderr.write(`${l}\n`);
      },
      supervise: opts.supervise,
    },
  );
  if (opts.workers) await pool.start(opts.workers);
  const outDir = fs.mkdtempSync(path.join(process.env.CRAWLER_TEST_DATA_DIR ?? os.tmpdir(), `${name}-`));
  const redis = new Redis(redisUrl);
  return {
    web,
    client,
    pool,
    taskQueue,
    outDir,
    redis,
    mark: (step) => log(`${name} test: ${step}`),
    close: async () => {
      await pool.stopAll();
      await web.close();
      await client.connection.close();
      redis.disconnect();
    },
  };
}

export type CampaignHandle = WorkflowHandleWithFirstExecutionRunId<typeof crawlCampaign>;

let campaigns = 0;
/** `testLimits` (CampaignTestLimits): the campaign's own timers in seconds, for tests that wait on them. */
export async function launch(h: Harness, input: Omit<CrawlCampaignInput, 'output' | 'carry'> & { campaignId?: string }): Promise<CampaignHandle> {
  const campaignId = input.campaignId ?? `t-${process.pid}-${Date.now().toString(36)}-${campaigns++}`;
  const handle = await startCampaign(h.client, h.taskQueue, {
    ...input,
    campaignId,
    // The test web's hosts all live on 127.0.0.1 but stand for distinct
    // servers: no cap per address unless a test sets one.
    politeness: { maxInFlightPerAddress: null, ...input.politeness },
    fetch: { resolve: h.web.resolveArgs(), ...input.fetch },
    output: { dir: path.join(h.outDir, campaignId) },
  });
  // A campaign that stalls says in the test file's log what its workflows wait on.
  const result = handle.result.bind(handle);
  handle.result = () => watchedResult(result(), () => stallReport(h.client, h.taskQueue), h.mark, Number(process.env.CRAWLER_TEST_STALL_REPORT_MS ?? 60_000));
  return handle;
}

export function outputOf(h: Harness, campaignId: string) {
  const dir = path.join(h.outDir, campaignId);
  return {
    dir,
    index: () => readIndex(path.join(dir, 'index')),
    /** The sealed index (one line per URL, the committed one), written when the campaign completed. */
    sealed: () => readIndex(path.join(dir, 'sealed'), (f) => f.endsWith('.index.jsonl')),
    warc: () => readWarcDir(path.join(dir, 'warc')),
  };
}

/** robots.txt and the /sitemap.xml probe are requests every host gets; these tests count pages. */
export const isHousekeepingPath = (path: string) => path === '/robots.txt' || path === '/sitemap.xml';
export const pageRequests = (reqs: RequestRecord[]) => reqs.filter((r) => !isHousekeepingPath(r.path));
export const urlOf = (h: Harness, r: RequestRecord) => h.web.url(r.host, r.path);

/** Smallest gap between two consecutive requests to the same host, per host. */
export function minGapsByHost(reqs: RequestRecord[]): Map<string, number> {
  const byHost = new Map<string, number[]>();
  for (const r of reqs) byHost.set(r.host, [...(byHost.get(r.host) ?? []), r.t]);
  const out = new Map<string, number>();
  for (const [host, ts] of byHost) {
    ts.sort((a, b) => a - b);
    let min = Infinity;
    for (let i = 1; i < ts.length; i++) min = Math.min(min, ts[i] - ts[i - 1]);
    out.set(host, min);
  }
  return out;
}

export function fetchedUrls(index: IndexEntry[]): string[] {
  return index.filter((e) => e.outcome === 'fetched').map((e) => e.url);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts a campaign the way an operator without our CLI would: `temporal workflow start` with the JSON input. */
export function startWithTemporalCli(h: Harness, workflowId: string, input: CampaignInput): SpawnSyncReturns<string> {
  const args = ['workflow', 'start', '--address', process.env.TEMPORAL_ADDRESS!, '--type', 'crawlCampaign', '--task-queue', h.taskQueue, '--workflow-id', workflowId];
  return spawnSync(process.env.TEMPORAL_CLI || localTemporalPath(), [...args, '--input', JSON.stringify(input)], { encoding: 'utf8' });
}
