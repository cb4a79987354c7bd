// Issue 26: `render: auto` on a mix of a static site (the test web's
// generated pages, whose links are in their HTML) and a client-rendered one
// (test/web/spa-site.ts: one shell for every route, links built by a
// script). Every page is fetched with HTTP first; each host's first pages
// are also rendered and compared, and only where the browser finds more
// (the client-rendered site) does rendering go on. So: every page of both
// sites is found (the client-rendered site's deeper pages exist only in
// rendered pages), the static site is rendered for its samples only, each
// rendered page's index line says why, the summary gives the count and the
// share, and what was learnt is in Redis under each host's keys. Real
// workers, Temporal and Redis; the workers' Chromium is Debian's.
import { parseState } from '../../src/browser/adaptive';
import { hostKeys } from '../../src/redis/keys';
import type { IndexEntry } from '../../src/storage/index-writer';
import { hostKey, normalizeUrl } from '../../src/url/normalize';
import { campaignStatusQuery, type CampaignResult } from '../../workflows/messages';
import { spaSite, type SpaSite } from '../web/spa-site';
import { findOrInstallChromium } from '../support/browser';
import { createHarness, launch, outputOf, type Harness } from '../support/harness';

jest.setTimeout(300_000);

const STATIC = 'static.auto.test';
const STATIC_PAGES = 30;
/** The default of browser.autoSamples. */
const SAMPLES = 3;
/** The default of browser.autoRecheckEvery. */
const RECHECK_EVERY = 20;

let h: Harness;
let spa: SpaSite;
let result: CampaignResult;
let lines: IndexEntry[];
let campaignKey: string;

const pagesOf = (host: string) =>
  lines
    .filter((e) => !e.kind && e.outcome === 'fetched' && e.host === hostKey(h.web.url(host, '/')))
    .map((e) => e.url)
    .sort();

beforeAll(async () => {
  // The workers find Chromium the same way; installed here first so their first page does not wait for apt-get.
  await findOrInstallChromium((m) => process.stderr.write(`[browser] ${m}\n`));
  h = await createHarness('render-auto', { workers: 1 });
  spa = spaSite('spa.auto.test');
  h.web.addSite(spa.spec);
  h.web.addSite({ host: STATIC, pages: STATIC_PAGES, fanOut: 3 });
  // What render: auto learnt is looked at once the campaign has completed: kept (keep summary deletes it at the end).
  const handle = await launch(h, {
    seeds: [h.web.url(STATIC, '/'), h.web.url(spa.host, '/')],
    render: 'auto',
    politeness: { minDelayMs: 20 },
    retention: { keep: 'all' },
  });
  campaignKey = (await handle.query(campaignStatusQuery)).campaignKey;
  result = await handle.result();
  lines = await outputOf(h, result.campaignId).sealed();
});

afterAll(async () => {
  await h?.close();
});

test('finds every page of both sites: the client-rendered pages only rendered ones link to as well', () => {
  expect(result.status).toBe('completed');
  expect(pagesOf(spa.host)).toEqual(spa.pages.map((p) => normalizeUrl(h.web.url(spa.host, p.path))).sort());
  expect(pagesOf(STATIC)).toHaveLength(STATIC_PAGES);
});

test('renders every client-rendered page, and the static site for its samples only; each line says why', () => {
  const spaLines = lines.filter((e) => e.host === hostKey(h.web.url(spa.host, '/')) && !e.kind);
  for (const e of spaLines) expect({ url: e.url, done: e.render?.done, reason: e.render?.reason }).toMatchObject({ url: e.url, done: 'quiet' });
  // Sampled first, then rendered because its pattern (or its host) found more in the browser.
  for (const e of spaLines) expect(['sample', 'pattern-differs', 'host-differs']).toContain(e.render?.reason);
  const staticRendered = lines.filter((e) => e.host === hostKey(h.web.url(STATIC, '/')) && e.render);
  // `/` and the first pages of /page/{n} (at most the samples of its two
  // patterns), and the one page in RECHECK_EVERY re-checked: never the rest of the site.
  expect(staticRendered.length).toBeGreaterThanOrEqual(1);
  expect(staticRendered.length).toBeLessThanOrEqual(2 * SAMPLES + Math.floor(STATIC_PAGES / RECHECK_EVERY));
  expect(staticRendered.filter((e) => e.render?.reason !== 'sample' && e.render?.reason !== 'recheck')).toEqual([]);
  // The 20th page of /page/{n} was rendered again to check the decision still holds.
  expect(staticRendered.filter((e) => e.render?.reason === 'recheck')).toHaveLength(1);
});

test('the summary gives the rendered pages, their share of the HTML pages, and why they were rendered', () => {
  const rendered = lines.filter((e) => e.render).length;
  const r = result.rendered!;
  expect(r).toBeDefined();
  expect({ pages: r.pages, htmlPages: r.htmlPages }).toEqual({ pages: rendered, htmlPages: STATIC_PAGES + spa.pages.length });
  expect(r.share).toBeCloseTo(rendered / (STATIC_PAGES + spa.pages.length), 3);
  // Nearly only the client-rendered site: well under half the pages.
  expect(r.share).toBeLessThan(0.35);
  expect(Object.values(r.reasons).reduce((a, b) => a + b, 0)).toBe(r.pages);
  expect(r.reasons.sample).toBeGreaterThanOrEqual(1);
});

test('what was learnt is in Redis under each host: the static pattern decided for HTTP, the client-rendered host for the browser', async () => {
  const plan = async (host: string) => h.redis.hgetall(hostKeys(campaignKey, hostKey(h.web.url(host, '/'))).renderPlan);
  const st = await plan(STATIC);
  const pages = parseState(st[`${hostKey(h.web.url(STATIC, '/'))}/page/{n}`]);
  expect(pages?.n).toBe(STATIC_PAGES - 1);
  expect(pages?.v).toMatch(/^S+$/);
  const sp = parseState((await plan(spa.host))['*']);
  expect(sp?.n).toBe(spa.pages.length);
  expect(sp?.v).toMatch(/^D+$/);
});
