// Figures both benchmarked crawlers are judged by, taken from the outside:
// the test web's request log (what each host actually received, and when it
// arrived) and /proc (what each process cost). Neither crawler reports on
// itself here, so the two are measured the same way.
import fs from 'node:fs';
import type { RequestRecord } from '../test/web/test-web';

export interface PolitenessTarget {
  hosts: number;
  /** Pages per host. */
  pages: number;
  /** The delay a polite crawler keeps between two requests to one host. */
  delayMs: number;
}

/** What every crawler of a comparison reports of its crawl (Crawlee's and Scrapy's figures extend it). */
export interface PeerCrawlFigures {
  respectRobots: boolean;
  pages: number;
  expectedPages: number;
  crawlSeconds: number;
  pagesPerSec: number;
  politenessEfficiency: number | null;
  politenessBoundPagesPerSec: number | null;
  /** What a perfect polite crawler reaches on these requests (figures.ts politenessCeiling). */
  politenessCeiling: number | null;
  politenessViolations: number;
  pageViolations: number;
  closestPageGapMs: number | null;
  duplicateFetches: number;
}

export interface LogFigures {
  /** Distinct pages of the expected set that were requested (tracking parameters ignored); without a set, distinct pages requested. */
  pagesFetched: number;
  /** Start → last request that reached the test web. */
  crawlSeconds: number;
  /** Page requests (robots.txt, /sitemap.xml and what `isPage` refuses excluded) minus distinct pages requested. */
  duplicateFetches: number;
  /** Consecutive requests to one host, robots.txt and /sitemap.xml included, closer than the delay. */
  politenessViolations: number;
  /** The same, counting page requests only. */
  pageViolations: number;
  /** Smallest gap between consecutive page requests to one host, in ms (how far below the delay a violation went); null with one page a host. */
  closestPageGapMs: number | null;
  /** Start → each host's first request (robots.txt included), in s: first, median, 90th percentile and slowest host. How fast the crawl ramps up. */
  firstRequestSeconds: { min: number; p50: number; p90: number; max: number };
  /** Each host's first → last request, in s, averaged: the span a host itself took once started. */
  meanHostSpanSeconds: number;
}

const NOT_PAGES = new Set(['/robots.txt', '/sitemap.xml']);

/** A page as web.expectedPages names it: fragment gone, utm_* parameters dropped. */
function pageKey(port: number, host: string, target: string): string {
  const u = new URL(target, `http://${host}:${port}`);
  for (const k of [...u.searchParams.keys()]) if (/^utm_/i.test(k)) u.searchParams.delete(k);
  const query = u.searchParams.toString();
  return `http://${host}:${port}${u.pathname}${query ? `?${query}` : ''}`;
}

/** Consecutive gaps of one host's request times. */
function gaps(times: number[]): number[] {
  times.sort((a, b) => a - b);
  return times.slice(1).map((t, i) => t - times[i]);
}

/**
 * What a test web's request log (web.requests(), served on `port`) says about
 * a crawl that started at t0 (ms, the log's clock). `isPage` says which
 * requests are pages (by path, query included); by default every request
 * but robots.txt and /sitemap.xml is (a rendered page's scripts and data are not).
 */
