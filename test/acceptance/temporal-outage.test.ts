// The Temporal server down for longer than the SDK retries a call, while the workers stay up:
// sessions that end during the outage cannot report their end, and the server would run them
// again only at the session heartbeat timeout (5 min). Their worker finds out once the server
// answers again (activities/session-ends.ts) and tells each host, which goes on at once: read
// from the hosts' histories (no session timed out; each one stuck was reported lost), not from
// the clock. How soon the hosts crawled again is printed.
import { temporal } from '@temporalio/proto';
import { hostKey } from '../../src/url/normalize';
import { domainWorkflowId } from '../../workflows/ids';
import path from 'node:path';
import { cancelSignal } from '../../workflows/messages';
import { startCampaign } from '../../src/temporal/campaign-client';
import { connectClient } from '../../src/temporal/connect';
import { generateSites } from '../web/test-web';
import { createHarness, pageRequests, sleep, type Harness } from '../support/harness';
import { startRestartableCrawl, until } from '../support/restartable-crawl';

jest.setTimeout(400_000);

let h: Harness;
beforeAll(async () => {
  h = await createHarness('temporal-outage', { workers: 0 });
});
afterAll(() => h?.close());

test('the Temporal server down for 20 s while the workers run: every host goes on soon after it is back', async () => {
  const dataDir = path.join(h.outDir, `temporal-outage-${process.pid}`);
  const crawl = await startRestartableCrawl('temporal-outage', dataDir);
  const { stack, web, pool, taskQueue } = crawl;
  let client = crawl.client;
  try {
    const hosts = [0, 1, 2, 3].map((i) => `o${i}.outage.test`);
    for (const spec of generateSites({ count: 4, pages: 200, fanOut: 4, crossPerPage: 0, hostPattern: (i) => hosts[i], seed: 3 })) web.addSite(spec);
    await pool.start(2);
    const campaignId = `outage-${Date.now().toString(36)}`;
    await startCampaign(client, taskQueue, {
      campaignId,
      seeds: hosts.map((x) => web.url(x, '/')),
      scope: { mode: 'same-host' },
      politeness: { minDelayMs: 300 },
      sitemaps: 'off',
      session: { maxMs: 1_500, firstLocalMs: 500 },
      fetch: { resolve: web.resolveArgs() },
      output: { dir: path.join(dataDir, 'output') },
    });
    const pages = () => pageRequests(web.requests());
    await until('every host crawling', () => hosts.every((x) => pages().filter((r) => r.host === x).length >= 5));
    await stack.stopTemporal('kill');
    await client.connection.close();
    await sleep(20_000);
    await stack.startTemporal();
    const upAt = performance.timeOrigin + performance.now();
    client = await connectClient(stack.temporalAddress);
    await until('every host crawling again after the restart', () => hosts.every((x) => pages().some((r) => r.host === x && r.t > upAt)), 330_000);
    const back = hosts.map((x) =>
      Math.round(
        Math.min(
          ...pages()
            .filter((r) => r.host === x && r.t > upAt)
            .map((r) => r.t),
        ) - upAt,
      ),
    );
    process.stderr.write(`hosts back after the restart (ms): ${back.join(', ')}\n`);
    // No session of any host waited for its heartbeat timeout: the ones the server never heard end were reported lost.
    const EventType = temporal.api.enums.v1.EventType;
    let told = 0;
    for (const x of hosts) {
      const { events } = await client.workflow.getHandle(domainWorkflowId(campaignId, hostKey(web.url(x, '/')))).fetchHistory();
      expect({ host: x, timedOut: events!.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT).length }).toEqual({ host: x, timedOut: 0 });
      told += events!.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'sessionLost').length;
    }
    process.stderr.write(`sessions reported lost after the outage: ${told}\n`);
    expect(told).toBeGreaterThan(0);
    const handle = client.workflow.getHandle(campaignId);
    await handle.signal(cancelSignal, { reason: 'test' });
    expect(((await handle.result()) as { status: string }).status).toBe('cancelled');
  } finally {
    await crawl.close(client);
  }
});
