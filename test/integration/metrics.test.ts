// Each worker serves Prometheus metrics; scraped during and after a crawl,
// their counters add up to what the test web saw and the index recorded.
import net from 'node:net';
import { request } from 'undici';
import { WorkerPool } from '../../src/worker/worker-pool';
import { createHarness, launch, outputOf, sleep, type Harness } from '../support/harness';

let h: Harness;
let pool: WorkerPool;
let sdkPorts: number[];
const RESET_PATH = '/page/7';
// Long enough that a page is processed well within it even on a loaded machine: a request after
// a page that took longer than the delay needs no wait, and the count of waits below would fall
// short of the gaps (CI, once, at 150 ms: 41 waits for 42 gaps; at 500 ms, once, with five test
// files at a time at load 17).
const DELAY_MS = 1_000;

/** n consecutive free loopback ports: the pool gives worker i the configured SDK metrics port + i. */
async function freeConsecutivePorts(n: number): Promise<number> {
  const listen = (port: number) =>
    new Promise<net.Server | null>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(null));
      srv.listen(port, '127.0.0.1', () => resolve(srv));
    });
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const servers = await Promise.all(Array.from({ length: n }, (_, i) => listen(base + i)));
    await Promise.all(servers.map((srv) => srv && new Promise((r) => srv.close(r))));
    if (servers.every(Boolean)) return base;
  }
  throw new Error('no run of free ports found');
}

beforeAll(async () => {
  h = await createHarness('metrics');
  const sdkBase = await freeConsecutivePorts(2);
  pool = new WorkerPool({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    REDIS_URL: process.env.REDIS_URL,
    CRAWLER_TASK_QUEUE: h.taskQueue,
    CRAWLER_WORKFLOW_BUNDLE: process.env.CRAWLER_WORKFLOW_BUNDLE ?? '',
    CRAWLER_METRICS_PORT: '0',
    CRAWLER_SDK_METRICS_PORT: String(sdkBase),
  });
  await pool.start(2);
  sdkPorts = pool.alive().map((w) => sdkBase + w.slot);
  for (const host of ['m0.metrics.test', 'm1.metrics.test', 'm2.metrics.test']) {
    h.web.addSite({
      host,
      pages: 12,
      fanOut: 3,
      statusFor: (p, n) => (p === '/page/3' ? 404 : p === '/page/5' && n === 1 ? 503 : undefined),
      // One page of m2 resets the connection every time: a fetch error by code.
      handler: (ctx) => {
        if (host !== 'm2.metrics.test' || ctx.path !== RESET_PATH) return false;
        ctx.socket.resetAndDestroy();
        return true;
      },
    });
  }
}, 180_000);

afterAll(async () => {
  await pool?.stopAll();
  await h?.close();
});

type Series = { name: string; labels: Record<string, string>; value: number };

async function seriesAt(url: string): Promise<Series[]> {
  const res = await request(url);
  expect(res.statusCode).toBe(200);
  const out: Series[] = [];
  for (const l of (await res.body.text()).split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})? (\S+)/.exec(l);
    if (!m || l.startsWith('#')) continue;
    out.push({ name: m[1]!, labels: Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!])), value: Number(m[4]) });
  }
  return out;
}

/** One series summed over every worker's crawler /metrics, matching a label subset. */
async function scrape(): Promise<((name: string, labels?: Record<string, string>) => number) & { all: Series[][] }> {
  const all = await Promise.all(pool.alive().map((w) => seriesAt(w.metricsUrl!)));
  const sum = (name: string, labels: Record<string, string> = {}) =>
    all
      .flat()
      .filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))
      .reduce((n, x) => n + x.value, 0);
  return Object.assign(sum, { all });
}

