import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { IndexEntry, IndexOutcome } from '../../src/storage/index-writer';
import { buildReportData, bucketWidthMs, classify, median, mediaType, type ReportData } from '../../src/report/report-data';
import { esc, jsonForScript, renderReportHtml } from '../../src/report/html-report';
import { candidateOutputDirs, loadCampaignIndex } from '../../src/cli/commands/report';

const T0 = Date.parse('2024-01-01T00:00:00.000Z');
const CAMPAIGN = 'c-report';
const EVIL_URL = `https://evil.test/<script>alert(1)</script>?a="b"&c='d'`;
const EVIL_500_URL = 'https://evil.test/</script><script>alert(2)</script>';
const EVIL_TYPE = 'text/html<img src=x onerror=alert(1)>';

let seq = 0;
function entry(host: string, at: number | string, over: Partial<IndexEntry> = {}): IndexEntry {
  const n = seq++;
  return {
    url: `https://${host}/p/${n}`,
    fp: `fp${n}`,
    host,
    campaignId: CAMPAIGN,
    status: 200,
    outcome: 'fetched',
    contentType: 'text/html',
    bytes: 0,
    contentHash: null,
    fetchedAt: typeof at === 'string' ? at : new Date(T0 + at).toISOString(),
    depth: 1,
    referrer: null,
    ...over,
  };
}
const times = (n: number, start: number, step: number) => Array.from({ length: n }, (_, i) => start + i * step);
const skippedNoResponse = { status: null, contentType: null } as const;

/**
 * 330 entries, 9 hosts. Every expected number below is counted by hand from
 * this list, not recomputed with the code under test.
 */
function syntheticIndex(): IndexEntry[] {
  seq = 0;
  return [
    // a.test: 120 pages, one per second from T0.
    ...times(120, 0, 1000).map((t) => entry('a.test', t, { bytes: 1000, fetchMs: 10 })),
    // b.test: 60 PDFs then 20 HTML 404s (failed URLs), every 1.5 s from T0+0.5 s; the last one ends at 119 020 ms.
    ...times(80, 500, 1500).map((t, i) =>
      entry(
        'b.test',
        t,
        i < 60
          ? { contentType: 'application/pdf', bytes: 2000, fetchMs: 20 }
          : { status: 404, outcome: 'http-error', error: { code: 'HTTP_404', message: 'HTTP 404 Not Found' }, bytes: 2000, fetchMs: 20 },
      ),
    ),
    // c.test: gaps 100, 300, 600 → min 100, median 300.
    ...[0, 100, 400, 1000].map((d) => entry('c.test', 30000 + d, { contentType: 'text/html; charset=utf-8', bytes: 100 })),
    // d.test: gaps 200, 200, 800, 1000 → min 200, median (200+800)/2 = 500.
    ...[0, 200, 400, 1200, 2200].map((d) => entry('d.test', 40000 + d, { contentType: 'TEXT/HTML', bytes: 100 })),
    // e.test: 50 failed requests (30 ECONNRESET, 20 TIMEOUT), 10 s – 14.9 s.
    ...times(50, 10000, 100).map((t, i) => entry('e.test', t, { ...skippedNoResponse, outcome: 'error', error: { code: i < 30 ? 'ECONNRESET' : 'TIMEOUT', message: 'boom' } })),
    // f.test: 40 disallowed by robots (one with an unreadable time), 10 robots-unavailable.
    ...times(39, 20000, 100).map((t) => entry('f.test', t, { ...skippedNoResponse, outcome: 'robots-disallowed' })),
    entry('f.test', 'not a date', { ...skippedNoResponse, outcome: 'robots-disallowed' }),
    ...times(10, 25000, 100).map((t) => entry('f.test', t, { ...skippedNoResponse, outcome: 'robots-unavailable', error: { code: 'ROBOTS_UNAVAILABLE', message: 'x' } })),
    // evil.test: hostile URL and content type; a 500 whose URL tries to close the JSON script, as an
    // index written before 'http-error' existed recorded it: outcome 'fetched'.
    entry('evil.test', 50000, { url: EVIL_URL, contentType: EVIL_TYPE, bytes: 10 }),
    entry('evil.test', 50250, { url: EVIL_500_URL, status: 500, contentType: 'text/plain', bytes: 10 }),
    // g.test: 5 redirects without a content type, every 0.7 s.
    ...times(5, 60000, 700).map((t) => entry('g.test', t, { outcome: 'redirect', status: 301, contentType: null })),
    // h.test: 14 distinct content types, every 3 s.
    ...times(14, 70000, 3000).map((t, i) => entry('h.test', t, { contentType: `type/x${String(i).padStart(2, '0')}`, bytes: 50 })),
  ];
}

