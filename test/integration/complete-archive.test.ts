// Issue 24's acceptance: a crawl with the default settings captures every
// file a page needs (test/web/archive-site.ts: an @import chain, a web font
// relative to its stylesheet, srcset and <picture> candidates, lazy-loading
// attributes, inline and <style> backgrounds, a cache-buster, a redirect,
// <base href>, and a CDN on another registrable domain with its own
// robots.txt, Crawl-delay and a disallowed image), each file once, pages and
// embeds counted apart; with `requisites: 'off'` it fetches pages only. Then
// the archive is replayed by tools we did not write: pywb over our WARCs and
// CDXJ, and over the WACZ `crawler export --wacz` packs, each page loaded in
// Chromium, where every request the page makes must be answered from the
// archive (the robots-disallowed image is the one miss), the innermost
// @imported stylesheet, the CDN's stylesheet and its @import must have
// applied, the web font must have rendered, and every image must have drawn.
// Screenshots: <test data>/screenshots/complete-archive-*.png.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { findOrInstallPyReplayTools, type PyReplayTools } from '../../src/stack/tools';
import type { IndexEntry } from '../../src/storage/index-writer';
import type { WarcReadRecord } from '../../src/storage/warc-reader';
import { normalizeUrl } from '../../src/url/normalize';
import type { CampaignResult } from '../../workflows/messages';
import { archiveSite, type ArchiveSite } from '../web/archive-site';
import type { RequestRecord } from '../web/test-web';
import { launchBrowser, screenshot } from '../support/browser';
import { createHarness, isHousekeepingPath, launch, minGapsByHost, outputOf, type Harness } from '../support/harness';
import { startPywb, type Pywb } from '../support/pywb';

jest.setTimeout(600_000);
const run = promisify(execFile);

/** The main host's pause between requests: low, so the test is quick; the CDN's Crawl-delay must still win there. */
const MIN_DELAY_MS = 50;

interface Crawl {
  result: CampaignResult;
  /** Requests the test web saw during this crawl. */
  requests: RequestRecord[];
  /** The sealed index: one line per URL. */
  lines: Map<string, IndexEntry>;
  records: WarcReadRecord[];
  outDir: string;
}

let h: Harness;
let site: ArchiveSite;
let tools: PyReplayTools;
let browser: Browser;
let on: Crawl;
let off: Crawl;
const pywbs: Pywb[] = [];

const url = (r: { host: string; target: string }) => normalizeUrl(h.web.url(r.host, r.target));
const key = (r: { host: string; path: string }) => `${r.host} ${r.path}`;
/** Index lines shortened to what tells their story in a failure message. */
const brief = (e: IndexEntry | undefined) => e && { url: e.url, outcome: e.outcome, status: e.status, kind: e.kind, hops: e.hops, error: e.error?.code };

async function crawl(extra: Partial<Parameters<typeof launch>[1]>): Promise<Crawl> {
  h.web.clearRequests();
  const handle = await launch(h, {
    seeds: [h.web.url(site.host, '/')],
    // The page budget is exactly the site's pages: embeds must not use it up.
    budgets: { maxPages: site.pages.length },
    politeness: { minDelayMs: MIN_DELAY_MS },
    ...extra,
  });
  const result = await handle.result();
  const out = outputOf(h, result.campaignId);
  const lines = new Map((await out.sealed()).map((e) => [e.url, e]));
  return { result, requests: h.web.requests(), lines, records: await out.warc(), outDir: out.dir };
}

beforeAll(async () => {
  tools = await findOrInstallPyReplayTools((m) => process.stderr.write(`[replay tools] ${m}\n`));
  h = await createHarness('complete-archive', { workers: 1 });
  site = archiveSite();
  for (const spec of site.specs) h.web.addSite(spec);
  // Defaults first: robots.txt is cached across campaigns, and this crawl's requests must include each host's.
  on = await crawl({});
  off = await crawl({ requisites: 'off' });
  // The site's two hosts resolve to the test web, so the live pages can be loaded as a reference;
  // every other name fails, and replay must not need the live hosts at all (see `leaks`).
  const map = [site.host, site.cdnHost].map((host) => `MAP ${host} ${h.web.address}`).join(', ');
  browser = await launchBrowser((m) => process.stderr.write(`[browser] ${m}\n`), [`--host-resolver-rules=${map}`]);
});

afterAll(async () => {
  for (const p of pywbs) await p.stop();
  await browser?.close();
  await h?.close();
});

