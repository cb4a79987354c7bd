// Scrapy beside us in `npm run bench -- --scrapy`: a CrawlSpider
// (bench/scrapy-child.py) run as a child process over a test web, so its CPU
// and RSS are its own, judged by the same request-log figures as ours and
// Crawlee's (bench/figures.ts). Scrapy is installed by the bench itself, pinned,
// into a venv of its own under .crawler/tools, as the tests install pywb.
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import { PROJECT_ROOT, TOOLS_DIR } from '../src/stack/paths';
import { StackError } from '../src/stack/stack-error';
import { ensurePythonVenv, executable, withInstallLock } from '../src/stack/tools';
import type { TestWeb } from '../test/web/test-web';
import type { CrawleeTarget } from './crawlee';
import { logFigures, peakRssMb, politeness, politenessCeiling, politenessFigures, treeRssMb, type PeerCrawlFigures } from './figures';

/** The Scrapy compared against; bump deliberately (the figures of docs/benchmarks.md name it). */
export const SCRAPY_VERSION = '2.19.0';
const SCRAPY_VENV = path.join(TOOLS_DIR, 'scrapy');
const CHILD = path.join(PROJECT_ROOT, 'bench', 'scrapy-child.py');

function installedScrapy(python: string): string | null {
  if (!executable(python)) return null;
  const res = spawnSync(python, ['-c', 'import importlib.metadata as m; print(m.version("scrapy"))'], { encoding: 'utf8' });
  return res.status === 0 ? res.stdout.trim() : null;
}

/** The venv's python, with Scrapy at SCRAPY_VERSION: installed with pip on first use (about 30 s). */
export async function ensureScrapy(log: (msg: string) => void): Promise<string> {
  const python = path.join(SCRAPY_VENV, 'bin', 'python');
  if (installedScrapy(python) === SCRAPY_VERSION) return python;
  return withInstallLock(async () => {
    if (installedScrapy(python) === SCRAPY_VERSION) return python;
    log(`bench: installing scrapy==${SCRAPY_VERSION} into ${SCRAPY_VENV}…`);
    ensurePythonVenv(SCRAPY_VENV, { log, purpose: 'the bench’s Scrapy comparison (--scrapy)' });
    const pip = spawnSync(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `scrapy==${SCRAPY_VERSION}`], { encoding: 'utf8' });
    const found = installedScrapy(python);
    if (pip.status !== 0 || found !== SCRAPY_VERSION) {
      throw new StackError('INSTALL_FAILED', `pip install scrapy==${SCRAPY_VERSION} into ${SCRAPY_VENV} failed (found ${found ?? 'none'}):\n${pip.stderr}`);
    }
    return python;
  });
}

export interface ScrapyRunOptions {
  /** CONCURRENT_REQUESTS, and the same per domain: no per-host cap below the total, as Crawlee has none. */
  concurrency: number;
  /** ROBOTSTXT_OBEY; default true, like our crawler. */
  respectRobots?: boolean;
  /** Scrapy's own output (warnings), line by line. */
  onLog?: (line: string) => void;
}

/** The figures Scrapy is judged by: the same names as Crawlee's (bench/crawlee.ts). */
export interface ScrapyFigures extends PeerCrawlFigures {
  crawler: 'scrapy';
  version: string;
  concurrency: number;
  /** Peak RSS of the Scrapy process: its VmHWM, or the 0.5 s samples of its tree if larger. */
  peakRssMb: number;
  readyRssMb: number;
  /** Its CPU (user + system, children included) from "go" to the end, ÷ pages. */
  cpuMsPerPage: number;
  testWebCpuMsPerPage: number;
  allCpuMsPerPage: number;
  /** Scrapy's own counters: pages its callback saw, responses, download errors, why it stopped. */
  spiderPages: number;
  responses: number;
  requestErrors: number;
  finishReason: string | null;
  /** Every request in the test web's log ÷ pages, as Crawlee's (set by bench/run.ts). */
  requestsPerPage?: number;
  /** The machine's 1-minute load average when the crawl ended (set by bench/run.ts). */
  loadAverage1m?: number;
}

