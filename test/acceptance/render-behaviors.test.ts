// Issue 41, part 2: the browser behaviors (src/browser/behaviors.ts) on a
// site whose content appears only when someone interacts with it
// (test/web/behaviors-site.ts): a "Load more" button, a feed in a scrolling
// box of its own, a `<details>` block, an accordion and tabs, each loading
// links and images by script, and media players that fetch only once they
// play (a script player's manifest and segments, a podcast's sound file).
// Two crawls of the same site in browser mode,
// at the same time, each on a copy under a host of its own: one with
// browser.autoclick, scrollBoxes, expand and autoplay on, one with the defaults (all
// off). Only the first finds every item's page and archives every item's
// image and the JSON it came from; it never submits the page's form, never
// leaves the page for the URL a button's script sets (it follows it as a
// link) and still follows the link dressed as a button; the index lines say
// what each behavior did. A third copy is crawled with the defaults and the
// documented site-specific behavior (examples/load-more-handler.ts), which
// finds the "Load more" items alone. Then pywb replays both crawls from our WARCs and
// CDXJ, in Chromium, doing what a reader would (click, scroll the box, open):
// the first shows every item and image, each answered from the archive; the
// second has none of them to show. Real workers, Temporal and Redis; the
// workers' Chromium is Debian's.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { findOrInstallPyReplayTools } from '../../src/stack/tools';
import { fromArchive } from '../../src/qa/replay-page';
import type { IndexEntry } from '../../src/storage/index-writer';
import type { WarcReadRecord } from '../../src/storage/warc-reader';
import { normalizeUrl } from '../../src/url/normalize';
import type { CampaignInput } from '../../src/config/campaign';
import type { CampaignResult } from '../../workflows/messages';
import { behaviorsSite, BOX_BATCHES, EXPAND_RENDERED_TITLE, ITEMS_PER_BATCH, MEDIA_SEGMENTS, MORE_BATCHES, type BehaviorsSite } from '../web/behaviors-site';
import { runCrawlerInProcess } from '../support/in-process-cli';
import type { RequestRecord } from '../web/test-web';
import { findOrInstallChromium, launchBrowser, screenshot } from '../support/browser';
import { createHarness, launch, outputOf, type Harness } from '../support/harness';
import { startPywb, type Pywb } from '../support/pywb';
import { readDataset, type DatasetLine } from '../../src/storage/dataset-writer';

jest.setTimeout(600_000);
const run = promisify(execFile);
const LOAD_MORE = path.resolve(__dirname, '../../examples/load-more-handler.ts');

interface Crawl {
  site: BehaviorsSite;
  result: CampaignResult;
  requests: RequestRecord[];
  lines: IndexEntry[];
  records: WarcReadRecord[];
  outDir: string;
  dataset: DatasetLine[];
}

let h: Harness;
/** With browser.autoclick, scrollBoxes, expand and autoplay on. */
let on: Crawl;
/** The defaults: none. */
let off: Crawl;
/** The defaults, with examples/load-more-handler.ts: a site-specific "load more" loop in onRender. */
let hooked: Crawl;

const url = (c: Crawl, p: string) => normalizeUrl(h.web.url(c.site.host, p));
const line = (c: Crawl, p: string) => c.lines.find((e) => e.url === url(c, p));
const fetched = (c: Crawl, p: string) => line(c, p)?.outcome === 'fetched';
const archived = (c: Crawl) => new Set(c.records.filter((r) => (r.type === 'response' || r.type === 'revisit') && r.targetUri).map((r) => normalizeUrl(r.targetUri!)));
const requested = (c: Crawl, p: string) => c.requests.some((r) => r.path.split('?')[0] === p);
const parts = ['more', 'box', 'expand'] as const;
/** What /media's players fetch once they play. */
const mediaFiles = (c: Crawl) => [c.site.media.manifest, ...c.site.media.segments, c.site.media.audio];