describe('a crawl with the default settings', () => {
  test('requests every page and every allowed requisite exactly once, and nothing else', () => {
    expect(on.result.status).toBe('completed');
    const counts = new Map<string, number>();
    for (const r of on.requests) if (!isHousekeepingPath(r.path)) counts.set(key(r), (counts.get(key(r)) ?? 0) + 1);
    const expected = [...site.pages, ...site.requisites].map((r) => key({ host: r.host, path: r.target }));
    // Sorted entries, so a failure lists what was missed, repeated or extra side by side.
    expect([...counts].sort()).toEqual(expected.map((k) => [k, 1]).sort());
    // robots.txt once per host, whatever the number of embeds there.
    expect(
      on.requests
        .filter((r) => r.path === '/robots.txt')
        .map((r) => r.host)
        .sort(),
    ).toEqual([site.cdnHost, site.host].sort());
  });

  test('stores each of them once: a response record, or a revisit where the bytes were stored already', () => {
    const wanted = new Set([...site.pages, ...site.requisites].map(url));
    const stored = new Map<string, string[]>();
    for (const r of on.records) {
      if ((r.type !== 'response' && r.type !== 'revisit') || !r.targetUri) continue;
      const u = normalizeUrl(r.targetUri);
      stored.set(u, [...(stored.get(u) ?? []), r.type]);
    }
    for (const u of wanted) expect({ u, records: stored.get(u)?.length }).toEqual({ u, records: 1 });
    // The same stylesheet under another cache-buster: its own URL, as requested, whose bytes are a revisit of the first.
    expect(stored.get(url({ host: site.host, target: '/static/main.css?v=123' }))).toEqual(['response']);
    expect(stored.get(url({ host: site.host, target: '/static/main.css?v=124' }))).toEqual(['revisit']);
    // Nothing else but the housekeeping (a /sitemap.xml probe's answer is stored like any response).
    for (const u of stored.keys()) if (!isHousekeepingPath(new URL(u).pathname)) expect({ u, wanted: wanted.has(u) }).toEqual({ u, wanted: true });
  });

  test('never requests the image the CDN robots.txt disallows, and says so in its index line', () => {
    expect(on.requests.filter((r) => r.host === site.disallowed.host && r.path === site.disallowed.target)).toEqual([]);
    expect(brief(on.lines.get(url(site.disallowed)))).toMatchObject({ outcome: 'robots-disallowed', kind: 'embed', hops: 'E' });
  });

  test('takes at most two embed hops on a host outside its scope', () => {
    // page → cdn.css → more.css is two; the image more.css names would be the third.
    expect(on.requests.filter((r) => r.host === site.beyondReach.host && r.path === site.beyondReach.target)).toEqual([]);
    expect(on.lines.get(url(site.beyondReach))).toBeUndefined();
    expect(brief(on.lines.get(url({ host: site.cdnHost, target: '/css/more.css' })))).toMatchObject({ outcome: 'fetched', kind: 'embed', hops: 'EE' });
  });

  test("keeps the CDN host's Crawl-delay between any two of its requests, robots.txt included", () => {
    const cdn = on.requests.filter((r) => r.host === site.cdnHost);
    expect(cdn.length).toBeGreaterThanOrEqual(6);
    expect(minGapsByHost(cdn).get(site.cdnHost)).toBeGreaterThanOrEqual(site.cdnCrawlDelaySec * 1000);
  });

  test('counts pages and embeds apart: a page budget of exactly the pages still captures every embed', () => {
    expect(on.result).toMatchObject({
      pages: site.pages.length,
      failed: 0,
      // Skipped: the disallowed image; the too-deep one was never queued.
      embeds: { fetched: site.requisites.length, failed: 0, skipped: 1 },
    });
    for (const p of site.pages) expect(brief(on.lines.get(url(p)))).toMatchObject({ url: url(p), outcome: 'fetched', kind: undefined });
    const main123 = url({ host: site.host, target: '/static/main.css?v=123' });
    for (const r of site.requisites) {
      // The redirect is a line of its own (its target has one too); the second cache-buster's bytes were stored under the first.
      const outcome = r.target === '/static/img/old-name.png' ? 'redirect' : r.target === '/static/main.css?v=124' ? expect.stringMatching(/^(fetched|duplicate)$/) : 'fetched';
      expect(brief(on.lines.get(url(r)))).toMatchObject({ url: url(r), outcome, kind: 'embed' });
    }
    expect(on.lines.get(url({ host: site.host, target: '/static/main.css?v=124' }))?.revisit).toMatchObject({ url: main123 });
  });

  test('writes the hop path that first reached each URL in its index line', () => {
    const hops = (r: { host: string; target: string }) => ({ url: url(r), hops: on.lines.get(url(r))?.hops });
    for (const r of [...site.pages, ...site.requisites]) expect(hops(r)).toEqual({ url: url(r), hops: r.hops });
    // The forms the issue names, so a site edit cannot quietly drop them.
    expect(new Set(site.requisites.map((r) => r.hops))).toEqual(new Set(['E', 'EE', 'EEE', 'ER', 'LE', 'LLE']));
  });

  test("fetches the seed's own files on its host before the next page there", () => {
    const main = on.requests.filter((r) => r.host === site.host && !isHousekeepingPath(r.path)).map((r) => r.path);
    expect(main[0]).toBe('/');
    const nextPage = main.findIndex((p) => p !== '/' && site.pages.some((pg) => pg.target === p));
    const seedsOwn = site.requisites.filter((r) => r.host === site.host && !r.hops.includes('L')).map((r) => r.target);
    expect(main.slice(1, nextPage).sort()).toEqual(seedsOwn.sort());
  });
});

