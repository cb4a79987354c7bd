// Sessions spread over the pool (issue 38). A campaign of a few busy hosts,
// on two worker processes: every host's first session runs on the worker
// that dispatched it, the sessions end together at the first-session cap, and
// the hosts' next sessions reach the task queue in one burst. Each worker
// used to keep ten polls open whatever its load and the queue served the
// oldest poll first, so the whole burst (the rest of the crawl) went to one
// worker. The hosts' histories say which worker ran each session.
import fs from 'node:fs';
import path from 'node:path';
import { generateSites } from '../web/test-web';
import { tallySessions, identityPid, type WorkerSessions } from '../../bench/session-placement';
import { domainWorkflowId } from '../../workflows/ids';
import { hostKey } from '../../src/url/normalize';
import { createHarness, fetchedUrls, launch, outputOf, type Harness } from '../support/harness';
import { hostKeys } from '../../src/redis/keys';

jest.setTimeout(240_000);

const HOSTS = 8;
// Enough that no host is done within its first session (1 s): each has one regular session left.
const PAGES = 300;

let h: Harness;
beforeAll(async () => {
  h = await createHarness('spread', { workers: 2 });
  for (const spec of generateSites({ count: HOSTS, pages: PAGES, fanOut: 4, crossPerPage: 0, hostPattern: (i) => `s${i}.spread.test`, seed: 3 })) h.web.addSite(spec);
});
afterAll(() => h?.close());

test("a burst of a few busy hosts' sessions runs on both workers", async () => {
  const seeds = Array.from({ length: HOSTS }, (_, i) => h.web.url(`s${i}.spread.test`, '/'));
  const handle = await launch(h, {
    seeds,
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 0 },
    sitemaps: 'off',
    // First sessions end together after 1 s; the rest of each host fits one regular session.
    session: { firstLocalMs: 1_000, maxPages: 1_000 },
    // Each host's frontier passes this on its way through 300 pages: its tail goes to segments in the
    // shared output folder and comes back on whichever worker runs the host's next session.
    frontier: { spillAbove: 50 },
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.pages).toBe(HOSTS * PAGES);
  // A frontier that spills loses and doubles nothing: every page once in the index.
  const stored = fetchedUrls(await outputOf(h, result.campaignId).index());
  expect(stored.length).toBe(new Set(stored).size);
  expect(new Set(stored)).toEqual(h.web.expectedPages(seeds));
  // Every host wrote segments, and read every one back: none registered, none counted, none left in the output.
  const campaignKey = `${result.campaignId}.${handle.firstExecutionRunId.slice(0, 8)}`;
  for (const seed of seeds) {
    const k = hostKeys(campaignKey, hostKey(seed));
    const [written, spilled] = await h.redis.hmget(k.stats, 'segmentsSpilled', 'spilled');
    expect({ seed, written: Number(written) > 0, spilled: Number(spilled ?? 0), registered: await h.redis.exists(k.spill) }).toEqual({
      seed,
      written: true,
      spilled: 0,
      registered: 0,
    });
  }
  expect(fs.readdirSync(path.join(outputOf(h, result.campaignId).dir, 'frontier'), { recursive: true }).filter((f) => String(f).endsWith('.seg'))).toEqual([]);

  const by = new Map<string, WorkerSessions>();
  for (const seed of seeds) tallySessions((await h.client.workflow.getHandle(domainWorkflowId(result.campaignId, hostKey(seed))).fetchHistory()).events ?? [], by);
  // Sessions from the task queue (not the first, local ones) by worker process.
  const fromQueue = new Map<number | null, number>();
  for (const [identity, w] of by) fromQueue.set(identityPid(identity), (fromQueue.get(identityPid(identity)) ?? 0) + w.sessions - w.firstSessions);
  const workers = h.pool.alive().map((w) => w.child.pid!);
  expect(workers).toHaveLength(2);
  expect([...fromQueue.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(HOSTS);
  for (const pid of workers) expect({ pid, ranSessionsFromTheQueue: (fromQueue.get(pid) ?? 0) > 0 }).toEqual({ pid, ranSessionsFromTheQueue: true });
});
