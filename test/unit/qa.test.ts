// The measures of `crawler qa` (src/qa/): screenshot and text similarity,
// a page's score, the campaign's report, and the replay URLs it reads.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { buildQaReport, newestQaReport, pageScore, qaFileName, resourceShare, worstPages, type QaPage } from '../../src/qa/qa-report';
import { fromArchive, originalOf } from '../../src/qa/replay-page';
import { evenSample } from '../../src/qa/run-qa';
import { BLOCK_PX, screenshotSimilarity, textSimilarity, visibleText } from '../../src/qa/similarity';

/** A white page `w`×`h` with dark rectangles [x, y, width, height] drawn on it, as a PNG. */
function page(w: number, h: number, boxes: [number, number, number, number][], grey = 0): Buffer {
  const png = new PNG({ width: w, height: h });
  png.data.fill(255);
  for (const [x0, y0, bw, bh] of boxes) {
    for (let y = y0; y < Math.min(h, y0 + bh); y++) {
      for (let x = x0; x < Math.min(w, x0 + bw); x++) {
        const i = (y * w + x) * 4;
        png.data[i] = png.data[i + 1] = png.data[i + 2] = grey;
      }
    }
  }
  // No row filter: pngjs tries all five per row otherwise, which is most of what writing a PNG costs here.
  return PNG.sync.write(png, { filterType: 0 });
}

describe('screenshot similarity', () => {
  // Small pages: the measure works on blocks whatever the size.
  const W = 640;
  const H = 360;
  const lines: [number, number, number, number][] = [
    [16, 16, 200, 32],
    [16, 64, 300, 16],
    [16, 96, 64, 16],
  ];

  test('the same picture is 1, whatever its size', () => {
    expect(screenshotSimilarity(page(W, H, lines), page(W, H, lines))).toBe(1);
    expect(screenshotSimilarity(page(W, H, []), page(W, H, []))).toBe(1);
  });

  test('a page that lost all its content is 0, though most of it is the same white', () => {
    expect(screenshotSimilarity(page(W, H, lines), page(W, H, []))).toBe(0);
  });

  test('a page that lost part of its content scores the share of its content still there', () => {
    const s = screenshotSimilarity(page(W, H, lines), page(W, H, lines.slice(0, 2)));
    // The third line is 4 of the 26 + 19 + 4 content blocks.
    expect(s).toBeGreaterThan(0.8);
    expect(s).toBeLessThan(0.95);
  });

  test('greys a little off (antialiasing, another colour profile) do not count; content moved does', () => {
    expect(screenshotSimilarity(page(W, H, lines), page(W, H, lines, 10))).toBe(1);
    expect(screenshotSimilarity(page(W, H, lines), page(W, H, lines, 40))).toBe(0);
    const moved = lines.map(([x, y, w, h]) => [x, y + 4 * BLOCK_PX, w, h] as [number, number, number, number]);
    expect(screenshotSimilarity(page(W, H, lines), page(W, H, moved))).toBeLessThan(0.2);
  });

  test('a replay taller than the crawl: its extra content counts as unlike', () => {
    const s = screenshotSimilarity(page(W, H, lines), page(W, 2 * H, [...lines, [16, 400, 600, 200]]));
    expect(s).toBeLessThan(0.5);
  });

  test('not a PNG: it throws, and the page says the screenshot was not comparable', () => {
    expect(() => screenshotSimilarity(Buffer.from('not a png'), page(10, 10, []))).toThrow();
  });
});

describe('text similarity', () => {
  test('the same words however laid out are 1; none shared is 0; two empty texts are alike', () => {
    expect(textSimilarity('Spa home\nWelcome to a site.', 'spa  HOME welcome to a site')).toBe(1);
    expect(textSimilarity('Spa home', 'Not found')).toBe(0);
    expect(textSimilarity('', '  ')).toBe(1);
    expect(textSimilarity('Spa home', '')).toBe(0);
  });

  test('the Jaccard index of the word sets', () => {
    // {a, b, c, d} against {a, b, c, e}: 3 shared of 5.
    expect(textSimilarity('a b c d', 'a b c e')).toBeCloseTo(3 / 5);
    expect(textSimilarity('Grüße aus Köln 2024', 'grüße aus köln')).toBeCloseTo(3 / 4);
  });

  test('visible text: blocks kept apart as innerText keeps them, what is never shown left out, entities decoded', () => {
    const html =
      '<html><head><title>T</title><script>var hidden = 1</script><style>p{}</style></head>' +
      '<body><h1>Spa home</h1><p>Welcome &amp; <b>bold</b>text.</p><nav><a href="/a">/p/one</a> <a>/p/two</a></nav>' +
      '<template>never</template><noscript>off</noscript><br>after</body></html>';
    expect(visibleText(html)).toBe('Spa home\nWelcome & boldtext.\n/p/one /p/two\nafter');
  });
});