test("with requisites 'off', fetches the pages and none of their files", () => {
  expect(off.result).toMatchObject({ status: 'completed', pages: site.pages.length });
  // Absent from a campaign without embeds.
  expect(off.result.embeds).toBeUndefined();
  const fetched = off.requests.filter((r) => !isHousekeepingPath(r.path)).map(key);
  expect(fetched.sort()).toEqual(site.pages.map((p) => key({ host: p.host, path: p.target })).sort());
  expect(off.requests.filter((r) => r.host === site.cdnHost)).toEqual([]);
  expect([...off.lines.values()].filter((e) => e.kind === 'embed')).toEqual([]);
});

// ---- replay ------------------------------------------------------------------

/** What the page shows, read in the browser (a string, so the test compiles without the DOM's types). */
const PAGE_STATE = `(async () => {
  await document.fonts.ready;
  const style = (sel, prop) => { const el = document.querySelector(sel); return el ? getComputedStyle(el).getPropertyValue(prop) : null; };
  return {
    deepColour: style('#deep', 'color'),
    cdnBorderColour: style('#cdn-box', 'border-left-color'),
    cdnImportColour: style('#cdn-more', 'color'),
    glyphWidth: document.querySelector('#glyph').getBoundingClientRect().width,
    app: document.documentElement.getAttribute('data-app'),
    images: [...document.images].map((i) => ({ id: i.id, src: i.currentSrc.replace(/^.*\\//, ''), complete: i.complete, width: i.naturalWidth })),
  };
})()`;

interface PageState {
  deepColour: string | null;
  cdnBorderColour: string | null;
  cdnImportColour: string | null;
  glyphWidth: number;
  app: string | null;
  images: { id: string; src: string; complete: boolean; width: number }[];
}

interface Loaded {
  state: PageState;
  /**
   * Original URLs the page requested and whether each was answered from the
   * archive: on the live site every answer counts; through pywb only those
   * with a Memento-Datetime header, which pywb puts on what it serves from
   * the archive and not on its "URL Not Found" page (404).
   */
  answered: Map<string, boolean>;
  /** Requests that went anywhere but pywb: the replayed page reaching the live web. */
  leaks: string[];
}

/**
 * Loads a page in a fresh browser context (an empty cache, so every file it
 * needs is requested): `replay` gives pywb's address and collection, without
 * it the page is loaded from the live test web.
 */
async function loadPage(original: string, replay?: { base: string; coll: string; shot?: string }): Promise<Loaded> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
  try {
    const tab = await context.newPage();
    tab.setDefaultTimeout(60_000);
    const answered = new Map<string, boolean>();
    const leaks: string[] = [];
    const replayUrl = replay && new RegExp(`^${replay.base}/${replay.coll}/(?:\\d{0,14}(?:[a-z]{2}_)?/)?(https?://.*)$`);
    tab.on('request', (req) => {
      const u = req.url();
      if (replay && !u.startsWith(`${replay.base}/`) && !/^(data|blob|about):/.test(u)) leaks.push(u);
    });
    tab.on('response', (res) => {
      const m = replayUrl ? replayUrl.exec(res.url()) : /^https?:/.test(res.url()) ? [res.url(), res.url()] : null;
      if (!m) return;
      const archived = !replay || res.headers()['memento-datetime'] !== undefined;
      const u = normalizeUrl(m[1]);
      answered.set(u, (answered.get(u) ?? true) && archived);
    });
    await tab.goto(replay ? `${replay.base}/${replay.coll}/${original}` : original, { waitUntil: 'networkidle' });
    const state = (await tab.evaluate(PAGE_STATE)) as PageState;
    if (replay?.shot) await screenshot(tab, replay.shot, { fullPage: true });
    return { state, answered, leaks };
  } finally {
    await context.close();
  }
}

async function cli(args: string[]): Promise<string> {
  const c = crawlerCommand(args);
  const { stdout } = await run(c.command, c.args, { env: process.env });
  return stdout.trim().split('\n').pop()!;
}

