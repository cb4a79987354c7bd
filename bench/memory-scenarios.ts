// Scenario (m), issue 40's measuring stick: what Redis holds for a crawl and
// for a seeded frontier, by `used_memory` and by key family (bench/redis-memory.ts).
//   crawl:    a generated test web crawled to completion: bytes a crawled page
//             kept after the campaign completes, at the peak during the crawl,
//             a seen URL and a host, and the breakdown by family.
//   frontier: a campaign seeded from a gzip list (bench/seed-list.ts) and paused
//             as soon as it starts, measured once the whole list is in the
//             frontiers: bytes a waiting URL and a host.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { CampaignInput } from '../src/config/campaign';
import { hostsWithFrontier } from '../activities/redis-recovery';
import { hostKeys } from '../src/redis/keys';
import { purgeCampaign } from '../src/redis/retention';
import type { RedisLike } from '../src/redis/scripts';
import { LOCAL_DIR } from '../src/stack/paths';
import { startCampaign } from '../src/temporal/campaign-client';
import { WorkerPool } from '../src/worker/worker-pool';
import type { TestWeb } from '../test/web/test-web';
import { addSeedsUpdate, campaignStatusQuery, pauseCampaignUpdate, resumeCampaignUpdate } from '../workflows/messages';
import { bytesOf, familyFigures, familyTable, memoryByFamily, memoryParts, URL_FAMILIES, watchUsedMemory, type MemoryBreakdown } from './redis-memory';
import { writeSeedList } from './seed-list';
import { seenFilterLine } from '../src/redis/seen-bloom';

/** How often `used_memory` is sampled for the peak, and how often the keys are measured during a crawl. */
const SAMPLE_MS = 2_000;
const SCAN_EVERY_MS = 15_000;

const per = (bytes: number, n: number): number => Number((bytes / Math.max(1, n)).toFixed(1));
const log = (m: string) => process.stderr.write(`${m}\n`);

/** The campaign's Redis key (`<campaignId>.<first run>`), as the campaign workflow names it. */
const campaignKeyOf = (campaignId: string, firstRunId: string): string => `${campaignId}.${firstRunId.slice(0, 8)}`;

/** Bytes of the keys every campaign shares (host clocks, the robots.txt cache, workers): they expire on their own, a minute to a day after a host's last request. */
const sharedBytes = (b: MemoryBreakdown): number =>
  Object.entries(b.byKind)
    .filter(([kind]) => /^(shared|worker|address|output)\./.test(kind))
    .reduce((n, [, t]) => n + t.bytes, 0);

/** What a seen URL costs, and what the rest costs a host. */
function headline(b: MemoryBreakdown, hosts: number) {
  const seen = b.byFamily.seen;
  const shared = sharedBytes(b);
  return {
    perSeenUrlBytes: per(seen.bytes, seen.elements),
    // The campaign's keys that do not grow with URLs (host records, counters, robots.txt state, dispatch, …) ÷ hosts.
    perHostBytes: per(b.bytes - bytesOf(b, URL_FAMILIES) - shared, hosts),
    // Besides, while they last: each host's clock and cached robots.txt (and the workers' few keys) ÷ hosts.
    perHostSharedBytes: per(shared, hosts),
  };
}

export interface MemoryCrawlInput {
  name: string;
  hosts: number;
  pages: number;
  workers: number;
  client: Client;
  env: Record<string, string>;
  redis: RedisLike;
  web: TestWeb;
  seeds: string[];
  expected: Set<string> | null;
  /** The campaign's input, as the bench's other generated scenarios crawl (runScenario's campaignInput). */
  input: (campaignId: string) => CampaignInput & { campaignId: string };
}

/**
 * Crawls the test web to completion, sampling `used_memory` every 2 s and
 * measuring every key every 15 s during the crawl (the largest of those
 * measurements is kept as the peak's breakdown), then once the campaign has
 * completed (what `retention.keep` left, carrying the retention's TTL: what it keeps).
 */
