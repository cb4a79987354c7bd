// `crawler report` as a reader sees it: a real crawl with 404s, 503s and a
// connection that resets, the report written by the CLI, opened in Chromium
// from disk. What the page shows (figures, chart bars, tables) and the
// report-data JSON it embeds must agree with figures computed here straight
// from the index, and with the campaign's own counters.
// The screenshot goes to <test data>/screenshots and docs/img/report.png.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import type { ReportData } from '../../src/report/report-data';
import type { IndexEntry } from '../../src/storage/index-writer';
import { generateSites } from '../web/test-web';
import { launchBrowser, screenshot } from '../support/browser';
import { createHarness, launch, outputOf, type Harness } from '../support/harness';
import { crawlerCommand } from '../../src/cli/crawler-command';

jest.setTimeout(360_000);
const run = promisify(execFile);

// r3 has the most pages, so it must top "hosts by pages".
const SITES = [
  { host: 'r0.report.test', pages: 8 },
  { host: 'r1.report.test', pages: 8 },
  { host: 'r2.report.test', pages: 8 },
  { host: 'r3.report.test', pages: 14 },
];
const TOP_HOST = 'r3.report.test';
/** The crawler's default delay: the report (and its screenshot in docs/operators.md) shows gaps a reader expects. */
const DELAY_MS = 1_000;

let h: Harness;
let browser: Browser;
let page: Page;
/** Paths chosen for fault injection, per host: all linked from the host's front page, so the crawl reaches them. */
const faults = { reset: '', notFound: [] as string[], unavailable: '' };