/** Every page of the site replayed from `coll`, against the same page loaded live: the "Replay checked by a real browser". */
async function checkReplay(base: string, coll: string): Promise<void> {
  const { checks } = site;
  const glyphWidth = checks.font.glyphs * checks.font.advanceEm * checks.font.fontSizePx;
  for (const p of site.pages) {
    const original = h.web.url(p.host, p.target);
    const shot = p.target === '/' ? `complete-archive-${coll}-home` : undefined;
    const { state, answered, leaks } = await loadPage(original, { base, coll, shot });
    expect({ page: p.target, leaks }).toEqual({ page: p.target, leaks: [] });
    // Replayed, the page asks for what it asked for live, and gets all of it from the archive but the disallowed image.
    expect({ page: p.target, requested: [...answered.keys()].sort() }).toEqual({ page: p.target, requested: [...live.get(p.target)!.answered.keys()].sort() });
    const misses = [...answered].filter(([, archived]) => !archived).map(([u]) => u);
    expect({ page: p.target, misses }).toEqual({ page: p.target, misses: p.target === '/' ? [url(site.disallowed)] : [] });
    for (const target of ['/static/base/deep/palette.css', '/static/fonts/archive.ttf']) {
      expect({ page: p.target, target, answered: answered.get(url({ host: site.host, target })) }).toEqual({ page: p.target, target, answered: true });
    }
    // The innermost @import applied, the CDN's stylesheet and its @import applied, the web font drew its wide box.
    expect({ page: p.target, ...state, images: undefined }).toEqual({
      page: p.target,
      deepColour: checks.deepColour,
      cdnBorderColour: checks.cdnBorderColour,
      cdnImportColour: checks.cdnImportColour,
      glyphWidth,
      app: 'ran',
      images: undefined,
    });
    // Every image drew as it did live (the lazy ones from the address the script swapped in), but the tracker, never archived.
    const liveImages = live.get(p.target)!.state.images.map((i) => (i.id === 'tracker' ? { ...i, width: 0 } : i));
    expect({ page: p.target, images: state.images }).toEqual({ page: p.target, images: liveImages });
  }
}

/** The live pages as Chromium loads them from the test web: what a replay must match. */
const live = new Map<string, Loaded>();

describe('replayed in Chromium', () => {
  let pywb: Pywb;

  beforeAll(async () => {
    for (const p of site.pages) live.set(p.target, await loadPage(h.web.url(p.host, p.target)));
    const id = on.result.campaignId;
    const cdxj = await cli(['cdxj', id, '--out', on.outDir]);
    const wacz = path.join(h.outDir, `${id}.wacz`);
    expect(await cli(['export', id, '--wacz', wacz, '--out', on.outDir])).toBe(wacz);
    const root = path.join(h.outDir, `pywb-${id}`);
    fs.mkdirSync(root, { recursive: true });
    // Unframed replay: the page Chromium shows is the archived page itself, not a frame around it.
    fs.writeFileSync(
      path.join(root, 'config.yaml'),
      `collections:\n  crawl:\n    index_paths: ${cdxj}\n    archive_paths: ${path.join(on.outDir, 'warc')}/\nframed_replay: false\n`,
    );
    await run(path.join(tools.bin, 'wb-manager'), ['init', 'pkg'], { cwd: root });
    await run(path.join(tools.bin, 'wb-manager'), ['add', 'pkg', wacz, '--unpack-wacz'], { cwd: root });
    pywb = await startPywb(tools, root, 'crawl');
    pywbs.push(pywb);
  });

  test('the live pages, the reference, show every check and draw every image', () => {
    const { checks } = site;
    for (const p of site.pages) {
      const { state, answered } = live.get(p.target)!;
      expect({ page: p.target, deep: state.deepColour, cdn: state.cdnBorderColour, font: state.glyphWidth }).toEqual({
        page: p.target,
        deep: checks.deepColour,
        cdn: checks.cdnBorderColour,
        font: checks.font.glyphs * checks.font.advanceEm * checks.font.fontSizePx,
      });
      for (const i of state.images) expect({ page: p.target, ...i, drawn: i.complete && i.width > 0 }).toEqual({ page: p.target, ...i, drawn: true });
      // Every file a page loads is one the crawl was meant to capture (or the disallowed image).
      const known = new Set([...site.pages, ...site.requisites, site.disallowed].map(url));
      for (const u of answered.keys()) expect({ page: p.target, u, known: known.has(u) }).toEqual({ page: p.target, u, known: true });
    }
  });

  test('from our WARCs and CDXJ, every page whole: no request missing but the disallowed one, styles, font and images applied', async () => {
    await checkReplay(pywb.base, 'crawl');
  });

  test('from the WACZ `crawler export --wacz` writes, the same', async () => {
    await checkReplay(pywb.base, 'pkg');
  });
});
