// `crawler qa`: a campaign's pages replayed from its own archive and
// compared with the crawl (docs/operations.md, "Quality assurance"). pywb
// serves the archive on a free loopback port (./pywb-server.ts), Chromium
// replays a few pages at a time (./replay-page.ts), and each page is
// compared with what the crawl kept of it (./crawl-captures.ts,
// ./similarity.ts). pywb and Chromium are stopped at the end, whatever
// happened; a page that fails is recorded with its reason, never the pass's
// failure.
import { createReadStream } from 'node:fs';
import readline from 'node:readline';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../browser/browser-pool';
import { decodeBody } from '../parse/decode';
import type { PyReplayTools } from '../stack/tools';
import { listWarcFiles, parseCdxjLine } from '../storage/cdxj';
import { readResponseAt } from '../storage/warc-reader';
import { normalizeUrl } from '../url/normalize';
import { findCaptures, readResourceAt, warcPathOf, type CrawlCaptures } from './crawl-captures';
import { startQaPywb, type PywbSource } from './pywb-server';
import { buildQaReport, pageScore, resourceShare, type QaPage, type QaReport } from './qa-report';
import { replayPage } from './replay-page';
import { screenshotSimilarity, textSimilarity, visibleText } from './similarity';

/** A page to replay: rendered in the crawl, or a plain HTTP page (sampled). */
export interface QaCandidate {
  url: string;
  kind: 'rendered' | 'http';
}

export interface QaOptions {
  /** pywb's Python tools, Chromium's executable, and a free loopback port for pywb (src/stack/ finds them). */
  tools: PyReplayTools;
  chromium: string;
  port: number;
  campaignId: string | null;
  /** Shown in the report: the output folder or the WACZ. */
  source: string;
  pywb: PywbSource;
  /** pywb's working folder (its config and, for a WACZ, the unpacked collection); emptied first. */
  pywbRoot: string;
  /** The WARC files whose screenshots and texts count (a campaign's own); default every file of the collection's archive. */
  warcFiles?: string[];
  /**
   * The pages: rendered ones, and plain HTTP pages of which `sampleHttp` are
   * taken. Called once pywb has the archive (a WACZ's pages are known then);
   * `captures` tells which pages have a screenshot or text.
   */
  pages: (captures: CrawlCaptures) => Promise<QaCandidate[]>;
  sampleHttp: number;
  concurrency: number;
  pageTimeoutMs: number;
  log: (msg: string) => void;
  now?: () => Date;
}

/** Where a URL's newest capture is, from the replay index pywb serves. */
interface IndexedCapture {
  timestamp: string;
  filename: string;
  offset: number;
  length: number;
  mime: string;
}

/** `n` of the items spread evenly over them (all when there are fewer): the same sample every pass over the same pages. */
export function evenSample<T>(items: T[], n: number): T[] {
  if (n <= 0) return [];
  if (items.length <= n) return items;
  return Array.from({ length: n }, (_, i) => items[Math.floor((i * items.length) / n)]!);
}

async function readIndex(files: string[]): Promise<Map<string, IndexedCapture>> {
  const out = new Map<string, IndexedCapture>();
  for (const file of files) {
    const input = createReadStream(file);
    try {
      for await (const raw of readline.createInterface({ input, crlfDelay: Infinity })) {
        if (!raw.trim() || raw.startsWith('!')) continue;
        const l = parseCdxjLine(raw);
        if (l.fields.method && l.fields.method !== 'GET') continue;
        const key = keyOf(l.fields.url);
        const had = out.get(key);
        if (had && had.timestamp > l.timestamp) continue;
        out.set(key, { timestamp: l.timestamp, filename: l.fields.filename, offset: Number(l.fields.offset), length: Number(l.fields.length), mime: l.fields.mime });
      }
    } finally {
      input.destroy();
    }
  }
  return out;
}

function keyOf(url: string): string {
  try {
    return normalizeUrl(url);
  } catch {
    return url;
  }
}

