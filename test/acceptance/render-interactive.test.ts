// Issue 26, items 5 and 6: what a rendered page holds beyond `load` and its
// main frame (test/web/interactive-site.ts). Two crawls of the same site in
// browser mode: one with a handler whose onRender clicks a "Load more" button
// (test/fixtures/handlers/render-handler.ts) and browser.scroll on, one with
// neither. Only the first finds what the click and the scrolling load (and
// archives the data and images they fetched); the handler's render hook
// results reach the dataset, not the campaign's history, and a hook that
// throws or never ends costs its page a typed error, not its links. Both
// find the links a script built in frames (each against its frame's URL)
// and those of a script that fetches its data only after keeping its thread
// busy longer than browser.quietMs. Real workers, Temporal and Redis; the
// workers' Chromium is Debian's. The two crawls run at the same time, each
// on a copy of the site under a host of its own (most of a rendered page's
// time is spent waiting for it to be done, one page at a time per host).
import path from 'node:path';
import { readDataset, type DatasetLine } from '../../src/storage/dataset-writer';
import type { IndexEntry } from '../../src/storage/index-writer';
import type { WarcReadRecord } from '../../src/storage/warc-reader';
import { normalizeUrl } from '../../src/url/normalize';
import type { CampaignInput } from '../../src/config/campaign';
import type { CampaignResult } from '../../workflows/messages';
import { interactiveSite, type InteractiveSite } from '../web/interactive-site';
import type { RequestRecord } from '../web/test-web';
import { findOrInstallChromium } from '../support/browser';
import { createHarness, launch, outputOf, type Harness } from '../support/harness';

jest.setTimeout(300_000);

const HANDLER = path.resolve(__dirname, '../fixtures/handlers/render-handler.ts');
/** The hooked crawl's browser.quietMs. */
const HOOKED_QUIET_MS = 250;

interface Crawl {
  /** The copy of the site it crawled. */
  site: InteractiveSite;
  result: CampaignResult;
  /** Its site's requests. */
  requests: RequestRecord[];
  lines: IndexEntry[];
  records: WarcReadRecord[];
  dataset: DatasetLine[];
  /** The campaign's workflow history, payloads decoded. */
  history: string;
}

let h: Harness;
/** The hooked crawl's site: the paths (the same on both copies) the tests look for. */
let site: InteractiveSite;
/** With the handler's onRender and browser.scroll on. */
let hooked: Crawl;
/** Neither. */
let plain: Crawl;

/** The URL of path `p` on the site crawl `c` crawled (the hooked crawl's when none is given). */
const url = (p: string, c?: Crawl) => normalizeUrl(h.web.url((c?.site ?? site).host, p));
const line = (c: Crawl, p: string) => c.lines.find((e) => e.url === url(p, c));
const fetched = (c: Crawl, p: string) => line(c, p)?.outcome === 'fetched';
const archived = (c: Crawl) => new Set(c.records.filter((r) => r.type === 'response' && r.targetUri).map((r) => normalizeUrl(r.targetUri!)));
const requested = (c: Crawl, p: string) => c.requests.some((r) => r.path === p);

