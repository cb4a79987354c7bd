// Pure: index entries → the figures of a campaign report. Everything the HTML
// shows comes from here, and the same object is embedded in the page as JSON,
// so a test can check the page against the index without parsing charts.
import { mediaTypeOf } from '../http/media-type';
import { countedAs, pageCountedAs } from '../storage/index-tally';
import { countersOf, countsOf, PAGE_COUNTS, type Counters, type PageCounted } from '../stats/counters';
import { renderTag } from '../storage/seal';
import type { IndexEntry } from '../storage/index-writer';
import { worstPages, type QaPage, type QaReport } from '../qa/qa-report';

/** How many hosts the "top hosts" tables keep. */
export const TOP_HOSTS = 10;
/** How many content types get their own bar; the rest are summed as OTHER_TYPES. */
export const TOP_CONTENT_TYPES = 12;
/** How many hosts the politeness table keeps (those with the shortest waits). */
export const TOP_POLITENESS_HOSTS = 50;
/** Bucket widths the timeline may use; the smallest giving ≤ MAX_BUCKETS buckets wins. */
export const BUCKET_STEPS_MS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400].map((s) => s * 1000);
export const MAX_BUCKETS = 60;
export const OTHER_TYPES = '(other)';
export const NO_TYPE = '(none)';

/** How an entry counts, matching the frontier's fetched/failed/skipped counters. */
export type EntryClass = PageCounted;

/**
 * As the commit counted it: one table for every outcome (src/storage/index-tally.ts).
 * Indexes written before 'http-error' existed hold final 4xx/5xx responses as
 * 'fetched'; they still count as fetched, and the status columns show them.
 * An embed gets the class a page with its outcome would (isEmbed tells them apart).
 */
export function classify(e: IndexEntry): EntryClass {
  // Sitemaps and feeds are requests, not pages.
  if (e.kind === 'sitemap' || e.kind === 'sitemap-child' || e.kind === 'feed') return 'skipped';
  return pageCountedAs(e.outcome);
}

/** A page requisite (a stylesheet, script, image, font…): counted apart from pages. */
export const isEmbed = (e: IndexEntry): boolean => e.kind === 'embed';

/** The counters (src/stats/counters.ts: pages, embeds apart, stored body bytes), and what else the index tells. */
export interface ReportSummary extends Counters {
  entries: number;
  /** ISO 8601 of the earliest and latest entry (null when no entry has a valid time). */
  firstAt: string | null;
  lastAt: string | null;
  /** From the first entry's time to the end of the last request (fetchedAt + fetchMs). */
  durationMs: number;
  hosts: number;
  /** Entries whose response was stored as a WARC revisit record, and their payload bytes (not stored again). */
  revisits: number;
  revisitBytes: number;
  /** HTML pages (2xx page entries), and those of them rendered in a browser (render: browser or auto; src/storage/seal.ts renderTag). */
  htmlPages: number;
  rendered: number;
}

/** Pages per class. */
export interface TimeBucket extends Record<PageCounted, number> {
  /** ISO 8601 start of the bucket. */
  start: string;
}

/** Pages per class, and what else the host got. */
export interface HostRow extends Record<PageCounted, number> {
  host: string;
  /** Embeds of any outcome (requests the host got for page requisites). */
  embeds: number;
  /** Responses with status ≥ 400. */
  httpErrors: number;
  /** Entries that failed or got a status ≥ 400, each counted once (an 'http-error' is both). */
  errors: number;
  bytes: number;
}

export interface ProblemRow {
  outcome: string;
  /** error.code, or HTTP_<status> for a response with status ≥ 400, or null. */
  code: string | null;
  count: number;
  /** The first URL (in index order) with this outcome and code. */
  exampleUrl: string;
}

export interface PolitenessRow {
  host: string;
  requests: number;
  /** Gaps between the start times of consecutive requests, in ms. */
  minMs: number;
  medianMs: number;
}

/** How many of the lowest-scoring pages and of the missing URLs the QA section lists. */
export const QA_WORST_PAGES = 20;
export const QA_MISSING_URLS = 20;

