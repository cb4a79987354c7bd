// Each worker serves Prometheus metrics; scraped during and after a crawl,
// their counters add up to what the test web saw and the index recorded.
import { request } from 'undici';
import { WorkerPool } from '../../src/worker/worker-pool';
import { createHarness, launch, outputOf, sleep, type Harness } from '../support/harness';

let h: Harness;
let pool: WorkerPool;

beforeAll(async () => {
  h = await createHarness('metrics');
  pool = new WorkerPool({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    REDIS_URL: process.env.REDIS_URL,
    CRAWLER_TASK_QUEUE: h.taskQueue,
    CRAWLER_WORKFLOW_BUNDLE: process.env.CRAWLER_WORKFLOW_BUNDLE ?? '',
    CRAWLER_METRICS_PORT: '0',
  });
  await pool.start(2);
  for (const host of ['m0.metrics.test', 'm1.metrics.test', 'm2.metrics.test']) {
    h.web.addSite({ host, pages: 12, fanOut: 3, statusFor: (p, n) => (p === '/page/3' ? 404 : p === '/page/5' && n === 1 ? 503 : undefined) });
  }
}, 180_000);

afterAll(async () => {
  await pool?.stopAll();
  await h?.close();
});

/** Sum of one series over every worker's /metrics, matching a label subset. */
async function scrape(): Promise<(name: string, labels?: Record<string, string>) => number> {
  const texts = await Promise.all(
    pool.alive().map(async (w) => {
      const res = await request(w.metricsUrl!);
      expect(res.statusCode).toBe(200);
      return res.body.text();
    }),
  );
  const lines = texts.join('\n').split('\n').filter((l) => l && !l.startsWith('#'));
  return (name, labels = {}) =>
    lines
      .filter((l) => {
        const m = /^([a-z_:]+)(\{([^}]*)\})? (\S+)$/.exec(l);
        if (!m || m[1] !== name) return false;
        const got = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
        return Object.entries(labels).every(([k, v]) => got[k] === v);
      })
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

test('worker metrics count pages, statuses, retries and bytes as the request log and index show', async () => {
  expect(pool.alive().every((w) => /^http:\/\/127\.0\.0\.1:\d+\/metrics$/.test(w.metricsUrl ?? ''))).toBe(true);
  const handle = await launch(h, { seeds: h.web.hosts().map((host) => h.web.url(host, '/')), politeness: { minDelayMs: 150 }, idleCloseMs: 1_000 });

  // Mid-crawl: the endpoint answers and already counts.
  while (h.web.requests().filter((r) => r.path.startsWith('/page/')).length < 5) await sleep(100);
  const early = await scrape();
  expect(early('crawler_pages_total')).toBeGreaterThan(0);

  const result = await handle.result();
  expect(result.status).toBe('completed');
  const m = await scrape();
  const index = await outputOf(h, result.campaignId).index();
  const reqs = h.web.requests().filter((r) => r.path !== '/robots.txt');

  expect(m('crawler_pages_total', { outcome: 'fetched' })).toBe(index.filter((e) => e.outcome === 'fetched').length);
  // /page/3 and the /sitemap.xml probe answer 404 on every host.
  expect(m('crawler_responses_total', { status: '404' })).toBe(reqs.filter((r) => r.path === '/page/3' || r.path === '/sitemap.xml').length);
  expect(m('crawler_responses_total', { status: '404' })).toBe(6);
  // The 503 was retried: one retry observation per host, then a 200.
  expect(m('crawler_pages_total', { outcome: 'retry' })).toBe(3);
  expect(m('crawler_responses_total', { status: '503' })).toBe(3);
  // Every request the test web answered (robots.txt aside) is one observation with a status.
  expect(m('crawler_responses_total')).toBe(reqs.length);
  expect(m('crawler_bytes_total')).toBe(index.reduce((s, e) => s + e.bytes, 0));
  expect(m('crawler_fetch_duration_seconds_count')).toBe(index.filter((e) => e.fetchMs !== undefined).length);
  expect(m('crawler_robots_fetches_total')).toBe(3);
}, 240_000);