async function crawl(copy: InteractiveSite, extra: Partial<CampaignInput>): Promise<Crawl> {
  const handle = await launch(h, { seeds: [h.web.url(copy.host, '/')], render: 'browser', politeness: { minDelayMs: 20 }, ...extra });
  const result = await handle.result();
  const out = outputOf(h, result.campaignId);
  // Payloads are base64 in the history's JSON: read decoded, as the Web UI shows them.
  const raw = JSON.stringify(await handle.fetchHistory());
  const history = [raw, ...[...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map((d) => Buffer.from(d[1]!, 'base64').toString('utf8'))].join('\n');
  const requests = h.web.requests().filter((r) => r.host === copy.host);
  return { site: copy, result, requests, lines: await out.sealed(), records: await out.warc(), dataset: await readDataset(out.dir), history };
}

beforeAll(async () => {
  // The workers find Chromium the same way; installed here first so their first page does not wait for apt-get.
  await findOrInstallChromium((m) => process.stderr.write(`[browser] ${m}\n`));
  h = await createHarness('render-interactive', { workers: 1 });
  site = interactiveSite('hooked.interactive.test');
  const plainSite = interactiveSite('plain.interactive.test');
  h.web.addSite(site.spec);
  h.web.addSite(plainSite.spec);
  [hooked, plain] = await Promise.all([
    // A short hook limit, so the hook that never ends is given up in 5 s (a click and its fetch take far less, even on a busy machine).
    // Half the default quiet period (the plain crawl keeps the default): it is waited for several times a
    // page, and a shorter one only makes what is checked here harder to find, since the idle check after
    // it, not its length, is what catches a script's late work (/late stays busy four times as long).
    crawl(site, { handler: HANDLER, handlerTimeoutMs: 5_000, browser: { scroll: true, pageTimeoutMs: 20_000, quietMs: HOOKED_QUIET_MS } }),
    crawl(plainSite, {}),
  ]);
});

afterAll(async () => {
  await h?.close();
});

describe("the handler's onRender (Playwright's page, before the DOM is taken)", () => {
  test('what its click loaded is crawled: the links it added, routed by label, and the data it fetched archived', () => {
    expect(hooked.result.status).toBe('completed');
    for (const p of site.hidden.more) expect({ p, line: line(hooked, p) }).toMatchObject({ p, line: { outcome: 'fetched', label: 'detail', depth: 2 } });
    expect(archived(hooked).has(url(site.data.more))).toBe(true);
    // Without the click, the button's links do not exist, and its data is never asked for.
    for (const p of site.hidden.more) expect({ p, found: line(plain, p) !== undefined }).toEqual({ p, found: false });
    expect(requested(plain, site.data.more)).toBe(false);
  });

  test("its items join onPage's (its own first) in the dataset: with the page's label and depth; a label's renderRoute runs in its place", () => {
    const items = (p: string) => hooked.dataset.filter((l) => l.url === url(p)).map((l) => l.item);
    // onPage read the links the click added from the rendered DOM.
    expect(items('/more')).toEqual([
      { hook: 'onRender', url: url('/more'), label: null, depth: 1, clicked: true },
      { hook: 'onPage', url: url('/more'), moreLinks: 2 },
    ]);
    for (const p of site.hidden.more) expect(items(p)).toEqual([{ hook: 'detail', url: url(p), label: 'detail', depth: 2, heading: `Page ${p}` }]);
    expect(line(hooked, '/more')?.items).toBe(2);
  });

  test("its result stays in the activity: nothing of it in the campaign's history", () => {
    // The history is read at all: the campaign's own input is in it.
    expect(hooked.history).toContain(HANDLER);
    expect(hooked.history).not.toContain('"hook":"onRender"');
    expect(hooked.history).not.toContain('moreLinks');
  });

  test('a hook that throws or never ends: its page is recorded with a typed error, once, and its own links are still followed', () => {
    expect(line(hooked, '/render-throws')).toMatchObject({
      outcome: 'error',
      error: { code: 'RENDER_HOOK_ERROR', message: expect.stringContaining('no button on this page') },
      render: { done: 'quiet' },
    });
    expect(line(hooked, '/render-hangs')).toMatchObject({ outcome: 'error', error: { code: 'RENDER_HOOK_TIMEOUT', message: expect.stringContaining('onRender ran past') } });
    for (const p of ['/render-throws/child', '/render-hangs/child']) expect({ p, fetched: fetched(hooked, p) }).toEqual({ p, fetched: true });
    // Not attempted again: each page requested once.
    for (const p of ['/render-throws', '/render-hangs']) expect({ p, n: hooked.requests.filter((r) => r.host === site.host && r.path === p).length }).toEqual({ p, n: 1 });
  });
});

describe('browser.scroll', () => {
  test('on: the feed loaded on scroll is found, its images archived, and the index line says how the scrolling ended', () => {
    for (const p of site.hidden.feed) expect({ p, fetched: fetched(hooked, p) }).toEqual({ p, fetched: true });
    for (const p of site.hidden.feedImages) expect({ p, archived: archived(hooked).has(url(p)) }).toEqual({ p, archived: true });
    const feed = line(hooked, '/feed')?.render;
    expect(feed?.scroll).toMatchObject({ end: 'bottom', steps: expect.any(Number) });
    // For docs/rendering.md ("Costs"): what scrolling the feed took, beside the same page unscrolled.
    process.stderr.write(
      `[scroll] /feed: ${feed?.scroll?.steps} steps, render ${feed?.ms} ms with browser.quietMs ${HOOKED_QUIET_MS} (unscrolled, the default quietMs: ${line(plain, '/feed')?.render?.ms} ms)\n`,
    );
  });

  test('off (the default): only what the first viewport shows', () => {
    for (const p of site.hidden.feed) expect({ p, found: line(plain, p) !== undefined }).toEqual({ p, found: false });
    expect(requested(plain, site.data.feed(1))).toBe(false);
    expect(line(plain, '/feed')?.render?.scroll).toBeUndefined();
  });
});

describe("links from every frame's DOM", () => {
  test("a frame the script wrote into, and a frame's own page whose script built a relative link: each resolved against its frame's URL, one hop from the page", () => {
    for (const c of [hooked, plain]) {
      for (const p of [...site.hidden.blankFrame, ...site.hidden.srcFrame]) expect({ p, line: line(c, p) }).toMatchObject({ p, line: { outcome: 'fetched', depth: 2 } });
      expect(line(c, '/framed')?.render).toMatchObject({ frames: 2 });
    }
  });
});

describe('done detection', () => {
  test(`a script that starts its fetch only after keeping its thread busy longer than browser.quietMs is waited for`, () => {
    for (const c of [hooked, plain]) for (const p of site.hidden.late) expect({ p, fetched: fetched(c, p) }).toEqual({ p, fetched: true });
  });
});