const host = (h: string, fetched: number, failed: number, skipped: number, httpErrors: number, errors: number, bytes: number) => ({
  host: h,
  fetched,
  failed,
  skipped,
  embeds: 0,
  httpErrors,
  errors,
  bytes,
});

describe('buildReportData', () => {
  const entries = syntheticIndex();
  const d = buildReportData(entries, { campaignId: CAMPAIGN, generatedAt: '2024-02-01T00:00:00.000Z' });

  test('the synthetic index has the intended size', () => {
    expect(entries).toHaveLength(330);
  });

  test('summary', () => {
    expect(d.summary).toEqual({
      entries: 330,
      fetched: 120 + 60 + 4 + 5 + 2 + 5 + 14,
      failed: 50 + 20,
      skipped: 50,
      embeds: 0,
      embedsFailed: 0,
      embedsSkipped: 0,
      bytes: 120 * 1000 + 80 * 2000 + 9 * 100 + 2 * 10 + 14 * 50,
      firstAt: '2024-01-01T00:00:00.000Z',
      lastAt: '2024-01-01T00:01:59.000Z',
      durationMs: 119020,
      hosts: 9,
      revisits: 0,
      revisitBytes: 0,
      // 2xx HTML pages: a.test's 120, c.test's 4, d.test's 5 (TEXT/HTML), evil.test's one (its type starts text/html); none rendered.
      htmlPages: 120 + 4 + 5 + 1,
      rendered: 0,
    });
  });

  test('timeline: 2 s buckets covering 0–119 s, undated entry left out', () => {
    const { bucketMs, buckets } = d.timeline;
    expect(bucketMs).toBe(2000);
    expect(buckets).toHaveLength(60);
    expect(buckets[0]).toEqual({ start: '2024-01-01T00:00:00.000Z', fetched: 3, failed: 0, skipped: 0 });
    // [10 s, 12 s): a.test 2, b.test 1 (11 s), e.test 20 failures.
    expect(buckets[5]).toEqual({ start: '2024-01-01T00:00:10.000Z', fetched: 3, failed: 20, skipped: 0 });
    const sum = (k: 'fetched' | 'failed' | 'skipped') => buckets.reduce((n, b) => n + b[k], 0);
    expect([sum('fetched'), sum('failed'), sum('skipped')]).toEqual([210, 70, 49]);
  });

  test('status codes, responses only', () => {
    expect(d.statusCodes).toEqual([
      { status: 200, count: 120 + 60 + 4 + 5 + 1 + 14 },
      { status: 301, count: 5 },
      { status: 404, count: 20 },
      { status: 500, count: 1 },
    ]);
  });

  test('content types: media types, top 12 then (other)', () => {
    expect(d.contentTypes).toEqual([
      { type: 'text/html', count: 120 + 20 + 4 + 5 },
      { type: 'application/pdf', count: 60 },
      { type: '(none)', count: 5 },
      { type: EVIL_TYPE, count: 1 },
      { type: 'text/plain', count: 1 },
      ...[0, 1, 2, 3, 4, 5, 6].map((i) => ({ type: `type/x0${i}`, count: 1 })),
      { type: '(other)', count: 7 },
    ]);
  });

  test('top hosts by pages and by errors', () => {
    expect(d.topHostsByPages).toEqual([
      host('a.test', 120, 0, 0, 0, 0, 120000),
      // A 404 is both a failed URL and an HTTP error, and one error.
      host('b.test', 60, 20, 0, 20, 20, 160000),
      host('h.test', 14, 0, 0, 0, 0, 700),
      host('d.test', 5, 0, 0, 0, 0, 500),
      host('g.test', 5, 0, 0, 0, 0, 0),
      host('c.test', 4, 0, 0, 0, 0, 400),
      // The old-style 500 is a fetched page with an HTTP error.
      host('evil.test', 2, 0, 0, 1, 1, 20),
      host('e.test', 0, 50, 0, 0, 50, 0),
      host('f.test', 0, 0, 50, 0, 0, 0),
    ]);
    expect(d.topHostsByErrors.map((h) => [h.host, h.errors])).toEqual([
      ['e.test', 50],
      ['b.test', 20],
      ['evil.test', 1],
    ]);
  });

  test('problems by outcome and code, with the first URL as example', () => {
    expect(d.problems.map(({ outcome, code, count }) => [outcome, code, count])).toEqual([
      ['robots-disallowed', null, 40],
      ['error', 'ECONNRESET', 30],
      ['error', 'TIMEOUT', 20],
      ['http-error', 'HTTP_404', 20],
      ['robots-unavailable', 'ROBOTS_UNAVAILABLE', 10],
      ['fetched', 'HTTP_500', 1],
    ]);
    expect(d.problems[5]!.exampleUrl).toBe(EVIL_500_URL);
    expect(d.problems[1]!.exampleUrl).toBe(entries.find((e) => e.host === 'e.test')!.url);
  });

  test('politeness waits per host, shortest minimum first', () => {
    expect(d.politeness).toEqual({
      omittedHosts: 0,
      rows: [
        { host: 'c.test', requests: 4, minMs: 100, medianMs: 300 },
        { host: 'd.test', requests: 5, minMs: 200, medianMs: 500 },
        { host: 'evil.test', requests: 2, minMs: 250, medianMs: 250 },
        { host: 'g.test', requests: 5, minMs: 700, medianMs: 700 },
        { host: 'a.test', requests: 120, minMs: 1000, medianMs: 1000 },
        { host: 'b.test', requests: 80, minMs: 1500, medianMs: 1500 },
        { host: 'h.test', requests: 14, minMs: 3000, medianMs: 3000 },
      ],
    });
  });

  test('an empty index gives zeros and no buckets', () => {
    const e = buildReportData([], { campaignId: 'x', generatedAt: 'now' });
    expect(e.summary).toMatchObject({ entries: 0, fetched: 0, durationMs: 0, hosts: 0, firstAt: null });
    expect(e.timeline.buckets).toEqual([]);
    expect(() => renderReportHtml(e)).not.toThrow();
  });
});