/** A page as a WACZ lists it (pages/pages.jsonl, pages/extraPages.jsonl). */
interface WaczLine {
  id: string;
  url: string;
  ts: string;
  title?: string;
  depth?: number;
  seed?: boolean;
  text?: string;
}

/** The WACZ's page lists, read by Python's zipfile (an independent reader). */
const PY_PAGES = String.raw`
import sys, json, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = z.namelist()
    print(json.dumps({'pages': z.read('pages/pages.jsonl').decode('utf-8'),
                      'extraPages': z.read('pages/extraPages.jsonl').decode('utf-8') if 'pages/extraPages.jsonl' in names else None}))
`;

async function crawl(copy: BehaviorsSite, extra: Partial<CampaignInput>): Promise<Crawl> {
  const handle = await launch(h, { seeds: [h.web.url(copy.host, '/')], render: 'browser', politeness: { minDelayMs: 20 }, ...extra });
  const result = await handle.result();
  const out = outputOf(h, result.campaignId);
  const requests = h.web.requests().filter((r) => r.host === copy.host);
  return { site: copy, result, requests, lines: await out.sealed(), records: await out.warc(), outDir: out.dir, dataset: await readDataset(out.dir) };
}

beforeAll(async () => {
  // The workers find Chromium the same way; installed here first so their first page does not wait for apt-get.
  await findOrInstallChromium((m) => process.stderr.write(`[browser] ${m}\n`));
  h = await createHarness('render-behaviors', { workers: 1 });
  const onSite = behaviorsSite('on.behaviors.test');
  const offSite = behaviorsSite('off.behaviors.test');
  const hookedSite = behaviorsSite('hooked.behaviors.test');
  for (const s of [onSite, offSite, hookedSite]) h.web.addSite(s.spec);
  [on, off, hooked] = await Promise.all([
    // A shorter quiet period than the default: it is waited for after every click and scrolling step.
    // browser.text too: its WACZ lists each page's text.
    crawl(onSite, { browser: { autoclick: true, scrollBoxes: true, expand: true, autoplay: true, text: true, quietMs: 250, pageTimeoutMs: 30_000 } }),
    crawl(offSite, {}),
    crawl(hookedSite, { handler: LOAD_MORE }),
  ]);
});

afterAll(async () => {
  await h?.close();
});

describe('browser.autoclick, scrollBoxes and expand on', () => {
  test('every item behind a click, a scrolled box or an opened panel: its page crawled, its image and its JSON archived', () => {
    expect(on.result.status).toBe('completed');
    for (const part of parts) {
      const hidden = on.site.hidden[part];
      for (const p of hidden.links) expect({ p, line: line(on, p) }).toMatchObject({ p, line: { outcome: 'fetched', depth: 2 } });
      for (const p of [...hidden.images, ...hidden.data]) expect({ p, archived: archived(on).has(url(on, p)) }).toEqual({ p, archived: true });
    }
    // The first tab's link, which the second tab's panel took out of the DOM, is followed too.
    expect(fetched(on, on.site.firstTabLink)).toBe(true);
  });

  test('autoclick never submits a form, never leaves the page (the URL a click tried is followed as a link), never clicks a link', () => {
    expect(requested(on, on.site.formAction)).toBe(false);
    // The button's script set location: the page stayed (its items are there, above), and the URL was crawled as a page one hop below it.
    expect(line(on, on.site.scriptTarget)).toMatchObject({ outcome: 'fetched', depth: 2, hops: 'LL' });
    expect(on.requests.filter((r) => r.path === on.site.scriptTarget)).toHaveLength(1);
    // The click that moved the URL with the History API: undone, and its URL crawled as a page.
    expect(line(on, on.site.routedTarget)).toMatchObject({ outcome: 'fetched', depth: 2, hops: 'LL' });
    expect(fetched(on, on.site.buttonLink)).toBe(true);
  });

  test("each page's index line says what the behaviors did", () => {
    const more = line(on, '/load-more')?.render?.behaviors;
    // MORE_BATCHES clicks of "Load more" (then it is gone), one each of "Go elsewhere" and "Route elsewhere".
    expect(more).toMatchObject({ clicks: MORE_BATCHES + 2, navigations: 2 });
    expect(more!.links).toBeGreaterThanOrEqual(MORE_BATCHES * ITEMS_PER_BATCH + 1);
    const box = line(on, '/box-feed')?.render?.behaviors;
    expect(box).toMatchObject({ boxes: 1 });
    expect(box!.boxSteps).toBeGreaterThanOrEqual(BOX_BATCHES);
    const expand = line(on, '/expand')?.render?.behaviors;
    // The details, the accordion, the second tab, then the first again (no longer selected).
    expect(expand?.opened).toBeGreaterThanOrEqual(3);
    for (const p of ['/load-more', '/box-feed', '/expand'])
      expect({ p, end: line(on, p)?.render?.behaviors?.end, done: line(on, p)?.render?.done }).toEqual({ p, end: 'done', done: 'quiet' });
    // For docs/rendering.md ("Costs"): what the behaviors took, beside the same pages without them.
    for (const p of ['/load-more', '/box-feed', '/expand'])
      process.stderr.write(`[behaviors] ${p}: render ${line(on, p)?.render?.ms} ms with them (quietMs 250), ${line(off, p)?.render?.ms} ms without (the default quietMs)\n`);
  });
});

