// A client-rendered site whose links need more than `load` to appear (issue
// 26, items 5 and 6): each page hides some of its links where a renderer
// that only waits for quiet and reads the main frame would not find them.
//
// - /more: links added when a "Load more" button is clicked (a handler's
//   onRender clicks it) from JSON the click fetches;
// - /feed: an endless feed (three batches, then it ends) whose items, a link
//   and an image each, are loaded when a sentinel below a tall spacer
//   scrolls into view (IntersectionObserver): found with browser.scroll only;
// - /framed: an iframe the script builds (about:blank, its links written by
//   the page's script) and an iframe of a page of its own (/frame/inner.html)
//   whose script builds a relative link from JSON, resolved against the
//   frame's URL (/frame/child-a);
// - /late: after `load`, the script keeps its thread busy for LATE_BUSY_MS
//   (longer than browser.quietMs) and only then fetches the JSON its links
//   come from;
// - /render-throws, /render-hangs: plain pages a test handler's onRender
//   fails on (each links one child, which must still be crawled).
import type { SiteRequest, SiteSpec } from './test-web';
import { png } from '../support/media';

/** /late's synchronous busy loop: twice the default browser.quietMs. */
export const LATE_BUSY_MS = 1_000;
/** /feed's batches. */
export const FEED_BATCHES = 3;

export interface InteractiveSite {
  host: string;
  spec: SiteSpec;
  /** Links each page's hidden part holds, by page. */
  hidden: { more: string[]; feed: string[]; feedImages: string[]; blankFrame: string[]; srcFrame: string[]; late: string[] };
  /** Data and files the pages' scripts request. */
  data: { more: string; inner: string; late: string; feed: (n: number) => string };
}

const page = (title: string, body: string, script?: string) =>
  `<!doctype html>\n<html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}${script ? `<script src="${script}"></script>` : ''}</body></html>\n`;

const HOME = page(
  'Interactive home',
  '<nav><a href="/more">more</a> <a href="/feed">feed</a> <a href="/framed">framed</a> <a href="/late">late</a> <a href="/render-throws">throws</a> <a href="/render-hangs">hangs</a></nav>',
);

// Plain ES5-ish scripts, as small sites write them.
const MORE_JS = `document.getElementById('more').addEventListener('click', function () {
  fetch('/api/more.json').then(function (r) { return r.json(); }).then(function (d) {
    var list = document.getElementById('list');
    d.links.forEach(function (l) { var a = document.createElement('a'); a.className = 'more-link'; a.href = l; a.textContent = l; list.appendChild(a); });
  });
});
`;

const FEED_JS = `(function () {
  var next = 1, loading = false;
  var items = document.getElementById('items');
  var observer = new IntersectionObserver(function (entries) {
    if (!entries.some(function (e) { return e.isIntersecting; }) || loading) return;
    if (next > ${FEED_BATCHES}) { observer.disconnect(); return; }
    loading = true;
    fetch('/api/feed/' + next + '.json').then(function (r) { return r.json(); }).then(function (d) {
      var div = document.createElement('div');
      div.innerHTML = '<a class="item" href="' + d.link + '">' + d.link + '</a><img alt="" src="' + d.image + '"><div style="height:2000px"></div>';
      items.appendChild(div);
      next++;
      loading = false;
    });
  });
  observer.observe(document.getElementById('sentinel'));
})();
`;

const FRAMED_JS = `(function () {
  var blank = document.createElement('iframe');
  document.body.appendChild(blank);
  blank.contentDocument.body.innerHTML = '<a href="/framed/blank-1">written into a frame</a>';
  var inner = document.createElement('iframe');
  inner.src = '/frame/inner.html';
  document.body.appendChild(inner);
})();
`;

const INNER_JS = `fetch('/api/inner.json').then(function (r) { return r.json(); }).then(function (d) {
  document.body.insertAdjacentHTML('beforeend', d.links.map(function (l) { return '<a href="' + l + '">' + l + '</a>'; }).join(' '));
});
`;

