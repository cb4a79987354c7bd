// The classify stage: what a response is, what it adds to the crawl and its
// final outcome, from plain data (the duplicate check and the handler are
// fakes here).
import { classifyStage, finalVerdict, type ClassifyDeps, type ClassifyInput, type Hook, type ResponseFacts } from '../../activities/pipeline/classify-stage';
import type { IndexEntry } from '../../src/storage/index-writer';
import { fakeResponse } from '../support/fake-response';

const PAGE = 'https://a.test/page';

function classify(over: Partial<ClassifyInput> = {}, deps: Partial<ClassifyDeps> = {}) {
  const input: ClassifyInput = {
    entry: { url: PAGE, depth: 1, referrer: null },
    response: fakeResponse(PAGE, { html: '<a href="/one">1</a> <a href="https://b.test/two">2</a>' }),
    nonHtml: 'store',
    dedup: 'exact',
    maxRedirects: 3,
    maxLinks: 3000,
    maxParseMs: 10_000,
    requisites: 'off',
    maxEmbeds: 300,
    handler: false,
    revisit: false,
    lastCapture: false,
    ...over,
  };
  return classifyStage(input, { checkDuplicate: async () => undefined, runHandler: async () => null, ...deps });
}

const redirect = (to: string, redirects = 0) => ({
  entry: { url: PAGE, depth: 2, referrer: null, redirects },
  response: fakeResponse(PAGE, { status: 301, headers: { location: to }, stoppedRedirect: { from: PAGE, to, status: 301 } }),
});

test("an HTML page's links become candidates one hop deeper; its verdict is fetched", async () => {
  const c = await classify();
  expect(c).toMatchObject({
    kind: 'page',
    candidates: [
      { url: 'https://a.test/one', depth: 2 },
      { url: 'https://b.test/two', depth: 2 },
    ],
    verdict: { outcome: 'fetched', counted: 'fetched' },
  });
});

test('a duplicate keeps its links and is counted as a page fetched', async () => {
  const of: IndexEntry['duplicateOf'] = { url: 'https://a.test/first', kind: 'exact', distance: 0 };
  const c = await classify({}, { checkDuplicate: async () => of });
  expect(c).toMatchObject({ kind: 'page', duplicateOf: of, contentChecked: true, verdict: { outcome: 'duplicate', counted: 'fetched' } });
  expect(c.kind === 'page' && c.candidates).toHaveLength(2);
});

test('a redirect is not a link hop: its target keeps the depth and counts the hop; its 3xx counts as a page fetched', async () => {
  expect(await classify(redirect('https://a.test/next'))).toMatchObject({
    kind: 'page',
    redirectTo: 'https://a.test/next',
    candidates: [{ url: 'https://a.test/next', depth: 2, redirects: 1 }],
    verdict: { outcome: 'redirect', counted: 'fetched' },
  });
});

test('credentials in a Location reach neither the frontier nor the index', async () => {
  const c = await classify(redirect('https://admin:s3cret@a.test/next'));
  expect(c).toMatchObject({
    kind: 'page',
    redirectTo: 'https://a.test/next',
    candidates: [{ url: 'https://a.test/next', depth: 2, redirects: 1 }],
    verdict: { outcome: 'redirect', counted: 'fetched' },
  });
  expect(JSON.stringify(c)).not.toContain('s3cret');
});

test('one redirect too many is an error whose message names the target without its credentials', async () => {
  const c = await classify(redirect('https://admin:s3cret@a.test/next', 3));
  expect(c).toMatchObject({
    kind: 'page',
    candidates: [],
    redirectTo: 'https://a.test/next',
    verdict: { outcome: 'error', counted: 'failed', error: { code: 'TOO_MANY_REDIRECTS', message: expect.stringContaining('to https://a.test/next') } },
  });
  expect(JSON.stringify(c)).not.toContain('s3cret');
});