export async function memoryCrawlRun(o: MemoryCrawlInput) {
  const queue = `bench-mem-${Date.now()}`;
  const pool = new WorkerPool({ ...o.env, CRAWLER_TASK_QUEUE: queue }, { supervise: true, onLog: () => undefined });
  await pool.start(o.workers);
  try {
    const campaignId = `bench-mem-${Date.now().toString(36)}`;
    const partsBefore = await memoryParts(o.redis);
    const before = partsBefore.used_memory;
    const watch = watchUsedMemory(o.redis, SAMPLE_MS);
    const t0 = Date.now();
    const handle = await startCampaign(o.client, queue, o.input(campaignId));
    const campaignKey = campaignKeyOf(campaignId, handle.firstExecutionRunId);
    let done = false;
    // The largest measurement during the crawl (held in an object: the loop below assigns it).
    const largest: { scan: (MemoryBreakdown & { atSeconds: number }) | null } = { scan: null };
    const scans = (async () => {
      while (!done) {
        await new Promise((r) => setTimeout(r, SCAN_EVERY_MS));
        if (done) break;
        // A measurement that fails (Redis busy past its timeout) is skipped: this one is for the peak's breakdown.
        const b = await memoryByFamily(o.redis, campaignKey).catch(() => null);
        if (!b) continue;
        if (!largest.scan || b.bytes > largest.scan.bytes) largest.scan = { ...b, atSeconds: Math.round((Date.now() - t0) / 1000) };
      }
    })();
    // However the crawl ends, the sampling stops (a failed run must not leave timers running).
    const result = await Promise.race([handle.result(), pool.failed()]).finally(() => {
      done = true;
      void watch.stop();
    });
    const crawlSeconds = (Date.now() - t0) / 1000;
    const peak = await watch.stop();
    await scans;
    const partsAfter = await memoryParts(o.redis);
    const after = partsAfter.used_memory;
    const kept = await memoryByFamily(o.redis, campaignKey);
    const pages = result.pages;
    const urls = o.expected ? [...o.expected] : [];
    // The corpus's pages the crawl requested (the test web's log), so those it missed: with a Bloom filter seen set, what its false positives cost.
    const requested = new Set(o.web.requests().map((r) => o.web.url(r.host, r.path.replace(/#.*$/, ''))));
    const pagesMissed = o.expected ? urls.filter((u) => !requested.has(u)).length : null;
    const figures = {
      scenario: `${o.name}: crawled to completion`,
      run: 'crawl',
      hosts: o.hosts,
      pages,
      expectedPages: o.expected?.size ?? null,
      meanUrlChars: per(
        urls.reduce((n, u) => n + u.length, 0),
        urls.length,
      ),
      campaignSeconds: Number(crawlSeconds.toFixed(1)),
      // used_memory: the whole server, its allocator's and buffers' overheads included; before is the stack idle with its workers up.
      usedMemory: { before, peak: peak.peak, peakAtSeconds: peak.peakAtSeconds, after, samples: peak.samples.length },
      infoMemory: { before: partsBefore, after: partsAfter },
      keptPerPageBytes: per(after - before, pages),
      peakPerPageBytes: per(peak.peak - before, pages),
      // MEMORY USAGE of every key of the campaign (and the state campaigns share) once it completed.
      keptKeysBytes: kept.bytes,
      keptKeysPerPageBytes: per(kept.bytes, pages),
      seenUrls: kept.byFamily.seen.elements,
      seenSet: result.seenFilter ? 'bloom' : 'exact',
      // The corpus's pages never requested; with a Bloom filter, beside the URLs it expected to skip (src/redis/seen-bloom.ts).
      pagesMissed,
      ...(result.seenFilter ? { seenRate: result.seenFilter.rate, expectedSkipped: Number(result.seenFilter.expectedSkipped.toFixed(1)) } : {}),
      ...headline(kept, o.hosts),
      // Under retention.keep summary the end deleted the seen-sets: a seen URL is measured at the crawl's largest scan instead.
      ...(kept.byFamily.seen.elements === 0 && largest.scan
        ? { perSeenUrlBytes: headline(largest.scan, o.hosts).perSeenUrlBytes, perSeenUrlFrom: 'peakScan' }
        : { perSeenUrlFrom: 'kept' }),
      keptByFamily: familyFigures(kept, pages),
      keptByKind: kept.byKind,
      // The largest of the measurements of every key taken every 15 s during the crawl (its peak by family, to within 15 s).
      peakScan: largest.scan
        ? { atSeconds: largest.scan.atSeconds, bytes: largest.scan.bytes, perPageBytes: per(largest.scan.bytes, pages), byFamily: familyFigures(largest.scan, pages) }
        : null,
      unknownKeys: kept.unknownKeys,
      scanMs: kept.scanMs,
    };
    log(`\n${figures.scenario}: ${pages} pages, ${o.hosts} hosts, URLs of ${figures.meanUrlChars} characters on average`);
    log(
      `used_memory: before ${before}, peak ${peak.peak} (at ${peak.peakAtSeconds} s), after ${after}: kept ${figures.keptPerPageBytes} bytes a page, peak ${figures.peakPerPageBytes} a page`,
    );
    log(
      `a seen URL ${figures.perSeenUrlBytes} bytes; a host ${figures.perHostBytes} bytes (the campaign's keys that do not grow with URLs ÷ hosts), and ${figures.perHostSharedBytes} of clock and robots.txt cache until they expire`,
    );
    log(
      `seen set ${figures.seenSet}: ${pages} pages crawled of ${o.expected?.size ?? '?'} in the corpus, ${pagesMissed ?? '?'} missed` +
        (result.seenFilter ? `; ${seenFilterLine(result.seenFilter)}` : ''),
    );
    log(`${familyTable('kept after completion, MEMORY USAGE by family', kept, pages, 'page')}\n`);
    return figures;
  } finally {
    await pool.stopAll();
    await o.web.close();
  }
}

export interface MemoryFrontierInput {
  name: string;
  hosts: number;
  urlsPerHost: number;
  /** The campaign's frontier.spillAbove (src/redis/frontier-spill.ts); absent: the product's default. */
  spillAbove?: number | null;
  /** The campaign's frontier.seen and seenRate (src/redis/seen-bloom.ts); absent: the product's default (exact). */
  seen?: { seen: 'exact' | 'bloom'; seenRate?: number };
  workers: number;
  client: Client;
  env: Record<string, string>;
  redis: RedisLike;
}

/**
 * A seed list of hosts × urlsPerHost URLs, of about the length of the
 * operations guide's earlier measurement (79 characters): a campaign reads it
 * into its frontiers while paused (the pause is asked for as soon as it has
 * started, so no host is dispatched, or the few of a round already under way
 * see the pause before their second page), and is measured once the whole
 * list is in. No test web: nothing is meant to be fetched. The campaign is
 * then cancelled and its keys deleted, so later scenarios start from a small Redis.
 */
export async function memoryFrontierRun(o: MemoryFrontierInput) {
  const dir = path.join(LOCAL_DIR, 'bench-output', `mem-frontier-${Date.now()}`);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'seeds.txt.gz');
  const list = writeSeedList(file, o.hosts, o.urlsPerHost, (h, p) => `http://www.seed${h}.test/articles/2026/11/section-${p % 10}/page-${p}-of-the-bench-seed-list.html`);
  const queue = `bench-mem-frontier-${Date.now()}`;
  const pool = new WorkerPool({ ...o.env, CRAWLER_TASK_QUEUE: queue }, { supervise: true, onLog: () => undefined });
  await pool.start(o.workers);
  const campaignId = `bench-mem-frontier-${Date.now().toString(36)}`;
  let campaignKey: string | null = null;
  try {
    const partsBefore = await memoryParts(o.redis);
    const before = partsBefore.used_memory;
    const watch = watchUsedMemory(o.redis, SAMPLE_MS);
    const t0 = Date.now();
    const handle = await startCampaign(o.client, queue, {
      campaignId,
      seedsFile: file,
      scope: { mode: 'same-host' },
      politeness: { maxInFlightPerAddress: null },
      sitemaps: 'off',
      output: { dir: path.join(dir, 'out') },
      ...(o.spillAbove === undefined && !o.seen ? {} : { frontier: { ...(o.spillAbove === undefined ? {} : { spillAbove: o.spillAbove }), ...o.seen } }),
    });
    campaignKey = campaignKeyOf(campaignId, handle.firstExecutionRunId);
    await handle.executeUpdate(pauseCampaignUpdate);
    await Promise.race([seedingDone(o.client, campaignId), pool.failed()]).catch(async (err: unknown) => {
      await watch.stop();
      throw err;
    });
    const seedingSeconds = Number(((Date.now() - t0) / 1000).toFixed(1));
    const peak = await watch.stop();
    const partsAfter = await memoryParts(o.redis);
    const after = partsAfter.used_memory;
    const b = await memoryByFamily(o.redis, campaignKey);
    // Waiting URLs: those in the frontiers' sorted sets and those spilled to segments on the output folder.
    const inRedis = b.byKind['host.frontier']?.elements ?? 0;
    const spill = await spilledOf(o.redis, campaignKey, path.join(dir, 'out', 'frontier'));
    const waiting = inRedis + spill.entries;
    const hosts = b.byKind['host.frontier']?.keys ?? 0;
    const figures = {
      scenario: `${o.name}: ${list.seeds.toLocaleString('en-US')} seeds over ${o.hosts.toLocaleString('en-US')} hosts, held in the frontier by a pause`,
      run: 'frontier',
      seeds: list.seeds,
      listBytes: list.listBytes,
      meanUrlChars: list.meanUrlChars,
      seedingSeconds,
      waitingUrls: waiting,
      spillAbove: o.spillAbove === undefined ? 'default' : o.spillAbove,
      waitingInRedis: inRedis,
      waitingSpilled: spill.entries,
      segments: spill.segments,
      seedObjects: spill.seedObjects,
      seedBlocks: spill.seedBlocks,
      storeBytes: spill.bytes,
      // What a spilled URL costs on the output store (gzip of JSON lines).
      perSpilledUrlStoreBytes: per(spill.bytes, spill.entries),
      hostsWithFrontier: hosts,
      // Hosts dispatched before the pause took hold (each has a record): the crawling there was, if any.
      hostsDispatched: b.byKind['campaign.hosts']?.elements ?? 0,
      usedMemory: { before, peak: peak.peak, peakAtSeconds: peak.peakAtSeconds, after, samples: peak.samples.length },
      infoMemory: { before: partsBefore, after: partsAfter },
      perWaitingUrlBytes: per(after - before, waiting),
      keysBytes: b.bytes,
      // A frontier entry and its seen fingerprint (as the operations guide counts a waiting URL), and the entry alone.
      perWaitingUrlKeysBytes: per(bytesOf(b, ['frontier', 'seen']), waiting),
      perFrontierEntryBytes: per(b.byKind['host.frontier']?.bytes ?? 0, waiting),
      ...headline(b, hosts),
      byFamily: familyFigures(b, waiting),
      byKind: b.byKind,
      unknownKeys: b.unknownKeys,
      scanMs: b.scanMs,
    };
    log(`\n${figures.scenario}: seeded in ${seedingSeconds} s, URLs of ${list.meanUrlChars} characters on average, ${figures.hostsDispatched} hosts dispatched`);
    log(`used_memory: before ${before}, after ${after} (peak ${peak.peak}): ${figures.perWaitingUrlBytes} bytes a waiting URL, everything included`);
    log(
      `waiting: ${inRedis} in Redis, ${spill.entries} in ${spill.segments} segments and ${spill.seedBlocks} host blocks of ${spill.seedObjects} shared seed objects (${spill.bytes} bytes on the store, ${figures.perSpilledUrlStoreBytes} a spilled URL)`,
    );
    log(
      `frontier entry + seen fingerprint ${figures.perWaitingUrlKeysBytes} bytes a URL; a host ${figures.perHostBytes} bytes (the campaign's keys that do not grow with URLs ÷ hosts)`,
    );
    log(`${familyTable('once seeded, MEMORY USAGE by family', b, waiting, 'waiting URL')}\n`);
    await handle.signal('cancel', { reason: 'bench over' });
    await handle.result().catch(() => undefined);
    await purgeCampaign(o.redis, campaignKey);
    campaignKey = null;
    const firstPage = await firstPageRun(o, queue, file);
    return { ...figures, firstPage };
  } finally {
    await pool.stopAll();
    if (campaignKey) await purgeCampaign(o.redis, campaignKey);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** How long a steering call is waited for before it is reported unanswered. */
const STEER_WAIT_MS = 60_000;

/** Hosts of the list pinned to the bench's page server (the first ones: those its first loadSeeds call reads, dispatched first). */
const FIRST_PAGE_HOSTS = 1_000;

/**
 * The same list crawled, not paused: the seconds from the campaign's start to the first page
 * request (robots.txt aside) reaching a page server on 127.0.0.1:80 that the list's first hosts
 * are pinned to (fetch.resolve; the rest do not resolve), then how long the campaign takes to
 * answer a status query, a pause, a resume and an add-seeds while its list is still being read,
 * and how many loadSeeds calls had answered by then. Then cancelled and purged. Null when port 80
 * cannot be had.
 */
async function firstPageRun(o: MemoryFrontierInput, queue: string, file: string) {
  let firstAt: number | null = null;
  const server = http.createServer((req, res) => {
    if (firstAt === null && !req.url?.startsWith('/robots.txt')) firstAt = Date.now();
    res.writeHead(req.url?.startsWith('/robots.txt') ? 404 : 200, { 'content-type': 'text/html' });
    res.end('<html><body>bench</body></html>');
  });
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(80, '127.0.0.1', () => resolve(true));
  });
  if (!listening) {
    log('first page: port 80 on 127.0.0.1 is not available, not measured');
    return null;
  }
  const campaignId = `bench-mem-first-${Date.now().toString(36)}`;
  let campaignKey: string | null = null;
  try {
    const t0 = Date.now();
    const handle = await startCampaign(o.client, queue, {
      campaignId,
      seedsFile: file,
      scope: { mode: 'same-host' },
      politeness: { maxInFlightPerAddress: null },
      sitemaps: 'off',
      fetch: { resolve: Array.from({ length: Math.min(FIRST_PAGE_HOSTS, o.hosts) }, (_, h) => `www.seed${h}.test:80:127.0.0.1`) },
      output: { dir: path.join(path.dirname(file), 'out-first') },
      ...(o.spillAbove === undefined ? {} : { frontier: { spillAbove: o.spillAbove } }),
    });
    campaignKey = campaignKeyOf(campaignId, handle.firstExecutionRunId);
    while (firstAt === null && Date.now() - t0 < 300_000) await new Promise((r) => setTimeout(r, 100));
    const firstPageSeconds = firstAt === null ? null : Number(((firstAt - t0) / 1000).toFixed(1));
    log(`first page: ${firstPageSeconds ?? 'none within 300'} s after the start`);
    // An answer's milliseconds, or why there was none.
    const timed = async <T>(f: () => Promise<T>): Promise<number | string> => {
      const t = Date.now();
      try {
        const late = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${STEER_WAIT_MS} ms`)), STEER_WAIT_MS).unref());
        await Promise.race([f(), late]);
        return Date.now() - t;
      } catch (err) {
        return `failed after ${Date.now() - t} ms: ${(err as Error).message}; ${String((err as { cause?: unknown }).cause ?? '')}`;
      }
    };
    const ms = (t: number | string): string => (typeof t === 'number' ? `${t} ms` : t);
    const steering = {
      statusMs: await timed(() => handle.query(campaignStatusQuery)),
      pauseMs: await timed(() => handle.executeUpdate(pauseCampaignUpdate)),
      resumeMs: await timed(() => handle.executeUpdate(resumeCampaignUpdate)),
      addSeedsMs: await timed(() => handle.executeUpdate(addSeedsUpdate, { args: [{ seeds: ['http://www.seed0.test/added-while-seeding.html'] }] })),
      loadSeedsAnswered: activityCount(await handle.fetchHistory(), 'loadSeeds'),
      atSeconds: Number(((Date.now() - t0) / 1000).toFixed(1)),
    };
    log(
      `first page: ${firstPageSeconds ?? 'none within 300'} s after the start; while seeding (${steering.loadSeedsAnswered} loadSeeds calls answered at ${steering.atSeconds} s): status ${ms(steering.statusMs)}, pause ${ms(steering.pauseMs)}, resume ${ms(steering.resumeMs)}, add-seeds ${ms(steering.addSeedsMs)}`,
    );
    await handle.signal('cancel', { reason: 'bench over' });
    await handle.result().catch(() => undefined);
    return { firstPageSeconds, steering };
  } finally {
    await new Promise((r) => server.close(r));
    if (campaignKey) await purgeCampaign(o.redis, campaignKey);
  }
}

/** Activities of `type` that completed in this run's history. */
function activityCount(history: temporal.api.history.v1.IHistory, type: string): number {
  const E = temporal.api.enums.v1.EventType;
  const scheduled = new Set<number>();
  let n = 0;
  for (const e of history.events ?? []) {
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && e.activityTaskScheduledEventAttributes?.activityType?.name === type) scheduled.add(Number(e.eventId));
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED && scheduled.has(Number(e.activityTaskCompletedEventAttributes?.scheduledEventId))) n++;
  }
  return n;
}

/** The entries the campaign's frontiers spilled (their hosts' `spilled` counters), their segments and those objects' bytes. */
async function spilledOf(
  redis: RedisLike,
  campaignKey: string,
  folder: string,
): Promise<{ entries: number; segments: number; seedObjects: number; seedBlocks: number; bytes: number }> {
  let entries = 0;
  for (const host of await hostsWithFrontier(redis, campaignKey, 'spill')) entries += Number((await redis.hget(hostKeys(campaignKey, host).stats, 'spilled')) ?? 0);
  const files = fs.existsSync(folder) ? (fs.readdirSync(folder, { recursive: true }) as string[]).filter((f) => f.endsWith('.seg') || f.endsWith('.seeds')) : [];
  const shared = files.filter((f) => f.endsWith('.seeds'));
  const registered = await hostsWithFrontier(redis, campaignKey, 'spill');
  let sharedSegments = 0;
  for (const host of registered) sharedSegments += (await redis.zrange(hostKeys(campaignKey, host).spill, 0, -1)).filter((n) => n.startsWith('@')).length;
  return {
    entries,
    // Objects of a host's own tail, and shared seed-segment objects (one a loadSeeds chunk) with the host blocks registered in them.
    segments: files.length - shared.length,
    seedObjects: shared.length,
    seedBlocks: sharedSegments,
    bytes: files.reduce((n, f) => n + fs.statSync(path.join(folder, f)).size, 0),
  };
}

/**
 * Resolves once the campaign has read its whole seed list: a loadSeeds
 * activity of its current run answered `done`, or the run was continued as
 * new with the list read (its carry says so). Polls the history every 2 s.
 */
async function seedingDone(client: Client, workflowId: string): Promise<void> {
  const E = temporal.api.enums.v1.EventType;
  const json = (p?: temporal.api.common.v1.IPayloads | null): unknown => {
    const data = p?.payloads?.[0]?.data;
    return data ? JSON.parse(Buffer.from(data).toString('utf8')) : null;
  };
  for (;;) {
    const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const loads = new Set<number>();
    for (const e of events) {
      if (e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) {
        const input = json(e.workflowExecutionStartedEventAttributes?.input) as { carry?: { seeds?: { done?: boolean } } } | null;
        if (input?.carry?.seeds?.done) return;
      }
      if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && e.activityTaskScheduledEventAttributes?.activityType?.name === 'loadSeeds') loads.add(Number(e.eventId));
      if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED && loads.has(Number(e.activityTaskCompletedEventAttributes?.scheduledEventId))) {
        if ((json(e.activityTaskCompletedEventAttributes?.result) as { done?: boolean } | null)?.done) return;
      }
      if (e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED || e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED) {
        throw new Error(`the campaign ended before its seed list was read`);
      }
    }
    await new Promise((r) => setTimeout(r, 2_000));
  }
}