const qaPage = (url: string, over: Partial<QaPage> = {}): QaPage => ({
  url,
  timestamp: '20260101000000',
  kind: 'rendered',
  screenshot: 1,
  text: 1,
  resources: 1,
  score: 1,
  missing: [],
  ms: 10,
  ...over,
});

describe('scores and the report', () => {
  test("a page's score is the mean of what was measured of it; a page not replayed scores 0", () => {
    expect(pageScore({ screenshot: 0.5, text: 1, resources: 0.75 })).toBe(0.75);
    expect(pageScore({ screenshot: null, text: 0.5, resources: 1 })).toBe(0.75);
    expect(pageScore({ screenshot: null, text: null, resources: 1 })).toBe(1);
    expect(pageScore({ screenshot: 1, text: 1, resources: 1, error: 'not in the archive: pywb answered 404' })).toBe(0);
    expect(resourceShare(2, 1)).toBe(0.6667);
    expect(resourceShare(0, 0)).toBe(1);
  });

  test('the campaign score is the mean of its pages; each missing URL names the pages it breaks, most first', () => {
    const m = (url: string) => ({ url, status: 404, type: 'image' });
    const r = buildQaReport(
      [
        qaPage('http://a.test/1', { score: 0.5, missing: [m('http://a.test/x.png'), m('http://a.test/y.css')] }),
        qaPage('http://a.test/2', { score: 1 }),
        qaPage('http://a.test/3', { score: 0.6, missing: [m('http://a.test/x.png')] }),
      ],
      { campaignId: 'c', source: '/out', generatedAt: 'now', settings: { sampleHttp: 0, concurrency: 2, pageTimeoutMs: 30_000 } },
    );
    expect(r.score).toBe(0.7);
    expect(r.missing).toEqual([
      { url: 'http://a.test/x.png', pages: ['http://a.test/1', 'http://a.test/3'] },
      { url: 'http://a.test/y.css', pages: ['http://a.test/1'] },
    ]);
    expect(worstPages(r, 2).map((p) => p.url)).toEqual(['http://a.test/1', 'http://a.test/3']);
    expect(buildQaReport([], { campaignId: 'c', source: '/out', generatedAt: 'now', settings: r.settings }).score).toBeNull();
  });

  test("the report reads the campaign's newest QA file of the output folder, not another campaign's", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qa-unit-'));
    try {
      expect(await newestQaReport(dir, 'c')).toBeNull();
      fs.mkdirSync(path.join(dir, 'qa'));
      const write = (at: string, campaignId: string, score: number) => {
        const name = qaFileName(new Date(at));
        fs.writeFileSync(path.join(dir, 'qa', name), JSON.stringify({ campaignId, score, pages: [] }));
        return name;
      };
      write('2026-01-01T00:00:00Z', 'c', 0.5);
      const newest = write('2026-01-02T00:00:00Z', 'c', 0.9);
      write('2026-01-03T00:00:00Z', 'other', 0.1);
      expect(newest).toBe('qa-20260102T000000Z.json');
      const got = await newestQaReport(dir, 'c');
      expect({ file: path.basename(got!.file), score: got!.report.score }).toEqual({ file: newest, score: 0.9 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('replay URLs and samples', () => {
  const coll = 'http://127.0.0.1:8090/qa';
  test("the archived URL of a replay URL, with or without its timestamp and modifier; none for pywb's own files", () => {
    expect(originalOf(coll, `${coll}/20260101000000/http://a.test/x?y=1`)).toBe('http://a.test/x?y=1');
    expect(originalOf(coll, `${coll}/20260101000000im_/https://a.test/i.png`)).toBe('https://a.test/i.png');
    expect(originalOf(coll, `${coll}/http://a.test/`)).toBe('http://a.test/');
    expect(originalOf(coll, 'http://127.0.0.1:8090/static/wombat.js')).toBeNull();
    expect(originalOf(coll, `${coll}/`)).toBeNull();
  });

  test("answered from the archive: a memento's header, or an XHR's answer (pywb leaves it without) with the record's own headers; pywb's not-found has neither", () => {
    expect(fromArchive({ 'memento-datetime': 'Sun, 29 Nov 2026 03:53:19 GMT', 'content-type': 'text/html' })).toBe(true);
    // What pywb sent for a script player's XHR of an archived segment.
    expect(fromArchive({ 'x-archive-orig-date': 'Sun, 29 Nov 2026 03:53:19 GMT', 'content-type': 'video/mp2t', 'content-length': '4096' })).toBe(true);
    expect(fromArchive({ 'content-type': 'text/html; charset=utf-8', 'content-length': '1234' })).toBe(false);
  });

  test('an even sample: spread over the list, the same every time, all when there are fewer', () => {
    const items = Array.from({ length: 10 }, (_, i) => i);
    expect(evenSample(items, 3)).toEqual([0, 3, 6]);
    expect(evenSample(items, 20)).toEqual(items);
    expect(evenSample(items, 0)).toEqual([]);
  });
});
