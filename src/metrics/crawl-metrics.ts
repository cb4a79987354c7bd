// The crawler's own Prometheus metrics, one registry per worker process.
// Labels stay low-cardinality: no URL or host label anywhere except the
// frontier gauge, which keeps only a bounded set of recently updated hosts.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What a robots.txt fetch came to (RFC 9309 §2.3.1). */
export type RobotsFetchResult =
  | 'ok' // 2xx, parsed
  | 'not-found' // 4xx: crawl everything
  | 'unavailable' // 5xx / 429: crawl nothing for now
  | 'error'; // network failure, treated as unavailable

export interface FetchObservation {
  /** The step's outcome, as written to the index ('fetched', 'redirect', 'error', 'robots-disallowed', …). */
  outcome: string;
  /** HTTP status, or null when no response was received. */
  status?: number | null;
  /** Body bytes received (after decompression, as stored). */
  bytes?: number;
  /** Time from request start to the end of the body; null when no request was made. */
  durationMs?: number | null;
}

export interface CrawlMetricsOptions {
  /** Hosts kept in crawler_frontier_size; older ones are dropped. Default 100. */
  maxFrontierHosts?: number;
  /** Process metrics (CPU, memory, event loop lag, GC). Default true. */
  defaultMetrics?: boolean;
  /** Labels put on every series, e.g. { worker: 'w1' }. Prefer Prometheus target labels. */
  defaultLabels?: Record<string, string>;
}

/** Seconds. From a loopback hit to the total-timeout ceiling. */
export const FETCH_DURATION_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds. From a short crawl-delay to a capped Retry-After (1 h). */
export const POLITENESS_WAIT_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600];

/**
 * Distinct values a free-form label (outcome, error code) may take before
 * further new values are reported as 'other'. The callers pass closed sets
 * today; this stops a future bug (say, a message used as a code) from
 * creating a series per value.
 */
const MAX_LABEL_VALUES = 50;

export class CrawlMetrics {
  readonly registry = new Registry();
  readonly maxFrontierHosts: number;

  private readonly pages: Counter<'outcome'>;
  private readonly responses: Counter<'status_class' | 'status'>;
  private readonly bytes: Counter;
  private readonly fetchDuration: Histogram;
  private readonly fetchErrors: Counter<'code'>;
  private readonly waitTotal: Counter;
  private readonly wait: Histogram;
  private readonly frontier: Gauge<'host'>;
  private readonly robots: Counter<'result'>;
  private readonly handlerRuns: Counter<'result'>;
  private readonly loopBlocked: Counter;
  private readonly browserRestarts: Counter<'reason'>;
  private readonly browserMemory: Gauge;
  private readonly browserMemoryPeak: Gauge;
  /** Hosts in the frontier gauge, least recently updated first (Map keeps insertion order). */
  private readonly frontierHosts = new Map<string, true>();
  private readonly seenValues = new Map<string, Set<string>>();
  private peakBrowserBytes = 0;