test('embeds are counted apart from pages: in the summary, the figures and the host rows, not in the page timeline', () => {
  seq = 0;
  const entries = [
    entry('a.test', 0, { bytes: 1000 }),
    entry('a.test', 100, { kind: 'embed', hops: 'E', contentType: 'text/css', bytes: 300 }),
    entry('cdn.test', 200, { kind: 'embed', hops: 'E', contentType: 'image/png', bytes: 500 }),
    entry('cdn.test', 300, { kind: 'embed', hops: 'E', status: 404, outcome: 'http-error', error: { code: 'HTTP_404', message: 'HTTP 404' } }),
    entry('cdn.test', 400, { kind: 'embed', hops: 'E', status: null, outcome: 'robots-disallowed' }),
  ];
  const d = buildReportData(entries, { campaignId: CAMPAIGN, generatedAt: '2024-02-01T00:00:00.000Z' });
  expect(d.summary).toMatchObject({ entries: 5, fetched: 1, failed: 0, skipped: 0, embeds: 2, embedsFailed: 1, embedsSkipped: 1, bytes: 1800 });
  expect(d.timeline.buckets.reduce((n, b) => n + b.fetched + b.failed + b.skipped, 0)).toBe(1);
  expect(d.topHostsByPages.find((r) => r.host === 'cdn.test')).toMatchObject({ fetched: 0, failed: 0, embeds: 3, httpErrors: 1 });
  const html = renderReportHtml(d);
  expect(html).toContain('data-figure="embeds-fetched" data-value="2"');
  expect(html).toContain('data-figure="embeds-failed" data-value="1"');
});

test('pages rendered in a browser: counted, with their share of the HTML pages, in the summary and the figures', () => {
  seq = 0;
  const entries = [
    entry('a.test', 0, { render: { done: 'quiet', ms: 900, requests: 3, reason: 'sample' } }),
    entry('a.test', 100, { render: { done: 'quiet', ms: 800, requests: 1, reason: 'pattern-differs' } }),
    entry('b.test', 200),
    entry('b.test', 300),
    entry('b.test', 400, { kind: 'embed', hops: 'E', contentType: 'text/html' }),
  ];
  const d = buildReportData(entries, { campaignId: CAMPAIGN, generatedAt: '2024-02-01T00:00:00.000Z' });
  expect(d.summary).toMatchObject({ htmlPages: 4, rendered: 2 });
  const html = renderReportHtml(d);
  expect(html).toContain('data-figure="rendered" data-value="2"');
  expect(html).toContain('data-figure="rendered-share" data-value="0.5"');
  // A crawl that rendered nothing shows no such figure.
  expect(renderReportHtml(buildReportData(entries.slice(2), { campaignId: CAMPAIGN, generatedAt: 'now' }))).not.toContain('data-figure="rendered"');
});