/** Runs `fn` over the items, `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

export async function runQa(o: QaOptions): Promise<QaReport> {
  const now = o.now ?? (() => new Date());
  const pywb = await startQaPywb(o.tools, o.pywbRoot, o.pywb, o.port);
  let browser: Browser | null = null;
  try {
    const warcFiles = o.warcFiles ?? (await listWarcFiles(pywb.archiveDir));
    const captures = await findCaptures(warcFiles);
    const index = await readIndex(pywb.indexFiles);
    const all = await o.pages(captures);
    const rendered = all.filter((p) => p.kind === 'rendered');
    const http = evenSample(
      all.filter((p) => p.kind === 'http').sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0)),
      o.sampleHttp,
    );
    const candidates = [...rendered, ...http];
    o.log(`qa: ${rendered.length} rendered pages and ${http.length} plain HTTP pages to replay, ${o.concurrency} at a time`);
    // Chromium resolves no name but pywb's address: a replayed page that reaches for the live web fails, and is counted missing.
    browser = await launchChromium(o.chromium, ['--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1']);
    const pages: QaPage[] = new Array<QaPage>(candidates.length);
    await eachLimited(candidates, o.concurrency, async (c, i) => {
      const started = Date.now();
      // Whatever goes wrong with one page is that page's result, never the pass's end.
      pages[i] = await comparePage(browser!, c, { collection: pywb.collection, archiveDir: pywb.archiveDir, index, captures, timeoutMs: o.pageTimeoutMs }).catch(
        (err: unknown): QaPage => ({
          url: c.url,
          kind: c.kind,
          timestamp: index.get(keyOf(c.url))?.timestamp ?? '',
          screenshot: null,
          text: null,
          resources: 0,
          score: 0,
          missing: [],
          error: `not compared: ${String(err instanceof Error ? err.message : err).slice(0, 300)}`,
          ms: Date.now() - started,
        }),
      );
      const p = pages[i];
      o.log(
        `qa: ${p.score.toFixed(3)} ${p.url}${p.error ? ` (${p.error})` : ''}${p.missing.length ? ` (${p.missing.length} missing: ${p.missing.map((m) => m.url).join(', ')})` : ''}`,
      );
    });
    return buildQaReport(pages, {
      campaignId: o.campaignId,
      source: o.source,
      generatedAt: now().toISOString(),
      settings: { sampleHttp: o.sampleHttp, concurrency: o.concurrency, pageTimeoutMs: o.pageTimeoutMs },
    });
  } finally {
    await (browser as Browser | null)?.close().catch(() => undefined);
    await pywb.stop();
  }
}

interface CompareContext {
  collection: string;
  archiveDir: string;
  index: Map<string, IndexedCapture>;
  captures: CrawlCaptures;
  timeoutMs: number;
}

async function comparePage(browser: Browser, c: QaCandidate, x: CompareContext): Promise<QaPage> {
  const started = Date.now();
  const key = keyOf(c.url);
  const at = x.index.get(key);
  const base = { url: c.url, kind: c.kind, timestamp: at?.timestamp ?? '' };
  if (!at) {
    return { ...base, screenshot: null, text: null, resources: 0, score: 0, missing: [], error: 'not in the replay index', ms: Date.now() - started };
  }
  // The crawl's full page, or else its view (a WACZ of Browsertrix's, whose default shot is the view alone): the replay is shot the same way.
  const fullPage = x.captures.screenshots.get(key) ?? x.captures.screenshots.get(c.url);
  const view = fullPage ? undefined : (x.captures.views.get(key) ?? x.captures.views.get(c.url));
  const shotKind = fullPage ? 'fullPage' : view ? 'view' : undefined;
  const shot = fullPage ?? view;
  const replay = await replayPage(browser, { collection: x.collection, url: c.url, timestamp: at.timestamp, timeoutMs: x.timeoutMs, shot: shotKind });
  const notMeasured: NonNullable<QaPage['notMeasured']> = {};
  let screenshot: number | null = null;
  let text: number | null = null;
  if (!replay.error) {
    if (!shot) notMeasured.screenshot = 'the crawl kept no screenshot of it (browser.screenshot off, or not rendered)';
    else {
      try {
        screenshot = Math.round(screenshotSimilarity(await readResourceAt(shot), replay.screenshot!) * 10_000) / 10_000;
      } catch (err) {
        notMeasured.screenshot = `screenshot not comparable: ${String(err instanceof Error ? err.message : err).slice(0, 200)}`;
      }
    }
    try {
      const crawlText = await crawlTextOf(c, key, at, x);
      if (crawlText === null) notMeasured.text = 'the crawl kept no text of it (browser.text off)';
      else text = Math.round(textSimilarity(crawlText, replay.text ?? '') * 10_000) / 10_000;
    } catch (err) {
      notMeasured.text = `the crawl's text not readable: ${String(err instanceof Error ? err.message : err).slice(0, 200)}`;
    }
  }
  const resources = replay.error ? 0 : resourceShare(replay.answered, replay.missing.length);
  const measures = { screenshot, text, resources, ...(replay.error ? { error: replay.error } : {}) };
  return {
    ...base,
    ...measures,
    ...(screenshot !== null ? { screenshotOf: shotKind } : {}),
    score: pageScore(measures),
    missing: replay.missing,
    ...(Object.keys(notMeasured).length ? { notMeasured } : {}),
    ms: Date.now() - started,
  };
}

/** The crawl's text of a page: its `urn:text:` record when rendered, its archived response's visible text when plain HTTP. */
async function crawlTextOf(c: QaCandidate, key: string, at: IndexedCapture, x: CompareContext): Promise<string | null> {
  const kept = x.captures.texts.get(key) ?? x.captures.texts.get(c.url);
  if (kept) return (await readResourceAt(kept)).toString('utf8');
  if (c.kind === 'rendered') return null;
  const res = await readResponseAt(warcPathOf(x.archiveDir, at.filename), at.offset, at.length);
  return visibleText(decodeBody(res.payload, res.headers['content-type'] ?? null).text);
}