const LATE_JS = `window.addEventListener('load', function () {
  setTimeout(function () {
    var t = Date.now();
    while (Date.now() - t < ${LATE_BUSY_MS}) {}
    fetch('/api/late.json').then(function (r) { return r.json(); }).then(function (d) {
      document.getElementById('app').innerHTML = d.links.map(function (l) { return '<a href="' + l + '">' + l + '</a>'; }).join(' ');
    });
  }, 0);
});
`;

export function interactiveSite(host = 'interactive.test'): InteractiveSite {
  const feed = Array.from({ length: FEED_BATCHES }, (_, i) => `/feed/item-${i + 1}`);
  const feedImages = Array.from({ length: FEED_BATCHES }, (_, i) => `/img/feed-${i + 1}.png`);
  const hidden = { more: ['/more/1', '/more/2'], feed, feedImages, blankFrame: ['/framed/blank-1'], srcFrame: ['/frame/child-a'], late: ['/late/found'] };
  const data = { more: '/api/more.json', inner: '/api/inner.json', late: '/api/late.json', feed: (n: number) => `/api/feed/${n}.json` };
  const image = png(4, 4, [0x40, 0x20, 0x80]);
  const json = (v: unknown) => JSON.stringify(v);
  const routes: Record<string, [string, string | Buffer]> = {
    '/': ['text/html; charset=utf-8', HOME],
    '/more': ['text/html; charset=utf-8', page('More', '<button id="more">Load more</button><div id="list"></div>', '/static/more.js')],
    '/feed': ['text/html; charset=utf-8', page('Feed', '<div id="items"><div style="height:2000px"></div></div><div id="sentinel" style="height:10px"></div>', '/static/feed.js')],
    '/framed': ['text/html; charset=utf-8', page('Framed', '<p>Two frames below.</p>', '/static/framed.js')],
    '/frame/inner.html': ['text/html; charset=utf-8', page('Inner frame', '', '/static/inner.js')],
    '/late': ['text/html; charset=utf-8', page('Late', '<div id="app"></div>', '/static/late.js')],
    '/render-throws': ['text/html; charset=utf-8', page('Throws', '<a href="/render-throws/child">child</a>')],
    '/render-hangs': ['text/html; charset=utf-8', page('Hangs', '<a href="/render-hangs/child">child</a>')],
    '/static/more.js': ['text/javascript', MORE_JS],
    '/static/feed.js': ['text/javascript', FEED_JS],
    '/static/framed.js': ['text/javascript', FRAMED_JS],
    '/static/inner.js': ['text/javascript', INNER_JS],
    '/static/late.js': ['text/javascript', LATE_JS],
    [data.more]: ['application/json', json({ links: hidden.more })],
    [data.inner]: ['application/json', json({ links: ['child-a'] })],
    [data.late]: ['application/json', json({ links: hidden.late })],
  };
  feed.forEach((link, i) => (routes[data.feed(i + 1)] = ['application/json', json({ link, image: feedImages[i] })]));
  for (const p of feedImages) routes[p] = ['image/png', image];
  // The pages the hidden links lead to, and the failing pages' children: plain pages.
  for (const p of [...hidden.more, ...feed, ...hidden.blankFrame, ...hidden.srcFrame, ...hidden.late, '/render-throws/child', '/render-hangs/child'])
    routes[p] = ['text/html; charset=utf-8', page(`Page ${p}`, '<p>A page found behind another.</p>')];
  const handler = (ctx: SiteRequest): boolean => {
    if (ctx.path === '/robots.txt') return false;
    const r = routes[ctx.path];
    if (r) ctx.send(200, r[0], r[1]);
    else ctx.send(404, 'text/plain', 'not found');
    return true;
  };
  return { host, spec: { host, pages: 1, fanOut: 0, handler }, hidden, data };
}