describe('browser.autoplay on', () => {
  test("what the players fetch only once they play is requested once through the crawler and archived: the manifest, every segment, the podcast's sound file", () => {
    for (const p of mediaFiles(on)) {
      expect({ p, archived: archived(on).has(url(on, p)), requests: on.requests.filter((r) => r.path === p).length }).toEqual({ p, archived: true, requests: 1 });
    }
    // Both players played, each once; a page with no media plays nothing.
    expect(line(on, '/media')?.render?.behaviors).toMatchObject({ played: 2, end: 'done' });
    expect(line(on, '/load-more')?.render?.behaviors?.played).toBe(0);
  });
});

describe('the defaults (all off)', () => {
  test('nothing behind an interaction is found, requested or archived; the index lines have no behaviors', () => {
    expect(off.result.status).toBe('completed');
    for (const part of parts) {
      const hidden = off.site.hidden[part];
      for (const p of hidden.links) expect({ p, found: line(off, p) !== undefined }).toEqual({ p, found: false });
      for (const p of [...hidden.images, ...hidden.data])
        expect({ p, requested: requested(off, p), archived: archived(off).has(url(off, p)) }).toEqual({ p, requested: false, archived: false });
    }
    for (const p of ['/load-more', '/box-feed', '/expand', '/media']) expect(line(off, p)?.render?.behaviors).toBeUndefined();
    // Not played, the players fetched nothing: the page itself was crawled, none of their files.
    expect(fetched(off, '/media')).toBe(true);
    for (const p of mediaFiles(off)) expect({ p, requested: requested(off, p), archived: archived(off).has(url(off, p)) }).toEqual({ p, requested: false, archived: false });
    // What needs no interaction is found either way.
    expect(fetched(off, off.site.buttonLink)).toBe(true);
    expect(fetched(off, off.site.firstTabLink)).toBe(true);
    for (const p of [off.site.scriptTarget, off.site.routedTarget]) expect({ p, found: line(off, p) !== undefined }).toEqual({ p, found: false });
  });
});

describe("a site-specific behavior in the handler's onRender (examples/load-more-handler.ts, docs/handlers.md)", () => {
  test('its "load more" loop clicks until the button goes away: every item found and archived, with the behaviors off', () => {
    expect(hooked.result.status).toBe('completed');
    const more = hooked.site.hidden.more;
    for (const p of more.links) expect({ p, fetched: fetched(hooked, p) }).toEqual({ p, fetched: true });
    for (const p of [...more.images, ...more.data]) expect({ p, archived: archived(hooked).has(url(hooked, p)) }).toEqual({ p, archived: true });
    expect(hooked.dataset.filter((l) => l.url === url(hooked, '/load-more')).map((l) => l.item)).toEqual([{ clicks: MORE_BATCHES, items: MORE_BATCHES * ITEMS_PER_BATCH }]);
    // Only what it clicks: the box and the panels stay as they were.
    for (const p of hooked.site.hidden.box.links) expect({ p, found: line(hooked, p) !== undefined }).toEqual({ p, found: false });
    expect(line(hooked, '/load-more')?.render?.behaviors).toBeUndefined();
  });
});

