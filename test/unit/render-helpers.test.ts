// The browser fetcher's pure parts (src/browser/browser-fetcher.ts): which
// request of a page is answered how, what the browser gets as headers, when
// a page counts as done (src/browser/page-done.ts), when scrolling stops
// (src/browser/scroll.ts) and what of a frame is read (src/browser/frames.ts).
import { fulfilHeaders, InFlight, routeDecision, shouldRender, type PageRequest } from '../../src/browser/browser-fetcher';
import { frameDocument, MAX_FRAME_CHARS, MAX_FRAMES_CHARS, type FrameRead } from '../../src/browser/frames';
import { waitDone, type IdleProbe } from '../../src/browser/page-done';
import { nextScroll, SCROLL_MAX_STEPS, type ScrollState } from '../../src/browser/scroll';
import type { FetchResult } from '../../src/http/http-types';

const host = 'spa.test:8080';
const req = (over: Partial<PageRequest>): PageRequest => ({ url: `http://${host}/app.js`, method: 'GET', resourceType: 'script', mainFrameNavigation: false, ...over });
const decide = (
  r: PageRequest,
  o: { documentServed?: boolean; documentUrl?: string; allows?: (u: string) => boolean; otherHosts?: boolean; excluded?: (u: string) => boolean } = {},
) =>
  routeDecision(r, {
    host,
    allowedByRobots: o.allows ?? null,
    // A page's requests come after its document; its navigations before.
    documentServed: o.documentServed ?? !r.mainFrameNavigation,
    documentUrl: o.documentUrl ?? `http://${host}/`,
    otherHosts: o.otherHosts ?? false,
    excluded: o.excluded,
  });

describe('routeDecision', () => {
  test("the main frame's first navigation is the document; a later one would leave the page and is refused", () => {
    const nav = req({ url: `http://${host}/`, resourceType: 'document', mainFrameNavigation: true });
    expect(decide(nav)).toEqual({ kind: 'document' });
    expect(decide(nav, { documentServed: true })).toEqual({ kind: 'refuse', why: 'navigation' });
    // The same document asked for with a fragment, or escaped otherwise than the page's URL.
    expect(decide(req({ url: `http://${host}/#top`, resourceType: 'document', mainFrameNavigation: true }))).toEqual({ kind: 'document' });
    expect(decide(req({ url: `http://${host}/`, resourceType: 'document', mainFrameNavigation: true }), { documentUrl: `http://${host.toUpperCase()}/` })).toEqual({
      kind: 'document',
    });
    const q = req({ url: `http://${host}/a?q=it%27s`, resourceType: 'document', mainFrameNavigation: true });
    expect(decide(q, { documentUrl: `http://${host}/a?q=it's` })).toEqual({ kind: 'document' });
  });

  test("a navigation elsewhere is refused even before the document is served: a page before's late navigation cannot use it up", () => {
    // The tab's previous page navigated in a loop; one of its navigations reached the routes once they were this page's.
    const late = req({ url: `http://${host}/loop?0.42`, resourceType: 'document', mainFrameNavigation: true });
    expect(decide(late)).toEqual({ kind: 'refuse', why: 'navigation' });
  });

  test("before the page's document is served, any other request is the page before's (woken as the tab navigates) and is refused", () => {
    for (const r of [req({}), req({ method: 'POST', resourceType: 'fetch' }), req({ url: 'http://cdn.test/x.js' })])
      expect(decide(r, { documentServed: false, otherHosts: true })).toEqual({ kind: 'refuse', why: 'previous-page' });
    expect(decide(req({ url: `http://${host}/`, resourceType: 'document', mainFrameNavigation: true }), { documentServed: false })).toEqual({ kind: 'document' });
    expect(decide(req({}), { documentServed: true })).toEqual({ kind: 'fetch', host, sameHost: true });
  });

  test("GETs, HEADs and POSTs on the page's host are fetched; methods that change a site, streams and robots-disallowed URLs are refused", () => {
    expect(decide(req({}), { documentServed: true })).toEqual({ kind: 'fetch', host, sameHost: true });
    expect(decide(req({ method: 'POST', resourceType: 'fetch' }))).toEqual({ kind: 'fetch', host, sameHost: true });
    expect(decide(req({ method: 'HEAD', resourceType: 'fetch' }))).toEqual({ kind: 'fetch', host, sameHost: true });
    for (const method of ['PUT', 'PATCH', 'DELETE', 'OPTIONS']) expect(decide(req({ method, resourceType: 'fetch' }))).toEqual({ kind: 'refuse', why: 'method' });
    expect(decide(req({ resourceType: 'eventsource' }))).toEqual({ kind: 'refuse', why: 'stream' });
    expect(decide(req({ resourceType: 'websocket', url: `ws://${host}/live` }))).toEqual({ kind: 'refuse', why: 'stream' });
    expect(decide(req({ url: 'data:text/plain,hi' }))).toEqual({ kind: 'refuse', why: 'scheme' });
    expect(decide(req({ url: `http://${host}/private/a.js` }), { allows: (u) => !u.includes('/private/') })).toEqual({ kind: 'refuse', why: 'robots' });
    expect(decide(req({ url: `http://${host}/ads/a.js` }), { excluded: (u) => u.includes('/ads/') })).toEqual({ kind: 'refuse', why: 'excluded' });
  });

  test("other hosts: fetched in their own turn when the page may reach them (their robots.txt is the turn's), else refused", () => {
    expect(decide(req({ url: 'http://cdn.test/x.js' }))).toEqual({ kind: 'refuse', why: 'other-host' });
    // Another port is another host (the politeness key is host:port).
    expect(decide(req({ url: 'http://spa.test:9090/x.js' }))).toEqual({ kind: 'refuse', why: 'other-host' });
    expect(decide(req({ url: 'http://cdn.test/x.js' }), { otherHosts: true })).toEqual({ kind: 'fetch', host: 'cdn.test', sameHost: false });
    // The page's robots.txt is not the other host's.
    expect(decide(req({ url: 'http://cdn.test/private/x.js' }), { otherHosts: true, allows: (u) => !u.includes('/private/') })).toEqual({
      kind: 'fetch',
      host: 'cdn.test',
      sameHost: false,
    });
    expect(decide(req({ url: 'http://cdn.test/ads/x.js' }), { otherHosts: true, excluded: (u) => u.includes('/ads/') })).toEqual({ kind: 'refuse', why: 'excluded' });
  });
});

