// Issue 26, first slice: `render: browser` on a client-rendered site
// (test/web/spa-site.ts: one shell for every route, its links, title and text
// built by a script from JSON it fetches, History API routing, an image added
// by the script). Rendered, the crawl finds and stores every page, each
// index line saying how its render ended, and the WARC holds the documents as
// the server sent them and every request the pages made (the script, the
// JSON, the image), each requested once however many pages use it; with
// render off (the default) only the shell is found. Then pywb replays the
// rendered crawl from our own WARCs and the CDXJ `crawler cdxj` builds, in
// Chromium: each page shows its rendered title, text and links, its script,
// JSON and image answered from the archive and nothing reaching the live
// web. Real workers, Temporal and Redis; the workers' Chromium is Debian's.
// The rendered crawl has browser.screenshot on: each page's screenshots are
// in the WARC as Browsertrix Crawler stores them, resource records
// `urn:view:` (the viewport, PNG), `urn:thumbnail:` (640 × 360 JPEG) and
// `urn:fullPage:` (PNG); `crawler cdxj` indexes them as pywb's indexer does,
// and pywb serves a page's thumbnail from that index at the page's time (how
// ReplayWeb.page shows it beside the page in its list).
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
import { spaSite, type SpaSite } from '../web/spa-site';
import type { RequestRecord } from '../web/test-web';
import { findOrInstallChromium, launchBrowser, screenshot } from '../support/browser';
import { createHarness, isHousekeepingPath, launch, minGapsByHost, outputOf, type Harness } from '../support/harness';
import { startPywb, type Pywb } from '../support/pywb';

jest.setTimeout(300_000);
const run = promisify(execFile);

interface Crawl {
  result: CampaignResult;
  requests: RequestRecord[];
  lines: IndexEntry[];
  records: WarcReadRecord[];
  outDir: string;
}

let h: Harness;
let site: SpaSite;
let on: Crawl;
let off: Crawl;
let pywb: Pywb | undefined;
let browser: Browser | undefined;

const url = (path: string) => normalizeUrl(h.web.url(site.host, path));

async function crawl(render: 'browser' | 'off'): Promise<Crawl> {
  h.web.clearRequests();
  const handle = await launch(h, {
    seeds: [h.web.url(site.host, '/')],
    render,
    politeness: { minDelayMs: 20 },
    ...(render === 'browser' ? { browser: { screenshot: true } } : {}),
  });
  const result = await handle.result();
  const out = outputOf(h, result.campaignId);
  return { result, requests: h.web.requests(), lines: await out.sealed(), records: await out.warc(), outDir: out.dir };
}

const pagesOf = (c: Crawl) =>
  c.lines
    .filter((e) => !e.kind && e.outcome === 'fetched')
    .map((e) => e.url)
    .sort();
const responsesOf = (c: Crawl) => c.records.filter((r) => (r.type === 'response' || r.type === 'revisit') && r.targetUri).map((r) => normalizeUrl(r.targetUri!));

beforeAll(async () => {
  // The workers find Chromium the same way; installed here first so their first page does not wait for apt-get.
  await findOrInstallChromium((m) => process.stderr.write(`[browser] ${m}\n`));
  h = await createHarness('rendering', { workers: 1 });
  site = spaSite();
  h.web.addSite(site.spec);
  on = await crawl('browser');
  off = await crawl('off');
});

afterAll(async () => {
  await pywb?.stop();
  await browser?.close();
  await h?.close();
});

describe('render: browser on a client-rendered site', () => {
  test('finds and fetches every page, links taken from the rendered DOM', () => {
    expect(on.result.status).toBe('completed');
    expect(pagesOf(on)).toEqual(site.pages.map((p) => url(p.path)).sort());
  });

  test("each page's index line says it was rendered and how the render ended", () => {
    for (const p of site.pages) {
      const line = on.lines.find((e) => e.url === url(p.path));
      expect({ url: p.path, done: line?.render?.done, error: line?.render?.error }).toEqual({ url: p.path, done: 'quiet', error: undefined });
    }
    // The first page fetched its script, its JSON and its image; later pages of the session take the script and image from the session.
    expect(on.lines.find((e) => e.url === url('/'))?.render?.requests).toBeGreaterThanOrEqual(3);
  });

  test('archives each document as the server sent it, and the script, the JSON and the image the pages requested', () => {
    const stored = responsesOf(on);
    for (const p of site.pages) expect({ p: p.path, has: stored.includes(url(p.path)) }).toEqual({ p: p.path, has: true });
    for (const f of Object.values(site.files)) expect({ f, has: stored.includes(url(f)) }).toEqual({ f, has: true });
    // The document record is the shell (what replay serves), not the rendered DOM.
    const home = on.records.find((r) => r.type === 'response' && r.targetUri && normalizeUrl(r.targetUri) === url('/'));
    expect(home?.payload?.toString('utf8')).toContain('<div id="app"></div>');
    expect(home?.payload?.toString('utf8')).not.toContain('Spa home');
  });

  test('requests the shared script and image once: answered from the session, not fetched again as embeds', () => {
    const count = (path: string) => on.requests.filter((r) => r.host === site.host && r.path === path).length;
    expect({ script: count(site.files.script), image: count(site.files.image) }).toEqual({ script: 1, image: 1 });
    // Every page once.
    for (const p of site.pages) expect({ p: p.path, n: count(p.path) }).toEqual({ p: p.path, n: 1 });
    // Nothing the site does not serve (the browser asks only for what the script names).
    const paths = new Set(on.requests.filter((r) => !isHousekeepingPath(r.path)).map((r) => r.path));
    expect([...paths].sort()).toEqual([...site.pages.map((p) => p.path), ...Object.values(site.files)].sort());
  });
});

