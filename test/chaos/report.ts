// The chaos run's verdict: what the request log and the output index say
// about the crawl, fault by fault, and the checks. Pure: no servers here.
import type { IndexEntry } from '../../src/storage/index-writer';
import type { RequestRecord, TestWeb } from '../web/test-web';

export const FAULT_KINDS = ['kill-worker', 'kill-redis', 'restart-temporal', 'reset-connections'] as const;
/**
 * Faults of the worker holding the most sessions (by its lease's records in Redis), asked for by
 * name (`--faults`), not in the default set: kill -9 (restarted after ChaosOptions.restartAfterMs,
 * or never), SIGSTOP for ChaosOptions.freezeMs then SIGCONT, SIGTERM (a replacement started).
 */
export const WORKER_FAULT_KINDS = ['kill-busiest-worker', 'freeze-worker', 'term-worker'] as const;
export const ALL_FAULT_KINDS = [...FAULT_KINDS, ...WORKER_FAULT_KINDS] as const;
export type FaultKind = (typeof ALL_FAULT_KINDS)[number];

/** A fault as the driver injected it; times from performance.timeOrigin + performance.now(). */
export interface InjectedFault {
  kind: FaultKind;
  at: number;
  restoredAt: number;
  detail: string;
}

/** A page request the web answered (not reset), at the time it was answered. */
export interface Served {
  host: string;
  path: string;
  t: number;
}

export const isHousekeeping = (p: string) => p === '/robots.txt' || p === '/sitemap.xml';

export interface FaultRecord {
  n: number;
  kind: FaultKind;
  /** ms after the campaign started. */
  at: number;
  /** Fault → component usable again (replacement worker polling, server answering, resets over). */
  downMs: number;
  /**
   * Fault → next successful page fetch. For kill-redis and restart-temporal only
   * fetches after the server answered again count (a fetch already under way
   * when the server died proves nothing); for the others any later fetch counts,
   * because the rest of the crawl is not supposed to stop.
   */
  recoveryMs: number | null;
  /** Longest wait of a host that had requests both before and after the fault, from the fault to its next request. */
  slowestHostResumeMs: number | null;
  /** Pages fetched again whose earlier fetch this fault was the first to follow, i.e. steps it interrupted. */
  refetches: number;
  detail: string;
}

export interface Check {
  name: string;
  /** Required checks decide `ok`; the others are reported only. */
  required: boolean;
  ok: boolean;
  detail: string;
}

export interface ChaosReport {
  ok: boolean;
  checks: Check[];
  seed: number;
  hosts: number;
  pagesPerHost: number;
  workers: number;
  delayMs: number;
  campaignId: string;
  campaignStatus: string;
  dataDir: string;
  /** Campaign start → completion (or give-up). */
  durationMs: number;
  faults: FaultRecord[];
  totals: {
    byKind: Partial<Record<FaultKind, number>>;
    /** worker kills + redis kills + temporal restarts (freezes included: a frozen worker's sessions are taken over). */
    kills: number;
    resetRequests: number;
    unexpectedWorkerExits: { worker: number; code: number | null; at: number }[];
    /** Acknowledged probe writes missing after Redis restarts (what a kill -9 cost under appendfsync everysec). */
    redisAckedWritesLost: number;
    /** slowestHostMaxMs: the longest any host that was crawling waited for its next request after a fault of the kind. */
    recovery: { kind: FaultKind; count: number; meanMs: number | null; maxMs: number | null; slowestHostMaxMs: number | null }[];
  };
  pages: {
    expected: number;
    /** Expected URLs with at least one index line. */
    indexed: number;
    missing: string[];
    /** Index lines beyond the first for an expected URL. */
    duplicateLines: number;
    duplicateUrls: string[];
    /** Expected URLs whose last index line is not outcome `fetched` (e.g. gave up after resets). */
    notFetched: { url: string; outcome: string }[];
    /** Index lines for URLs outside the expected set (robots/sitemap probes excluded). */
    unexpected: string[];
  };
  /** The sealed index (one line per URL, the committed one): what operators read. null when the campaign wrote none. */
  sealed: {
    lines: number;
    /** Expected URLs without a sealed line. */
    missing: string[];
    /** URLs with more than one sealed line. */
    duplicateUrls: string[];
    /** Expected URLs whose sealed line is not outcome `fetched`. */
    notFetched: { url: string; outcome: string }[];
    /** Raw lines the seal left out (attempts whose commit did not count). */
    rawLinesLeftOut: number;
    /** URLs with raw lines but no sealed line (in a completed campaign every URL taken was committed). */
    rawUrlsNotSealed: string[];
  } | null;
  fetches: {
    requests: number;
    distinct: number;
    resets: number;
    /** requests − resets − distinct: fetches a correct crash-free crawl would not have made. */
    duplicates: number;
    duplicateSample: string[];
    /** Duplicate fetches not preceded by any fault between the two fetches. */
    unexplained: number;
    /** The host fetched again most often, and how many of its pages. */
    mostRefetchedHost: { host: string; refetches: number } | null;
  };
  politeness: { delayMs: number; violations: number; minGapMs: number | null; worst: { host: string; gapMs: number; at: number }[] };
}

