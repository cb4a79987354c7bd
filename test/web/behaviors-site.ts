// A site whose content appears only when someone interacts with it (issue
// 41, part 2: the browser behaviors, src/browser/behaviors.ts). Each page's
// hidden part is fetched by its script, as JSON naming links and images, only
// after an interaction:
//
// - /load-more: a "Load more" button (MORE_BATCHES clicks, then it goes
//   away), beside a search form (must never be submitted: its action is never
//   requested), a button whose script sets `location` and one that moves the
//   URL with history.pushState (neither may leave the page: each URL is
//   followed as a link instead) and a link dressed as a button
//   (a link: followed, never clicked);
// - /box-feed: a feed inside a scrolling box of its own (the document does
//   not scroll) that loads its next batch when the box is scrolled near its
//   bottom (BOX_BATCHES, then it ends);
// - /expand: a `<details>` block whose content is fetched when it opens, an
//   accordion button (aria-expanded=false) and two tabs ([role=tab]), each
//   panel fetched when its tab is clicked, the second replacing the first;
//   its script also retitles the page (EXPAND_RENDERED_TITLE);
// - /media (browser.autoplay): a script player, a `<video>` with no source
//   in the DOM whose script, on `play`, fetches an HLS-like manifest with
//   fetch() and then each of its segments with XHR, as hls.js does, and a
//   podcast's `<audio preload=none>` whose script sets its source on the first
//   `play` (a sound file Chromium then fetches itself). Nothing of it is
//   named by the DOM before it plays.
import type { SiteRequest, SiteSpec } from './test-web';
import { png, wav } from '../support/media';

export const MORE_BATCHES = 3;
export const BOX_BATCHES = 3;
/** Items each "Load more" batch adds. */
export const ITEMS_PER_BATCH = 2;
/** The segments the /media player's manifest lists. */
export const MEDIA_SEGMENTS = 3;

export interface BehaviorsSite {
  host: string;
  spec: SiteSpec;
  /** What only an interaction finds, by page: links to pages, images, the JSON fetched. */
  hidden: {
    more: { links: string[]; images: string[]; data: string[] };
    box: { links: string[]; images: string[]; data: string[] };
    expand: { links: string[]; images: string[]; data: string[] };
  };
  /** The search form's action: never requested. */
  formAction: string;
  /** Where the "Go elsewhere" button's script sends the page: followed as a link, never navigated to. */
  scriptTarget: string;
  /** Where the "Route elsewhere" button's script moves the URL (History API): undone, followed as a link. */
  routedTarget: string;
  /** The link dressed as a button: a link, followed in any case. */
  buttonLink: string;
  /** The first tab's link, in the DOM from the start, gone once the second tab is clicked. */
  firstTabLink: string;
  /** What /media's players fetch only once they play: the manifest, its segments, the podcast's sound file. */
  media: { manifest: string; segments: string[]; audio: string };
}

const page = (title: string, body: string, script?: string) =>
  `<!doctype html>\n<html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}${script ? `<script src="${script}"></script>` : ''}</body></html>\n`;

const HOME = page('Behaviors home', '<nav><a href="/load-more">load more</a> <a href="/box-feed">box feed</a> <a href="/expand">expand</a> <a href="/media">media</a></nav>');

// Plain ES5-ish scripts, as small sites write them. Each item: a link and an image.
const ITEM = `function item(d) { return '<div class="item"><a href="' + d.link + '">' + d.link + '</a><img alt="" src="' + d.image + '"></div>'; }`;

const MORE_JS = `(function () {
  ${ITEM}
  var next = 1;
  var more = document.getElementById('more');
  more.addEventListener('click', function () {
    fetch('/api/more/' + next + '.json').then(function (r) { return r.json(); }).then(function (d) {
      document.getElementById('items').insertAdjacentHTML('beforeend', d.items.map(item).join(''));
      next++;
      if (next > ${MORE_BATCHES}) more.remove();
    });
  });
  document.getElementById('go').addEventListener('click', function () { location.href = '/went-by-script'; });
  document.getElementById('route').addEventListener('click', function () {
    history.pushState({}, '', '/routed-by-script');
    document.body.setAttribute('data-view', 'routed');
  });
})();
`;

const BOX_JS = `(function () {
  ${ITEM}
  var next = 1, loading = false;
  var box = document.getElementById('box');
  box.addEventListener('scroll', function () {
    if (loading || next > ${BOX_BATCHES} || box.scrollTop + box.clientHeight < box.scrollHeight - 50) return;
    loading = true;
    fetch('/api/box/' + next + '.json').then(function (r) { return r.json(); }).then(function (d) {
      document.getElementById('box-items').insertAdjacentHTML('beforeend', item(d) + '<div style="height:500px"></div>');
      next++;
      loading = false;
    });
  });
})();
`;