  constructor(opts: CrawlMetricsOptions = {}) {
    this.maxFrontierHosts = opts.maxFrontierHosts ?? 100;
    if (!Number.isInteger(this.maxFrontierHosts) || this.maxFrontierHosts < 0) throw new Error('maxFrontierHosts must be a whole number ≥ 0');
    if (opts.defaultLabels) this.registry.setDefaultLabels(opts.defaultLabels);
    const registers = [this.registry];
    this.pages = new Counter({ name: 'crawler_pages_total', help: 'URLs taken from the frontier and settled, by outcome', labelNames: ['outcome'], registers });
    this.responses = new Counter({
      name: 'crawler_responses_total',
      help: 'HTTP responses received, by status class (2xx…5xx) and status',
      labelNames: ['status_class', 'status'],
      registers,
    });
    this.bytes = new Counter({ name: 'crawler_bytes_total', help: 'Response body bytes received', registers });
    this.fetchDuration = new Histogram({
      name: 'crawler_fetch_duration_seconds',
      help: 'Time from request start to end of body',
      buckets: FETCH_DURATION_BUCKETS,
      registers,
    });
    this.fetchErrors = new Counter({ name: 'crawler_fetch_errors_total', help: 'Fetches that failed without a response, by error code', labelNames: ['code'], registers });
    this.waitTotal = new Counter({
      name: 'crawler_politeness_wait_seconds_total',
      help: "Time hosts waited for politeness: the domain workflows' sleeps between steps, host-clock waits and back-offs",
      registers,
    });
    this.wait = new Histogram({ name: 'crawler_politeness_wait_seconds', help: 'Politeness waits, one observation per wait', buckets: POLITENESS_WAIT_BUCKETS, registers });
    this.frontier = new Gauge({
      name: 'crawler_frontier_size',
      help: `URLs pending in a host's frontier, for the ${this.maxFrontierHosts} hosts this process updated most recently`,
      labelNames: ['host'],
      registers,
    });
    this.robots = new Counter({ name: 'crawler_robots_fetches_total', help: 'robots.txt fetches, by result', labelNames: ['result'], registers });
    this.handlerRuns = new Counter({
      name: 'crawler_handler_runs_total',
      help: "Pages run through the campaign's handler, by result (ok, failed)",
      labelNames: ['result'],
      registers,
    });
    this.loopBlocked = new Counter({
      name: 'crawler_event_loop_blocked_seconds_total',
      help: 'Time the worker thread was blocked for a second or more at a stretch (a synchronous handler hook, most likely)',
      registers,
    });
    // render: browser (src/browser/browser-pool.ts): the worker's Chromium besides the worker itself (process_resident_memory_bytes).
    this.browserRestarts = new Counter({
      name: 'crawler_browser_restarts_total',
      help: "The worker's Chromium replaced, by reason: memory (over browser.maxMemoryMb), pages (browser.pagesPerBrowser), crashed (it died)",
      labelNames: ['reason'],
      registers,
    });
    this.browserMemory = new Gauge({
      name: 'crawler_browser_memory_bytes',
      help: "Memory of the worker's Chromium process tree (browser, renderers, helpers; PSS summed) at its last reading",
      registers,
    });
    this.browserMemoryPeak = new Gauge({ name: 'crawler_browser_memory_peak_bytes', help: "The most crawler_browser_memory_bytes has read in this worker's life", registers });
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** One settled URL: always counts a page; counts a response, bytes and duration when there were any. */
  recordFetch(o: FetchObservation): void {
    this.pages.inc({ outcome: this.bounded('outcome', o.outcome) });
    if (o.status !== null && o.status !== undefined) {
      const valid = Number.isInteger(o.status) && o.status >= 100 && o.status <= 599;
      this.responses.inc(valid ? { status_class: `${Math.floor(o.status / 100)}xx`, status: String(o.status) } : { status_class: 'other', status: 'other' });
    }
    if (o.bytes !== undefined && o.bytes > 0) this.bytes.inc(o.bytes);
    if (o.durationMs !== null && o.durationMs !== undefined && o.durationMs >= 0) this.fetchDuration.observe(o.durationMs / 1000);
  }

  /** A page run through a handler: ok, or failed for good (HANDLER_ERROR). */
  recordHandlerRun(result: 'ok' | 'failed'): void {
    this.handlerRuns.inc({ result });
  }

  recordEventLoopBlocked(ms: number): void {
    this.loopBlocked.inc(ms / 1000);
  }

  /** A fetch that got no response; `code` is a FetchErrorCode such as 'CONNECT_TIMEOUT'. */
  recordError(code: string): void {
    this.fetchErrors.inc({ code: this.bounded('code', code) });
  }

  /** A politeness wait handed back to the workflow (host clock, crawl-delay, Retry-After). */
  recordPolitenessWait(ms: number): void {
    if (!(ms > 0)) return;
    this.waitTotal.inc(ms / 1000);
    this.wait.observe(ms / 1000);
  }

  /**
   * Frontier size of one host. Only the `maxFrontierHosts` most recently
   * updated hosts are kept: every host label is a time series held in this
   * process and in Prometheus, and a broad crawl touches millions of hosts.
   * The recently updated ones are those this worker is crawling now, which
   * is what a dashboard wants; totals belong to the campaign status.
   */
  setFrontierSize(host: string, n: number): void {
    if (this.maxFrontierHosts === 0) return;
    this.frontierHosts.delete(host);
    this.frontierHosts.set(host, true);
    this.frontier.set({ host }, n);
    while (this.frontierHosts.size > this.maxFrontierHosts) {
      const oldest = this.frontierHosts.keys().next().value as string;
      this.frontierHosts.delete(oldest);
      this.frontier.remove({ host: oldest });
    }
  }

  /** The worker's Chromium replaced (src/browser/browser-pool.ts). */
  recordBrowserRestart(reason: 'memory' | 'pages' | 'crashed'): void {
    this.browserRestarts.inc({ reason });
  }

  /** A reading of the worker's Chromium's memory (PSS of its process tree, bytes). */
  recordBrowserMemory(bytes: number): void {
    this.browserMemory.set(bytes);
    this.peakBrowserBytes = Math.max(this.peakBrowserBytes, bytes);
    this.browserMemoryPeak.set(this.peakBrowserBytes);
  }

  recordRobots(result: RobotsFetchResult): void {
    this.robots.inc({ result: this.bounded('result', result) });
  }

  /** Text exposition of every metric of this registry. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private bounded(label: string, value: string): string {
    let seen = this.seenValues.get(label);
    if (!seen) this.seenValues.set(label, (seen = new Set()));
    if (seen.has(value)) return value;
    if (seen.size >= MAX_LABEL_VALUES) return 'other';
    seen.add(value);
    return value;
  }
}
