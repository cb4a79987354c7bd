// The Crawlee process of `npm run bench -- --crawlee` (started by
// bench/crawlee.ts, never by hand): a CheerioCrawler over the same generated
// test web as our crawler, or (scenario v) a PlaywrightCrawler driving the
// same Chromium as our browser mode, in a process of its own so that its RSS
// and CPU (its browser's included) are its alone. It talks to its parent over the IPC channel: it gets a
// config, says ready once Crawlee is loaded and the crawler built, crawls on
// "go", and reports its own counters, CPU and peak RSS when done.
import dns from 'node:dns';
import fs from 'node:fs';
import type { LookupFunction } from 'node:net';
import { CheerioCrawler, Configuration, log, LogLevel } from '@crawlee/cheerio';

export interface CrawleeChildConfig {
  /** Where every test host lives (the test web's bound address); nothing else is resolved. */
  address: string;
  hosts: string[];
  seeds: string[];
  /** Crawlee's per-domain politeness; 0 for none. */
  sameDomainDelaySecs: number;
  /** 'memory': nothing written to disk; 'disk': Crawlee's storage persisted under storageDir. */
  storage: 'memory' | 'disk';
  storageDir?: string;
  /** Concurrency Crawlee starts at and may not exceed; its autoscaling may still lower it. */
  concurrency: number;
  /** How low its autoscaling may go (Crawlee's default: 1). */
  minConcurrency: number;
  /** respectRobotsTxtFile: fetch each host's robots.txt and obey it (as our crawler does). */
  respectRobots: boolean;
  /** Page budget (maxRequestsPerCrawl), for scenarios cut short on purpose. */
  maxPages?: number;
  /** CheerioCrawler (HTTP; the default), or PlaywrightCrawler rendering every page in this Chromium. */
  browser?: CrawleeBrowser;
}

export interface CrawleeBrowser {
  /** The same executable as our workers' (src/stack/chromium.ts). */
  executablePath: string;
  /** A selector the client-rendered page shows once its script has rendered it: the handler waits for it. */
  renderedSelector: string;
}

export type ParentMessage = { type: 'config'; config: CrawleeChildConfig } | { type: 'go' };

export interface CrawleeChildDone {
  type: 'done';
  requestsFinished: number;
  requestsFailed: number;
  /** CPU of this process (and any it waited for) from "go" to the end of the crawl. */
  cpuMs: number;
  /** VmHWM: the largest RSS this process ever had. */
  peakRssMb: number;
  /** RSS when ready, before crawling: node, tsx's loader and Crawlee loaded. */
  readyRssMb: number;
  /** Tasks Crawlee's pool was running, sampled each second: mean, and the lowest concurrency its autoscaling wanted. */
  meanConcurrency: number;
  lowestDesiredConcurrency: number;
}

export type ChildMessage = { type: 'ready' } | CrawleeChildDone | { type: 'error'; message: string };

function send(msg: ChildMessage): Promise<void> {
  return new Promise((resolve) => process.send!(msg, () => resolve()));
}

function statusMb(field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+)`).exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : 0;
}

/** utime + stime + cutime + cstime of this process, in ms (from /proc, clock ticks of 10 ms). */
function cpuMs(): number {
  const f = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
}

/**
 * Resolves the test hosts to the test web and refuses every other name, so
 * no request can leave the machine: the stand-in for curl's --resolve,
 * without touching /etc/hosts.
 */
function loopbackLookup(hosts: string[], address: string): LookupFunction {
  const known = new Set(hosts.map((h) => h.toLowerCase()));
  const family = address.includes(':') ? 6 : 4;
  return (hostname, options, callback) => {
    if (!known.has(hostname.toLowerCase())) {
      const err: NodeJS.ErrnoException = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname} (not a test host)`), { code: 'ENOTFOUND' });
      process.nextTick(() => callback(err, '', 0));
      return;
    }
    if (options.all) process.nextTick(() => callback(null, [{ address, family }]));
    else process.nextTick(() => callback(null, address, family));
  };
}

/** What the crawl needs of either crawler. */
interface Crawler {
  run(seeds: string[]): Promise<{ requestsFinished: number; requestsFailed: number }>;
  readonly autoscaledPool?: { currentConcurrency: number; desiredConcurrency: number };
}

/**
 * PlaywrightCrawler as Crawlee runs it by default (fingerprints, its
 * browser pool's page and browser limits, nothing blocked), on our
 * playwright-core and the given Chromium: no browser of Playwright's own.
 * Crawlee's Chromium reaches the web through a proxy of Crawlee's in this
 * process (proxy-chain), which connects with node's own lookup: set to the
 * test web for the test hosts, and to nothing for any other name.
 */