/** The newest `crawler qa` pass of the campaign (src/qa/qa-report.ts), as the report shows it. */
export interface QaSection {
  /** The report file it was read from. */
  file: string;
  generatedAt: string;
  score: number | null;
  pages: number;
  /** Pages whose screenshot / text could be compared. */
  screenshots: number;
  texts: number;
  /** Pages that could not be replayed at all. */
  failed: number;
  worst: QaPage[];
  missing: QaReport['missing'];
  /** Missing URLs past QA_MISSING_URLS. */
  moreMissing: number;
}

export interface ReportData {
  campaignId: string;
  generatedAt: string;
  summary: ReportSummary;
  timeline: { bucketMs: number; buckets: TimeBucket[] };
  /** Sorted by status code. */
  statusCodes: { status: number; count: number }[];
  /** Responses only; by count, then name; the tail is summed as OTHER_TYPES. */
  contentTypes: { type: string; count: number }[];
  topHostsByPages: HostRow[];
  topHostsByErrors: HostRow[];
  /** Every entry that is not a plain success, grouped by outcome and code. */
  problems: ProblemRow[];
  /** Hosts with ≥ 2 requests that got a response, shortest minimum wait first. */
  politeness: { rows: PolitenessRow[]; omittedHosts: number };
  /**
   * Revisit campaigns: revisits that found the page changed vs unchanged
   * (a 304 or the same payload), per time bucket; null for other campaigns.
   */
  changeRate: { bucketMs: number; buckets: { start: string; changed: number; unchanged: number }[] } | null;
  /** The newest QA pass of the campaign, null when it has none. */
  qa: QaSection | null;
}

const timeOf = (e: IndexEntry): number => Date.parse(e.fetchedAt);
const byCountThenName =
  <T extends { count: number }>(key: (t: T) => string) =>
  (a: T, b: T) =>
    b.count - a.count || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A content type's bar: `text/HTML; charset=x` → `text/html`, NO_TYPE when there is none. */
export function mediaType(contentType: string | null): string {
  return mediaTypeOf(contentType) || NO_TYPE;
}

/** Median of a non-empty list, rounded to a whole ms. */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return Math.round(s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2);
}

/** The narrowest step whose aligned buckets cover [minMs, maxMs] in ≤ MAX_BUCKETS. */
export function bucketWidthMs(minMs: number, maxMs: number): number {
  const fits = (w: number) => Math.floor(maxMs / w) - Math.floor(minMs / w) + 1 <= MAX_BUCKETS;
  return BUCKET_STEPS_MS.find(fits) ?? BUCKET_STEPS_MS[BUCKET_STEPS_MS.length - 1]!;
}

// Not Math.min(...xs): spreading a large index overflows the stack.
const minOf = (xs: number[]) => xs.reduce((m, x) => (x < m ? x : m), Infinity);
const maxOf = (xs: number[]) => xs.reduce((m, x) => (x > m ? x : m), -Infinity);

function summarise(entries: IndexEntry[]): ReportSummary {
  const counts = countersOf();
  let first = Infinity;
  let end = -Infinity;
  let last = -Infinity;
  let revisits = 0;
  let revisitBytes = 0;
  let htmlPages = 0;
  let rendered = 0;
  for (const e of entries) {
    const tag = renderTag(e);
    if (tag !== '') htmlPages++;
    if (tag !== '' && tag !== '-') rendered++;
    counts[countedAs(e.outcome, e.kind === 'embed' ? 'embed' : undefined)]++;
    if (e.revisit) {
      revisits++;
      revisitBytes += Number.isFinite(e.bytes) ? e.bytes : 0;
    }
    counts.bytes += Number.isFinite(e.bytes) ? e.bytes : 0;
    const t = timeOf(e);
    if (!Number.isFinite(t)) continue;
    first = Math.min(first, t);
    last = Math.max(last, t);
    end = Math.max(end, t + (Number.isFinite(e.fetchMs) ? e.fetchMs! : 0));
  }
  const dated = Number.isFinite(first);
  return {
    entries: entries.length,
    ...counts,
    firstAt: dated ? new Date(first).toISOString() : null,
    lastAt: dated ? new Date(last).toISOString() : null,
    durationMs: dated ? end - first : 0,
    hosts: new Set(entries.map((e) => e.host)).size,
    revisits,
    revisitBytes,
    htmlPages,
    rendered,
  };
}

