// CrawlMetrics behind the metrics server on a loopback ephemeral port,
// scraped over real HTTP and read back from the text exposition.
import { CrawlMetrics } from '../../src/metrics/crawl-metrics';
import { startMetricsServer, type MetricsServer } from '../../src/metrics/metrics-server';
import { temporalRuntimeTelemetry } from '../../src/metrics/temporal-telemetry';

jest.setTimeout(10_000);

const servers: MetricsServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(metrics: CrawlMetrics, healthy?: () => boolean): Promise<string> {
  const s = await startMetricsServer({ port: 0, metrics, healthy });
  servers.push(s);
  expect(s.port).toBeGreaterThan(0);
  return `http://127.0.0.1:${s.port}`;
}

/** Samples keyed `name{a="x",b="y"}` with labels sorted, so a test can name one exactly. */
function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable exposition line: ${line}`);
    const labels = [...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => `${k}="${v}"`).sort();
    samples.set(labels.length ? `${m[1]}{${labels.join(',')}}` : m[1], Number(m[3]));
  }
  return samples;
}

async function scrape(base: string): Promise<Map<string, number>> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

test('fetches, errors, waits and robots results are counted exactly', async () => {
  const m = new CrawlMetrics();
  const base = await serve(m);
  m.recordFetch({ outcome: 'fetched', status: 200, bytes: 1000, durationMs: 20 });
  m.recordFetch({ outcome: 'fetched', status: 200, bytes: 500, durationMs: 300 });
  m.recordFetch({ outcome: 'fetched', status: 404, bytes: 10, durationMs: 5 });
  m.recordFetch({ outcome: 'redirect', status: 301, bytes: 0, durationMs: 40 });
  m.recordFetch({ outcome: 'error', status: null, durationMs: null });
  m.recordFetch({ outcome: 'robots-disallowed' });
  m.recordError('CONNECT_TIMEOUT');
  m.recordError('CONNECT_TIMEOUT');
  m.recordError('DNS_FAILURE');
  m.recordPolitenessWait(1500);
  m.recordPolitenessWait(250);
  m.recordPolitenessWait(0); // no wait: not an observation
  m.recordRobots('ok');
  m.recordRobots('ok');
  m.recordRobots('unavailable');

  const s = await scrape(base);
  expect(s.get('crawler_pages_total{outcome="fetched"}')).toBe(3);
  expect(s.get('crawler_pages_total{outcome="redirect"}')).toBe(1);
  expect(s.get('crawler_pages_total{outcome="error"}')).toBe(1);
  expect(s.get('crawler_pages_total{outcome="robots-disallowed"}')).toBe(1);

  expect(s.get('crawler_responses_total{status="200",status_class="2xx"}')).toBe(2);
  expect(s.get('crawler_responses_total{status="301",status_class="3xx"}')).toBe(1);
  expect(s.get('crawler_responses_total{status="404",status_class="4xx"}')).toBe(1);
  expect([...s.keys()].filter((k) => k.startsWith('crawler_responses_total'))).toHaveLength(3);
  expect(s.get('crawler_bytes_total')).toBe(1510);

  // 5 ms, 20 ms, 40 ms, 300 ms.
  expect(s.get('crawler_fetch_duration_seconds_count')).toBe(4);
  expect(s.get('crawler_fetch_duration_seconds_sum')).toBeCloseTo(0.365, 9);
  expect(s.get('crawler_fetch_duration_seconds_bucket{le="0.01"}')).toBe(1);
  expect(s.get('crawler_fetch_duration_seconds_bucket{le="0.025"}')).toBe(2);
  expect(s.get('crawler_fetch_duration_seconds_bucket{le="0.05"}')).toBe(3);
  expect(s.get('crawler_fetch_duration_seconds_bucket{le="0.25"}')).toBe(3);
  expect(s.get('crawler_fetch_duration_seconds_bucket{le="0.5"}')).toBe(4);
  expect(s.get('crawler_fetch_duration_seconds_bucket{le="60"}')).toBe(4);
  expect(s.get('crawler_fetch_duration_seconds_bucket{le="+Inf"}')).toBe(4);

  expect(s.get('crawler_fetch_errors_total{code="CONNECT_TIMEOUT"}')).toBe(2);
  expect(s.get('crawler_fetch_errors_total{code="DNS_FAILURE"}')).toBe(1);

  expect(s.get('crawler_politeness_wait_seconds_total')).toBeCloseTo(1.75, 9);
  expect(s.get('crawler_politeness_wait_seconds_count')).toBe(2);
  expect(s.get('crawler_politeness_wait_seconds_bucket{le="0.25"}')).toBe(1);
  expect(s.get('crawler_politeness_wait_seconds_bucket{le="1"}')).toBe(1);
  expect(s.get('crawler_politeness_wait_seconds_bucket{le="2"}')).toBe(2);

  expect(s.get('crawler_robots_fetches_total{result="ok"}')).toBe(2);
  expect(s.get('crawler_robots_fetches_total{result="unavailable"}')).toBe(1);

  // Default process metrics live in the same registry.
  expect(s.has('process_cpu_user_seconds_total')).toBe(true);
  expect(s.has('nodejs_heap_size_used_bytes')).toBe(true);
});

test('the frontier gauge keeps only the most recently updated hosts', async () => {
  const m = new CrawlMetrics({ maxFrontierHosts: 3, defaultMetrics: false });
  const base = await serve(m);
  m.setFrontierSize('a.test', 10);
  m.setFrontierSize('b.test', 20);
  m.setFrontierSize('c.test', 30);
  m.setFrontierSize('a.test', 11); // a is now the most recent; b the oldest
  m.setFrontierSize('d.test', 40);

  const s = await scrape(base);
  const hosts = [...s].filter(([k]) => k.startsWith('crawler_frontier_size'));
  expect(new Map(hosts)).toEqual(
    new Map([
      ['crawler_frontier_size{host="a.test"}', 11],
      ['crawler_frontier_size{host="c.test"}', 30],
      ['crawler_frontier_size{host="d.test"}', 40],
    ]),
  );

  m.setFrontierSize('e.test', 0);
  m.setFrontierSize('f.test', 1);
  const later = [...(await scrape(base)).keys()].filter((k) => k.startsWith('crawler_frontier_size')).sort();
  expect(later).toEqual(['crawler_frontier_size{host="d.test"}', 'crawler_frontier_size{host="e.test"}', 'crawler_frontier_size{host="f.test"}']);
});

test("the browser's memory: its last reading and the most any reading found; its restarts by reason", async () => {
  const m = new CrawlMetrics({ defaultMetrics: false });
  const base = await serve(m);
  m.recordBrowserMemory(300e6);
  m.recordBrowserMemory(900e6);
  m.recordBrowserMemory(200e6);
  m.recordBrowserRestart('memory');
  m.recordBrowserRestart('memory');
  m.recordBrowserRestart('crashed');
  const s = await scrape(base);
  expect([s.get('crawler_browser_memory_bytes'), s.get('crawler_browser_memory_peak_bytes')]).toEqual([200e6, 900e6]);
  expect([...s].filter(([k]) => k.startsWith('crawler_browser_restarts_total')).sort()).toEqual([
    ['crawler_browser_restarts_total{reason="crashed"}', 1],
    ['crawler_browser_restarts_total{reason="memory"}', 2],
  ]);
});

test('free-form labels are capped and invalid statuses grouped', async () => {
  const m = new CrawlMetrics({ defaultMetrics: false });
  const base = await serve(m);
  for (let i = 0; i < 60; i++) m.recordError(`CODE_${i}`);
  m.recordError('CODE_0'); // known values keep counting under their own name
  m.recordFetch({ outcome: 'fetched', status: 999 });
  const s = await scrape(base);
  const codes = [...s.keys()].filter((k) => k.startsWith('crawler_fetch_errors_total'));
  expect(codes).toHaveLength(51);
  expect(s.get('crawler_fetch_errors_total{code="CODE_0"}')).toBe(2);
  expect(s.get('crawler_fetch_errors_total{code="other"}')).toBe(10);
  expect(s.get('crawler_responses_total{status="other",status_class="other"}')).toBe(1);
});

test('healthz, 404 for other paths, 405 for other methods, close frees the port', async () => {
  const m = new CrawlMetrics({ defaultMetrics: false });
  let healthy = true;
  const base = await serve(m, () => healthy);
  let res = await fetch(`${base}/healthz`);
  expect([res.status, await res.text()]).toEqual([200, 'ok\n']);
  healthy = false;
  expect((await fetch(`${base}/healthz`)).status).toBe(503);

  for (const path of ['/', '/metric', '/metrics/x', '/favicon.ico']) {
    res = await fetch(`${base}${path}`);
    expect([path, res.status]).toEqual([path, 404]);
  }
  res = await fetch(`${base}/metrics`, { method: 'POST', body: 'x' });
  expect(res.status).toBe(405);
  expect(res.headers.get('allow')).toBe('GET, HEAD');
  expect((await fetch(`${base}/metrics?x=1`)).status).toBe(200);

  await servers.pop()!.close();
  await expect(fetch(`${base}/metrics`)).rejects.toThrow();
});

test('a port in use is an error', async () => {
  const m = new CrawlMetrics({ defaultMetrics: false });
  const first = await startMetricsServer({ port: 0, metrics: m });
  servers.push(first);
  await expect(startMetricsServer({ port: first.port, metrics: m })).rejects.toMatchObject({ code: 'EADDRINUSE' });
});

describe('temporalRuntimeTelemetry', () => {
  test('without an address: Core logs forwarded, no SDK metrics', () => {
    expect(temporalRuntimeTelemetry(null)).toEqual({ logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } });
  });

  test('with an address: the SDK Prometheus exporter, seconds and _total', () => {
    expect(temporalRuntimeTelemetry('127.0.0.1:9465', { coreLogLevel: 'INFO' })).toEqual({
      logging: { filter: { core: 'INFO', other: 'ERROR' }, forward: {} },
      metrics: { prometheus: { bindAddress: '127.0.0.1:9465', countersTotalSuffix: true, useSecondsForDurations: true } },
    });
    expect(temporalRuntimeTelemetry('[::1]:9465').metrics).toBeDefined();
    expect(temporalRuntimeTelemetry('0.0.0.0:9465').metrics).toBeDefined();
  });

  test.each(['localhost:9465', '127.0.0.1', '127.0.0.1:0', '127.0.0.1:70000', '::1:9465', '[127.0.0.1]:9465', ''])('rejects %j (Core wants an IP literal and a port)', (addr) => {
    expect(() => temporalRuntimeTelemetry(addr)).toThrow(/ip:port/);
  });
});
