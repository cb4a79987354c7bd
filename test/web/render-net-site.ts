// A client-rendered page that reaches past its own host and past GET
// (issue 26, "every request the page makes"): its script fetches JSON from
// an API on another host (whose robots.txt disallows /private/ and asks for
// a Crawl-delay), tries a /private/ file there too, POSTs JSON to its own
// host and renders the answer, asks for a file with a Range header, and reads
// the two cookies another response set. Each result becomes a link of the
// rendered page, so what the crawl finds says what the browser got:
//   /item/<name>            the API's items (two JSON files on the other host)
//   /echo/<word>            the answers of two POSTs to one URL (bodies differ)
//   /range/<status>-<bytes> what the Range request was answered with
//   /cookies/<names>        the cookies the browser holds after /api/cookies
// Those pages are leaves (static HTML). The site records what it saw that
// the test web's request log does not: each request's Range header and each
// POST's body.
import type { SiteRequest, SiteSpec } from './test-web';

export interface RenderNetSite {
  host: string;
  api: string;
  specs: SiteSpec[];
  /** The API's Crawl-delay (robots.txt). */
  apiDelayMs: number;
  /** What the rendered shell must lead to. */
  leaves: string[];
  files: { script: string; items: string; more: string; secret: string; echo: string; clip: string; cookies: string };
  /** Per path of the app host: the Range headers it was asked with (undefined: none). */
  ranges: Map<string, (string | undefined)[]>;
  /** Bodies POSTed to the echo path, as received. */
  posted: string[];
  /** The full size of the ranged file. */
  clipBytes: number;
}

const SHELL = `<!doctype html>
<html><head><meta charset="utf-8"><title>Loading…</title><script src="/static/net.js" defer></script></head>
<body><div id="app"></div></body></html>
`;

const leaf = (title: string) => `<!doctype html><html><head><title>${title}</title></head><body><p>${title}</p></body></html>`;

function script(api: string, f: RenderNetSite['files']): string {
  return `(function () {
  var links = [];
  function json(r) { return r.json(); }
  var items = Promise.all([
    fetch(${JSON.stringify(api + f.items)}).then(json),
    fetch(${JSON.stringify(api + f.more)}).then(json),
  ]).then(function (all) {
    all.forEach(function (d) { d.items.forEach(function (name) { links.push('/item/' + name); }); });
  });
  // Disallowed by the API's robots.txt: the crawler refuses it, and the page goes on without it.
  var secret = fetch(${JSON.stringify(api + f.secret)}).then(json).then(function (d) { links.push('/secret/' + d.secret); }, function () {});
  // Two POSTs to one URL, told apart by their bodies only (replay must key them by body too).
  var echo = Promise.all(['posted', 'second'].map(function (word) {
    return fetch(${JSON.stringify(f.echo)}, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ word: word }) })
      .then(json).then(function (d) { links.push('/echo/' + d.echo); });
  }));
  var range = fetch(${JSON.stringify(f.clip)}, { headers: { Range: 'bytes=0-9' } })
    .then(function (r) { return r.arrayBuffer().then(function (b) { links.push('/range/' + r.status + '-' + b.byteLength); }); });
  var cookies = fetch(${JSON.stringify(f.cookies)}).then(function () {
    var names = document.cookie.split(';').map(function (c) { return c.trim().split('=')[0]; }).filter(Boolean).sort();
    links.push('/cookies/' + names.join('-'));
  });
  Promise.all([items, secret, echo, range, cookies].map(function (p) { return p.catch(function () {}); })).then(function () {
    document.title = 'Net app';
    document.getElementById('app').innerHTML = '<h1>Net app</h1><nav>' + links.sort().map(function (l) { return '<a href="' + l + '">' + l + '</a>'; }).join(' ') + '</nav>';
  });
})();
`;
}

export function renderNetSite(host = 'app.rnet.test', api = 'api.rnet-data.test'): RenderNetSite {
  const files = {
    script: '/static/net.js',
    items: '/v1/items.json',
    more: '/v1/more.json',
    secret: '/private/secret.json',
    echo: '/api/echo',
    clip: '/media/clip.bin',
    cookies: '/api/cookies',
  };
  const clip = Buffer.alloc(100, 7);
  const out: RenderNetSite = {
    host,
    api,
    specs: [],
    apiDelayMs: 1_000,
    leaves: ['/item/alpha', '/item/beta', '/item/gamma', '/echo/posted', '/echo/second', `/range/200-${clip.length}`, '/cookies/c1-c2'],
    files,
    ranges: new Map(),
    posted: [],
    clipBytes: clip.length,
  };
  const app = (ctx: SiteRequest): boolean => {
    const { path } = ctx;
    if (path === '/robots.txt') return false;
    if (path !== '/robots.txt') out.ranges.set(path, [...(out.ranges.get(path) ?? []), ctx.req.headers.range]);
    if (path === '/') ctx.send(200, 'text/html; charset=utf-8', SHELL);
    else if (path === files.script) ctx.send(200, 'text/javascript; charset=utf-8', script(`http://${api}:${ctx.port}`, files));
    else if (path === files.echo && ctx.method === 'POST') {
      const chunks: Buffer[] = [];
      ctx.req.on('data', (c: Buffer) => chunks.push(c));
      ctx.req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        out.posted.push(body);
        const word = (JSON.parse(body) as { word: string }).word;
        ctx.send(200, 'application/json', JSON.stringify({ echo: word }));
      });
    } else if (path === files.clip) {
      // A server that honours Range: what the browser would get if the crawler passed it on.
      const m = /^bytes=(\d+)-(\d+)$/.exec(ctx.req.headers.range ?? '');
      if (m) ctx.send(206, 'application/octet-stream', clip.subarray(Number(m[1]), Number(m[2]) + 1), { 'content-range': `bytes ${m[1]}-${m[2]}/${clip.length}` });
      else ctx.send(200, 'application/octet-stream', clip, { 'accept-ranges': 'bytes' });
    } else if (path === files.cookies) ctx.send(200, 'application/json', '{}', { 'set-cookie': ['c1=one; Path=/', 'c2=two; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT'] });
    else if (out.leaves.includes(decodeURIComponent(path))) ctx.send(200, 'text/html; charset=utf-8', leaf(decodeURIComponent(path)));
    else ctx.send(404, 'text/plain', 'not found');
    return true;
  };
  const apiHandler = (ctx: SiteRequest): boolean => {
    if (ctx.path === '/robots.txt') return false;
    const cors = { 'access-control-allow-origin': '*' };
    if (ctx.path === files.items) ctx.send(200, 'application/json', JSON.stringify({ items: ['alpha', 'beta'] }), cors);
    else if (ctx.path === files.more) ctx.send(200, 'application/json', JSON.stringify({ items: ['gamma'] }), cors);
    else if (ctx.path === files.secret) ctx.send(200, 'application/json', JSON.stringify({ secret: 'leaked' }), cors);
    else ctx.send(404, 'text/plain', 'not found');
    return true;
  };
  out.specs = [
    { host, pages: 1, fanOut: 0, handler: app, methods: ['POST'] },
    { host: api, pages: 1, fanOut: 0, handler: apiHandler, robots: { disallow: ['/private/'], crawlDelaySec: out.apiDelayMs / 1000 } },
  ];
  return out;
}