test('fulfilHeaders drops what no longer describes the decoded, whole body and keeps the rest (Set-Cookie lines apart)', () => {
  const h = fulfilHeaders({
    'content-type': 'text/javascript',
    'content-encoding': 'br',
    'content-length': '120',
    'transfer-encoding': 'chunked',
    connection: 'keep-alive',
    'set-cookie': 'a=1\nb=2',
    ':status': '200',
  });
  expect(h).toEqual({ 'content-type': 'text/javascript', 'set-cookie': 'a=1\nb=2' });
});

test('shouldRender: only a 2xx HTML page entry with a body', () => {
  const res = (over: Partial<FetchResult>) => ({ status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: Buffer.from('<p>x'), ...over }) as FetchResult;
  expect(shouldRender('page', res({}))).toBe(true);
  expect(shouldRender('embed', res({}))).toBe(false);
  expect(shouldRender('sitemap', res({}))).toBe(false);
  expect(shouldRender('page', res({ status: 404 }))).toBe(false);
  expect(shouldRender('page', res({ headers: { 'content-type': 'application/json' } }))).toBe(false);
  expect(shouldRender('page', res({ status: 200, stoppedRedirect: { from: 'a', to: 'b', status: 301 } }))).toBe(false);
  expect(shouldRender('page', res({ body: Buffer.alloc(0) }))).toBe(false);
});

describe('InFlight.settled', () => {
  test('quiet only once every request has ended and the quiet period passed; until then only the deadline ends the wait', async () => {
    const f = new InFlight();
    f.begin();
    f.begin();
    f.end();
    expect(await f.settled(0, Date.now() + 30)).toBe('deadline');
    f.end();
    expect(f.count).toBe(0);
    expect(await f.settled(30, Date.now() + 10_000)).toBe('quiet');
  });

  test('a request that begins while waiting holds the page until it ends', async () => {
    const f = new InFlight();
    const settled = f.settled(50, Date.now() + 5_000);
    f.begin();
    let result: string | null = null;
    void settled.then((r) => (result = r));
    await new Promise((r) => setTimeout(r, 120));
    expect(result).toBeNull();
    f.end();
    expect(await settled).toBe('quiet');
  });

  test('deadline when requests never stop', async () => {
    const f = new InFlight();
    f.begin();
    expect(await f.settled(10, Date.now() + 30)).toBe('deadline');
  });
});

