// The browser fetcher's pure parts (src/browser/browser-fetcher.ts): which
// request of a page is answered how, what the browser gets as headers, and
// when a page counts as done.
import { fulfilHeaders, InFlight, routeDecision, shouldRender, type PageRequest } from '../../src/browser/browser-fetcher';
import type { FetchResult } from '../../src/http/http-client';

const host = 'spa.test:8080';
const req = (over: Partial<PageRequest>): PageRequest => ({ url: `http://${host}/app.js`, method: 'GET', resourceType: 'script', mainFrameNavigation: false, ...over });
const decide = (r: PageRequest, o: { documentServed?: boolean; allows?: (u: string) => boolean; otherHosts?: boolean; excluded?: (u: string) => boolean } = {}) =>
  routeDecision(r, { host, allowedByRobots: o.allows ?? null, documentServed: o.documentServed ?? false, otherHosts: o.otherHosts ?? false, excluded: o.excluded });

describe('routeDecision', () => {
  test("the main frame's first navigation is the document; a later one would leave the page and is refused", () => {
    const nav = req({ url: `http://${host}/`, resourceType: 'document', mainFrameNavigation: true });
    expect(decide(nav)).toEqual({ kind: 'document' });
    expect(decide(nav, { documentServed: true })).toEqual({ kind: 'refuse', why: 'navigation' });
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