test('worker metrics count pages, statuses, retries and bytes as the request log and index show', async () => {
  expect(pool.alive().every((w) => /^http:\/\/127\.0\.0\.1:\d+\/metrics$/.test(w.metricsUrl ?? ''))).toBe(true);
  const handle = await launch(h, { seeds: h.web.hosts().map((host) => h.web.url(host, '/')), politeness: { minDelayMs: DELAY_MS }, fetch: { maxRetries: 1 } });

  // Mid-crawl: the endpoint answers, already counts, and shows the frontier of a host being crawled.
  while (h.web.requests().filter((r) => r.path.startsWith('/page/')).length < 5) await sleep(100);
  const early = await scrape();
  expect(early('crawler_pages_total')).toBeGreaterThan(0);
  const frontierSeries = early.all.flat().filter((x) => x.name === 'crawler_frontier_size');
  expect(frontierSeries.length).toBeGreaterThan(0);
  expect(frontierSeries.every((x) => h.web.hosts().some((host) => new URL(h.web.url(host)).host === x.labels.host))).toBe(true);

  const result = await handle.result();
  expect(result.status).toBe('completed');
  const m = await scrape();
  const index = await outputOf(h, result.campaignId).index();
  const all = h.web.requests();
  const reqs = all.filter((r) => r.path !== '/robots.txt');

  expect(m('crawler_pages_total', { outcome: 'fetched' })).toBe(index.filter((e) => e.outcome === 'fetched').length);
  expect(m('crawler_pages_total', { outcome: 'http-error' })).toBe(index.filter((e) => e.outcome === 'http-error').length);
  // /page/3 and the /sitemap.xml probe answer 404 on every host.
  expect(m('crawler_responses_total', { status: '404' })).toBe(reqs.filter((r) => r.path === '/page/3' || r.path === '/sitemap.xml').length);
  expect(m('crawler_responses_total', { status: '404' })).toBe(6);
  // The 503 was retried: one retry observation per host, then a 200.
  expect(m('crawler_responses_total', { status: '503' })).toBe(3);
  // Every request the test web answered (robots.txt aside) is one observation with a status.
  const resets = reqs.filter((r) => r.path === RESET_PATH && r.host === 'm2.metrics.test').length;
  expect(m('crawler_responses_total')).toBe(reqs.length - resets);
  expect(m('crawler_bytes_total')).toBe(index.reduce((s, e) => s + e.bytes, 0));
  expect(m('crawler_fetch_duration_seconds_count')).toBe(index.filter((e) => e.fetchMs !== undefined).length);
  expect(m('crawler_robots_fetches_total')).toBe(3);

  // Errors by type: every attempt at the page that resets is one CONNECTION_RESET.
  expect(resets).toBeGreaterThanOrEqual(2);
  expect(m('crawler_fetch_errors_total', { code: 'CONNECTION_RESET' })).toBe(resets);
  expect(index.find((e) => e.url === h.web.url('m2.metrics.test', RESET_PATH))).toMatchObject({ outcome: 'error', error: { code: 'CONNECTION_RESET' } });

  // Politeness waits: between two requests to a host the session waits out
  // what is left of the delay once the page is processed (or the host's
  // workflow sleeps it durably), and each wait is recorded.
  let gaps = 0;
  for (const host of h.web.hosts()) gaps += all.filter((r) => r.host === host).length - 1;
  expect(m('crawler_politeness_wait_seconds_count')).toBeGreaterThanOrEqual(gaps);
  expect(m('crawler_politeness_wait_seconds_sum')).toBeGreaterThanOrEqual((gaps * DELAY_MS * 0.8) / 1000);

  // Each host's frontier gauge ends at 0 on the worker that crawled it last.
  for (const host of h.web.hosts().map((x) => new URL(h.web.url(x)).host)) {
    const values = m.all
      .flat()
      .filter((x) => x.name === 'crawler_frontier_size' && x.labels.host === host)
      .map((x) => x.value);
    expect({ host, seen: values.length > 0, endsAtZero: values.includes(0) }).toEqual({ host, seen: true, endsAtZero: true });
  }

  // The SDK's own metrics, one exporter per worker on the pool's consecutive ports.
  expect(new Set(sdkPorts).size).toBe(2);
  const sdk = (await Promise.all(sdkPorts.map((p) => seriesAt(`http://127.0.0.1:${p}/metrics`)))).flat();
  const sdkSum = (name: string) => sdk.filter((x) => x.name === name).reduce((n, x) => n + x.value, 0);
  expect(sdkSum('temporal_workflow_task_execution_latency_count')).toBeGreaterThan(0);
  // Pages are crawled by host sessions: a host's first is a local activity (hostCrawl), later ones regular activities.
  expect(sdkSum('temporal_local_activity_execution_latency_count')).toBeGreaterThanOrEqual(1);
  expect(sdkSum('temporal_activity_execution_latency_count') + sdkSum('temporal_local_activity_execution_latency_count')).toBeGreaterThanOrEqual(h.web.hosts().length);
  expect(sdkSum('temporal_sticky_cache_hit_total')).toBeGreaterThan(0);
}, 240_000);
