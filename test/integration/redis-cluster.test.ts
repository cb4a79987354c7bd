// The crawler on a 3-master Redis Cluster: a campaign over 6 hosts with
// cross-host links, two worker processes pointed at the cluster, and every
// page fetched exactly once. Its keys must be spread over the masters (the
// per-host hash tags at work) and none may land on the global test Redis.
import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import type { WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { createRedis } from '../../src/redis/client';
import { ContentIndex } from '../../src/dedup/content-index';
import { markContentFormat } from '../../src/dedup/content-format';
import { PayloadIndex } from '../../src/dedup/payload-index';
import { responseRecordId } from '../../src/storage/warc-writer';
import { Frontier } from '../../src/redis/frontier';
import { FRONTIER_LAYOUT, markFrontierLayout } from '../../src/redis/frontier-layout';
import { urlFingerprint } from '../../src/url/fingerprint';
import { HostClock } from '../../src/redis/host-clock';
import { contentKeys, hostKeys } from '../../src/redis/keys';
import { classifyKey } from '../../src/redis/key-families';
import { startRedisCluster, type RunningRedisCluster } from '../../src/stack/redis-cluster';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { campaignKeyOf } from '../../src/cli/commands/purge';
import { CAMPAIGN_DEFAULTS } from '../../src/config/campaign';
import { cancelSignal } from '../../workflows/messages';
import { generateSites } from '../web/test-web';
import { createHarness, fetchedUrls, launch, outputOf, pageRequests, urlOf, type Harness } from '../support/harness';

jest.setTimeout(300_000);

const HOSTS = 6;
const PAGES = 15;
const hostName = (i: number) => `k${i}.cluster.test`;

let cluster: RunningRedisCluster | undefined;
let h: Harness | undefined;
let closed = false;
const closeAll = async () => {
  if (!closed && h) await h.close();
  closed = true;
  await cluster?.stop();
};

beforeAll(async () => {
  const dataDir = process.env.CRAWLER_TEST_DATA_DIR;
  if (!dataDir) throw new Error('integration tests need the global setup (CRAWLER_TEST_DATA_DIR)');
  cluster = await startRedisCluster({ dataDir: path.join(dataDir, `redis-cluster-${process.pid}`), masters: 3 });
  h = await createHarness('cluster', { workers: 2, redisUrl: cluster.url });
  for (const spec of generateSites({ count: HOSTS, pages: PAGES, fanOut: 3, crossPerPage: 1, hostPattern: hostName, seed: 11 })) h.web.addSite(spec);
});
afterAll(closeAll);

/** The first campaign of the file (crawled by the test below), for the retention and purge test. */
let first: { campaignId: string; campaignKey: string; pages: number; sealedLines: number } | undefined;

/** Every key of every master with its time to live in ms (-1: none). */
async function clusterKeys(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const port of cluster!.ports) {
    const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
    try {
      for (const k of await nodeKeys(port)) out.set(k, await c.pttl(k));
    } finally {
      c.disconnect();
    }
  }
  return out;
}

/** Key families of a campaign's working state, which retention.keep summary deletes when it ends: nothing reads them after. */
const WORKING_STATE = new Set([
  'frontier',
  'seen',
  'content-verdicts',
  'content-exact',
  'content-bands',
  'content-payloads',
  'content-pages',
  'host-session',
  'robots',
  'cookies',
  'revisits',
  'budgets',
]);

/** A campaign's keys: its own tag `{key}` and its hosts' `{key|host}`. */
const keysOf = (all: Map<string, number>, campaignKey: string) => new Map([...all].filter(([k]) => k.includes(`{${campaignKey}}`) || k.includes(`{${campaignKey}|`)));

/** Every key on one node (SCAN, so a big keyspace does not block it). */
async function nodeKeys(port: number): Promise<string[]> {
  const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  try {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await c.scan(cursor, 'COUNT', 1000);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    return keys;
  } finally {
    c.disconnect();
  }
}