// ---- replay ------------------------------------------------------------------

/**
 * What a replayed page shows: its items' links (their text: the path, which
 * replay does not rewrite) and whether each item's image loaded (a string:
 * the test compiles without the DOM's types).
 */
const ITEMS = `[...document.querySelectorAll('.item')].map((d) => {
  const img = d.querySelector('img');
  return { link: d.querySelector('a').textContent, image: !!img && img.complete && img.naturalWidth > 0 };
})`;

/** What /media's players got on a replayed page: the segments the script player loaded, and whether the sound file could play. */
const MEDIA_STATE = `(() => {
  const s = document.getElementById('status');
  const a = document.getElementById('episode');
  return { segments: s ? Number(s.dataset.segments) : 0, audio: !!a && a.error === null && a.readyState >= 2 };
})()`;

/** Does on the replayed page what the behaviors did, as a reader would. */
async function interact(tab: Page, p: string): Promise<void> {
  const pause = () => tab.waitForTimeout(500);
  if (p === '/load-more') {
    for (let i = 0; i < MORE_BATCHES && (await tab.locator('#more').count()) > 0; i++) {
      await tab.click('#more');
      await pause();
    }
  } else if (p === '/box-feed') {
    for (let i = 0; i < BOX_BATCHES + 1; i++) {
      await tab.evaluate("(() => { const b = document.getElementById('box'); b.scrollTop = b.scrollHeight; })()");
      await pause();
    }
  } else if (p === '/media') {
    // Play pressed on each player (muted: no gesture needed), then waited for until the video's script player has every
    // segment or its manifest failed, and the sound file played or failed.
    await tab.evaluate("(() => { for (const m of document.querySelectorAll('video, audio')) { m.muted = true; m.play().catch(() => {}); } })()");
    await tab.waitForFunction(
      `(() => { const s = document.getElementById('status'); const a = document.getElementById('episode');
        return (s.dataset.segments === '${MEDIA_SEGMENTS}' || s.dataset.failed !== undefined) && (a.error !== null || a.readyState >= 2); })()`,
    );
  } else {
    await tab.click('summary');
    await pause();
    await tab.click('#acc');
    await pause();
    await tab.click('[data-tab="2"]');
    await pause();
  }
  await tab.waitForLoadState('networkidle');
}