describe('waitDone: quiet, then the thread idle, with no request begun meanwhile', () => {
  /** An idle probe that answers at once, after `during` (what the page did while its thread was busy). */
  const probe = (during: () => void = () => undefined) => {
    let calls = 0;
    const idle: IdleProbe = async () => {
      calls++;
      during();
      return 'idle';
    };
    return { idle, calls: () => calls };
  };

  test('a page quiet and idle is done after one round', async () => {
    const f = new InFlight();
    const p = probe();
    expect(await waitDone(f, 0, Date.now() + 5_000, p.idle)).toBe('quiet');
    expect(p.calls()).toBe(1);
  });

  test('a request begun while the thread was busy (a script that fetches late) is waited for: quiet again, then idle again', async () => {
    const f = new InFlight();
    let late = true;
    // The first time the page gets its thread back, its script starts a fetch that ends a little later.
    const p = probe(() => {
      if (!late) return;
      late = false;
      f.begin();
      setTimeout(() => f.end(), 40);
    });
    const settled = waitDone(f, 20, Date.now() + 5_000, p.idle);
    expect(await settled).toBe('quiet');
    expect({ rounds: p.calls(), began: f.began, inFlight: f.count }).toEqual({ rounds: 2, began: 1, inFlight: 0 });
  });

  test('a request that began and ended during the idle wait still counts: the page is looked at again', async () => {
    const f = new InFlight();
    let once = true;
    const p = probe(() => {
      if (!once) return;
      once = false;
      f.begin();
      f.end();
    });
    expect(await waitDone(f, 0, Date.now() + 5_000, p.idle)).toBe('quiet');
    expect(p.calls()).toBe(2);
  });

  test('deadline: when the page is never idle in time, or starts a request on every idle', async () => {
    const f = new InFlight();
    expect(await waitDone(f, 0, Date.now() + 5_000, async () => 'deadline')).toBe('deadline');
    const g = new InFlight();
    const restless = probe(() => {
      g.begin();
      setTimeout(() => g.end(), 5);
    });
    expect(await waitDone(g, 5, Date.now() + 100, restless.idle)).toBe('deadline');
  });
});

describe('nextScroll', () => {
  const at = (over: Partial<ScrollState>): ScrollState => ({ steps: 1, atBottom: false, grew: false, settled: false, now: 0, until: 10_000, ...over });
  test('scrolls on until the bottom is reached and, after a whole quiet wait there, nothing was added', () => {
    expect(nextScroll(at({}))).toBe('scroll');
    // At the bottom, but the step loaded more: the new bottom is further down.
    expect(nextScroll(at({ atBottom: true, grew: true }))).toBe('scroll');
    // At the bottom after a step's short wait: a feed's next batch may only be starting.
    expect(nextScroll(at({ atBottom: true }))).toBe('settle');
    expect(nextScroll(at({ atBottom: true, settled: true }))).toBe('bottom');
    // The wait at the bottom brought more: scrolling goes on.
    expect(nextScroll(at({ atBottom: true, grew: true, settled: true }))).toBe('scroll');
    expect(nextScroll(at({ atBottom: true, now: 10_000 }))).toBe('deadline');
  });
  test('stops after its steps or at its time, whichever first', () => {
    expect(nextScroll(at({ steps: SCROLL_MAX_STEPS, grew: true }))).toBe('steps');
    expect(nextScroll(at({ steps: 3 }), 3)).toBe('steps');
    expect(nextScroll(at({ now: 10_000 }))).toBe('deadline');
  });
});

describe('frameDocument', () => {
  const read = (over: Partial<FrameRead>): FrameRead => ({ url: 'http://spa.test/frame/inner.html', base: 'http://spa.test/frame/inner.html', html: '<a href="x">x</a>', ...over });
  test("a frame's links resolve against its base: its own URL, or for about:blank and srcdoc frames the page's", () => {
    expect(frameDocument(read({}), MAX_FRAMES_CHARS)).toEqual({ url: 'http://spa.test/frame/inner.html', html: '<a href="x">x</a>' });
    expect(frameDocument(read({ url: 'about:blank', base: 'http://spa.test/framed' }), MAX_FRAMES_CHARS)?.url).toBe('http://spa.test/framed');
    expect(frameDocument(read({ url: 'about:srcdoc', base: 'http://spa.test/framed' }), MAX_FRAMES_CHARS)?.url).toBe('http://spa.test/framed');
  });
  test("nothing to read: Chromium's error page (a refused frame), a frame with no http(s) base, an empty one", () => {
    expect(frameDocument(read({ url: 'chrome-error://chromewebdata/' }), MAX_FRAMES_CHARS)).toBeNull();
    expect(frameDocument(read({ url: 'data:text/html,<a href=x>', base: 'data:text/html,<a href=x>' }), MAX_FRAMES_CHARS)).toBeNull();
    expect(frameDocument(read({ html: '' }), MAX_FRAMES_CHARS)).toBeNull();
  });
  test('bounded: a frame is cut at MAX_FRAME_CHARS and at what is left of the page’s room; none once it is spent', () => {
    expect(frameDocument(read({ html: 'x'.repeat(MAX_FRAME_CHARS + 10) }), MAX_FRAMES_CHARS)?.html.length).toBe(MAX_FRAME_CHARS);
    expect(frameDocument(read({ html: 'x'.repeat(100) }), 30)?.html.length).toBe(30);
    expect(frameDocument(read({}), 0)).toBeNull();
  });
});