test('concurrent page-step scripts of many hosts (many slots) all succeed through the cluster client', async () => {
  // Page steps of one worker run concurrently, each calling Lua scripts on
  // its host's slot and on the campaign's (the content index, whose key
  // count varies with its settings); a client that batches commands of
  // different slots into one pipeline fails some of them.
  const redis = createRedis(cluster!.url);
  try {
    const hosts = Array.from({ length: 60 }, (_, i) => `slot${i}.cluster.test`);
    const content = new ContentIndex(redis, 'slots-check');
    const results = await Promise.allSettled(
      hosts.map(async (host, i) => {
        const f = new Frontier(redis, 'slots-check', host);
        const [, , verdict] = await Promise.all([
          f.enqueue([{ fp: `fp-${host}`, url: `http://${host}/`, depth: 0, referrer: null }]),
          new HostClock(redis, host).acquire('slots-check', 1_000, 0),
          content.check({ url: `http://${host}/`, exactHash: `hash-${i}`, simhash: null }),
        ]);
        expect(verdict).toEqual({ kind: 'unique' });
        return (await f.claim())?.entry.url;
      }),
    );
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    expect(results.map((r) => (r as PromiseFulfilledResult<string>).value)).toEqual(hosts.map((h) => `http://${h}/`));
  } finally {
    redis.disconnect();
  }
});

test('the compact content index and payload index run on the cluster: their buckets, named in the scripts, share the campaign slot', async () => {
  const redis = createRedis(cluster!.url);
  try {
    const ck = 'compact-check';
    await markContentFormat(redis, ck);
    const content = new ContentIndex(redis, ck);
    // Enough pages for the maps to split into several buckets.
    for (let i = 0; i < 300; i += 50) {
      const verdicts = await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          content.check({ url: `http://c${i + j}.cluster.test/`, exactHash: `hash-${i + j}`, simhash: (BigInt(i + j) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn }),
        ),
      );
      expect(verdicts.filter((v) => v.kind !== 'unique')).toEqual([]);
    }
    expect(await content.check({ url: 'http://copy.cluster.test/', exactHash: 'hash-123', simhash: null })).toEqual({ kind: 'exact-duplicate', of: 'http://c123.cluster.test/' });
    const payloads = new PayloadIndex(redis, ck);
    expect(await payloads.claim('sha1:CLUSTER', 'a')).toEqual({ kind: 'original' });
    const of = { uri: 'http://c5.cluster.test/', date: '2026-11-28T00:00:00.000Z', recordId: '<urn:uuid:00000000-0000-4000-8000-000000000000>' };
    expect(await payloads.confirm('sha1:CLUSTER', of)).toBe(true);
    expect(await payloads.claim('sha1:CLUSTER', 'b')).toEqual({ kind: 'revisit', of });
    // Format 3: an HTML page's stored copy kept with its exact hash, its record ID derived from its attempt; one slot all the same.
    const body = `sha256:${'ab'.repeat(32)}`;
    expect(await content.check({ url: 'http://html.cluster.test/', exactHash: body, simhash: 0x0123456789abcdefn })).toEqual({ kind: 'unique' });
    const html = { uri: 'http://html.cluster.test/', date: of.date, recordId: responseRecordId('http://html.cluster.test/', of.date, 'AAAAAAAA') };
    expect(await payloads.confirm({ digest: 'sha1:HTML', contentHash: body }, html, 'AAAAAAAA')).toBe(true);
    expect(await payloads.claim({ digest: 'sha1:HTML', contentHash: body }, 'c')).toEqual({ kind: 'revisit', of: html });
  } finally {
    redis.disconnect();
  }
});

