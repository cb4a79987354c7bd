// Sessions ride out a Redis outage (activities/redis-outage.ts): the errors
// of a dead node and of a cluster failing over are told from a command's own
// errors, a session whose Redis answers again retries at once, and a
// campaign on a Redis Cluster with replicas goes through the kill of the
// master holding a host's keys with every page stored, its sessions retried
// for the outage rather than backing off.
import net from 'node:net';
import path from 'node:path';
import Redis from 'ioredis';
import { ApplicationFailure } from '@temporalio/common';
import { createRedis } from '../../src/redis/client';
import { hostKeys } from '../../src/redis/keys';
import { startRedisServer } from '../../src/stack/redis-server';
import { startRedisCluster, type RunningRedisCluster } from '../../src/stack/redis-cluster';
import { afterRedisFailure, isRedisUnavailable, waitForRedis } from '../../activities/redis-outage';
import { FailureType } from '../../workflows/messages';
import { domainWorkflowId } from '../../workflows/ids';
import { hostKey } from '../../src/url/normalize';
import { campaignKeyOf } from '../../src/cli/commands/purge';
import { generateSites } from '../web/test-web';
import { createHarness, fetchedUrls, launch, outputOf, pageRequests, sleep, urlOf, type Harness } from '../support/harness';

jest.setTimeout(240_000);

const dataDir = () => {
  const d = process.env.CRAWLER_TEST_DATA_DIR;
  if (!d) throw new Error('integration tests need the global setup (CRAWLER_TEST_DATA_DIR)');
  return d;
};

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