function timeline(entries: IndexEntry[]): ReportData['timeline'] {
  const times = entries.map(timeOf).filter(Number.isFinite);
  if (times.length === 0) return { bucketMs: BUCKET_STEPS_MS[0]!, buckets: [] };
  const min = minOf(times);
  const max = maxOf(times);
  const bucketMs = bucketWidthMs(min, max);
  const origin = Math.floor(min / bucketMs) * bucketMs;
  const n = Math.floor((max - origin) / bucketMs) + 1;
  const buckets: TimeBucket[] = Array.from({ length: n }, (_, i) => ({
    start: new Date(origin + i * bucketMs).toISOString(),
    ...countsOf(PAGE_COUNTS),
  }));
  for (const e of entries) {
    const t = timeOf(e);
    // Pages only, as the summary's page figures.
    if (Number.isFinite(t) && !isEmbed(e)) buckets[Math.floor((t - origin) / bucketMs)]![classify(e)]++;
  }
  return { bucketMs, buckets };
}

function countBy<K>(items: Iterable<K>): Map<K, number> {
  const m = new Map<K, number>();
  for (const k of items) m.set(k, (m.get(k) ?? 0) + 1);
  return m;
}

function hostRows(entries: IndexEntry[]): HostRow[] {
  const rows = new Map<string, HostRow>();
  for (const e of entries) {
    let r = rows.get(e.host);
    if (!r) rows.set(e.host, (r = { host: e.host, ...countsOf(PAGE_COUNTS), embeds: 0, httpErrors: 0, errors: 0, bytes: 0 }));
    const cls = classify(e);
    if (isEmbed(e)) r.embeds++;
    else r[cls]++;
    const httpError = typeof e.status === 'number' && e.status >= 400;
    if (httpError) r.httpErrors++;
    if (cls === 'failed' || httpError) r.errors++;
    r.bytes += Number.isFinite(e.bytes) ? e.bytes : 0;
  }
  return [...rows.values()];
}

function problems(entries: IndexEntry[]): ProblemRow[] {
  const rows = new Map<string, ProblemRow>();
  for (const e of entries) {
    const httpError = typeof e.status === 'number' && e.status >= 400;
    if (classify(e) === 'fetched' && !httpError) continue;
    const code = e.error?.code ?? (httpError ? `HTTP_${e.status}` : null);
    const key = JSON.stringify([e.outcome, code]);
    const r = rows.get(key);
    if (r) r.count++;
    else rows.set(key, { outcome: String(e.outcome), code, count: 1, exampleUrl: e.url });
  }
  return [...rows.values()].sort(byCountThenName((r) => `${r.outcome} ${r.code ?? ''}`));
}

/**
 * Waits between requests to one host, from the start times of requests that
 * got a response (their fetchedAt is when the request started; error entries
 * are stamped when the failure was recorded, so they would blur the gaps).
 * An 'http-error' got a response too, and is stamped like a fetched page.
 */
function politeness(entries: IndexEntry[]): ReportData['politeness'] {
  const starts = new Map<string, number[]>();
  for (const e of entries) {
    const t = timeOf(e);
    if ((classify(e) !== 'fetched' && e.outcome !== 'http-error') || !Number.isFinite(t)) continue;
    const list = starts.get(e.host);
    if (list) list.push(t);
    else starts.set(e.host, [t]);
  }
  const rows: PolitenessRow[] = [];
  for (const [host, times] of starts) {
    if (times.length < 2) continue;
    times.sort((a, b) => a - b);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    rows.push({ host, requests: times.length, minMs: minOf(gaps), medianMs: median(gaps) });
  }
  rows.sort((a, b) => a.minMs - b.minMs || a.medianMs - b.medianMs || cmp(a.host, b.host));
  return { rows: rows.slice(0, TOP_POLITENESS_HOSTS), omittedHosts: Math.max(0, rows.length - TOP_POLITENESS_HOSTS) };
}