/** /expand's title once its script ran (the document's says 'Expand'): what a rendered crawl lists it as. */
export const EXPAND_RENDERED_TITLE = 'Expand: details, accordion and tabs';

const EXPAND_JS = `(function () {
  ${ITEM}
  document.title = ${JSON.stringify(EXPAND_RENDERED_TITLE)};
  var get = function (url, then) { fetch(url).then(function (r) { return r.json(); }).then(then); };
  var details = document.getElementById('details');
  details.addEventListener('toggle', function () {
    if (!details.open || details.dataset.loaded) return;
    details.dataset.loaded = '1';
    get('/api/details.json', function (d) { document.getElementById('details-body').innerHTML = item(d); });
  });
  var acc = document.getElementById('acc');
  acc.addEventListener('click', function () {
    var open = acc.getAttribute('aria-expanded') !== 'true';
    acc.setAttribute('aria-expanded', String(open));
    var panel = document.getElementById('acc-panel');
    panel.hidden = !open;
    if (open && !panel.innerHTML) get('/api/accordion.json', function (d) { panel.innerHTML = item(d); });
  });
  [].forEach.call(document.querySelectorAll('[role=tab]'), function (tab) {
    tab.addEventListener('click', function () {
      [].forEach.call(document.querySelectorAll('[role=tab]'), function (t) { t.setAttribute('aria-selected', String(t === tab)); });
      get('/api/tab-' + tab.dataset.tab + '.json', function (d) { document.getElementById('tabpanel').innerHTML = item(d); });
    });
  });
})();
`;

// On its first play, the manifest (fetch) and its segments one after the other (XHR, as bytes), the way a
// script player fills its buffer; each segment fetched is counted in #status's data-segments.
const MEDIA_JS = `(function () {
  var player = document.getElementById('player');
  var status = document.getElementById('status');
  var started = false;
  player.addEventListener('play', function () {
    if (started) return;
    started = true;
    var base = '/media/stream/';
    fetch(base + 'index.m3u8').then(function (r) {
      if (!r.ok) throw new Error('manifest: ' + r.status);
      return r.text();
    }).then(function (m) {
      var segments = m.split('\\n').filter(function (l) { return l && l.charAt(0) !== '#'; });
      var got = 0;
      (function next() {
        if (got >= segments.length) return;
        var x = new XMLHttpRequest();
        x.open('GET', base + segments[got]);
        x.responseType = 'arraybuffer';
        x.onload = function () { got++; status.setAttribute('data-segments', String(got)); next(); };
        x.send();
      })();
    }).catch(function () { status.setAttribute('data-failed', 'manifest'); });
  });
  // A podcast player counting plays: the sound file is named only once someone presses play.
  var episode = document.getElementById('episode');
  episode.addEventListener('play', function () {
    if (episode.getAttribute('src')) return;
    episode.src = '/media/episode.wav';
    var p = episode.play();
    if (p) p.catch(function () {});
  });
})();
`;