describe('helpers', () => {
  test('median, media type, bucket width', () => {
    expect(median([5])).toBe(5);
    expect(median([4, 1, 3])).toBe(3);
    expect(median([1, 2, 3, 10])).toBe(3); // (2+3)/2 rounded
    expect(mediaType(' Text/HTML ; charset=x')).toBe('text/html');
    expect(mediaType(null)).toBe('(none)');
    expect(bucketWidthMs(0, 59_999)).toBe(1000);
    expect(bucketWidthMs(0, 60_000)).toBe(2000);
    expect(bucketWidthMs(0, 86_400_000 * 365)).toBe(86_400_000);
  });

  test('esc and jsonForScript neutralise markup', () => {
    expect(esc(`<a href="x">'&'</a>`)).toBe('&#60;a href=&#34;x&#34;&#62;&#39;&#38;&#39;&#60;/a&#62;');
    const s = jsonForScript({ u: '</script><!-- \u2028' });
    expect(s).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(s)).toEqual({ u: '</script><!-- \u2028' });
  });
});

describe('renderReportHtml', () => {
  const data = buildReportData(syntheticIndex(), { campaignId: CAMPAIGN, generatedAt: '2024-02-01T00:00:00.000Z' });
  const html = renderReportHtml(data);
  const embedded = (): ReportData => {
    const m = /<script type="application\/json" id="report-data">([^<]*)<\/script>/.exec(html);
    expect(m).not.toBeNull();
    return JSON.parse(m![1]!) as ReportData;
  };

  test('is self-contained', () => {
    expect(html).not.toMatch(/\s(src|href)\s*=\s*["']?\s*(https?:)?\/\//i);
    expect(html).not.toMatch(/<link\b|@import|url\(|<img\b|<iframe\b/i);
    expect(html.match(/<script\b/gi)).toHaveLength(1); // only the JSON data block
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);
  });

  test('escapes hostile text from the index', () => {
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('</script><script>');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('https://evil.test/&#60;/script&#62;&#60;script&#62;alert(2)&#60;/script&#62;');
    expect(html).toContain('data-key="text/html&#60;img src=x onerror=alert(1)&#62;"');
  });

  test('embedded JSON parses and equals the figures', () => {
    const parsed = embedded();
    expect(parsed).toEqual(data);
    expect(parsed.problems[5]!.exampleUrl).toBe(EVIL_500_URL);
  });

  test('figures carry their numbers in data attributes', () => {
    const s = data.summary;
    for (const [key, value] of [
      ['pages-fetched', s.fetched],
      ['pages-failed', s.failed],
      ['pages-skipped', s.skipped],
      ['bytes', s.bytes],
      ['duration-ms', s.durationMs],
      ['hosts', s.hosts],
      ['entries', s.entries],
    ] as const) {
      expect(html).toContain(`data-figure="${key}" data-value="${value}"`);
    }
    expect(html).toContain('id="chart-timeline" data-bucket-ms="2000"');
    expect(html.match(/<rect class="hit"/g)).toHaveLength(60);
    for (const { status, count } of data.statusCodes) expect(html).toContain(`data-key="${status}" data-count="${count}"`);
    expect(html).toContain('data-key="(other)" data-count="7"');
    expect(html).toMatch(/<table id="table-top-hosts-pages">.*<tr data-host="a.test" data-fetched="120"/s);
    expect(html).toMatch(/<table id="table-top-hosts-errors">.*<tr data-host="e.test" data-fetched="0" data-failed="50"/s);
    expect(html).toContain('data-outcome="error" data-code="ECONNRESET" data-count="30"');
    expect(html).toContain('<tr data-host="d.test" data-requests="5" data-min-ms="200" data-median-ms="500">');
  });
});

describe('locating the index', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'report-test-'));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  test('defaults to crawl-output/<campaign>, then crawl-output; --out replaces both', () => {
    expect(candidateOutputDirs('c1', undefined, '/w')).toEqual(['/w/crawl-output/c1', '/w/crawl-output']);
    expect(candidateOutputDirs('c1', 'out/x', '/w')).toEqual(['/w/out/x']);
  });

  test("reads <dir>/index and keeps only the campaign's entries", async () => {
    const dir = path.join(tmp, 'crawl-output', CAMPAIGN);
    fs.mkdirSync(path.join(dir, 'index'), { recursive: true });
    const mine = syntheticIndex().slice(0, 3);
    const other = { ...mine[0]!, campaignId: 'someone-else' };
    fs.writeFileSync(path.join(dir, 'index', 'index-1.jsonl'), [...mine, other].map((e) => `${JSON.stringify(e)}\n`).join(''));
    const dirs = candidateOutputDirs(CAMPAIGN, undefined, tmp);
    await expect(loadCampaignIndex(CAMPAIGN, dirs)).resolves.toEqual({ dir: path.join(dir, 'index'), entries: mine });
    await expect(loadCampaignIndex('nope', dirs)).rejects.toThrow(/no index entries for campaign nope .*found entries of c-report, someone-else/);
  });

  test('prefers the sealed index, and counts its revisit records', async () => {
    const dir = path.join(tmp, 'sealed-case');
    fs.mkdirSync(path.join(dir, 'index'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'sealed'), { recursive: true });
    const [a, b] = syntheticIndex();
    // The raw files hold `a` twice (a lost attempt); the sealed index once, and `b` as a revisit.
    fs.writeFileSync(path.join(dir, 'index', 'index-1.jsonl'), [a, a, b].map((e) => `${JSON.stringify(e)}\n`).join(''));
    const rb = { ...b!, revisit: { url: a!.url, date: a!.fetchedAt, recordId: null } };
    fs.writeFileSync(path.join(dir, 'sealed', `${CAMPAIGN}.index.jsonl`), [a, rb].map((e) => `${JSON.stringify(e)}\n`).join(''));
    const got = await loadCampaignIndex(CAMPAIGN, [dir]);
    expect(got).toEqual({ dir: path.join(dir, 'sealed', `${CAMPAIGN}.index.jsonl`), entries: [a, rb], sealed: true });
    expect(buildReportData(got.entries, { campaignId: CAMPAIGN, generatedAt: 'now' }).summary).toMatchObject({ entries: 2, revisits: 1, revisitBytes: b!.bytes });
  });
});