test("Bloom filter seen sets run on the cluster: the markers in one transaction, each host's filter in its slot, no URL enqueued twice", async () => {
  const redis = createRedis(cluster!.url);
  try {
    const ck = 'bloom-check';
    await markFrontierLayout(redis, ck, FRONTIER_LAYOUT, { kind: 'bloom', rate: 0.01 });
    expect(await redis.hmget(contentKeys(ck, 0).meta, 'seen', 'seenFilter')).toEqual(['2', 'bloom 0.01']);
    const hosts = Array.from({ length: 20 }, (_, i) => `bloom${i}.cluster.test`);
    const urls = (host: string, n: number) =>
      Array.from({ length: n }, (_, j) => ({ fp: urlFingerprint(`http://${host}/p/${j}`), url: `http://${host}/p/${j}`, depth: 1, referrer: null }));
    const added = await Promise.all(
      hosts.map(async (host) => {
        const f = new Frontier(redis, ck, host);
        // Past the filter's first two levels (128 + 256 URLs), then every URL again.
        let n = 0;
        for (let from = 0; from < 500; from += 125) n += (await f.enqueue(urls(host, 500).slice(from, from + 125))).added;
        expect((await f.enqueue(urls(host, 500))).added).toBe(0);
        await f.markSeen([urlFingerprint(`http://${host}/style.css`)]);
        expect(await f.hasSeen([urlFingerprint(`http://${host}/style.css`), urlFingerprint(`http://${host}/p/0`)])).toEqual([true, true]);
        expect(await redis.type(hostKeys(ck, host).seen)).toBe('string');
        return n;
      }),
    );
    // At 1 % at most a few of each host's 500 are taken for seen ones.
    for (const n of added) expect(n).toBeGreaterThan(480);
  } finally {
    redis.disconnect();
  }
});

test("the cluster client's node connections send one turn's commands in one write each", async () => {
  // src/redis/write-coalescing.ts: a node connection the cluster opens is coalesced like a single server's.
  const redis = createRedis(cluster!.url) as import('ioredis').Cluster;
  try {
    const tags = ['a', 'b', 'c', 'd', 'e', 'f'];
    // Node connections open on first use.
    await Promise.all(tags.map((t) => redis.set(`{co-${t}}:k`, '0')));
    const counts = new Map<object, number>();
    const restores: (() => void)[] = [];
    for (const node of redis.nodes('master')) {
      const s = (node as unknown as { stream: { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void } }).stream;
      counts.set(s, 0);
      for (const m of ['_write', '_writev'] as const) {
        const orig = s[m];
        s[m] = function (this: unknown, ...a: unknown[]) {
          counts.set(s, counts.get(s)! + 1);
          return orig.apply(this, a);
        };
        restores.push(() => (s[m] = orig));
      }
    }
    try {
      const replies = await Promise.all(tags.flatMap((t) => Array.from({ length: 20 }, () => redis.incr(`{co-${t}}:k`))));
      expect(replies.length).toBe(120);
    } finally {
      for (const r of restores) r();
    }
    expect(await Promise.all(tags.map((t) => redis.get(`{co-${t}}:k`)))).toEqual(tags.map(() => '20'));
    // 120 commands over three masters: one write to each master they went to.
    const used = [...counts.values()].filter((n) => n > 0);
    expect(used.length).toBeGreaterThan(1);
    expect(used).toEqual(used.map(() => 1));
  } finally {
    redis.disconnect();
  }
});