test('a redirect to what cannot be crawled keeps its target on record, unless it names credentials', async () => {
  expect(await classify(redirect('mailto:someone@example.com'))).toMatchObject({ redirectTo: 'mailto:someone@example.com', candidates: [] });
  const ftp = await classify(redirect('ftp://user:pw@files.test/x'));
  expect(JSON.stringify(ftp)).not.toContain('pw@');
});

test('a 304 to a conditional request is not modified; a non-HTML body the campaign skips is only indexed', async () => {
  expect(await classify({ response: fakeResponse(PAGE, { status: 304 }), lastCapture: true })).toEqual({ kind: 'not-modified' });
  const pdf = fakeResponse(PAGE, { headers: { 'content-type': 'application/pdf' }, body: Buffer.from('%PDF') });
  expect(await classify({ response: pdf, nonHtml: 'skip' })).toMatchObject({ kind: 'skipped-content-type', common: { status: 200, contentType: 'application/pdf' } });
});

test("a handler's links go first and keep their label; a handler that fails makes the page an error", async () => {
  const hook = { ok: true, attempts: 1, output: { items: [{ a: 1 }], links: [{ url: 'https://a.test/from-hook', label: 'detail' }], skipDefaultLinks: false } } as unknown as Hook;
  const c = await classify({ handler: true }, { runHandler: async () => hook });
  expect(c.kind === 'page' && c.candidates.map((x) => [x.url, x.label ?? null])).toEqual([
    ['https://a.test/from-hook', 'detail'],
    ['https://a.test/one', null],
    ['https://b.test/two', null],
  ]);
  const failed = { ok: false, attempts: 3, message: 'boom' } as unknown as Hook;
  expect(await classify({ handler: true }, { runHandler: async () => failed })).toMatchObject({
    verdict: { outcome: 'error', counted: 'failed', error: { code: 'HANDLER_ERROR', message: 'boom' } },
  });
});

test('a final 4xx is an http-error with its code; a sitemap keeps its outcome whatever its status and counts as no page', async () => {
  const gone = await classify({ response: fakeResponse(PAGE, { status: 404, statusText: 'Not Found', html: 'no' }) });
  expect(gone).toMatchObject({ verdict: { outcome: 'http-error', counted: 'failed', error: { code: 'HTTP_404', message: 'HTTP 404 Not Found' } } });
  const sitemap = await classify({ entry: { url: PAGE, depth: 0, referrer: null, kind: 'sitemap' }, response: fakeResponse(PAGE, { status: 404 }) });
  expect(sitemap).toMatchObject({ verdict: { outcome: 'sitemap', counted: 'skipped' } });
});

test('the final outcome: the first rule that applies wins', () => {
  const base: ResponseFacts = { redirect: null, handlerFailed: false, sitemap: false, status: 200, duplicate: false };
  const cases: [Partial<ResponseFacts>, string, string][] = [
    [{}, 'fetched', 'fetched'],
    [{ duplicate: true }, 'duplicate', 'fetched'],
    [{ status: 500, duplicate: true }, 'http-error', 'failed'],
    [{ sitemap: true, status: 404 }, 'sitemap', 'skipped'],
    [{ redirect: 'followed', status: 301, sitemap: true }, 'redirect', 'skipped'],
    [{ redirect: 'followed', status: 301 }, 'redirect', 'fetched'],
    [{ redirect: 'too-many', status: 301 }, 'error', 'failed'],
    [{ redirect: 'too-many', status: 301, sitemap: true }, 'error', 'skipped'],
    [{ handlerFailed: true, duplicate: true }, 'error', 'failed'],
  ];
  for (const [facts, outcome, counted] of cases) expect([facts, finalVerdict({ ...base, ...facts })]).toEqual([facts, { outcome, counted }]);
});

test('links past maxLinks are not taken, and counted as dropped', async () => {
  const html = Array.from({ length: 50 }, (_, i) => `<a href="/p${i}">${i}</a>`).join(' ');
  const c = await classify({ maxLinks: 10, response: fakeResponse(PAGE, { html }) });
  if (c.kind !== 'page') throw new Error(`expected a page, got ${c.kind}`);
  expect(c.candidates.map((x) => x.url)).toEqual(Array.from({ length: 10 }, (_, i) => `https://a.test/p${i}`));
  expect(c.linksDropped).toBe(40);
  expect(c.verdict).toEqual({ outcome: 'fetched', counted: 'fetched' });
});

