// Continuous crawling through a full restart: every worker and the Temporal
// server down while a host waits for its revisits (its durable timer lives in
// the server's SQLite file). Out of \`npm test\` for its length (a stack of its
// own, killed and started again); the same without the server's restart is in
// test/integration/revisit.test.ts.
import path from 'node:path';
import os from 'node:os';
import fs from 'node:fs';
import { cancelSignal } from '../../workflows/messages';
import { generateSites } from '../web/test-web';
import { minGapsByHost, pageRequests, sleep } from '../support/harness';
import { connectClient } from '../../src/temporal/connect';
import { startCampaign } from '../../src/temporal/campaign-client';
import { startRestartableCrawl, until } from '../support/restartable-crawl';

jest.setTimeout(300_000);

test('every worker and the Temporal server down while the host waits for its revisits: once they are back, every due revisit happens, none twice, still polite', async () => {
  const dataDir = fs.mkdtempSync(path.join(process.env.CRAWLER_TEST_DATA_DIR ?? os.tmpdir(), 'revisit-restart-'));
  const crawl = await startRestartableCrawl('revisit-restart', dataDir);
  const { stack, web, pool, taskQueue } = crawl;
  let client = crawl.client;
  try {
    const host = 'down.revisit.test';
    for (const spec of generateSites({ count: 1, pages: 4, fanOut: 2, crossPerPage: 0, hostPattern: () => host, seed: 9 })) web.addSite(spec);
    await pool.start(1);
    const campaignId = `revisit-restart-${Date.now().toString(36)}`;
    await startCampaign(client, taskQueue, {
      campaignId,
      seeds: [web.url(host, '/')],
      scope: { mode: 'same-host' },
      politeness: { minDelayMs: 300 },
      sitemaps: 'off',
      session: { durableSleepMs: 1_000 },
      revisit: { enabled: true, minMs: 1_500, maxMs: 3_000 },
      fetch: { resolve: web.resolveArgs() },
      output: { dir: path.join(dataDir, 'output') },
    });
    const pages = () => pageRequests(web.requests()).filter((r) => r.host === host);
    const byPath = () => {
      const m = new Map<string, number[]>();
      for (const r of pages()) m.set(r.path, [...(m.get(r.path) ?? []), r.t]);
      return m;
    };
    await until('every page visited twice', () => byPath().size === 4 && [...byPath().values()].every((ts) => ts.length >= 2));
    // Temporal killed, then the workers: the host's durable timer lives in the server's SQLite file.
    await stack.stopTemporal('kill');
    await pool.stopAll(10_000);
    await client.connection.close();
    const stoppedAt = performance.timeOrigin + performance.now();
    const atStop = pages().length;
    // Longer than the longest interval: every URL falls due while nothing runs.
    await sleep(4_000);
    expect(pages().length).toBe(atStop);
    await stack.startTemporal();
    client = await connectClient(stack.temporalAddress);
    await pool.start(1);
    await until('every page revisited after the restart', () => [...byPath().values()].every((ts) => ts.some((t) => t > stoppedAt)), 180_000);
    const handle = client.workflow.getHandle(campaignId);
    await handle.signal(cancelSignal, { reason: 'test' });
    expect(((await handle.result()) as { status: string }).status).toBe('cancelled');
    // None twice (a URL's visits never closer than the shortest interval), and the host never faster than its delay.
    for (const [p, ts] of byPath()) {
      const gaps = ts.slice(1).map((t, i) => t - ts[i]);
      expect({ p, shortest: Math.min(...gaps) >= 1_500 }).toEqual({ p, shortest: true });
    }
    for (const [, gap] of minGapsByHost(web.requests().filter((r) => r.host === host))) expect(gap).toBeGreaterThanOrEqual(300);
  } finally {
    await crawl.close(client);
  }
});