test('a campaign on a 3-master cluster fetches every page exactly once and spreads its keys', async () => {
  const { web } = h!;
  const seed = web.url(hostName(0), '/');
  const handle = await launch(h!, { seeds: [seed], scope: { mode: 'any' }, politeness: { minDelayMs: 50 } });
  const result = await handle.result();
  const expected = web.expectedPages([seed]);
  expect(expected.size).toBeGreaterThanOrEqual(HOSTS * PAGES);
  expect(new Set([...expected].map((u) => new URL(u).hostname)).size).toBe(HOSTS);

  expect(result.status).toBe('completed');
  expect(result.pages).toBe(expected.size);
  // No restart is seen where none happened: the masters' run IDs stay the campaign's epoch.
  expect(result.problems.filter((p) => p.startsWith('Redis restarted'))).toEqual([]);

  // The request log: each expected page once, nothing else.
  const pages = pageRequests(web.requests()).map((r) => urlOf(h!, r));
  expect(pages.length).toBe(new Set(pages).size);
  expect(new Set(pages)).toEqual(expected);

  // The index: exactly those pages.
  const stored = fetchedUrls(await outputOf(h!, result.campaignId).index());
  expect(stored.length).toBe(expected.size);
  expect(new Set(stored)).toEqual(expected);

  // The state lives on the cluster: per-host counters read back through a
  // cluster client under the keys the code uses.
  const campaignKey = `${result.campaignId}.${(handle as WorkflowHandleWithFirstExecutionRunId).firstExecutionRunId.slice(0, 8)}`;
  first = { campaignId: result.campaignId, campaignKey, pages: expected.size, sealedLines: result.sealedIndex?.lines ?? -1 };
  const viaCluster = createRedis(cluster!.url);
  try {
    const perHost = new Map<string, number>();
    for (const u of expected) perHost.set(new URL(u).host, (perHost.get(new URL(u).host) ?? 0) + 1);
    for (const [host, n] of perHost) {
      expect({ host, fetched: Number(await viaCluster.hget(hostKeys(campaignKey, host).stats, 'fetched')) }).toEqual({ host, fetched: n });
    }
  } finally {
    viaCluster.disconnect();
  }

  // The cluster is this file's alone: its keys are on more than one master,
  // and none of the campaign's are on the global Redis.
  const perNode = await Promise.all(cluster!.ports.map(async (p) => (await nodeKeys(p)).filter((k) => k.startsWith('crawl:')).length));
  expect(perNode.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  expect(perNode.filter((n) => n > 0).length).toBeGreaterThan(1);
  const onGlobal: string[] = [];
  for await (const batch of h!.redis.scanStream({ match: `*${result.campaignId}*`, count: 1000 })) onGlobal.push(...(batch as string[]));
  expect(onGlobal).toEqual([]);
});

test('ended campaigns keep what their retention.keep says for their retention (status and seal still work); purge deletes every key of one campaign and nothing else', async () => {
  expect(first).toBeDefined();
  const a = first!;
  const run = promisify(execFile);
  const env = { ...process.env, REDIS_URL: cluster!.url, CRAWLER_TASK_QUEUE: h!.taskQueue };
  const HOUR = 3_600_000;
  const week = CAMPAIGN_DEFAULTS.retention.redisMs!;

  // A second campaign on one of the same hosts, with its own retention, keeping every key.
  const b = await launch(h!, {
    seeds: [h!.web.url(hostName(1), '/')],
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 50 },
    retention: { redisMs: HOUR, keep: 'all' },
  });
  expect((await b.result()).status).toBe('completed');
  const keyB = campaignKeyOf(b.workflowId, b.firstExecutionRunId);

  // A running campaign is not purged: a typed refusal, and its state stays.
  const c = await launch(h!, { seeds: [h!.web.url(hostName(2), '/')], scope: { mode: 'same-host' }, politeness: { minDelayMs: 2_000 }, retention: { redisMs: HOUR } });
  const keyC = campaignKeyOf(c.workflowId, c.firstExecutionRunId);
  const refused = crawlerCommand(['purge', c.workflowId]);
  const res = spawnSync(refused.command, refused.args, { env, encoding: 'utf8' });
  expect({ status: res.status, stderr: res.stderr }).toEqual({ status: 3, stderr: expect.stringMatching(/still running.*crawler cancel .*--force/) });
  expect(keysOf(await clusterKeys(), keyC).get(`crawl:{${keyC}}:config`)).toBeDefined();
  // Cancelled campaigns get their retention too.
  await c.signal(cancelSignal, { reason: 'test' });
  expect((await c.result()).status).toBe('cancelled');

  // Retention: every key left of every ended campaign expires, within its retention
  // (set when it ended, a few minutes ago at most).
  const before = await clusterKeys();
  const ofA = keysOf(before, a.campaignKey);
  const workingState = (m: Map<string, number>) => [...m.keys()].filter((k) => WORKING_STATE.has(classifyKey(k).family));
  // A (keep summary, the default): each host's counters and committed attempt ids, the campaign's settings and host
  // table; none of the working state (the content index, seen-sets, frontiers, sessions, robots.txt state, cookie jars).
  for (const host of Array.from({ length: HOSTS }, (_, i) => new URL(h!.web.url(hostName(i), '/')).host)) {
    expect([...ofA.keys()]).toEqual(expect.arrayContaining([hostKeys(a.campaignKey, host).committed, hostKeys(a.campaignKey, host).stats]));
  }
  expect([...ofA.keys()]).toEqual(expect.arrayContaining(['config', 'control', 'hosts', 'attention', 'totals'].map((k) => `crawl:{${a.campaignKey}}:${k}`)));
  expect(workingState(ofA)).toEqual([]);
  // B (keep all): its working state too, the compact content index's meta hash and the buckets it names among it.
  const ofB = keysOf(before, keyB);
  const content = contentKeys(keyB, 0);
  expect(workingState(ofB).length).toBeGreaterThan(0);
  expect([...ofB.keys()]).toEqual(
    expect.arrayContaining([content.meta, content.bucket('x', 0), content.bucket('u', 0), hostKeys(keyB, new URL(h!.web.url(hostName(1), '/')).host).seen]),
  );
  // C (cancelled, keep summary): its frontier leftovers went with the rest.
  expect(workingState(keysOf(before, keyC))).toEqual([]);
  expect(keysOf(before, keyC).get(`crawl:{${keyC}}:hosts`)).toBeDefined();
  const outside = (m: Map<string, number>, max: number) => [...m].filter(([, ttl]) => !(ttl > max - 10 * 60_000 && ttl <= max));
  expect(outside(ofA, week)).toEqual([]);
  for (const key of [keyB, keyC]) {
    expect(keysOf(before, key).size).toBeGreaterThan(0);
    expect(outside(keysOf(before, key), HOUR)).toEqual([]);
  }

  // What an ended campaign is read for still works on A's: `crawler status` lists every host with its pages,
  // `crawler seal` seals every page again from the committed attempt ids (the frontier counts stay as they were).
  const cli = async (args: string[]) => {
    const c = crawlerCommand(args);
    return JSON.parse((await run(c.command, c.args, { env })).stdout) as Record<string, unknown>;
  };
  const status = (await cli(['status', a.campaignId, '--json'])) as { hosts: { host: string; fetched: number; frontier: number }[] };
  expect(status.hosts.length).toBe(HOSTS);
  expect(status.hosts.reduce((n, x) => n + x.fetched, 0)).toBe(a.pages);
  const sealed = await cli(['seal', a.campaignId, '--json']);
  expect({ lines: sealed.lines, missing: sealed.missing }).toEqual({ lines: a.sealedLines, missing: 0 });
  expect(a.sealedLines).toBeGreaterThanOrEqual(a.pages);
  // The seal wrote no key back (no working state made again, nothing without its time to live).
  expect([...keysOf(await clusterKeys(), a.campaignKey).keys()].sort()).toEqual([...ofA.keys()].sort());
  const again = (await cli(['status', a.campaignId, '--json'])) as typeof status;
  expect(again.hosts.map((x) => [x.host, x.fetched, x.frontier]).sort()).toEqual(status.hosts.map((x) => [x.host, x.fetched, x.frontier]).sort());

  // Purge A through the CLI (Temporal names its key): none of its keys is
  // left on any master, B's and C's are all there, and so are the keys
  // every campaign shares (robots.txt cache of the hosts).
  const purge = crawlerCommand(['purge', a.campaignId]);
  const { stdout } = await run(purge.command, purge.args, { env });
  expect(stdout).toMatch(new RegExp(`purged ${a.campaignId} \\(${a.campaignKey.replace('.', '\\.')}\\): ${ofA.size} key\\(s\\) of ${HOSTS} host\\(s\\) deleted`));
  const after = await clusterKeys();
  expect([...after.keys()].filter((k) => k.includes(a.campaignKey))).toEqual([]);
  for (const key of [keyB, keyC]) expect([...keysOf(after, key).keys()].sort()).toEqual([...keysOf(before, key).keys()].sort());
  const shared = [...before.keys()].filter((k) => k.startsWith('crawl:robots:'));
  expect(shared.length).toBeGreaterThan(0);
  expect(shared.filter((k) => !after.has(k))).toEqual([]);
});

test('stopping leaves no worker or redis-server process behind', async () => {
  const pids = [...h!.pool.workers.map((w) => w.child.pid!), ...cluster!.nodes.map((n) => n.pid)];
  expect(pids.every((p) => p > 0)).toBe(true);
  await closeAll();
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  expect(pids.filter(alive)).toEqual([]);
  expect(cluster!.nodes.map((n) => n.deadReason())).toEqual(cluster!.nodes.map(() => expect.any(String)));
});