test('a page whose parsing outlasts maxParseMs is stored as parse-timeout, with the links found until then', async () => {
  // Large enough to be read in several chunks: the clock is looked at between them.
  const html = Array.from({ length: 40_000 }, (_, i) => `<a href="/p${i}">link number ${i}</a>`).join('\n');
  const c = await classify({ maxLinks: 100_000, maxParseMs: 1, response: fakeResponse(PAGE, { html }) });
  if (c.kind !== 'page') throw new Error(`expected a page, got ${c.kind}`);
  expect(c.verdict.outcome).toBe('parse-timeout');
  expect(c.verdict.counted).toBe('fetched');
  expect(c.verdict.error?.code).toBe('PARSE_TIMEOUT');
  expect(c.candidates.length).toBeLessThan(40_000);
});

test('a timed-out parse is still an HTTP error first when the status says so', () => {
  expect(finalVerdict({ redirect: null, handlerFailed: false, sitemap: false, status: 200, duplicate: true, parseTimedOut: true }).outcome).toBe('parse-timeout');
  expect(finalVerdict({ redirect: null, handlerFailed: false, sitemap: false, status: 500, duplicate: false, parseTimedOut: true }).outcome).toBe('http-error');
});

describe('requisites (issue 24)', () => {
  const PAGE_HTML = [
    '<link rel="stylesheet" href="/static/site.css?v=123&b=2&a=1">',
    '<link rel="alternate" type="application/rss+xml" href="/feed.xml">',
    '<img src="https://cdn.test/logo.png" srcset="/img/a-1x.png 1x, /img/a-2x.png 2x">',
    '<a href="/next">next</a>',
  ].join('');

  test("a page's requisites are embeds at the page's depth, one E hop further, ahead of its links; its feeds are listed like sitemaps", async () => {
    const c = await classify({ entry: { url: PAGE, depth: 1, referrer: null, hops: 'L' }, response: fakeResponse(PAGE, { html: PAGE_HTML }), requisites: 'on' });
    expect(c.kind === 'page' && c.candidates).toEqual([
      // As written: the cache-buster's query is neither sorted nor cut.
      { url: 'https://a.test/static/site.css?v=123&b=2&a=1', depth: 1, kind: 'embed', hops: 'LE' },
      { url: 'https://cdn.test/logo.png', depth: 1, kind: 'embed', hops: 'LE' },
      { url: 'https://a.test/img/a-1x.png', depth: 1, kind: 'embed', hops: 'LE' },
      { url: 'https://a.test/img/a-2x.png', depth: 1, kind: 'embed', hops: 'LE' },
      { url: 'https://a.test/next', depth: 2, hops: 'LL' },
      { url: 'https://a.test/feed.xml', depth: 1, kind: 'feed', hops: 'LL' },
    ]);
    expect(c).toMatchObject({ verdict: { outcome: 'fetched', counted: 'fetched' }, embedsDropped: 0 });
  });

  test('requisites off: the page gives its links and feeds only; past maxEmbeds the rest are counted', async () => {
    const off = await classify({ response: fakeResponse(PAGE, { html: PAGE_HTML }) });
    expect(off.kind === 'page' && off.candidates.map((x) => x.kind ?? 'page')).toEqual(['page', 'feed']);
    const capped = await classify({ response: fakeResponse(PAGE, { html: PAGE_HTML }), requisites: 'on', maxEmbeds: 2 });
    expect(capped.kind === 'page' && capped.candidates.filter((x) => x.kind === 'embed')).toHaveLength(2);
    expect(capped).toMatchObject({ embedsDropped: 2 });
  });

  test('a stylesheet gives its own requisites, relative to itself; it is never parsed for links nor checked for duplicates', async () => {
    const CSS = 'https://cdn.test/css/main.css';
    const body = Buffer.from('@import "theme.css"; body { background: url(../img/bg.png) } /* url(commented.png) */ <a href="/x">');
    let checked = 0;
    const c = await classify(
      {
        entry: { url: CSS, depth: 1, referrer: PAGE, kind: 'embed', hops: 'LE' },
        response: fakeResponse(CSS, { headers: { 'content-type': 'text/css' }, body }),
        requisites: 'on',
        handler: true,
      },
      {
        checkDuplicate: async () => (checked++, undefined),
        runHandler: async () => {
          throw new Error('handlers are for pages');
        },
      },
    );
    expect(c.kind === 'page' && c.candidates).toEqual([
      { url: 'https://cdn.test/css/theme.css', depth: 1, kind: 'embed', hops: 'LEE' },
      { url: 'https://cdn.test/img/bg.png', depth: 1, kind: 'embed', hops: 'LEE' },
    ]);
    expect(c).toMatchObject({ contentChecked: false, hook: null, verdict: { outcome: 'fetched', counted: 'embeds' } });
    expect(checked).toBe(0);
  });

  test('an image embed adds nothing; a failed embed counts as a failed embed, not a failed page; a redirected one stays an embed', async () => {
    const IMG = 'https://a.test/img/x.png';
    const entry = { url: IMG, depth: 0, referrer: PAGE, kind: 'embed' as const, hops: 'E' };
    const img = await classify({ entry, response: fakeResponse(IMG, { headers: { 'content-type': 'image/png' }, body: Buffer.from('png') }), requisites: 'on' });
    expect(img).toMatchObject({ candidates: [], verdict: { outcome: 'fetched', counted: 'embeds' } });
    const missing = await classify({ entry, response: fakeResponse(IMG, { status: 404 }), requisites: 'on' });
    expect(missing).toMatchObject({ verdict: { outcome: 'http-error', counted: 'embedsFailed' } });
    const to = 'https://cdn.test/x.png';
    const moved = await classify({
      entry,
      response: fakeResponse(IMG, { status: 302, headers: { location: to }, stoppedRedirect: { from: IMG, to, status: 302 } }),
      requisites: 'on',
    });
    expect(moved).toMatchObject({ candidates: [{ url: to, depth: 0, kind: 'embed', hops: 'ER', redirects: 1 }], verdict: { outcome: 'redirect', counted: 'embeds' } });
  });

  test("a feed's items are links one hop below it; the feed itself counts as no page", async () => {
    const FEED = 'https://a.test/feed.xml';
    const rss = Buffer.from('<?xml version="1.0"?><rss version="2.0"><channel><item><link>https://a.test/news/1</link></item><item><link>/news/2</link></item></channel></rss>');
    const c = await classify({
      entry: { url: FEED, depth: 1, referrer: PAGE, kind: 'feed', hops: 'LL' },
      response: fakeResponse(FEED, { headers: { 'content-type': 'application/rss+xml' }, body: rss }),
    });
    expect(c).toMatchObject({
      candidates: [
        { url: 'https://a.test/news/1', depth: 2, hops: 'LLL' },
        { url: 'https://a.test/news/2', depth: 2, hops: 'LLL' },
      ],
      feed: { kind: 'rss', links: 2, truncated: false },
      verdict: { outcome: 'feed', counted: 'skipped' },
    });
    // The same document fetched as a page (a seed, a plain link) is a page whose links are its items.
    const page = await classify({ entry: { url: FEED, depth: 0, referrer: null }, response: fakeResponse(FEED, { headers: { 'content-type': 'text/xml' }, body: rss }) });
    expect(page).toMatchObject({
      candidates: [
        { url: 'https://a.test/news/1', depth: 1 },
        { url: 'https://a.test/news/2', depth: 1 },
      ],
      verdict: { outcome: 'fetched', counted: 'fetched' },
    });
  });
});

