// Links from feeds (issue 24): a news site whose articles are linked only
// from its feeds. The home page announces an RSS 2.0, an Atom and a JSON
// Feed with <link rel=alternate>; a fourth feed is a seed of its own (a feed
// reached as a page). Every article is fetched once, one hop below its feed,
// the announced feeds are requests (outcome `feed`, counted as no page), and
// an article outside the crawl's scope that a feed lists is not requested.
import type { SiteRequest } from '../web/test-web';
import { createHarness, launch, outputOf, type Harness } from '../support/harness';

jest.setTimeout(300_000);

const HOST = 'news.feeds.test';
const OTHER = 'elsewhere.test';

const HOME = `<!doctype html><html><head><title>News</title>
<link rel="alternate" type="application/rss+xml" href="/rss.xml">
<link rel="alternate" type="application/atom+xml" href="/atom.xml">
<link rel="alternate" type="application/feed+json" href="/feed.json">
</head><body><p>Latest news in the feeds.</p></body></html>`;

function files(origin: string): Record<string, { type: string; body: string }> {
  const article = (n: number) => ({ type: 'text/html; charset=utf-8', body: `<!doctype html><title>Article ${n}</title><p>Article ${n}</p>` });
  return {
    '/': { type: 'text/html; charset=utf-8', body: HOME },
    '/rss.xml': {
      type: 'application/rss+xml',
      body: `<?xml version="1.0"?><rss version="2.0"><channel><title>n</title>
<item><title>1</title><link>${origin}/articles/1</link></item>
<item><title>2</title><link>/articles/2</link></item>
<item><title>off</title><link>http://${OTHER}/not-in-scope</link></item>
</channel></rss>`,
    },
    '/atom.xml': {
      type: 'application/atom+xml',
      body: `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>n</title>
<entry><title>3</title><link href="${origin}/articles/3"/></entry>
<entry><title>2 again</title><link rel="alternate" href="${origin}/articles/2"/><link rel="enclosure" href="${origin}/audio.mp3"/></entry>
</feed>`,
    },
    '/feed.json': {
      type: 'application/feed+json',
      body: JSON.stringify({ version: 'https://jsonfeed.org/version/1.1', title: 'n', items: [{ id: '4', url: `${origin}/articles/4` }] }),
    },
    // Reached as a page (a seed), served as plain XML: sniffed, its items followed.
    '/archive.xml': { type: 'text/xml', body: `<?xml version="1.0"?><rss version="2.0"><channel><item><link>${origin}/articles/5</link></item></channel></rss>` },
    ...Object.fromEntries([1, 2, 3, 4, 5].map((n) => [`/articles/${n}`, article(n)])),
  };
}

let h: Harness;
beforeAll(async () => {
  h = await createHarness('feeds', { workers: 1 });
  const serve = (ctx: SiteRequest) => {
    if (ctx.path === '/robots.txt') return false;
    const f = files(ctx.origin)[ctx.path];
    if (f) ctx.send(200, f.type, f.body);
    else ctx.send(404, 'text/plain; charset=utf-8', 'not found\n');
    return true;
  };
  h.web.addSite({ host: HOST, pages: 1, fanOut: 0, handler: serve });
  h.web.addSite({ host: OTHER, pages: 1, fanOut: 0 });
});
afterAll(() => h?.close());

test("a site's feeds, announced or seeded, yield their items' links, once each, within the scope", async () => {
  const handle = await launch(h, {
    seeds: [h.web.url(HOST, '/'), h.web.url(HOST, '/archive.xml')],
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 20 },
    sitemaps: 'off',
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const paths = h.web
    .requests()
    .filter((r) => r.host === HOST && r.path !== '/robots.txt')
    .map((r) => r.path)
    .sort();
  expect(paths).toEqual(['/', '/archive.xml', '/articles/1', '/articles/2', '/articles/3', '/articles/4', '/articles/5', '/atom.xml', '/feed.json', '/rss.xml']);
  expect(h.web.requests().filter((r) => r.host === OTHER)).toEqual([]);

  const lines = new Map((await outputOf(h, result.campaignId).sealed()).map((e) => [new URL(e.url).pathname, e]));
  for (const [feed, kind] of [
    ['/rss.xml', 'rss'],
    ['/atom.xml', 'atom'],
    ['/feed.json', 'json'],
  ] as const) {
    expect(lines.get(feed)).toMatchObject({ outcome: 'feed', kind: 'feed', hops: 'L', depth: 0, feed: { kind } });
  }
  expect(lines.get('/rss.xml')!.feed).toMatchObject({ links: 3 });
  // One hop below the feed that listed them; the seeded feed is a page whose links are its items.
  expect(lines.get('/articles/1')).toMatchObject({ outcome: 'fetched', depth: 1, hops: 'LL', referrer: h.web.url(HOST, '/rss.xml') });
  expect(lines.get('/articles/4')).toMatchObject({ depth: 1, hops: 'LL', referrer: h.web.url(HOST, '/feed.json') });
  expect(lines.get('/archive.xml')).toMatchObject({ outcome: 'fetched', feed: { kind: 'rss', links: 1 } });
  expect(lines.get('/articles/5')).toMatchObject({ depth: 1, hops: 'L', referrer: h.web.url(HOST, '/archive.xml') });
  // Feeds are requests, not pages: the summary counts the home page, the seeded feed and five articles.
  expect(result.pages).toBe(7);
});