export interface ReportInput {
  opts: { hosts: number; pages: number; seed: number; workers: number; delayMs: number; strict?: boolean };
  campaignId: string;
  campaignStatus: string;
  dataDir: string;
  durationMs: number;
  t0: number;
  faults: InjectedFault[];
  expected: Set<string>;
  index: IndexEntry[];
  /** The sealed index, null when there is none. */
  sealed: IndexEntry[] | null;
  requests: RequestRecord[];
  served: Served[];
  resets: Served[];
  unexpectedExits: ChaosReport['totals']['unexpectedWorkerExits'];
  ackedWritesLost: number;
  web: TestWeb;
}

export function buildReport(r: ReportInput): ChaosReport {
  const { web, delayMs } = { web: r.web, delayMs: r.opts.delayMs };
  const urlOf = (x: { host: string; path: string }) => web.url(x.host, x.path);
  const servedPages = r.served.filter((s) => !isHousekeeping(s.path.replace(/[?#].*/, ''))).sort((a, b) => a.t - b.t);

  // Fetches: every request the web saw, resets included (they reached the server).
  const byUrl = new Map<string, number[]>();
  for (const q of r.requests) {
    const u = urlOf(q);
    byUrl.set(u, [...(byUrl.get(u) ?? []), q.t]);
  }
  // Each reset the handler made is matched to its request (the latest one
  // of that URL that arrived before the handler ran): the retry after a reset
  // is the crawler doing its job, not a duplicate.
  const resetAt = new Map<string, Set<number>>();
  for (const x of [...r.resets].sort((a, b) => a.t - b.t)) {
    const u = urlOf(x);
    const ts = byUrl.get(u) ?? [];
    const marked = resetAt.get(u) ?? new Set<number>();
    let pick = -1;
    for (const t of ts) if (t <= x.t && !marked.has(t) && t > pick) pick = t;
    if (pick >= 0) marked.add(pick);
    resetAt.set(u, marked);
  }
  let duplicates = 0;
  let unexplained = 0;
  const duplicateSample: string[] = [];
  const faultSpans = [...r.faults].sort((a, b) => a.at - b.at);
  const refetchesByFault = new Map<number, number>();
  const refetchesByHost = new Map<string, number>();
  for (const [u, all] of byUrl) {
    all.sort((a, b) => a - b);
    const marked = resetAt.get(u);
    const ts = all.filter((t) => !marked?.has(t));
    if (ts.length <= 1) continue;
    duplicates += ts.length - 1;
    const host = new URL(u).host;
    refetchesByHost.set(host, (refetchesByHost.get(host) ?? 0) + ts.length - 1);
    if (duplicateSample.length < 10) duplicateSample.push(`${u} ×${ts.length}`);
    // Attribute each refetch to the first fault that was under way between
    // the previous fetch and it: the one that interrupted that step (a step
    // left alone commits within milliseconds of its fetch). "Under way"
    // includes the outage, since a step that started while Temporal or Redis
    // was down fails after its fetch and is retried.
    for (let i = 1; i < ts.length; i++) {
      const fi = faultSpans.findIndex((f) => f.at <= ts[i] && f.restoredAt >= ts[i - 1]);
      if (fi >= 0) refetchesByFault.set(fi, (refetchesByFault.get(fi) ?? 0) + 1);
      else unexplained++;
    }
  }

  // Per-host request times, for politeness and for how long hosts stalled.
  const hostTimes = new Map<string, number[]>();
  for (const q of r.requests) hostTimes.set(q.host, [...(hostTimes.get(q.host) ?? []), q.t]);
  for (const ts of hostTimes.values()) ts.sort((a, b) => a - b);
  let violations = 0;
  let minGap: number | null = null;
  const worst: ChaosReport['politeness']['worst'] = [];
  for (const [host, ts] of hostTimes) {
    for (let i = 1; i < ts.length; i++) {
      const gap = ts[i] - ts[i - 1];
      minGap = minGap === null ? gap : Math.min(minGap, gap);
      if (gap < delayMs) {
        violations++;
        worst.push({ host, gapMs: Math.round(gap * 10) / 10, at: Math.round(ts[i] - r.t0) });
      }
    }
  }
  worst.sort((a, b) => a.gapMs - b.gapMs);

  const sortedFaults = [...r.faults].sort((a, b) => a.at - b.at);
  const faults: FaultRecord[] = sortedFaults.map((f, n) => {
    const serverFault = f.kind === 'kill-redis' || f.kind === 'restart-temporal';
    const from = serverFault ? f.restoredAt : f.at;
    const next = servedPages.find((s) => s.t > from);
    let slowest: number | null = null;
    for (const ts of hostTimes.values()) {
      const before = ts.some((t) => t < f.at);
      const after = ts.find((t) => t >= f.at);
      if (before && after !== undefined) slowest = Math.max(slowest ?? 0, after - f.at);
    }
    return {
      n: n + 1,
      kind: f.kind,
      at: Math.round(f.at - r.t0),
      downMs: Math.round(f.restoredAt - f.at),
      recoveryMs: next ? Math.round(next.t - f.at) : null,
      slowestHostResumeMs: slowest === null ? null : Math.round(slowest),
      refetches: refetchesByFault.get(n) ?? 0,
      detail: f.detail,
    };
  });

  // The index: every expected page, exactly once.
  const lines = new Map<string, IndexEntry[]>();
  for (const e of r.index) lines.set(e.url, [...(lines.get(e.url) ?? []), e]);
  const missing = [...r.expected].filter((u) => !lines.has(u)).sort();
  let duplicateLines = 0;
  const duplicateUrls: string[] = [];
  const notFetched: ChaosReport['pages']['notFetched'] = [];
  for (const u of r.expected) {
    const ls = lines.get(u);
    if (!ls) continue;
    if (ls.length > 1) {
      duplicateLines += ls.length - 1;
      duplicateUrls.push(`${u} ×${ls.length}`);
    }
    const last = ls[ls.length - 1];
    if (last.outcome !== 'fetched') notFetched.push({ url: u, outcome: last.outcome });
  }
  const unexpected = [...lines.keys()].filter((u) => !r.expected.has(u) && !isHousekeeping(new URL(u).pathname)).sort();

  // The sealed index: every expected page exactly once, with its committed (fetched) line.
  let sealed: ChaosReport['sealed'] = null;
  if (r.sealed) {
    const byUrl = new Map<string, IndexEntry[]>();
    for (const e of r.sealed) byUrl.set(e.url, [...(byUrl.get(e.url) ?? []), e]);
    sealed = {
      lines: r.sealed.length,
      missing: [...r.expected].filter((u) => !byUrl.has(u)).sort(),
      duplicateUrls: [...byUrl].filter(([, ls]) => ls.length > 1).map(([u, ls]) => `${u} ×${ls.length}`),
      notFetched: [...r.expected].flatMap((u) => {
        const e = byUrl.get(u)?.[0];
        return e && e.outcome !== 'fetched' ? [{ url: u, outcome: e.outcome }] : [];
      }),
      rawLinesLeftOut: r.index.filter((e) => e.campaignId === r.campaignId).length - r.sealed.length,
      rawUrlsNotSealed: [...new Set(r.index.filter((e) => e.campaignId === r.campaignId && !byUrl.has(e.url)).map((e) => e.url))].sort(),
    };
  }

  // The default kinds always (0 when none), the workers' own only when injected.
  const byKind = Object.fromEntries(
    ALL_FAULT_KINDS.map((k) => [k, faults.filter((f) => f.kind === k).length] as const).filter(([k, n]) => n > 0 || (FAULT_KINDS as readonly string[]).includes(k)),
  ) as Partial<Record<FaultKind, number>>;
  const count = (k: FaultKind) => byKind[k] ?? 0;
  const kills = count('kill-worker') + count('kill-redis') + count('restart-temporal') + count('kill-busiest-worker') + count('freeze-worker');
  const recovery = ALL_FAULT_KINDS.filter((k) => count(k) > 0).map((kind) => {
    const rs = faults.filter((f) => f.kind === kind && f.recoveryMs !== null).map((f) => f.recoveryMs!);
    const slowest = faults.filter((f) => f.kind === kind && f.slowestHostResumeMs !== null).map((f) => f.slowestHostResumeMs!);
    return {
      kind,
      count: count(kind),
      meanMs: rs.length ? Math.round(rs.reduce((a, b) => a + b, 0) / rs.length) : null,
      maxMs: rs.length ? Math.max(...rs) : null,
      slowestHostMaxMs: slowest.length ? Math.max(...slowest) : null,
    };
  });
  const mostRefetched = [...refetchesByHost].sort((a, b) => b[1] - a[1])[0];
  const distinct = byUrl.size;
  const requests = r.requests.length;

  const strict = r.opts.strict ?? false;
  const hosts = r.opts.hosts;
  const worstFault = faults.reduce<FaultRecord | null>((w, f) => (w && w.refetches >= f.refetches ? w : f), null);
  const checks: Check[] = [
    { name: 'campaign completed', required: true, ok: r.campaignStatus === 'completed', detail: r.campaignStatus },
    {
      name: 'every in-scope page is in the index',
      required: true,
      ok: missing.length === 0,
      detail: `${r.expected.size - missing.length}/${r.expected.size}${missing.length ? `; missing e.g. ${missing.slice(0, 5).join(' ')}` : ''}`,
    },
    {
      name: 'every in-scope page was fetched successfully',
      required: true,
      ok: notFetched.length === 0,
      detail: notFetched.length
        ? notFetched
            .slice(0, 5)
            .map((x) => `${x.url}: ${x.outcome}`)
            .join('; ')
        : 'all outcome=fetched',
    },
    // What the crawler promises about refetches: only a fault makes it fetch
    // a page again, and a fault can only interrupt the steps in flight, at
    // most one per host (a domain workflow runs one step at a time).
    {
      name: 'every refetch follows a fault',
      required: true,
      ok: unexplained === 0,
      detail: unexplained ? `${unexplained} page(s) fetched again with no fault in between` : `${duplicates} refetch(es), all after a fault`,
    },
    {
      name: 'refetches per fault ≤ steps in flight (one per host)',
      required: true,
      ok: faults.every((f) => f.refetches <= hosts),
      detail: worstFault && worstFault.refetches > 0 ? `at most ${worstFault.refetches} (fault ${worstFault.n}, ${worstFault.kind}), ${hosts} hosts` : 'none',
    },
    {
      name: 'the sealed index has every in-scope page exactly once, fetched',
      required: true,
      ok: sealed !== null && sealed.missing.length === 0 && sealed.duplicateUrls.length === 0 && sealed.notFetched.length === 0 && sealed.rawUrlsNotSealed.length === 0,
      detail:
        sealed === null
          ? 'no sealed index'
          : `${r.expected.size - sealed.missing.length}/${r.expected.size} in ${sealed.lines} line(s), ${sealed.duplicateUrls.length} URL(s) twice, ` +
            `${sealed.notFetched.length} not fetched; ${sealed.rawLinesLeftOut} raw line(s) of lost attempts left out` +
            (sealed.missing.length ? `; missing e.g. ${sealed.missing.slice(0, 5).join(' ')}` : '') +
            (sealed.duplicateUrls.length ? `; twice: ${sealed.duplicateUrls.slice(0, 5).join(' ')}` : '') +
            (sealed.rawUrlsNotSealed.length ? `; in the raw index only: ${sealed.rawUrlsNotSealed.slice(0, 5).join(' ')}` : ''),
    },
    // A page is stored twice in the raw index only if it was fetched twice.
    {
      name: 'extra raw index lines ≤ refetches',
      required: true,
      ok: duplicateLines <= duplicates,
      detail: `${duplicateLines} extra line(s), ${duplicates} refetch(es)${duplicateLines ? `: ${duplicateUrls.slice(0, 5).join(' ')}` : ''}`,
    },
    {
      name: 'no politeness violation',
      required: true,
      ok: violations === 0,
      detail: violations
        ? `${violations} gap(s) < ${delayMs} ms, smallest ${worst[0].gapMs} ms on ${worst[0].host}`
        : `smallest gap ${minGap === null ? '-' : Math.round(minGap)} ms ≥ ${delayMs} ms`,
    },
    { name: 'no worker died on its own', required: true, ok: r.unexpectedExits.length === 0, detail: r.unexpectedExits.length ? JSON.stringify(r.unexpectedExits) : 'none' },
    // Stricter than the crawler's promise (see `strict`); reported either way.
    {
      name: 'each in-scope page is in the raw index exactly once (strict)',
      required: strict,
      ok: duplicateLines === 0,
      detail: duplicateLines ? `${duplicateLines} extra line(s): ${duplicateUrls.slice(0, 5).join(' ')}` : 'no URL twice',
    },
    { name: 'duplicate fetches ≤ kills (strict)', required: strict, ok: duplicates <= kills, detail: `${duplicates} duplicate fetch(es), ${kills} kill(s)` },
  ];

  return {
    ok: checks.every((c) => c.ok || !c.required),
    checks,
    seed: r.opts.seed,
    hosts: r.opts.hosts,
    pagesPerHost: r.opts.pages,
    workers: r.opts.workers,
    delayMs,
    campaignId: r.campaignId,
    campaignStatus: r.campaignStatus,
    dataDir: r.dataDir,
    durationMs: r.durationMs,
    faults,
    totals: { byKind, kills, resetRequests: r.resets.length, unexpectedWorkerExits: r.unexpectedExits, redisAckedWritesLost: r.ackedWritesLost, recovery },
    pages: { expected: r.expected.size, indexed: r.expected.size - missing.length, missing, duplicateLines, duplicateUrls, notFetched, unexpected },
    sealed,
    fetches: {
      requests,
      distinct,
      resets: r.resets.length,
      duplicates,
      duplicateSample,
      unexplained,
      mostRefetchedHost: mostRefetched ? { host: mostRefetched[0], refetches: mostRefetched[1] } : null,
    },
    politeness: { delayMs, violations, minGapMs: minGap === null ? null : Math.round(minGap * 10) / 10, worst: worst.slice(0, 10) },
  };
}

/** The report as text: one line per fault, then totals and checks. */
export function formatReport(rep: ChaosReport): string {
  const s = (ms: number | null) => (ms === null ? '   -  ' : `${(ms / 1000).toFixed(1).padStart(5)} s`);
  const out: string[] = [];
  out.push(
    `chaos run seed ${rep.seed}: ${rep.hosts} hosts × ${rep.pagesPerHost} pages, ${rep.workers} workers, delay ${rep.delayMs} ms — campaign ${rep.campaignStatus} in ${(rep.durationMs / 1000).toFixed(1)} s`,
  );
  out.push('  #  fault               at       down   recovery  slowest host  refetches  detail');
  for (const f of rep.faults) {
    out.push(
      `${String(f.n).padStart(3)}  ${f.kind.padEnd(18)} ${s(f.at)} ${s(f.downMs)}  ${s(f.recoveryMs)}   ${s(f.slowestHostResumeMs)}   ${String(f.refetches).padStart(6)}    ${f.detail}`,
    );
  }
  out.push(
    `faults: ${Object.entries(rep.totals.byKind)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')} (kills ${rep.totals.kills}); acknowledged Redis writes lost to kills: ${rep.totals.redisAckedWritesLost}`,
  );
  for (const r of rep.totals.recovery)
    out.push(
      `  recovery ${r.kind}: mean ${s(r.meanMs).trim()}, max ${s(r.maxMs).trim()}, slowest host crawling again after ${s(r.slowestHostMaxMs).trim()} at most, over ${r.count}`,
    );
  out.push(
    `pages: ${rep.pages.indexed}/${rep.pages.expected} indexed, ${rep.pages.duplicateLines} duplicate index line(s); ` +
      `requests ${rep.fetches.requests} for ${rep.fetches.distinct} URLs, ${rep.fetches.resets} reset by the web, ${rep.fetches.duplicates} duplicate fetch(es)` +
      (rep.fetches.mostRefetchedHost ? `, at most ${rep.fetches.mostRefetchedHost.refetches} on one host (${rep.fetches.mostRefetchedHost.host})` : ''),
  );
  if (rep.sealed) out.push(`sealed index: ${rep.sealed.lines} line(s), ${rep.sealed.rawLinesLeftOut} raw line(s) of lost attempts left out`);
  out.push(`politeness: ${rep.politeness.violations} violation(s), smallest gap ${rep.politeness.minGapMs} ms (delay ${rep.politeness.delayMs} ms)`);
  for (const c of rep.checks) out.push(`  [${c.ok ? 'ok' : c.required ? 'FAIL' : 'not met, not required'}] ${c.name}: ${c.detail}`);
  out.push(`${rep.ok ? 'PASS' : 'FAIL'} — data in ${rep.dataDir}`);
  return out.join('\n');
}