/** The rejection of `p`, which must reject. */
async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** The client port of the master that serves `key` now. */
async function masterOf(c: RunningRedisCluster, key: string): Promise<number> {
  const r = new Redis({ host: '127.0.0.1', port: c.ports[0], maxRetriesPerRequest: 1 });
  try {
    const slot = (await r.call('CLUSTER', 'KEYSLOT', key)) as number;
    const slots = (await r.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    return slots.find(([from, to]) => slot >= from && slot <= to)![2][1];
  } finally {
    r.disconnect();
  }
}

describe('a Redis outage', () => {
  let cluster: RunningRedisCluster | undefined;
  let h: Harness | undefined;
  afterAll(async () => {
    await h?.close();
    await cluster?.stop();
  });

  test("a dead server's and a cluster's errors while a master is gone count as an outage; a command's own error does not", async () => {
    // A server that is not there: ioredis gives up after its retries.
    const port = await freePort();
    const gone = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    gone.on('error', () => undefined);
    const dead = await rejectionOf(gone.get('k'));
    gone.disconnect();
    expect(isRedisUnavailable(dead)).toBe(true);
    // Wrapped by a caller, it still counts.
    expect(isRedisUnavailable(new Error('claim failed', { cause: dead }))).toBe(true);

    // A cluster one of whose masters is gone (no replica to take over): the client's errors while
    // its slots point at the dead node, then while the cluster says it is down.
    const small = await startRedisCluster({ dataDir: path.join(dataDir(), `outage-small-${process.pid}`), masters: 2, nodeTimeoutMs: 1_000 });
    const client = createRedis(small.url);
    client.on('error', () => undefined);
    try {
      await client.set('{probe}:k', 'v');
      // A command's own error (wrong type) is no outage.
      const wrong = await rejectionOf(client.hget('{probe}:k', 'f'));
      expect(String(wrong)).toMatch(/WRONGTYPE/);
      expect(isRedisUnavailable(wrong)).toBe(false);
      expect(isRedisUnavailable(new Error('Connection refused by the web server'))).toBe(false);
      small.nodes[small.ports.indexOf(await masterOf(small, '{probe}:k'))].child.kill('SIGKILL');
      // Until the cluster has marked the node failed and refuses the slot (CLUSTERDOWN).
      for (let down = false; !down;) {
        const err = await rejectionOf(client.get('{probe}:k'));
        expect({ err: String(err), outage: isRedisUnavailable(err) }).toEqual({ err: String(err), outage: true });
        down = /CLUSTERDOWN/.test(String(err));
      }
    } finally {
      client.disconnect();
      await small.stop();
    }
  });

  test('a session whose Redis answers again retries at once; one that stays down is left to the retry policy', async () => {
    const port = await freePort();
    const dir = path.join(dataDir(), `outage-single-${process.pid}`);
    let server = await startRedisServer({ port, dataDir: dir });
    const redis = createRedis(`redis://127.0.0.1:${port}`);
    try {
      await redis.set('crawl:{c}:config', '{}');
      await server.stop();
      // Down for longer than the wait: the error goes on as it was.
      expect(await waitForRedis(redis, ['crawl:{c}:config'], { maxMs: 600 })).toBe(false);
      const outage = new Error('Connection is closed.');
      // Back within the wait: a retryable failure whose retry starts at once.
      const riding = afterRedisFailure(redis, ['crawl:{c}:config'], outage);
      await sleep(1_000);
      server = await startRedisServer({ port, dataDir: dir });
      const thrown = await riding;
      expect(thrown).toBeInstanceOf(ApplicationFailure);
      const f = thrown as ApplicationFailure;
      expect({ type: f.type, nonRetryable: f.nonRetryable, delayed: f.nextRetryDelay !== undefined, cause: f.cause }).toEqual({
        type: FailureType.redisOutage,
        nonRetryable: false,
        delayed: true,
        cause: outage,
      });
      // Anything else is thrown unchanged, Redis up or not.
      const other = new Error('a bug');
      expect(await afterRedisFailure(redis, ['crawl:{c}:config'], other)).toBe(other);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  test("a campaign goes through the kill of the master holding a host's keys: every page stored, its session retried for the outage", async () => {
    cluster = await startRedisCluster({ dataDir: path.join(dataDir(), `outage-cluster-${process.pid}`), masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 1_000 });
    h = await createHarness('outage', { workers: 2, redisUrl: cluster!.url });
    const HOSTS = 4;
    const PAGES = 40;
    const name = (i: number) => `o${i}.outage.test`;
    for (const spec of generateSites({ count: HOSTS, pages: PAGES, fanOut: 3, crossPerPage: 1, hostPattern: name, seed: 5 })) h.web.addSite(spec);
    const seeds = Array.from({ length: HOSTS }, (_, i) => h!.web.url(name(i), '/'));
    const handle = await launch(h, {
      seeds,
      scope: { mode: 'any' },
      politeness: { minDelayMs: 200 },
      sitemaps: 'off',
      // The first (local) session's retries are not in history: the kill falls in a regular session.
      session: { firstLocalMs: 1_000 },
    });
    const campaignKey = campaignKeyOf(handle.workflowId, handle.firstExecutionRunId);
    const victim = await masterOf(cluster!, hostKeys(campaignKey, hostKey(seeds[0])).frontier);

    // Past its first session, host 0's keys lose their master; its replica takes over after the node timeout.
    while (pageRequests(h.web.requests()).filter((r) => r.host === new URL(seeds[0]).hostname).length < 12) await sleep(50);
    const node = cluster!.nodes[cluster!.ports.indexOf(victim)];
    node.child.kill('SIGKILL');

    const result = await handle.result();
    expect(result.status).toBe('completed');
    const expected = h.web.expectedPages(seeds);
    expect(expected.size).toBe(HOSTS * PAGES);
    const index = await outputOf(h, result.campaignId).index();
    expect(new Set(fetchedUrls(index))).toEqual(expected);
    // The outage is no page's failure: none is recorded INTERNAL_ERROR for it.
    expect(index.filter((e) => e.outcome !== 'fetched').map((e) => `${e.url}: ${e.error?.code ?? e.outcome}`)).toEqual([]);
    const requested = pageRequests(h.web.requests()).map((r) => urlOf(h!, r));
    expect(new Set(requested)).toEqual(expected);

    // The outage was felt: a session attempt failed for it and the next one went on at once. Which
    // hosts' sessions feel it depends on what each had in flight (a command may also ride the
    // failover out inside the client's own retries), so no host in particular; but no session
    // attempt failed for anything else, so none backed off.
    const failures: string[] = [];
    for (const seed of seeds) {
      const events = (await h.client.workflow.getHandle(domainWorkflowId(result.campaignId, hostKey(seed))).fetchHistory()).events ?? [];
      for (const e of events) {
        const failure = e.activityTaskStartedEventAttributes?.lastFailure;
        if (failure) failures.push(`${hostKey(seed)}: ${failure.applicationFailureInfo?.type ?? 'no type'}: ${failure.message}`);
      }
    }
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.filter((f) => !f.includes(`: ${FailureType.redisOutage}: `))).toEqual([]);
  });
});