export function logFigures(log: RequestRecord[], port: number, expected: Set<string> | null, t0: number, delayMs: number, isPage?: (path: string) => boolean): LogFigures {
  const all = new Map<string, number[]>();
  const pages = new Map<string, number[]>();
  const keys: string[] = [];
  let last = t0;
  const push = (m: Map<string, number[]>, host: string, t: number): void => {
    const ts = m.get(host);
    if (ts) ts.push(t);
    else m.set(host, [t]);
  };
  for (const r of log) {
    last = Math.max(last, r.t);
    push(all, r.host, r.t);
    const path = r.path.replace(/[?#].*$/, '');
    if (NOT_PAGES.has(path) || (isPage && !isPage(r.path))) continue;
    push(pages, r.host, r.t);
    keys.push(pageKey(port, r.host, r.path));
  }
  const distinct = new Set(keys);
  let violations = 0;
  let pageViolations = 0;
  let closest = Infinity;
  for (const ts of all.values()) violations += gaps(ts).filter((g) => g < delayMs).length;
  for (const ts of pages.values()) {
    for (const g of gaps(ts)) {
      if (g < delayMs) pageViolations++;
      closest = Math.min(closest, g);
    }
  }
  const firsts = [...all.values()].map((ts) => Math.min(...ts) - t0).sort((a, b) => a - b);
  const spans = [...all.values()].map((ts) => Math.max(...ts) - Math.min(...ts));
  const s1 = (ms: number): number => Number((ms / 1000).toFixed(1));
  return {
    pagesFetched: expected ? [...distinct].filter((k) => expected.has(k)).length : distinct.size,
    crawlSeconds: Number(((last - t0) / 1000).toFixed(1)),
    duplicateFetches: keys.length - distinct.size,
    politenessViolations: violations,
    pageViolations,
    closestPageGapMs: Number.isFinite(closest) ? Math.round(closest) : null,
    firstRequestSeconds: {
      min: s1(firsts[0] ?? 0),
      p50: s1(firsts[Math.floor(firsts.length / 2)] ?? 0),
      p90: s1(firsts[Math.floor(firsts.length * 0.9)] ?? 0),
      max: s1(firsts[firsts.length - 1] ?? 0),
    },
    meanHostSpanSeconds: s1(spans.reduce((a, b) => a + b, 0) / Math.max(spans.length, 1)),
  };
}

/**
 * Ideal span of a polite crawl: each host's pages back to back, each waiting
 * the delay plus the server's mean latency. `efficiency` is ideal ÷ actual;
 * `boundPagesPerSec` is the best any polite crawler can do, hosts ÷ (delay +
 * latency). Both null without a delay (nothing then bounds the speed).
 */
export function politeness(t: PolitenessTarget, meanLatencyMs: number, crawlSeconds: number): { efficiency: number | null; boundPagesPerSec: number | null } {
  if (t.delayMs <= 0) return { efficiency: null, boundPagesPerSec: null };
  const perPage = (t.delayMs + meanLatencyMs) / 1000;
  return {
    efficiency: Number(((t.pages * perPage) / Math.max(crawlSeconds, 0.001)).toFixed(3)),
    boundPagesPerSec: Number((t.hosts / perPage).toFixed(1)),
  };
}

/**
 * The efficiency a perfect polite crawler would reach on this run's requests:
 * every host started at once, each request sent exactly the delay after the
 * previous response to its host, with the latency the test web drew for it.
 * A host's last request then goes out Σ (delay + latency) over its earlier
 * requests after the start, and the slowest host ends the crawl. With random
 * latency that slowest host is above the mean the ideal counts, so this is
 * below 1 however fast the crawler itself is: what `politenessEfficiency`
 * can reach at best (the gap between the two is the crawler's own ramp and
 * overhead). The draws depend on host, target and repeat count only, so the
 * same requests in any order give the same ceiling. Null without a delay.
 */
export function politenessCeiling(
  log: RequestRecord[],
  t: PolitenessTarget,
  meanLatencyMs: number,
  latencyMs: (host: string, target: string, nth: number) => number,
): number | null {
  if (t.delayMs <= 0 || log.length === 0) return null;
  const byHost = new Map<string, RequestRecord[]>();
  for (const r of log) {
    const rs = byHost.get(r.host);
    if (rs) rs.push(r);
    else byHost.set(r.host, [r]);
  }
  let slowestMs = 0;
  for (const [host, rs] of byHost) {
    rs.sort((a, b) => a.t - b.t);
    const nth = new Map<string, number>();
    let lastGoesOutMs = 0;
    for (let i = 0; i < rs.length; i++) {
      const n = (nth.get(rs[i].path) ?? 0) + 1;
      nth.set(rs[i].path, n);
      if (i < rs.length - 1) lastGoesOutMs += t.delayMs + latencyMs(host, rs[i].path, n);
    }
    slowestMs = Math.max(slowestMs, lastGoesOutMs);
  }
  const idealMs = t.pages * (t.delayMs + meanLatencyMs);
  return Number((idealMs / Math.max(slowestMs, 1)).toFixed(3));
}

/**
 * The requests that pace a host: robots.txt, /sitemap.xml and the pages
 * (`isPage`), without a rendered page's own requests (its script, data and
 * images come right after its document, within the page's deadline, by design).
 */
export function pacedRequests(log: RequestRecord[], isPage?: (path: string) => boolean): RequestRecord[] {
  return isPage ? log.filter((r) => NOT_PAGES.has(r.path.replace(/[?#].*$/, '')) || isPage(r.path)) : log;
}

/** RSS of a process and its descendants, in MB. */
export function treeRssMb(pid: number): number {
  let kb = 0;
  for (const p of processTree(pid)) {
    try {
      kb += Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      /* gone */
    }
  }
  return kb / 1024;
}

/**
 * Proportional set size of a process and its descendants, in MB: each shared
 * page counted once across them (divided among the processes mapping it).
 * Summed RSS counts Chromium's shared binary and libraries once per process
 * (a browser tree of a dozen processes, each 70–200 MB RSS, is about a third
 * of that in PSS): this is what the tree takes from the machine.
 */
export function treePssMb(pid: number): number {
  let kb = 0;
  for (const p of processTree(pid)) {
    try {
      kb += Number(/Pss:\s+(\d+)/.exec(fs.readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      /* gone */
    }
  }
  return kb / 1024;
}

/** Largest RSS the process itself ever had (VmHWM), in MB; 0 once it is gone. */
export function peakRssMb(pid: number): number {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc; with `children`, also its reaped children's. */
export function cpuSeconds(pid: number, children = false): number {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const own = Number(f[11]) + Number(f[12]);
    return (children ? own + Number(f[13]) + Number(f[14]) : own) / 100;
  } catch {
    return 0;
  }
}

/**
 * The CPU of processes and everything they start, counted by the kernel: a
 * cgroup of its own (root only; v2's cpu.stat, else v1's cpuacct). Summing
 * /proc over a process tree loses what a process's orphans spend: Chromium's
 * processes outlive a browser that is closed or retired (Crawlee's
 * PlaywrightCrawler retires its browsers every few pages: over 40 hosts it
 * started 16), are reparented to init and never reach the crawler's counters
 * (measured, session 26: the tree's sum gave Crawlee's Chromium 67 ms a page
 * where its processes, sampled one by one, had spent at least 121). Null
 * where no cgroup can be made: callers keep the tree's sum.
 */
export class CpuGroup {
  private constructor(
    private readonly dir: string,
    private readonly read: () => number,
  ) {}

  static open(name: string): CpuGroup | null {
    const leaf = `crawler-bench-${name}-${process.pid}-${Date.now().toString(36)}`;
    const v2 = '/sys/fs/cgroup';
    const v1 = '/sys/fs/cgroup/cpuacct';
    try {
      if (fs.existsSync(`${v2}/cgroup.controllers`)) {
        const dir = `${v2}/${leaf}`;
        fs.mkdirSync(dir);
        return new CpuGroup(dir, () => Number(/usage_usec (\d+)/.exec(fs.readFileSync(`${dir}/cpu.stat`, 'utf8'))?.[1] ?? NaN) / 1e6);
      }
      if (fs.existsSync(`${v1}/cpuacct.usage`)) {
        const dir = `${v1}/${leaf}`;
        fs.mkdirSync(dir);
        return new CpuGroup(dir, () => Number(fs.readFileSync(`${dir}/cpuacct.usage`, 'utf8')) / 1e9);
      }
    } catch {
      /* not root, or no cgroup file system: the tree's sum it is */
    }
    return null;
  }

  /** Puts a process (and what it starts from now on) in the group; false if it could not be moved. */
  add(pid: number): boolean {
    try {
      fs.writeFileSync(`${this.dir}/cgroup.procs`, String(pid));
      return true;
    } catch {
      return false;
    }
  }

  /** CPU seconds the group's processes have spent since it was made, those gone included. */
  seconds(): number {
    return this.read();
  }

  /** Removes the group once its processes are gone (a group still holding some is left; the kernel frees it when they end and it is removed). */
  close(): void {
    try {
      fs.rmdirSync(this.dir);
    } catch {
      /* processes left in it */
    }
  }
}

/** CPU seconds of a process and its living descendants (and whatever they reaped). */
export function treeCpuSeconds(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + cpuSeconds(p, true), 0);
}

function processTree(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number): void => {
    out.push(p);
    try {
      for (const t of fs.readdirSync(`/proc/${p}/task`)) {
        const kids = fs.readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').trim();
        for (const k of kids ? kids.split(/\s+/) : []) visit(Number(k));
      }
    } catch {
      /* gone */
    }
  };
  visit(pid);
  return out;
}

/** The politeness figures both crawlers report, from the request log and the politeness target. */
export function politenessFigures(fromLog: LogFigures, polite: ReturnType<typeof politeness>) {
  return {
    politenessEfficiency: polite.efficiency,
    politenessBoundPagesPerSec: polite.boundPagesPerSec,
    politenessViolations: fromLog.politenessViolations,
    pageViolations: fromLog.pageViolations,
    closestPageGapMs: fromLog.closestPageGapMs,
    duplicateFetches: fromLog.duplicateFetches,
    firstRequestSeconds: fromLog.firstRequestSeconds,
    meanHostSpanSeconds: fromLog.meanHostSpanSeconds,
  };
}

/**
 * How long new host workflows waited for their first workflow task (started
 * → first task started, in ms, one per host): the part of the ramp spent in
 * Temporal's queue and the worker's workflow-task slots, before a host's
 * first session can be scheduled. `eagerShare` is the share handed to the
 * starting worker with the start itself (no wait at all).
 */
export function firstTaskFigures(waitsMs: number[]): { p50: number; p90: number; max: number; eagerShare: number } | null {
  const q = waitFigures(waitsMs);
  return q && { ...q, eagerShare: Number((waitsMs.filter((ms) => ms <= 1).length / waitsMs.length).toFixed(2)) };
}

/** Waits in ms as seconds: median, 90th percentile, longest; null without any. */
export function waitFigures(waitsMs: number[]): { p50: number; p90: number; max: number } | null {
  if (waitsMs.length === 0) return null;
  const w = [...waitsMs].sort((a, b) => a - b);
  const s = (ms: number): number => Number((ms / 1000).toFixed(2));
  return { p50: s(w[Math.floor(w.length / 2)]), p90: s(w[Math.floor(w.length * 0.9)]), max: s(w[w.length - 1]) };
}

/** Calls by command from Redis's `INFO commandstats` (`cmdstat_get:calls=3,usec=…`); the commands a script runs count under their own names too, beside its evalsha. */
export function redisCommandCalls(info: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1], Number(m[2]));
  return calls;
}

/**
 * Redis commands a crawl sent per page, from two `INFO commandstats`
 * readings (before, after): the total and the commands that make most of
 * it, largest first, so a cut in calls per host shows by name.
 */
export function redisCommandsPerPage(before: string, after: string, pages: number, top = 16): { total: number; byCommand: Record<string, number> } {
  const b = redisCommandCalls(before);
  const per = (n: number): number => Number((n / Math.max(1, pages)).toFixed(2));
  const delta = [...redisCommandCalls(after)].map(([cmd, n]) => [cmd, n - (b.get(cmd) ?? 0)] as const).filter(([, n]) => n > 0);
  delta.sort((x, y) => y[1] - x[1]);
  return { total: per(delta.reduce((a, [, n]) => a + n, 0)), byCommand: Object.fromEntries(delta.slice(0, top).map(([cmd, n]) => [cmd, per(n)])) };
}

export interface EmbedFigures {
  /** Distinct pages requested (what `isPage` names). */
  pagesRequested: number;
  /** Requests that are neither a page nor robots.txt or /sitemap.xml: the embeds. */
  embedRequests: number;
  /** Every request (robots.txt included) per page requested. */
  requestsPerPage: number;
  /** Embed requests for a URL of the same host asked for before. */
  repeatedEmbedRequests: number;
  /** Requests for the files every page shares, per host (a crawler fetching each URL once per campaign: as many as there are). */
  sharedRequestsPerHost: number;
  /**
   * Per page after each host's first: its embed requests beyond those the
   * first page needs, over every host (Σ max(0, embeds − firstPageEmbeds) ÷
   * Σ (pages − 1)). Shared files fetched once leave the later pages' own
   * embeds alone; fetched again per page, each later page adds them all.
   */
  extraRequestsPerLaterPage: number;
}

/**
 * What requisites cost on a site whose pages share files, from the test
 * web's request log: `isPage` and `isShared` classify a request's path
 * (query included), and `firstPageEmbeds` is how many embeds a host's first
 * page needs (its shared files and its own).
 */
export function embedFigures(log: RequestRecord[], site: { isPage: (path: string) => boolean; isShared: (path: string) => boolean; firstPageEmbeds: number }): EmbedFigures {
  const hosts = new Map<string, { pages: Set<string>; embeds: number; shared: number; seen: Set<string> }>();
  let repeated = 0;
  for (const r of log) {
    let h = hosts.get(r.host);
    if (!h) hosts.set(r.host, (h = { pages: new Set(), embeds: 0, shared: 0, seen: new Set() }));
    const bare = r.path.replace(/[?#].*$/, '');
    if (NOT_PAGES.has(bare)) continue;
    if (site.isPage(r.path)) {
      h.pages.add(r.path);
      continue;
    }
    h.embeds++;
    if (site.isShared(r.path)) h.shared++;
    if (h.seen.has(r.path)) repeated++;
    h.seen.add(r.path);
  }
  const all = [...hosts.values()];
  const pages = all.reduce((n, h) => n + h.pages.size, 0);
  const laterPages = all.reduce((n, h) => n + Math.max(0, h.pages.size - 1), 0);
  const extra = all.reduce((n, h) => n + Math.max(0, h.embeds - site.firstPageEmbeds), 0);
  const r2 = (x: number): number => Number(x.toFixed(2));
  return {
    pagesRequested: pages,
    embedRequests: all.reduce((n, h) => n + h.embeds, 0),
    requestsPerPage: r2(log.length / Math.max(1, pages)),
    repeatedEmbedRequests: repeated,
    sharedRequestsPerHost: r2(all.reduce((n, h) => n + h.shared, 0) / Math.max(1, all.length)),
    extraRequestsPerLaterPage: r2(extra / Math.max(1, laterPages)),
  };
}