interface Done {
  type: 'done';
  pages: number;
  responses: number;
  requestErrors: number;
  finishReason: string | null;
  cpuMs: number;
  peakRssMb: number;
  readyRssMb: number;
}

export async function runScrapy(python: string, web: TestWeb, target: CrawleeTarget, opts: ScrapyRunOptions): Promise<ScrapyFigures> {
  const respectRobots = opts.respectRobots ?? true;
  const child = spawn(python, [CHILD], { cwd: PROJECT_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  const tail: string[] = [];
  const keep = (l: string): void => {
    tail.push(l);
    if (tail.length > 50) tail.shift();
  };
  readline.createInterface({ input: child.stderr! }).on('line', (l) => {
    keep(l);
    opts.onLog?.(l);
  });
  const messages = readline.createInterface({ input: child.stdout! });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Every line of stdout is a message; one that is not (a print from Scrapy) is only kept for an error.
  const next = (want: string): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const onLine = (l: string): void => {
        let m: Record<string, unknown> | null = null;
        try {
          m = JSON.parse(l) as Record<string, unknown>;
        } catch {
          keep(l);
        }
        if (m?.type === want) {
          messages.off('line', onLine);
          resolve(m);
        }
      };
      messages.on('line', onLine);
      void exited.then((code) => reject(new Error(`scrapy child exited (${code}) before '${want}'; last output:\n${tail.join('\n')}`)));
    });
  let rssTimer: NodeJS.Timeout | undefined;
  try {
    const ready = next('ready');
    child.stdin!.write(
      `${JSON.stringify({ address: web.address, hosts: web.hosts(), seeds: target.seeds, delaySecs: target.delayMs / 1000, concurrency: opts.concurrency, respectRobots, maxPages: target.maxPages })}\n`,
    );
    const version = String((await ready).scrapy);
    let sampledPeak = 0;
    rssTimer = setInterval(() => (sampledPeak = Math.max(sampledPeak, treeRssMb(child.pid!))), 500);
    const finished = next('done');
    // This process serves the test web.
    const benchCpu0 = process.cpuUsage();
    const t0 = performance.timeOrigin + performance.now();
    child.stdin!.write(`${JSON.stringify({ type: 'go' })}\n`);
    const done = (await finished) as unknown as Done;
    const benchCpuUs = process.cpuUsage(benchCpu0);
    const benchCpuMs = (benchCpuUs.user + benchCpuUs.system) / 1000;
    clearInterval(rssTimer);
    const peak = Math.max(sampledPeak, done.peakRssMb, peakRssMb(child.pid!));
    await exited;
    const fromLog = logFigures(web.requests(), web.port, target.expected, t0, target.delayMs);
    const perPage = (ms: number): number => Number((ms / Math.max(1, fromLog.pagesFetched)).toFixed(2));
    return {
      crawler: 'scrapy',
      version,
      concurrency: opts.concurrency,
      respectRobots,
      pages: fromLog.pagesFetched,
      expectedPages: target.hosts * target.pages,
      crawlSeconds: fromLog.crawlSeconds,
      pagesPerSec: Number((fromLog.pagesFetched / Math.max(fromLog.crawlSeconds, 0.001)).toFixed(1)),
      ...politenessFigures(fromLog, politeness(target, web.meanLatencyMs(), fromLog.crawlSeconds)),
      politenessCeiling: politenessCeiling(web.requests(), target, web.meanLatencyMs(), (host, p, nth) => web.latencyFor(host, p, nth)),
      peakRssMb: Math.round(peak),
      readyRssMb: done.readyRssMb,
      cpuMsPerPage: perPage(done.cpuMs),
      testWebCpuMsPerPage: perPage(benchCpuMs),
      allCpuMsPerPage: perPage(done.cpuMs + benchCpuMs),
      spiderPages: done.pages,
      responses: done.responses,
      requestErrors: done.requestErrors,
      finishReason: done.finishReason,
    };
  } finally {
    if (rssTimer) clearInterval(rssTimer);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  }
}
