// Crawlee beside us in `npm run bench -- --crawlee`: runs a CheerioCrawler,
// or a PlaywrightCrawler for the rendering scenario (bench/crawlee-child.ts),
// as a child process over a test web, so its RSS and CPU (its Chromium's
// included) are measured as a process tree of its own, and judges its crawl
// by the same request-log figures as ours (bench/figures.ts).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { LOCAL_DIR, PROJECT_ROOT } from '../src/stack/paths';
import type { TestWeb } from '../test/web/test-web';
import type { ChildMessage, CrawleeBrowser, CrawleeChildConfig, CrawleeChildDone, ParentMessage } from './crawlee-child';
import {
  cpuSeconds,
  logFigures,
  pacedRequests,
  peakRssMb,
  politeness,
  politenessCeiling,
  politenessFigures,
  treeCpuSeconds,
  treePssMb,
  treeRssMb,
  CpuGroup,
  type PeerCrawlFigures,
  type PolitenessTarget,
} from './figures';

export type CrawleeStorage = 'memory' | 'disk';

export interface CrawleeTarget extends PolitenessTarget {
  seeds: string[];
  /** The pages a correct crawler fetches (web.expectedPages of the seeds); null under a page budget. */
  expected: Set<string> | null;
  maxPages?: number;
  /** Which requests are pages (default: all but robots.txt and /sitemap.xml); a rendered site's scripts, JSON and images are not. */
  isPage?: (path: string) => boolean;
  /** Render with PlaywrightCrawler in this Chromium instead of fetching with CheerioCrawler. */
  browser?: CrawleeBrowser;
}

export interface CrawleeRunOptions {
  storage: CrawleeStorage;
  /** Crawlee's starting and largest concurrency. */
  concurrency: number;
  /** The lowest its autoscaling may choose; default 1, Crawlee's own. */
  minConcurrency?: number;
  /** Default true, like our crawler. */
  respectRobots?: boolean;
  /** Crawlee's own output (warnings), line by line. */
  onLog?: (line: string) => void;
}

export interface CrawleeFigures extends PeerCrawlFigures {
  crawler: 'crawlee';
  /** Which of Crawlee's crawlers ran. */
  crawlerClass: 'CheerioCrawler' | 'PlaywrightCrawler';
  storage: CrawleeStorage;
  concurrency: number;
  minConcurrency: number;
  /** Every request the test web received (robots.txt included) ÷ pages. */
  requestsPerPage: number;
  /** Peak RSS of the Crawlee process and its descendants (its Chromium): the node process's VmHWM, or the 0.5 s samples of the tree if larger. */
  peakRssMb: number;
  /** PlaywrightCrawler: peak PSS of the same tree (0.5 s samples; shared pages counted once), what it really takes. */
  peakPssMb?: number;
  /** Its RSS once loaded, before crawling. */
  readyRssMb: number;
  cpuMsPerPage: number;
  /** PlaywrightCrawler: the part of cpuMsPerPage spent by its Chromium (all of it less the node process, sampled every 0.5 s). */
  browserCpuMsPerPage?: number;
  /** How cpuMsPerPage was counted: by the kernel for a cgroup of its own (every process it started, gone or orphaned included), or summed over its living process tree (CpuGroup, bench/figures.ts). */
  cpuCountedBy: 'cgroup' | 'process tree';
  /** The bench process, which serves the test web, during the crawl. */
  testWebCpuMsPerPage: number;
  /** Crawlee's process and the test web together: on a saturated machine, pages/s ≈ cores ÷ this. */
  allCpuMsPerPage: number;
  /** Crawlee's own counters. */
  requestsFinished: number;
  requestsFailed: number;
  meanConcurrency: number;
  lowestDesiredConcurrency: number;
  /** Bytes Crawlee left in its storage directory (0 in memory mode, or memory mode is not what it says). */
  storageBytes: number;
  /** The machine's 1-minute load average when the crawl ended (set by bench/run.ts): how shared the cores were. */
  loadAverage1m?: number;
}

const CHILD = path.join(PROJECT_ROOT, 'bench', 'crawlee-child.ts');

/** node with tsx's loader, as our workers are run (src/cli/crawler-command.ts), so both carry the same loader cost. */
function childCommand(): { command: string; args: string[] } {
  const tsxDir = path.join(PROJECT_ROOT, 'node_modules', 'tsx', 'dist');
  return { command: process.execPath, args: ['--require', path.join(tsxDir, 'preflight.cjs'), '--import', pathToFileURL(path.join(tsxDir, 'loader.mjs')).href, CHILD] };
}

function dirBytes(dir: string): number {
  let n = 0;
  if (!fs.existsSync(dir)) return 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += fs.statSync(path.join(e.parentPath, e.name)).size;
  }
  return n;
}