/** A PNG's size from its IHDR chunk, or null when the bytes are not a PNG. */
function pngSize(b: Buffer | undefined): { width: number; height: number } | null {
  const magic = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (!b || b.length < 24 || !b.subarray(0, 8).equals(magic) || b.toString('latin1', 12, 16) !== 'IHDR') return null;
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

/** A JPEG's size from its first start-of-frame segment, or null when the bytes are not a JPEG. */
function jpegSize(b: Buffer | undefined): { width: number; height: number } | null {
  if (!b || b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return null;
  for (let i = 2; i + 9 < b.length;) {
    if (b[i] !== 0xff) return null;
    const marker = b[i + 1]!;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
    i += 2 + b.readUInt16BE(i + 2);
  }
  return null;
}

/** Browsertrix's three screenshots of a page: its name, media type, and the size the crawl's 1280 × 720 viewport gives it. */
const SHOTS = [
  { kind: 'view', type: 'image/png', size: (b: Buffer | undefined) => pngSize(b), width: 1280, height: (h: number) => h === 720 },
  { kind: 'thumbnail', type: 'image/jpeg', size: (b: Buffer | undefined) => jpegSize(b), width: 640, height: (h: number) => h === 360 },
  { kind: 'fullPage', type: 'image/png', size: (b: Buffer | undefined) => pngSize(b), width: 1280, height: (h: number) => h >= 720 },
] as const;

/** The 14-digit timestamp of a page as a WACZ page list gives it (its index line's fetch time). */
const tsOf = (p: string) =>
  on.lines
    .find((e) => e.url === url(p))!
    .fetchedAt.replace(/\D/g, '')
    .slice(0, 14);

describe('browser.screenshot on the rendered crawl', () => {
  test("each rendered page's view, thumbnail and full page, as Browsertrix stores them: urn:view: PNG, urn:thumbnail: 640 × 360 JPEG, urn:fullPage: PNG", () => {
    const shots = on.records.filter((r) => r.type === 'resource');
    expect(shots.map((r) => r.targetUri).sort()).toEqual(site.pages.flatMap((p) => SHOTS.map((s) => `urn:${s.kind}:${url(p.path)}`)).sort());
    for (const r of shots) {
      const shot = SHOTS.find((s) => r.targetUri!.startsWith(`urn:${s.kind}:`))!;
      const size = shot.size(r.payload);
      expect({ uri: r.targetUri, type: r.headers['Content-Type'], digest: r.blockDigestOk, width: size?.width, height: size !== null && shot.height(size.height) }).toEqual({
        uri: r.targetUri,
        type: shot.type,
        digest: true,
        width: shot.width,
        height: true,
      });
    }
    // Off by default: the crawl without it has none.
    expect(off.records.filter((r) => r.type === 'resource')).toEqual([]);
  });

  test("`crawler cdxj` indexes every page and each of its screenshots, keyed as pywb's indexer keys them", async () => {
    const c = crawlerCommand(['cdxj', on.result.campaignId, '--out', on.outDir]);
    const cdxj = (await run(c.command, c.args, { env: process.env })).stdout.trim().split('\n').pop()!;
    const lines = fs
      .readFileSync(cdxj, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => ({ key: l.slice(0, l.indexOf(' ')), ...(JSON.parse(l.slice(l.indexOf('{'))) as { url: string; mime: string; status?: string }) }));
    const urls = lines.map((l) => l.url);
    const pages = urls.filter((u) => !u.startsWith('urn:')).map((u) => normalizeUrl(u));
    for (const p of site.pages) expect({ p: p.path, indexed: pages.includes(url(p.path)) }).toEqual({ p: p.path, indexed: true });
    const urn = lines.filter((l) => l.url.startsWith('urn:'));
    expect(urn.map((l) => l.url).sort()).toEqual(site.pages.flatMap((p) => SHOTS.map((s) => `urn:${s.kind}:${url(p.path)}`)).sort());
    // Python surt keys a URN as itself in lower case, less its trailing slash; a resource record has its media type and no status.
    for (const l of urn) {
      const shot = SHOTS.find((s) => l.url.startsWith(`urn:${s.kind}:`))!;
      expect({ key: l.key, mime: l.mime, status: l.status }).toEqual({ key: l.url.replace(/\/$/, '').toLowerCase(), mime: shot.type, status: undefined });
    }
  });
});

describe('render: off (the default) on the same site', () => {
  test('finds only the shell: its links exist only after its script runs', () => {
    expect(off.result.status).toBe('completed');
    expect(pagesOf(off)).toEqual([url('/')]);
    expect(off.lines.some((e) => e.render !== undefined)).toBe(false);
    // The shell's script is still archived as its requisite; the JSON and the image, which only the script asks for, are not.
    const stored = responsesOf(off);
    expect(stored).toContain(url(site.files.script));
    expect(stored).not.toContain(url(site.files.data));
    expect(stored).not.toContain(url(site.files.image));
  });
});

// ---- politeness --------------------------------------------------------------

describe('politeness in browser mode, two client-rendered hosts crawled at once', () => {
  /** Each host's delay: long beside a render, so a navigation that did not wait for it would show. */
  const DELAY_MS = 400;
  const sites = [spaSite('a.polite-spa.test'), spaSite('b.polite-spa.test')];
  let polite: Crawl;

  beforeAll(async () => {
    for (const s of sites) h.web.addSite(s.spec);
    h.web.clearRequests();
    // A longer quiet period than the default: this test is about spacing, and on a machine busy with
    // the whole suite a starved page may start its script's fetch more than 500 ms after load, when a
    // render is already counted done without its links (seen once in a full run; docs/rendering.md).
    const handle = await launch(h, {
      seeds: sites.map((s) => h.web.url(s.host, '/')),
      scope: { mode: 'any' },
      render: 'browser',
      browser: { quietMs: 1_500 },
      politeness: { minDelayMs: DELAY_MS },
    });
    const result = await handle.result();
    const out = outputOf(h, result.campaignId);
    polite = { result, requests: h.web.requests(), lines: await out.sealed(), records: await out.warc(), outDir: out.dir };
  });

  test("navigations to a host are never closer than its delay: each document request arrives at least the delay after the host's previous one", () => {
    expect(polite.result.status).toBe('completed');
    for (const s of sites) {
      const documents = polite.requests.filter((r) => r.host === s.host && s.pages.some((p) => p.path === r.path));
      expect(documents.map((r) => r.path).sort()).toEqual(s.pages.map((p) => p.path).sort());
      expect({ host: s.host, minGap: minGapsByHost(documents).get(s.host)! >= DELAY_MS }).toEqual({ host: s.host, minGap: true });
    }
  });

  test('measured: the requests per second each host saw (written to the log for docs/rendering.md)', () => {
    // The two hosts at DELAY_MS, and the first crawl's one host at 20 ms: what a site sees at most from one session.
    const measured = [...sites.map((s) => ({ s, requests: polite.requests, delay: DELAY_MS })), { s: site, requests: on.requests, delay: 20 }];
    for (const { s, requests, delay } of measured) {
      const all = requests.filter((r) => r.host === s.host).sort((a, b) => a.t - b.t);
      const documents = all.filter((r) => s.pages.some((p) => p.path === r.path));
      const spanS = (all[all.length - 1]!.t - all[0]!.t) / 1000;
      const gaps = documents.slice(1).map((r, i) => Math.round(r.t - documents[i]!.t));
      process.stderr.write(
        `[politeness] ${s.host}: ${all.length} requests (${documents.length} documents) in ${spanS.toFixed(2)} s = ${(all.length / spanS).toFixed(2)} req/s, ` +
          `${(documents.length / spanS).toFixed(2)} pages/s; document gaps ${gaps.join(', ')} ms (delay ${delay} ms)\n`,
      );
      // Every page and the files they share, nothing twice but the JSON each page's script fetches.
      expect(all.filter((r) => r.path === s.files.data)).toHaveLength(s.pages.length);
    }
  });
});

// ---- replay ------------------------------------------------------------------

/** What the replayed page shows, read in the browser (a string, so the test compiles without the DOM's types). */
const SHOWN = `(() => {
  const text = (sel) => document.querySelector(sel)?.textContent ?? null;
  const img = document.querySelector('#logo');
  return {
    title: document.title,
    heading: text('#title'),
    text: text('#text'),
    links: [...document.querySelectorAll('nav a')].map((a) => a.textContent),
    image: img ? img.complete && img.naturalWidth > 0 : null,
  };
})()`;

describe('the rendered crawl replayed by pywb from our WARCs and CDXJ, in Chromium', () => {
  let tools: PyReplayTools;
  const COLL = 'spa';

  beforeAll(async () => {
    tools = await findOrInstallPyReplayTools((m) => process.stderr.write(`[replay tools] ${m}\n`));
    const id = on.result.campaignId;
    const c = crawlerCommand(['cdxj', id, '--out', on.outDir]);
    const cdxj = (await run(c.command, c.args, { env: process.env })).stdout.trim().split('\n').pop()!;
    const root = path.join(h.outDir, `pywb-${id}`);
    fs.mkdirSync(root, { recursive: true });
    // Unframed replay: the page Chromium shows is the archived page itself, not a frame around it.
    fs.writeFileSync(
      path.join(root, 'config.yaml'),
      `collections:\n  ${COLL}:\n    index_paths: ${cdxj}\n    archive_paths: ${path.join(on.outDir, 'warc')}/\nframed_replay: false\n`,
    );
    pywb = await startPywb(tools, root, COLL);
    // No name resolves: a replayed page that reached for the live site would fail (and be listed as a leak).
    browser = await launchBrowser((m) => process.stderr.write(`[browser] ${m}\n`), ['--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1']);
  });

  test("pywb serves each page's thumbnail and view from the index at the page's time, as ReplayWeb.page asks for them beside its page list", async () => {
    for (const p of site.pages) {
      for (const shot of SHOTS.filter((s) => s.kind !== 'fullPage')) {
        const stored = on.records.find((r) => r.type === 'resource' && r.targetUri === `urn:${shot.kind}:${url(p.path)}`)!;
        const res = await fetch(`${pywb!.base}/${COLL}/${tsOf(p.path)}id_/urn:${shot.kind}:${url(p.path)}`);
        const body = Buffer.from(await res.arrayBuffer());
        expect({ p: p.path, kind: shot.kind, status: res.status, type: res.headers.get('content-type'), same: body.equals(stored.payload!) }).toEqual({
          p: p.path,
          kind: shot.kind,
          status: 200,
          type: shot.type,
          same: true,
        });
      }
    }
  });

  test('each page shows its rendered title, text, links and image, every request answered from the archive', async () => {
    for (const p of site.pages) {
      const context = await browser!.newContext();
      try {
        const tab = await context.newPage();
        tab.setDefaultTimeout(60_000);
        const leaks: string[] = [];
        const missed: string[] = [];
        const archived = new Set<string>();
        tab.on('request', (req) => {
          if (!req.url().startsWith(`${pywb!.base}/`) && !/^(data|blob|about):/.test(req.url())) leaks.push(req.url());
        });
        tab.on('response', (res) => {
          const m = new RegExp(`^${pywb!.base}/${COLL}/(?:\\d{0,14}(?:[a-z]{2}_)?/)?(https?://.*)$`).exec(res.url());
          if (!m) return;
          // pywb marks what it serves from the archive with Memento-Datetime; its "not found" page has none.
          if (res.headers()['memento-datetime'] !== undefined) archived.add(normalizeUrl(m[1]!));
          else missed.push(m[1]!);
        });
        await tab.goto(`${pywb!.base}/${COLL}/${h.web.url(site.host, p.path)}`, { waitUntil: 'networkidle' });
        await tab.waitForFunction('document.querySelector("#title") !== null');
        const shown = await tab.evaluate(SHOWN);
        if (p.path === '/') await screenshot(tab, 'rendering-replay-home', { fullPage: true });
        expect({ page: p.path, shown }).toEqual({ page: p.path, shown: { title: p.title, heading: p.title, text: p.text, links: p.links, image: true } });
        expect({ page: p.path, leaks, missed }).toEqual({ page: p.path, leaks: [], missed: [] });
        // The script and the JSON came from the archive, not from anywhere else.
        for (const f of Object.values(site.files)) expect({ page: p.path, f, archived: archived.has(url(f)) }).toEqual({ page: p.path, f, archived: true });
      } finally {
        await context.close();
      }
    }
  });
});