describe("classify agrees with the crawler's own counters", () => {
  const e = (outcome: string, kind?: 'sitemap'): IndexEntry => ({
    url: 'http://a.test/',
    fp: 'x',
    host: 'a.test',
    campaignId: 'c',
    status: 200,
    outcome: outcome as IndexOutcome,
    contentType: null,
    bytes: 0,
    contentHash: null,
    fetchedAt: '2026-11-23T00:00:00.000Z',
    depth: 0,
    referrer: null,
    ...(kind ? { kind } : {}),
  });
  it.each([
    ['fetched', 'fetched'],
    ['redirect', 'fetched'],
    ['duplicate', 'fetched'],
    ['skipped-content-type', 'fetched'],
    ['not-modified', 'fetched'],
    ['error', 'failed'],
    ['gone', 'failed'],
    ['refused', 'failed'],
    ['http-error', 'failed'],
    ['robots-disallowed', 'skipped'],
    ['host-budget-exhausted', 'skipped'],
  ])('%s counts as %s', (outcome, expected) => expect(classify(e(outcome))).toBe(expected));
  it('a sitemap is a request, not a page', () => expect(classify(e('sitemap', 'sitemap'))).toBe('skipped'));
});

describe('change rate of a revisit campaign', () => {
  const t0 = Date.parse('2026-11-24T04:00:00.000Z');
  const visits = [
    entry('a.test', t0, { change: 'new' }),
    entry('a.test', t0 + 1_000, { change: 'changed' }),
    entry('a.test', t0 + 2_000, { change: 'unchanged', outcome: 'not-modified', status: 304 }),
    entry('a.test', t0 + 3_000, { change: 'unchanged' }),
    entry('a.test', t0 + 4_000, { change: 'gone', outcome: 'gone', status: 404 }),
  ];

  test('counts revisits that found a change and those that did not, per bucket; first visits and gone pages apart', () => {
    const d = buildReportData(visits.slice(-1), { campaignId: 'c', generatedAt: 'now', visits });
    const buckets = d.changeRate!.buckets;
    expect(buckets.reduce((n, b) => n + b.changed, 0)).toBe(1);
    expect(buckets.reduce((n, b) => n + b.unchanged, 0)).toBe(2);
    const html = renderReportHtml(d);
    expect(html).toContain('id="chart-change-rate"');
    expect(html).toContain('1 of 3 revisits found a change');
  });

  test('no chart for a campaign without revisits', () => {
    const d = buildReportData([entry('a.test', t0)], { campaignId: 'c', generatedAt: 'now' });
    expect(d.changeRate).toBeNull();
    expect(renderReportHtml(d)).not.toContain('chart-change-rate');
  });
});