async function playwrightCrawler(config: CrawleeChildConfig, browser: CrawleeBrowser, common: object, configuration: Configuration): Promise<Crawler> {
  const [{ PlaywrightCrawler }, { chromium }] = await Promise.all([import('@crawlee/playwright'), import('playwright-core')]);
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  return new PlaywrightCrawler(
    {
      ...common,
      headless: true,
      launchContext: {
        launcher: chromium,
        // Chromium refuses to run as root with its sandbox (containers), as for our workers. No
        // resolver rules: Crawlee sends all of Chromium's traffic through a proxy in this process
        // (proxy-chain, its default), whose lookups the stand-in resolver answers.
        launchOptions: { executablePath: browser.executablePath, args: [...(root ? ['--no-sandbox'] : []), '--disable-dev-shm-usage'] },
      },
      async requestHandler({ page, enqueueLinks }) {
        // The shell has no links: wait until the script has rendered the page, then take the rendered DOM's.
        await page.waitForSelector(browser.renderedSelector);
        await enqueueLinks({ strategy: 'same-hostname' });
      },
    },
    configuration,
  );
}

async function crawl(config: CrawleeChildConfig, go: Promise<void>): Promise<void> {
  log.setLevel(LogLevel.WARNING);
  const lookup = loopbackLookup(config.hosts, config.address);
  // Not gotOptions.dnsLookup in a preNavigationHook: Crawlee fetches
  // robots.txt with got-scraping directly, past the crawler's hooks, so that
  // fetch would go to the system resolver. got-scraping's defaults are
  // mutable and shared by both paths: one lookup there covers pages and
  // robots.txt alike.
  const { gotScraping } = await import('got-scraping');
  gotScraping.defaults.options.dnsLookup = lookup as never;
  // PlaywrightCrawler's proxy (proxy-chain) connects with net's default lookup, dns.lookup.
  if (config.browser) dns.lookup = lookup as unknown as typeof dns.lookup;

  const configuration =
    config.storage === 'memory'
      ? new Configuration({ persistStorage: false })
      : new Configuration({ persistStorage: true, storageClientOptions: { localDataDirectory: config.storageDir } });
  const common = {
    sameDomainDelaySecs: config.sameDomainDelaySecs,
    respectRobotsTxtFile: config.respectRobots,
    // Crawlee otherwise starts at 1 and adds 5 % every 10 s, which would
    // measure its ramp-up rather than its crawling.
    autoscaledPoolOptions: { desiredConcurrency: config.concurrency },
    maxConcurrency: config.concurrency,
    minConcurrency: config.minConcurrency,
    ...(config.maxPages ? { maxRequestsPerCrawl: config.maxPages } : {}),
  };
  const crawler: Crawler = config.browser
    ? await playwrightCrawler(config, config.browser, common, configuration)
    : new CheerioCrawler(
        {
          ...common,
          async requestHandler({ enqueueLinks }) {
            // Same scope as our crawler's bench run: every host's pages are reachable from its home page, a seed.
            await enqueueLinks({ strategy: 'same-hostname' });
          },
        },
        configuration,
      );
  await send({ type: 'ready' });
  const readyRssMb = statusMb('VmRSS');
  await go;
  const cpu0 = cpuMs();
  // Crawlee lowers its concurrency when it judges the CPU overloaded (the
  // whole machine's CPU, test web and anything else included): these show
  // whether a slow run was its own choice.
  const running: number[] = [];
  let lowestDesired = config.concurrency;
  const sampler = setInterval(() => {
    const pool = crawler.autoscaledPool;
    if (!pool) return;
    running.push(pool.currentConcurrency);
    lowestDesired = Math.min(lowestDesired, pool.desiredConcurrency);
  }, 1000);
  const stats = await crawler.run(config.seeds);
  clearInterval(sampler);
  const cpu = cpuMs() - cpu0;
  await send({
    type: 'done',
    requestsFinished: stats.requestsFinished,
    requestsFailed: stats.requestsFailed,
    cpuMs: cpu,
    peakRssMb: statusMb('VmHWM'),
    readyRssMb,
    meanConcurrency: Number((running.reduce((a, b) => a + b, 0) / Math.max(1, running.length)).toFixed(1)),
    lowestDesiredConcurrency: lowestDesired,
  });
}

if (!process.send) {
  process.stderr.write('bench/crawlee-child.ts is started by bench/crawlee.ts over IPC, not by hand\n');
  process.exit(2);
}
let startGo: () => void = () => {};
const go = new Promise<void>((resolve) => (startGo = resolve));
process.on('message', (msg: ParentMessage) => {
  if (msg.type === 'go') startGo();
  else if (msg.type === 'config') {
    crawl(msg.config, go).then(
      () => process.exit(0),
      async (err: unknown) => {
        await send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
        process.exit(1);
      },
    );
  }
});
