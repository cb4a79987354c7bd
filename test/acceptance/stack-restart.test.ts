// A campaign survives the whole stack going down and coming back on the same
// data: the Temporal server and Redis stopped (SQLite file, AOF), the workers
// after them, then everything started again on the same ports. Out of
// `npm test` for its length (a stack of its own, stopped and started again);
// the graceful stop of one worker is in test/integration/graceful.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import { connectClient } from '../../src/temporal/connect';
import { startCampaign } from '../../src/temporal/campaign-client';
import { readIndex } from '../../src/storage/index-writer';
import { WorkerPool } from '../../src/worker/worker-pool';
import { RestartableStack } from '../chaos/restartable-stack';
import { generateSites, startTestWeb } from '../web/test-web';
import { fetchedUrls, minGapsByHost, pageRequests, sleep } from '../support/harness';

jest.setTimeout(10 * 60_000);

const dataRoot = () => process.env.CRAWLER_TEST_DATA_DIR!;

describe('the whole stack goes down and comes back on the same data', () => {
  test('the campaign completes with every page, still polite', async () => {
    const dataDir = path.join(dataRoot(), `restart-stack-${process.pid}`);
    const stack = await RestartableStack.start({ dataDir: path.join(dataDir, 'stack') });
    const web = await startTestWeb();
    const pool = new WorkerPool({
      TEMPORAL_ADDRESS: stack.temporalAddress,
      REDIS_URL: stack.redisUrl,
      CRAWLER_TASK_QUEUE: `restart-${process.pid}`,
      CRAWLER_WORKFLOW_BUNDLE: process.env.CRAWLER_WORKFLOW_BUNDLE ?? '',
    });
    let client = await connectClient(stack.temporalAddress);
    try {
      const sites = generateSites({ count: 6, pages: 12, fanOut: 3, hostPattern: (i) => `r${i}.restart.test`, seed: 13 });
      for (const spec of sites) web.addSite(spec);
      await pool.start(2);
      const seed = web.url(sites[0].host, '/');
      const campaignId = `restart-${Date.now().toString(36)}`;
      const outDir = path.join(dataDir, 'output', campaignId);
      await startCampaign(client, `restart-${process.pid}`, {
        campaignId,
        seeds: [seed],
        scope: { mode: 'any' },
        politeness: { minDelayMs: 200 },
        fetch: { resolve: web.resolveArgs() },
        output: { dir: outDir },
      });
      while (pageRequests(web.requests()).length < 20) await sleep(100);

      // Everything down: the servers stop (SIGTERM: Temporal closes its
      // SQLite file, Redis fsyncs its AOF), then the workers. Servers first,
      // so that nothing moves once they are down: a worker told to stop while
      // its servers run keeps taking new steps while it drains
      // (docs/guarantees.md).
      const pids = stack.pids();
      await stack.stop();
      const before = pageRequests(web.requests()).map((r) => web.url(r.host, r.path));
      const stopAt = Date.now();
      const workersBefore = [...pool.workers];
      // With their servers gone, workers do not finish draining (their local
      // activities keep retrying; docs/guarantees.md): SIGKILL after 3 s.
      await pool.stopAll(3_000);
      if (process.env.CRAWLER_TEST_VERBOSE) {
        const how = workersBefore.map((w) => `#${w.index}: ${w.child.signalCode ?? `exit ${w.child.exitCode}`}`).join(', ');
        process.stderr.write(`workers stopped ${Date.now() - stopAt} ms after SIGTERM with the servers down (${how})\n`);
      }
      await client.connection.close();
      for (const pid of [pids.temporal, pids.redis]) expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
      expect(pool.alive()).toEqual([]);
      expect(pageRequests(web.requests()).length).toBe(before.length);
      expect(new Set(before).size).toBeLessThan(web.expectedPages([seed]).size);

      // ...and up again: same ports, same SQLite file, same AOF.
      await stack.startAgain();
      client = await connectClient(stack.temporalAddress);
      await pool.start(2);
      const result = await client.workflow.getHandle(campaignId).result();

      const expected = web.expectedPages([seed]);
      const fetched = pageRequests(web.requests()).map((r) => web.url(r.host, r.path));
      expect(result.status).toBe('completed');
      expect(new Set(fetched)).toEqual(expected);
      // Only a step caught mid-flight by the shutdown (at most one per host) may be fetched again.
      const again = fetched.slice(before.length).filter((u) => before.includes(u));
      expect(again.length).toBeLessThanOrEqual(sites.length);
      expect(fetched.length - expected.size).toBe(again.length);
      for (const [, gap] of minGapsByHost(web.requests())) expect(gap).toBeGreaterThanOrEqual(200);
      const index = fetchedUrls(await readIndex(path.join(outDir, 'index')));
      expect(new Set(index)).toEqual(expected);
      expect(index.length - expected.size).toBeLessThanOrEqual(again.length);
      if (process.env.CRAWLER_TEST_VERBOSE)
        process.stderr.write(`stack restart: ${before.length} page requests before, ${again.length} fetched again, ${index.length - expected.size} extra index line(s)\n`);
    } finally {
      await pool.stopAll();
      await client.connection.close().catch(() => undefined);
      await web.close();
      await stack.stop();
    }
  });
});
