// A Redis crash that loses its last writes, mid-crawl: redis-server is killed
// with kill -9 and started again on its append-only file, cut back first to
// what it held a moment before the kill. On Linux a process kill alone loses
// nothing acknowledged (the file's tail is in the page cache); what
// `appendfsync everysec` may lose is the unsynced tail, on a machine crash or
// when a slow disk makes Redis defer its writes (docs/guarantees.md). So the
// test takes that tail off itself, at the worst moment: just after one host
// crawled its last page and gave its slot up, while the others are mid-crawl.
// The campaign must still complete with every page in the index, its summary
// must count what the index holds, and no host may be asked faster than its delay.
import fs from 'node:fs';
import path from 'node:path';
import type { ManagedProcess } from '../../src/stack/managed-process';
import { freePort } from '../../src/stack/ports';
import { startRedisServer } from '../../src/stack/redis-server';
import { createHarness, launch, minGapsByHost, outputOf, pageRequests, sleep, urlOf, type Harness } from '../support/harness';

jest.setTimeout(180_000);

const DELAY_MS = 250;
/** c0 is small: it is done early, and the crash takes its last commits back. */
const SITES = [
  { host: 'c0.crash.test', pages: 6 },
  { host: 'c1.crash.test', pages: 40 },
  { host: 'c2.crash.test', pages: 40 },
];

let h: Harness;
let redis: ManagedProcess | null = null;
let port = 0;
let dir = '';
beforeAll(async () => {
  port = await freePort();
  dir = fs.mkdtempSync(path.join(process.env.CRAWLER_TEST_DATA_DIR!, 'redis-crash-'));
  redis = await startRedisServer({ port, dataDir: dir });
  h = await createHarness('rediscrash', { workers: 2, redisUrl: `redis://127.0.0.1:${port}` });
  for (const s of SITES) h.web.addSite({ ...s, fanOut: 3, latencyMs: 5, seed: 3 });
});
afterAll(async () => {
  await h?.close();
  await redis?.stop();
});

/** The AOF part Redis appends to now (Redis 7 multi-part AOF: the highest-numbered .incr.aof). */
function appendingFile(): string {
  const aofDir = path.join(dir, 'appendonlydir');
  const incr = fs.readdirSync(aofDir).filter((f) => f.endsWith('.incr.aof'));
  incr.sort((a, b) => Number(a.split('.')[2]) - Number(b.split('.')[2]));
  return path.join(aofDir, incr[incr.length - 1]);
}

test('a Redis crash that loses its last writes costs refetches only: every page, an exact summary, no host asked too fast', async () => {
  const seeds = SITES.map((s) => h.web.url(s.host, '/'));
  const expected = h.web.expectedPages(seeds);
  const small = [...expected].filter((u) => new URL(u).hostname === SITES[0].host).length;
  // The campaign looks at Redis every 2 s instead of every 30 (testLimits.tickMs, test-only): the sweep
  // that finds the small host's lost commits runs in its rounds (activities/redis-recovery.ts), and here
  // the first round after the restart used to be the 30 s tick's (no session's nudge came through).
  const handle = await launch(h, { seeds, scope: { mode: 'any' }, politeness: { minDelayMs: DELAY_MS }, testLimits: { tickMs: 2_000 } });

  // The AOF's size over time, to cut it back to an earlier moment.
  const sizes: { t: number; size: number }[] = [];
  let lastSmall = 0;
  for (;;) {
    sizes.push({ t: performance.timeOrigin + performance.now(), size: fs.statSync(appendingFile()).size });
    const reqs = pageRequests(h.web.requests()).filter((r) => r.host === SITES[0].host);
    if (reqs.length >= small) {
      lastSmall = reqs[reqs.length - 1].t;
      // Long enough for its last commit and the release of its slot, well within a second.
      if (performance.timeOrigin + performance.now() - lastSmall >= 300) break;
    }
    await sleep(10);
  }
  redis!.kill9();
  await redis!.waitExit();
  // What the file held just before the small host's last request: its last
  // commit, the empty claim and the release of its slot are gone.
  const keep = [...sizes].reverse().find((s) => s.t <= lastSmall - 20)!;
  fs.truncateSync(appendingFile(), keep.size);
  redis = await startRedisServer({ port, dataDir: dir });

  const result = await handle.result();
  expect(result.status).toBe('completed');
  // The campaign saw the restart and says so.
  expect(result.problems.filter((p) => p.startsWith('Redis restarted'))).toHaveLength(1);
  const index = await outputOf(h, result.campaignId).index();
  // The last line of each URL is its outcome (a refetch writes a second line).
  const last = new Map(index.map((e) => [e.url, e]));
  const fetched = [...last.values()].filter((e) => e.outcome === 'fetched').map((e) => e.url);
  expect(new Set(fetched)).toEqual(expected);
  // The summary counts what the index holds.
  expect(result.pages).toBe(fetched.length);
  expect(result.pages + result.failed + result.skipped).toBe(last.size);
  // Every page was asked for, and no host faster than its delay, crash or not.
  expect(new Set(pageRequests(h.web.requests()).map((r) => urlOf(h, r)))).toEqual(expected);
  for (const [host, gap] of minGapsByHost(h.web.requests())) expect({ host, gap: gap >= DELAY_MS }).toEqual({ host, gap: true });
});