export interface BuildReportOptions {
  campaignId: string;
  /** ISO 8601; passed in so the function stays pure. */
  generatedAt: string;
  /** Every visit of a revisit campaign (the raw index: the sealed one keeps a URL's last visit only); default `entries`. */
  visits?: IndexEntry[];
  /** The campaign's newest QA report and its file (src/qa/qa-report.ts newestQaReport). */
  qa?: { file: string; report: QaReport } | null;
}

/** What the report shows of a QA pass: its figures, its worst pages, the URLs missing from most pages. */
export function qaSection(file: string, r: QaReport): QaSection {
  return {
    file,
    generatedAt: r.generatedAt,
    score: r.score,
    pages: r.pages.length,
    screenshots: r.pages.filter((p) => p.screenshot !== null).length,
    texts: r.pages.filter((p) => p.text !== null).length,
    failed: r.pages.filter((p) => p.error !== undefined).length,
    worst: worstPages(r, QA_WORST_PAGES),
    missing: r.missing.slice(0, QA_MISSING_URLS),
    moreMissing: Math.max(0, r.missing.length - QA_MISSING_URLS),
  };
}

/** Revisits per bucket that found their page changed or not (first visits, gone and missing pages left out). */
export function changeRate(visits: IndexEntry[]): ReportData['changeRate'] {
  const revisits = visits.filter((e) => (e.change === 'changed' || e.change === 'unchanged') && Number.isFinite(timeOf(e)));
  if (revisits.length === 0) return null;
  const times = revisits.map(timeOf);
  const min = minOf(times);
  const bucketMs = bucketWidthMs(min, maxOf(times));
  const origin = Math.floor(min / bucketMs) * bucketMs;
  const buckets = Array.from({ length: Math.floor((maxOf(times) - origin) / bucketMs) + 1 }, (_, i) => ({
    start: new Date(origin + i * bucketMs).toISOString(),
    changed: 0,
    unchanged: 0,
  }));
  for (const e of revisits) buckets[Math.floor((timeOf(e) - origin) / bucketMs)]![e.change as 'changed' | 'unchanged']++;
  return { bucketMs, buckets };
}

export function buildReportData(entries: IndexEntry[], opts: BuildReportOptions): ReportData {
  const responses = entries.filter((e) => typeof e.status === 'number');
  const statusCodes = [...countBy(responses.map((e) => e.status as number))].map(([status, count]) => ({ status, count })).sort((a, b) => a.status - b.status);
  const types = [...countBy(responses.map((e) => mediaType(e.contentType)))].map(([type, count]) => ({ type, count })).sort(byCountThenName((t) => t.type));
  const tail = types.slice(TOP_CONTENT_TYPES);
  const contentTypes = tail.length ? [...types.slice(0, TOP_CONTENT_TYPES), { type: OTHER_TYPES, count: tail.reduce((n, t) => n + t.count, 0) }] : types;
  const hosts = hostRows(entries);
  return {
    campaignId: opts.campaignId,
    generatedAt: opts.generatedAt,
    summary: summarise(entries),
    timeline: timeline(entries),
    changeRate: changeRate(opts.visits ?? entries),
    statusCodes,
    contentTypes,
    topHostsByPages: [...hosts].sort((a, b) => b.fetched - a.fetched || cmp(a.host, b.host)).slice(0, TOP_HOSTS),
    topHostsByErrors: hosts
      .filter((h) => h.errors > 0)
      .sort((a, b) => b.errors - a.errors || cmp(a.host, b.host))
      .slice(0, TOP_HOSTS),
    problems: problems(entries),
    politeness: politeness(entries),
    qa: opts.qa ? qaSection(opts.qa.file, opts.qa.report) : null,
  };
}