describe('both crawls replayed by pywb from our WARCs and CDXJ, in Chromium, with the interactions done by hand', () => {
  let pywb: Pywb | undefined;
  let browser: Browser | undefined;
  /** The rendered crawl's WACZ (`crawler export --wacz`): its page lists, and `wacz validate`'s verdict. */
  let wacz: { pages: WaczLine[]; extraPages: WaczLine[]; validated: string };

  beforeAll(async () => {
    const tools = await findOrInstallPyReplayTools((m) => process.stderr.write(`[replay tools] ${m}\n`));
    const root = path.join(h.outDir, 'pywb-behaviors');
    fs.mkdirSync(root, { recursive: true });
    let config = 'collections:\n';
    for (const [coll, c] of [
      ['clicked', on],
      ['plain', off],
    ] as const) {
      const cmd = crawlerCommand(['cdxj', c.result.campaignId, '--out', c.outDir]);
      const cdxj = (await run(cmd.command, cmd.args, { env: process.env })).stdout.trim().split('\n').pop()!;
      config += `  ${coll}:\n    index_paths: ${cdxj}\n    archive_paths: ${path.join(c.outDir, 'warc')}/\n`;
    }
    // Unframed replay: the page Chromium shows is the archived page itself, not a frame around it.
    fs.writeFileSync(path.join(root, 'config.yaml'), `${config}framed_replay: false\n`);
    // The rendered crawl's WACZ, checked by py-wacz and added to pywb as a collection of its own ("pkg") by pywb's own tool.
    const file = path.join(h.outDir, 'behaviors.wacz');
    const exported = await runCrawlerInProcess(['export', on.result.campaignId, '--wacz', file, '--out', on.outDir]);
    if (exported.code !== 0) throw new Error(`crawler export exited ${exported.code}:\n${exported.stderr}`);
    const [validated] = await Promise.all([
      run(path.join(tools.bin, 'wacz'), ['validate', '-f', file]),
      run(path.join(tools.bin, 'wb-manager'), ['init', 'pkg'], { cwd: root }).then(() =>
        run(path.join(tools.bin, 'wb-manager'), ['add', 'pkg', file, '--unpack-wacz'], { cwd: root }),
      ),
    ]);
    const lists = JSON.parse((await run(tools.python, ['-c', PY_PAGES, file])).stdout) as { pages: string; extraPages: string | null };
    const lines = (text: string | null) =>
      (text ?? '')
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((l) => JSON.parse(l) as WaczLine);
    wacz = { pages: lines(lists.pages), extraPages: lines(lists.extraPages), validated: validated.stdout };
    pywb = await startPywb(tools, root, 'clicked');
    // No name resolves: a replayed page that reached for the live site would fail (and be listed as a leak).
    browser = await launchBrowser((m) => process.stderr.write(`[browser] ${m}\n`), ['--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1']);
  });

  afterAll(async () => {
    await browser?.close();
    await pywb?.stop();
  });

  // Collection names YAML does not read as booleans (`on`, `off` are).
  async function replay(coll: 'clicked' | 'plain', c: Crawl, p: string) {
    const context = await browser!.newContext();
    try {
      const tab = await context.newPage();
      tab.setDefaultTimeout(60_000);
      const leaks: string[] = [];
      const missed: string[] = [];
      tab.on('request', (req) => {
        if (!req.url().startsWith(`${pywb!.base}/`) && !/^(data|blob|about):/.test(req.url())) leaks.push(req.url());
      });
      tab.on('response', (res) => {
        const m = new RegExp(`^${pywb!.base}/${coll}/(?:\\d{0,14}(?:[a-z]{2}_)?/)?(https?://.*)$`).exec(res.url());
        // pywb marks what it serves from the archive with Memento-Datetime (an XHR's answer with the record's own headers, prefixed); its "not found" page has neither.
        if (m && !fromArchive(res.headers())) missed.push(new URL(m[1]!).pathname);
      });
      await tab.goto(`${pywb!.base}/${coll}/${h.web.url(c.site.host, p)}`, { waitUntil: 'networkidle' });
      await interact(tab, p);
      const items = (await tab.evaluate(ITEMS)) as { link: string; image: boolean }[];
      if (coll === 'clicked' && p === '/load-more') await screenshot(tab, 'behaviors-replay-load-more', { fullPage: true });
      const media = (await tab.evaluate(MEDIA_STATE)) as { segments: number; audio: boolean };
      return { items, media, leaks, missed };
    } finally {
      await context.close();
    }
  }

  test("the WACZ lists the seed's page in pages.jsonl and the others in extraPages.jsonl, each with its title (the rendered one) and text, and pywb opens them from it", async () => {
    expect(wacz.validated).toContain('Validation succeeded');
    expect(wacz.pages.map((p) => [p.url, p.title, p.seed])).toEqual([[url(on, '/'), 'Behaviors home', true]]);
    const extra = new Map(wacz.extraPages.map((p) => [p.url, p]));
    // Every other page fetched is listed once, with its title; /expand with the title its script gave it.
    const fetchedPages = on.lines.filter((e) => !e.kind && e.warc && e.status === 200 && /^text\/html/.test(e.contentType ?? '') && e.depth > 0);
    expect(wacz.extraPages).toHaveLength(fetchedPages.length);
    for (const e of fetchedPages) expect({ url: e.url, title: extra.get(e.url)?.title }).toEqual({ url: e.url, title: e.title });
    expect(extra.get(url(on, '/expand'))?.title).toBe(EXPAND_RENDERED_TITLE);
    expect(extra.get(url(on, on.site.hidden.more.links[0]!))?.title).toBe(`Page ${on.site.hidden.more.links[0]!}`);
    // browser.text: each page with its text as a reader saw it once rendered, what the behaviors opened included.
    expect([...wacz.pages, ...wacz.extraPages].filter((p) => !p.text).map((p) => p.url)).toEqual([]);
    expect(wacz.pages[0]!.text).toContain('Behaviors home');
    for (const l of on.site.hidden.expand.links.slice(0, 2)) expect(extra.get(url(on, '/expand'))?.text).toContain(l);
    expect(extra.get(url(on, on.site.hidden.box.links[0]!))?.text).toContain('A page found behind an interaction.');
    // Opened from the package, in pywb, each listed page shows the title it is listed with.
    for (const p of [wacz.pages[0]!, extra.get(url(on, '/expand'))!, extra.get(url(on, on.site.hidden.box.links[0]!))!]) {
      const context = await browser!.newContext();
      try {
        const tab = await context.newPage();
        await tab.goto(`${pywb!.base}/pkg/${p.url}`, { waitUntil: 'networkidle' });
        expect({ url: p.url, title: await tab.title() }).toEqual({ url: p.url, title: p.title });
      } finally {
        await context.close();
      }
    }
  });

  test('with the behaviors on: every item shows, its link and its image, every request answered from the archive', async () => {
    for (const [p, part] of [
      ['/load-more', 'more'],
      ['/box-feed', 'box'],
      ['/expand', 'expand'],
    ] as const) {
      const shown = await replay('clicked', on, p);
      const links = shown.items.map((i) => i.link);
      for (const l of on.site.hidden[part].links) expect({ p, l, shown: links.includes(l) }).toEqual({ p, l, shown: true });
      expect({ p, images: shown.items.filter((i) => !i.image).map((i) => i.link) }).toEqual({ p, images: [] });
      expect({ p, leaks: shown.leaks, missed: shown.missed }).toEqual({ p, leaks: [], missed: [] });
    }
  });

  test('with autoplay on: played in the replay, the script player gets every segment and the podcast its sound file, each from the archive', async () => {
    const shown = await replay('clicked', on, '/media');
    expect(shown.media).toEqual({ segments: MEDIA_SEGMENTS, audio: true });
    expect({ leaks: shown.leaks, missed: shown.missed }).toEqual({ leaks: [], missed: [] });
  });

  test('with it off: played in the replay, the players find neither the manifest nor the sound file in the archive', async () => {
    const shown = await replay('plain', off, '/media');
    expect(shown.media).toEqual({ segments: 0, audio: false });
    for (const p of [off.site.media.manifest, off.site.media.audio]) expect({ p, missed: shown.missed.includes(p) }).toEqual({ p, missed: true });
    expect(shown.leaks).toEqual([]);
  });

  test('with them off: the same interactions find nothing in the archive to show', async () => {
    for (const [p, part] of [
      ['/load-more', 'more'],
      ['/box-feed', 'box'],
      ['/expand', 'expand'],
    ] as const) {
      const shown = await replay('plain', off, p);
      const links = shown.items.map((i) => i.link);
      for (const l of off.site.hidden[part].links) expect({ p, l, shown: links.includes(l) }).toEqual({ p, l, shown: false });
      // Replay asked the archive for the data and did not find it.
      expect({ p, missed: off.site.hidden[part].data.filter((d) => shown.missed.includes(d)).length > 0 }).toEqual({ p, missed: true });
      expect({ p, leaks: shown.leaks }).toEqual({ p, leaks: [] });
    }
  });
});