describe("a rendered page's frames", () => {
  const shell = '<!doctype html><html><body><div id="app"></div></body></html>';
  const rendered = (frames: { url: string; html: string }[], html = '<a href="/main">m</a><iframe src="/frame/inner.html"></iframe>') =>
    fakeResponse(PAGE, { html: shell, rendered: { html, url: PAGE, done: 'quiet', ms: 10, requests: 1, frames } });

  test("each frame's links are read against the frame's own URL, after the main frame's, each once; the index line counts the frames", async () => {
    const c = await classify({
      response: rendered([
        { url: 'https://a.test/frame/inner.html', html: '<a href="child-a">a</a> <a href="/main">again</a> <a href="child-a#x">a again</a>' },
        // A frame built by the page's script (about:blank): its links resolve against the page.
        { url: PAGE, html: '<a href="blank-1">b</a> <a rel="nofollow" href="/no">n</a>' },
      ]),
    });
    expect(c.kind === 'page' && c.candidates.map((x) => [x.url, x.depth])).toEqual([
      ['https://a.test/main', 2],
      ['https://a.test/frame/inner.html', 2],
      ['https://a.test/frame/child-a', 2],
      ['https://a.test/blank-1', 2],
    ]);
    expect(c.kind === 'page' && c.common.render).toMatchObject({ frames: 2 });
  });

  test("a frame's links count against budgets.maxLinksPerPage with the main frame's; a frame's meta nofollow, or the page's, keeps its links back", async () => {
    const frames = [{ url: 'https://a.test/f/', html: '<a href="1">1</a><a href="2">2</a><a href="3">3</a>' }];
    const capped = await classify({ response: rendered(frames), maxLinks: 3 });
    expect(capped.kind === 'page' && capped.candidates.map((x) => x.url)).toEqual(['https://a.test/main', 'https://a.test/frame/inner.html', 'https://a.test/f/1']);
    expect(capped.kind === 'page' && capped.linksDropped).toBe(2);
    const frameNofollow = await classify({ response: rendered([{ ...frames[0]!, html: `<meta name="robots" content="nofollow">${frames[0]!.html}` }]) });
    expect(frameNofollow.kind === 'page' && frameNofollow.candidates.map((x) => x.url)).toEqual(['https://a.test/main', 'https://a.test/frame/inner.html']);
    const pageNofollow = await classify({ response: rendered(frames, '<meta name="robots" content="nofollow"><a href="/main">m</a>') });
    expect(pageNofollow.kind === 'page' && pageNofollow.candidates).toEqual([]);
  });

  test("a frame's requisites are the page's (embeds at its depth); without frames nothing changes", async () => {
    const c = await classify({ requisites: 'on', response: rendered([{ url: 'https://a.test/f/x.html', html: '<img src="pic.png">' }], '<p>no links</p>') });
    expect(c.kind === 'page' && c.candidates.map((x) => [x.url, x.kind, x.depth])).toEqual([['https://a.test/f/pic.png', 'embed', 1]]);
    const none = await classify({ response: rendered([], '<a href="/main">m</a>') });
    expect(none.kind === 'page' && none.candidates.map((x) => x.url)).toEqual(['https://a.test/main']);
    expect(none.kind === 'page' && none.common.render?.frames).toBeUndefined();
  });
});

test("a failed handler run keeps its own code (a render hook's), HANDLER_ERROR otherwise", async () => {
  const fail = (code?: string): Hook => ({ ok: false, message: 'onRender failed: boom', attempts: 1, ctx: {} as never, ...(code ? { code } : {}) });
  const withCode = await classify({ handler: true }, { runHandler: async () => fail('RENDER_HOOK_ERROR') });
  expect(withCode).toMatchObject({ verdict: { outcome: 'error', counted: 'failed', error: { code: 'RENDER_HOOK_ERROR', message: 'onRender failed: boom' } } });
  // The page's own links are still followed.
  expect(withCode.kind === 'page' && withCode.candidates).toHaveLength(2);
  expect(await classify({ handler: true }, { runHandler: async () => fail() })).toMatchObject({ verdict: { error: { code: 'HANDLER_ERROR' } } });
});
