// Pure (but for reading and naming report files): the QA report of a
// campaign, one object per page compared, and the campaign's score.
//
// A page's score is the mean of what could be measured of it: screenshot
// similarity (when the crawl kept a screenshot), text similarity (when it
// kept the page's text, or for a plain HTTP page, whose text is its
// response), and the share of its replay's requests the archive answered.
// A page that could not be replayed scores 0, with its reason.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { MissingRequest } from './replay-page';

/** Where QA reports go in an output folder: `<output>/qa/qa-<timestamp>.json`. */
export const QA_DIR = 'qa';
const QA_FILE = /^qa-(\d{8}T\d{6}Z)\.json$/;

export interface QaPage {
  url: string;
  /** The capture's time, as pywb's URLs take it (14 digits). */
  timestamp: string;
  /** rendered: the crawl rendered it (its index line has `render`); http: a sampled plain HTTP page. */
  kind: 'rendered' | 'http';
  /** 0–1, or null when not measured (`notMeasured` says why). */
  screenshot: number | null;
  /** Which of the crawl's screenshots `screenshot` compared: its full page, or (none kept) its view, with the replay's shot the same way. */
  screenshotOf?: 'fullPage' | 'view';
  text: number | null;
  /** Share of the replay's requests answered from the archive (1 when it made none that failed). */
  resources: number;
  score: number;
  /** Requests the replay made that the archive could not answer: the URLs this page is broken by. */
  missing: MissingRequest[];
  /** Why a measure is null. */
  notMeasured?: { screenshot?: string; text?: string };
  /** Why the page could not be compared at all (it then scores 0). */
  error?: string;
  ms: number;
}

export interface QaReport {
  campaignId: string | null;
  /** The campaign's output folder or the WACZ the pass replayed. */
  source: string;
  generatedAt: string;
  /** Mean of the pages' scores (null for no page). */
  score: number | null;
  pages: QaPage[];
  /** Every missing URL, with the pages it breaks, most pages first. */
  missing: { url: string; pages: string[] }[];
  settings: { sampleHttp: number; concurrency: number; pageTimeoutMs: number };
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;

/** A page's score from its measures (null ones left out). */
export function pageScore(p: { screenshot: number | null; text: number | null; resources: number; error?: string }): number {
  if (p.error) return 0;
  const measured = [p.screenshot, p.text, p.resources].filter((v): v is number => v !== null);
  return round(measured.reduce((a, b) => a + b, 0) / measured.length);
}

/** The share of requests answered: answered / (answered + missing). */
export function resourceShare(answered: number, missing: number): number {
  return answered + missing === 0 ? 1 : round(answered / (answered + missing));
}

export function buildQaReport(pages: QaPage[], o: Omit<QaReport, 'pages' | 'missing' | 'score'>): QaReport {
  const byUrl = new Map<string, Set<string>>();
  for (const p of pages) {
    for (const m of p.missing) {
      const set = byUrl.get(m.url) ?? new Set<string>();
      set.add(p.url);
      byUrl.set(m.url, set);
    }
  }
  const missing = [...byUrl].map(([url, set]) => ({ url, pages: [...set].sort() })).sort((a, b) => b.pages.length - a.pages.length || (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
  const score = pages.length ? round(pages.reduce((a, p) => a + p.score, 0) / pages.length) : null;
  return { ...o, score, pages, missing };
}

/** The `n` lowest-scoring pages, lowest first (ties by URL). */
export function worstPages(report: Pick<QaReport, 'pages'>, n: number): QaPage[] {
  return [...report.pages].sort((a, b) => a.score - b.score || (a.url < b.url ? -1 : 1)).slice(0, n);
}

/** `qa-20261128T213000Z.json`: sortable, one per pass. */
export function qaFileName(at: Date): string {
  return `qa-${at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '')}.json`;
}

/** The newest QA report of a campaign in its output folder, or null when it has none (or it cannot be read: the report goes on without it). */
export async function newestQaReport(outputDir: string, campaignId: string): Promise<{ file: string; report: QaReport } | null> {
  const dir = path.join(outputDir, QA_DIR);
  const names = (await fsp.readdir(dir).catch(() => [] as string[])).filter((n) => QA_FILE.test(n)).sort();
  for (const name of names.reverse()) {
    const file = path.join(dir, name);
    try {
      const report = JSON.parse(await fsp.readFile(file, 'utf8')) as QaReport;
      // One output folder may hold several campaigns.
      if (Array.isArray(report.pages) && report.campaignId === campaignId) return { file, report };
    } catch {
      /* a report being written, or damaged: the one before it */
    }
  }
  return null;
}