export async function runCrawlee(web: TestWeb, target: CrawleeTarget, opts: CrawleeRunOptions): Promise<CrawleeFigures> {
  const storageDir = path.join(LOCAL_DIR, 'bench-crawlee', `${Date.now()}-${opts.storage}`);
  const config: CrawleeChildConfig = {
    address: web.address,
    hosts: web.hosts(),
    seeds: target.seeds,
    sameDomainDelaySecs: target.delayMs / 1000,
    storage: opts.storage,
    storageDir,
    concurrency: opts.concurrency,
    minConcurrency: opts.minConcurrency ?? 1,
    respectRobots: opts.respectRobots ?? true,
    maxPages: target.maxPages,
    browser: target.browser,
  };
  const cmd = childCommand();
  // CRAWLEE_STORAGE_DIR in memory mode too: anything Crawlee wrote anyway would show in storageBytes.
  const child = spawn(cmd.command, cmd.args, {
    cwd: PROJECT_ROOT,
    env: { ...process.env, CRAWLEE_STORAGE_DIR: storageDir },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  // In a cgroup of its own from its start, so its browsers' processes are counted whatever becomes of them.
  let group = CpuGroup.open('crawlee');
  if (group && !group.add(child.pid!)) {
    group.close();
    group = null;
  }
  const lines: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    let buf = '';
    stream.setEncoding('utf8');
    stream.on('data', (d: string) => {
      buf += d;
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      for (const l of parts) {
        lines.push(l);
        if (lines.length > 50) lines.shift();
        opts.onLog?.(l);
      }
    });
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let sampledPeak = 0;
  let peakPss = 0;
  // CPU of the whole tree: a browser's processes are not in the child's own
  // counters until they exit and are waited for. Sampled, the largest seen.
  let treeCpu = 0;
  let ownCpu = 0;
  let rssTimer: NodeJS.Timeout | undefined;
  try {
    const message = (want: ChildMessage['type']): Promise<ChildMessage> =>
      new Promise((resolve, reject) => {
        const onMessage = (m: ChildMessage): void => {
          if (m.type === want) done(() => resolve(m));
          else if (m.type === 'error') done(() => reject(new Error(`crawlee child failed: ${m.message}`)));
        };
        const onExit = (code: number | null): void => done(() => reject(new Error(`crawlee child exited (${code}) before '${want}'; last output:\n${lines.join('\n')}`)));
        const done = (fn: () => void): void => {
          child.off('message', onMessage);
          child.off('exit', onExit);
          fn();
        };
        child.on('message', onMessage);
        child.on('exit', onExit);
      });
    const ready = message('ready');
    child.send({ type: 'config', config } satisfies ParentMessage);
    await ready;
    const treeCpu0 = treeCpuSeconds(child.pid!);
    const ownCpu0 = cpuSeconds(child.pid!);
    const groupCpu0 = group?.seconds() ?? 0;
    rssTimer = setInterval(() => {
      sampledPeak = Math.max(sampledPeak, treeRssMb(child.pid!));
      if (config.browser) peakPss = Math.max(peakPss, treePssMb(child.pid!));
      treeCpu = Math.max(treeCpu, treeCpuSeconds(child.pid!) - treeCpu0);
      ownCpu = Math.max(ownCpu, cpuSeconds(child.pid!) - ownCpu0);
    }, 500);
    const finished = message('done');
    // This process serves the test web.
    const benchCpu0 = process.cpuUsage();
    const t0 = performance.timeOrigin + performance.now();
    child.send({ type: 'go' } satisfies ParentMessage);
    const done = (await finished) as CrawleeChildDone;
    const benchCpuUs = process.cpuUsage(benchCpu0);
    const benchCpuMs = (benchCpuUs.user + benchCpuUs.system) / 1000;
    clearInterval(rssTimer);
    const peak = Math.max(sampledPeak, done.peakRssMb, peakRssMb(child.pid!));
    await exited;
    // Once it is gone, its browsers closed: what they spent while closing counts too.
    const groupCpuMs = group ? (group.seconds() - groupCpu0) * 1000 : null;
    const fromLog = logFigures(web.requests(), web.port, target.expected, t0, target.delayMs, target.isPage);
    const polite = politeness(target, web.meanLatencyMs(), fromLog.crawlSeconds);
    const perPage = (ms: number): number => Number((ms / Math.max(1, fromLog.pagesFetched)).toFixed(2));
    // The kernel's count for its cgroup; without one, its own counters (children it waited for included) once its browser is
    // closed, or the tree's samples, whichever saw more.
    const crawleeCpuMs = groupCpuMs ?? Math.max(done.cpuMs, treeCpu * 1000);
    return {
      crawler: 'crawlee',
      crawlerClass: config.browser ? 'PlaywrightCrawler' : 'CheerioCrawler',
      storage: opts.storage,
      concurrency: opts.concurrency,
      minConcurrency: config.minConcurrency,
      respectRobots: config.respectRobots,
      pages: fromLog.pagesFetched,
      expectedPages: target.hosts * target.pages,
      crawlSeconds: fromLog.crawlSeconds,
      pagesPerSec: Number((fromLog.pagesFetched / Math.max(fromLog.crawlSeconds, 0.001)).toFixed(1)),
      ...politenessFigures(fromLog, polite),
      politenessCeiling: politenessCeiling(pacedRequests(web.requests(), target.isPage), target, web.meanLatencyMs(), (host, path, nth) => web.latencyFor(host, path, nth)),
      requestsPerPage: Number((web.requests().length / Math.max(1, fromLog.pagesFetched)).toFixed(2)),
      peakRssMb: Math.round(peak),
      ...(config.browser ? { peakPssMb: Math.round(peakPss) } : {}),
      readyRssMb: done.readyRssMb,
      cpuMsPerPage: perPage(crawleeCpuMs),
      ...(config.browser ? { browserCpuMsPerPage: perPage(crawleeCpuMs - ownCpu * 1000) } : {}),
      testWebCpuMsPerPage: perPage(benchCpuMs),
      allCpuMsPerPage: perPage(crawleeCpuMs + benchCpuMs),
      cpuCountedBy: groupCpuMs === null ? 'process tree' : 'cgroup',
      requestsFinished: done.requestsFinished,
      requestsFailed: done.requestsFailed,
      meanConcurrency: done.meanConcurrency,
      lowestDesiredConcurrency: done.lowestDesiredConcurrency,
      storageBytes: dirBytes(storageDir),
    };
  } finally {
    if (rssTimer) clearInterval(rssTimer);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(storageDir, { recursive: true, force: true });
    group?.close();
  }
}