export function behaviorsSite(host = 'behaviors.test'): BehaviorsSite {
  const json = (v: unknown) => JSON.stringify(v);
  const routes: Record<string, [string, string | Buffer]> = {};
  const html = (p: string, body: string) => (routes[p] = ['text/html; charset=utf-8', body]);
  const hidden: BehaviorsSite['hidden'] = {
    more: { links: [], images: [], data: [] },
    box: { links: [], images: [], data: [] },
    expand: { links: [], images: [], data: [] },
  };
  let shade = 0;
  /** An item of `part`: its page, its own image (a PNG of its own bytes), in the JSON at `data`. */
  const item = (part: keyof BehaviorsSite['hidden'], name: string) => {
    const link = `/${part}/${name}`;
    const image = `/img/${part}-${name}.png`;
    hidden[part].links.push(link);
    hidden[part].images.push(image);
    routes[image] = ['image/png', png(4, 4, [0x20 + shade * 8, 0x40, 0x80 - shade * 4])];
    shade++;
    return { link, image };
  };
  const data = (part: keyof BehaviorsSite['hidden'], p: string, body: unknown) => {
    hidden[part].data.push(p);
    routes[p] = ['application/json', json(body)];
  };
  for (let b = 1; b <= MORE_BATCHES; b++) data('more', `/api/more/${b}.json`, { items: Array.from({ length: ITEMS_PER_BATCH }, (_, i) => item('more', `item-${b}-${i + 1}`)) });
  for (let b = 1; b <= BOX_BATCHES; b++) data('box', `/api/box/${b}.json`, item('box', `item-${b}`));
  data('expand', '/api/details.json', item('expand', 'in-details'));
  data('expand', '/api/accordion.json', item('expand', 'in-accordion'));
  data('expand', '/api/tab-2.json', item('expand', 'tab-two'));
  const firstTabLink = '/expand/tab-one';
  routes['/api/tab-1.json'] = ['application/json', json({ link: firstTabLink, image: '/img/tab-one.png' })];
  routes['/img/tab-one.png'] = ['image/png', png(4, 4)];

  html('/', HOME);
  html(
    '/load-more',
    page(
      'Load more',
      '<div id="items"></div><button id="more" type="button">Load more</button>' +
        '<form action="/search-results" method="get"><input name="q" value="archives"><button>Search</button></form>' +
        '<button id="go" type="button">Go elsewhere</button> <button id="route" type="button">Route elsewhere</button> <a href="/dressed-link" role="button">A link dressed as a button</a>',
      '/static/more.js',
    ),
  );
  html(
    '/box-feed',
    page('Box feed', '<div id="box" style="height:300px;overflow:auto;border:1px solid"><div id="box-items"><div style="height:500px">Feed</div></div></div>', '/static/box.js'),
  );
  html(
    '/expand',
    page(
      'Expand',
      '<details id="details"><summary>More details</summary><div id="details-body"></div></details>' +
        '<button id="acc" type="button" aria-expanded="false" aria-controls="acc-panel">Section</button><div id="acc-panel" hidden></div>' +
        '<div role="tablist"><button type="button" role="tab" aria-selected="true" data-tab="1">One</button><button type="button" role="tab" aria-selected="false" data-tab="2">Two</button></div>' +
        `<div id="tabpanel"><div class="item"><a href="${firstTabLink}">${firstTabLink}</a><img alt="" src="/img/tab-one.png"></div></div>`,
      '/static/expand.js',
    ),
  );
  routes['/static/more.js'] = ['text/javascript', MORE_JS];
  routes['/static/box.js'] = ['text/javascript', BOX_JS];
  routes['/static/expand.js'] = ['text/javascript', EXPAND_JS];
  html(
    '/media',
    page(
      'Media',
      '<video id="player" width="160" height="90" playsinline></video><audio id="episode" preload="none" controls></audio><p id="status" data-segments="0">Media</p>',
      '/static/media.js',
    ),
  );
  routes['/static/media.js'] = ['text/javascript', MEDIA_JS];
  const segments = Array.from({ length: MEDIA_SEGMENTS }, (_, i) => `/media/stream/segment-${i + 1}.ts`);
  routes['/media/stream/index.m3u8'] = [
    'application/vnd.apple.mpegurl',
    ['#EXTM3U', '#EXT-X-TARGETDURATION:2', ...segments.flatMap((s) => ['#EXTINF:2.0,', s.split('/').pop()!]), '#EXT-X-ENDLIST', ''].join('\n'),
  ];
  // Each segment's bytes its own: the WARC's records differ (no revisit of one by another).
  segments.forEach((s, i) => (routes[s] = ['video/mp2t', Buffer.alloc(4_096 + i, 0x47)]));
  routes['/media/episode.wav'] = ['audio/wav', wav()];
  // The pages the links lead to: plain pages.
  for (const p of [...hidden.more.links, ...hidden.box.links, ...hidden.expand.links, firstTabLink, '/went-by-script', '/routed-by-script', '/dressed-link', '/search-results'])
    html(p, page(`Page ${p}`, '<p>A page found behind an interaction.</p>'));
  const handler = (ctx: SiteRequest): boolean => {
    if (ctx.path === '/robots.txt') return false;
    const r = routes[ctx.path];
    if (r) ctx.send(200, r[0], r[1]);
    else ctx.send(404, 'text/plain', 'not found');
    return true;
  };
  return {
    host,
    spec: { host, pages: 1, fanOut: 0, handler },
    hidden,
    formAction: '/search-results',
    scriptTarget: '/went-by-script',
    routedTarget: '/routed-by-script',
    buttonLink: '/dressed-link',
    firstTabLink,
    media: { manifest: '/media/stream/index.m3u8', segments, audio: '/media/episode.wav' },
  };
}