beforeAll(async () => {
  h = await createHarness('report', { workers: 2 });
  // The fault hooks read `faults` at request time; it is filled in below, once the sites exist.
  for (const s of SITES) {
    const [spec] = generateSites({ count: 1, pages: s.pages, fanOut: 3, crossPerPage: 0, hostPattern: () => s.host, seed: 11 });
    if (s.host === 'r0.report.test') {
      h.web.addSite({
        ...spec!,
        handler: (ctx) => {
          if (ctx.path !== faults.reset) return false;
          ctx.socket.resetAndDestroy();
          return true;
        },
      });
    } else if (s.host === 'r1.report.test') h.web.addSite({ ...spec!, statusFor: (p) => (faults.notFound.includes(p) ? 404 : undefined) });
    else if (s.host === 'r2.report.test') h.web.addSite({ ...spec!, statusFor: (p) => (p === faults.unavailable ? 503 : undefined) });
    else h.web.addSite(spec!);
  }
  const linkedFromRoot = (host: string) =>
    [...h.web.expectedPages([h.web.url(host, '/')], { hosts: [host], maxDepth: 1 })]
      .map((u) => new URL(u).pathname)
      .filter((p) => p !== '/')
      .sort();
  const [r0, r1, r2] = SITES.map((s) => linkedFromRoot(s.host));
  faults.reset = r0![0]!;
  faults.notFound = r1!.slice(0, 2);
  faults.unavailable = r2![0]!;
  expect(faults.notFound).toHaveLength(2);
  browser = await launchBrowser((m) => process.stderr.write(`[browser] ${m}\n`));
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.setDefaultTimeout(60_000);
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

function countBy<T>(items: T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const t of items) m.set(key(t), (m.get(key(t)) ?? 0) + 1);
  return m;
}

/**
 * The figures the report must show, by the crawler's own definitions
 * (src/stats/counters.ts PAGE_COUNTS): a page is fetched when its request got
 * a 2xx/3xx response; failed when it ended in an error: a final 4xx/5xx
 * (outcome http-error) or no response at all. Sitemap probes are requests
 * but not pages.
 */
function expectedFigures(entries: IndexEntry[]) {
  const pages = entries.filter((e) => !e.kind);
  const fetched = pages.filter((e) => typeof e.status === 'number' && e.outcome !== 'http-error');
  const failed = pages.filter((e) => e.outcome === 'http-error' || (e.status === null && (e.outcome === 'error' || e.outcome === 'refused')));
  const responses = entries.filter((e) => typeof e.status === 'number');
  const byHost = [...countBy(fetched, (e) => e.host)].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return {
    entries: entries.length,
    fetched: fetched.length,
    failed: failed.length,
    skipped: entries.length - fetched.length - failed.length,
    hosts: new Set(entries.map((e) => e.host)).size,
    statusCodes: Object.fromEntries(countBy(responses, (e) => String(e.status))),
    topHost: byHost[0]![0],
    failedCodes: Object.fromEntries(countBy(failed, (e) => e.error!.code)),
  };
}

test('the HTML report shows what the index holds', async () => {
  const seeds = SITES.map((s) => h.web.url(s.host, '/'));
  const handle = await launch(h, {
    seeds,
    scope: { mode: 'any' },
    politeness: { minDelayMs: DELAY_MS },
    fetch: { maxRetries: 1 },
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const id = result.campaignId;
  const out = outputOf(h, id);
  const index = (await out.index()).filter((e) => e.campaignId === id);
  const want = expectedFigures(index);

  // The faults happened, so the error figures are not all zero.
  const topHostKey = new URL(h.web.url(TOP_HOST)).host;
  expect(want.topHost).toBe(topHostKey);
  expect(want.statusCodes['404']).toBeGreaterThanOrEqual(faults.notFound.length);
  expect(want.statusCodes['503']).toBe(1);
  // One connection reset, the 404s and the 503 (retried, then given up): each a typed failure.
  expect(want.failed).toBe(1 + faults.notFound.length + 1);
  expect(Object.keys(want.failedCodes).sort()).toEqual([...Object.keys(want.failedCodes).filter((c) => !c.startsWith('HTTP_')), 'HTTP_404', 'HTTP_503'].sort());
  expect(Object.keys(want.failedCodes).filter((c) => !c.startsWith('HTTP_'))).toHaveLength(1);
  // The index agrees with the campaign's own counters.
  expect({ fetched: result.pages, failed: result.failed, skipped: result.skipped }).toEqual({ fetched: want.fetched, failed: want.failed, skipped: want.skipped });

  // The CLI writes the report where it says.
  const report = crawlerCommand(['report', id, '--out', out.dir]);
  const { stdout } = await run(report.command, report.args, { env: process.env });
  const file = stdout.trim().split('\n').pop()!;
  expect(file).toBe(path.join(out.dir, 'report.html'));

  await page.goto(pathToFileURL(file).href);
  await page.locator('#summary').waitFor();
  expect(await page.title()).toBe(`Crawl report: ${id}`);
  expect(await page.locator('#campaign-id').innerText()).toBe(id);

  // Summary figures: the number in data-value and the number a reader sees.
  const figure = async (key: string) => {
    const el = page.locator(`[data-figure="${key}"]`);
    return { value: Number(await el.getAttribute('data-value')), shown: (await el.locator('b').innerText()).replace(/,/g, '') };
  };
  for (const [key, n] of [
    ['pages-fetched', want.fetched],
    ['pages-failed', want.failed],
    ['pages-skipped', want.skipped],
    ['entries', want.entries],
    ['hosts', want.hosts],
  ] as const) {
    expect({ key, ...(await figure(key)) }).toEqual({ key, value: n, shown: String(n) });
  }

  // Status codes chart: one bar per code, its count as data and as label.
  const bars = await page
    .locator('#chart-status-codes g[data-key]')
    .evaluateAll((gs) =>
      gs.map((g) => ({ key: g.getAttribute('data-key')!, count: Number(g.getAttribute('data-count')), label: g.querySelectorAll('text')[1]?.textContent ?? '' })),
    );
  expect(Object.fromEntries(bars.map((b) => [b.key, b.count]))).toEqual(want.statusCodes);
  for (const b of bars) expect(b.label.replace(/,/g, '')).toBe(String(b.count));

  // Top host by pages: first row of the table, visible and in data.
  const firstRow = page.locator('#table-top-hosts-pages tbody tr').first();
  expect(await firstRow.getAttribute('data-host')).toBe(topHostKey);
  expect(await firstRow.locator('td').first().innerText()).toBe(topHostKey);
  expect(Number(await firstRow.getAttribute('data-fetched'))).toBe(
    index.filter((e) => e.host === topHostKey && !e.kind && typeof e.status === 'number' && e.outcome !== 'http-error').length,
  );

  // Errors: every host with a fault is among the top hosts by errors; the
  // problem table names the failure's code and the HTTP errors.
  const errorHosts = await page.locator('#table-top-hosts-errors tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-host')));
  for (const host of ['r0.report.test', 'r1.report.test', 'r2.report.test']) expect(errorHosts).toContain(new URL(h.web.url(host)).host);
  const problems = await page
    .locator('#table-problems tbody tr')
    .evaluateAll((rows) => rows.map((r) => ({ outcome: r.getAttribute('data-outcome'), code: r.getAttribute('data-code'), count: Number(r.getAttribute('data-count')) })));
  const [failCode] = Object.keys(want.failedCodes).filter((c) => !c.startsWith('HTTP_'));
  expect(problems).toContainEqual({ outcome: 'error', code: failCode, count: 1 });
  expect(problems).toContainEqual(expect.objectContaining({ code: 'HTTP_503', count: 1 }));
  expect(problems.filter((p) => p.code === 'HTTP_404').reduce((n, p) => n + p.count, 0)).toBe(want.statusCodes['404']);
  expect(await page.locator('#problems').innerText()).toContain(`${h.web.url('r0.report.test', faults.reset)}`);

  // The embedded JSON says the same as the page.
  const data = JSON.parse((await page.locator('#report-data').textContent())!) as ReportData;
  expect(data.campaignId).toBe(id);
  expect(data.summary).toMatchObject({ entries: want.entries, fetched: want.fetched, failed: want.failed, skipped: want.skipped, hosts: want.hosts });
  expect(Object.fromEntries(data.statusCodes.map((s) => [String(s.status), s.count]))).toEqual(want.statusCodes);
  expect(data.topHostsByPages[0]!.host).toBe(topHostKey);
  expect(data.timeline.buckets.reduce((n, b) => n + b.fetched + b.failed + b.skipped, 0)).toBe(want.entries);
  // The charts against figures taken from the index, not from the page's own data.
  const hits = await page.locator('#chart-timeline rect.hit').evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('data-fetched'))));
  expect(hits.reduce((a, b) => a + b, 0)).toBe(want.fetched);
  expect(hits).toEqual(data.timeline.buckets.map((b) => b.fetched));
  // Politeness: each host's shortest gap between the starts of requests that got a response.
  const starts = new Map<string, number[]>();
  for (const e of index) if (!e.kind && typeof e.status === 'number') starts.set(e.host, [...(starts.get(e.host) ?? []), Date.parse(e.fetchedAt)]);
  const minGap = (ts: number[]) =>
    Math.min(
      ...ts
        .sort((a, b) => a - b)
        .slice(1)
        .map((t, i) => t - ts[i]!),
    );
  const waits = await page.locator('#table-politeness tbody tr').evaluateAll((rs) => rs.map((r) => [r.getAttribute('data-host'), Number(r.getAttribute('data-min-ms'))]));
  expect(waits.length).toBeGreaterThan(0);
  for (const [host, ms] of waits) expect({ host, ms }).toEqual({ host, ms: minGap(starts.get(host as string)!) });
  // No host was crawled faster than the campaign's delay, even as the report
  // rounds (start times in whole ms; the host clock rounds a request's end up
  // and "now" down, so a gap a fraction of a millisecond short cannot happen).
  for (const [host, ms] of waits) expect({ host, atLeastDelay: ms >= DELAY_MS }).toEqual({ host, atLeastDelay: true });

  await screenshot(page, 'report', { docsName: 'report.png', fullPage: true });
});
