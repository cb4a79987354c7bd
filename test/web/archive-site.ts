// A small site whose pages need many other files to look right (issue 24):
// the hard cases of capturing a page's requisites. Four HTML pages link each
// other and share one /static/ tree (logo, script, stylesheet: fetched once,
// not once per page); the stylesheet @imports a theme that @imports a
// palette and loads a web font, each relative to the stylesheet that names
// it; images come as srcset and <picture> candidates, lazy-loading
// attributes a script swaps in, an inline style= background, a <style>
// block (one URL spelled with a CSS escape), an icon, a manifest, a preload,
// a video poster, an <input type=image>, an image behind a 301 and one under
// <base href>; the stylesheet URL carries a cache-buster, and another page
// asks for the same file with another one (identical bytes: a revisit).
// A second host on another registrable domain (a CDN, outside the crawl's
// scope) serves a stylesheet, its @import and images, under a robots.txt with
// a Crawl-delay and a Disallow for one image a page uses; a third embed hop
// on it (an image the @imported sheet names) is beyond what a crawler takes
// from a host outside its scope.
//
// Every file is in `files`; `pages` lists the HTML pages and `requisites`
// each file a complete capture holds (the disallowed and too-deep ones
// apart), with the hop path a breadth-first crawl from `/` reaches it by.
// The markers (`checks`) are what a browser shows when the files applied.
import type { SiteSpec, SiteRequest } from './test-web';
import { boxFont, png } from '../support/media';

export interface ArchiveFile {
  host: string;
  /** Request target: path plus query, exactly as the pages spell it. */
  target: string;
  contentType: string;
  body: Buffer;
  /** A 301 to this target on the same host instead of a body. */
  redirectTo?: string;
}

export interface ArchiveRequisite {
  host: string;
  target: string;
  /** Hop path from the seed `/` (Heritrix style: L link, E embed, R redirect). */
  hops: string;
}

export interface ArchiveSite {
  /** The crawl's host; the seed is its `/`. */
  host: string;
  /** The CDN host: another registrable domain, so outside a same-domain scope. */
  cdnHost: string;
  /** Both hosts, for TestWeb.addSite. */
  specs: SiteSpec[];
  /** The HTML pages, with their hop paths from the seed. */
  pages: ArchiveRequisite[];
  /** Every file the pages need that a crawler may fetch, each with the hop path that first reaches it. */
  requisites: ArchiveRequisite[];
  /** The CDN image robots.txt disallows (used by `/`). */
  disallowed: { host: string; target: string };
  /** A CDN image three embed hops from `/` (page → cdn.css → more.css → image): never fetched. */
  beyondReach: { host: string; target: string };
  cdnCrawlDelaySec: number;
  /** What a browser shows when everything applied (see the element ids in the pages). */
  checks: {
    /** #deep's colour, set only by the innermost @imported sheet (palette.css). */
    deepColour: string;
    /** .cdn-box's left border colour, set by the CDN stylesheet. */
    cdnBorderColour: string;
    /** #cdn-more's colour, set by the CDN stylesheet's @import. */
    cdnImportColour: string;
    /** The web font: #glyph holds `glyphs` of `char` at `fontSizePx`; in the font each is `advanceEm` em wide. */
    font: { family: string; char: string; glyphs: number; fontSizePx: number; advanceEm: number };
  };
}

const CRAWL_DELAY_SEC = 1;
const HTML = 'text/html; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const PNG = 'image/png';

export function archiveSite(host = 'www.archive-site.test', cdnHost = 'static.cdn-host.test'): ArchiveSite {
  const font = boxFont('ArchiveFont', 'X', 2);
  const files = new Map<string, ArchiveFile>();
  const requisites: ArchiveRequisite[] = [];
  // Each image its own size and colour, so no two images are identical payloads (revisits only where meant).
  let shade = 0;
  const image = (w: number, h: number) => png(w, h, [(40 + shade * 37) % 256, (90 + shade * 53) % 256, (140 + shade++ * 71) % 256]);
  const add = (h: string, target: string, hops: string | null, contentType: string, body: Buffer | string, redirectTo?: string) => {
    files.set(`${h} ${target}`, { host: h, target, contentType, body: typeof body === 'string' ? Buffer.from(body) : body, redirectTo });
    if (hops !== null) requisites.push({ host: h, target, hops });
  };
  const img = (target: string, hops: string, w: number, hgt: number) => add(host, target, hops, PNG, image(w, hgt));
  const cdnImg = (target: string, hops: string | null, w: number, hgt: number) => add(cdnHost, target, hops, PNG, image(w, hgt));

  // ---- the main host's shared /static/ tree ----------------------------------
  const mainCss =
    '@import url("base/theme.css");\n' +
    'body { margin: 8px; font-family: sans-serif; }\n' +
    '.tile { display: inline-block; width: 60px; height: 24px; margin: 2px; background-repeat: no-repeat; }\n';
  // One file under two cache-busters: stored as requested, the second a revisit of the first.
  add(host, '/static/main.css?v=123', 'E', CSS, mainCss);
  add(host, '/static/main.css?v=124', 'LE', CSS, mainCss);
  // Relative to the theme (…/static/base/), not to the page: ../fonts is /static/fonts.
  add(
    host,
    '/static/base/theme.css',
    'EE',
    CSS,
    '@import "deep/palette.css";\n' +
      `@font-face { font-family: "${'ArchiveFont'}"; src: url("../fonts/archive.ttf") format("truetype"); }\n` +
      `#glyph { font-family: "ArchiveFont", monospace; font-size: 20px; line-height: 1; }\n` +
      '#themed { background-image: url(../img/theme-bg.png); }\n',
  );
  add(host, '/static/base/deep/palette.css', 'EEE', CSS, '#deep { color: rgb(12, 34, 56); }\n');
  add(host, '/static/fonts/archive.ttf', 'EEE', 'font/ttf', font.ttf);
  img('/static/img/theme-bg.png', 'EEE', 20, 20);
  add(
    host,
    '/static/app.js',
    'E',
    'text/javascript; charset=utf-8',
    // What lazy-loading libraries do: the real address waits in data-* until the script swaps it in.
    "document.querySelectorAll('img[data-src], img[data-original]').forEach(function (img) {\n" +
      '  if (img.dataset.srcset) img.srcset = img.dataset.srcset;\n' +
      '  img.src = img.dataset.src || img.dataset.original;\n' +
      '});\n' +
      "document.documentElement.setAttribute('data-app', 'ran');\n",
  );
  img('/static/img/logo.png', 'E', 120, 30);
  img('/static/favicon.png', 'E', 16, 16);

  // ---- what only `/` uses ------------------------------------------------------
  img('/static/touch-icon.png', 'E', 18, 18);
  add(host, '/static/site.webmanifest', 'E', 'application/manifest+json', JSON.stringify({ name: 'Archive site', start_url: '/', display: 'browser' }));
  img('/static/img/preloaded.png', 'E', 22, 12);
  img('/static/img/style-block.png', 'E', 24, 12);
  img('/static/img/escaped.png', 'E', 26, 12);
  img('/static/img/inline-bg.png', 'E', 28, 12);
  img('/static/img/hero-400.png', 'E', 40, 20);
  img('/static/img/hero-800.png', 'E', 80, 40);
  img('/static/img/hero-1600.png', 'E', 160, 80);
  img('/static/img/lazy.png', 'E', 30, 14);
  img('/static/img/lazy-2x.png', 'E', 60, 28);
  img('/static/img/poster.png', 'E', 64, 48);
  add(host, '/static/img/old-name.png', 'E', PNG, '', '/static/img/new-name.png');
  img('/static/img/new-name.png', 'ER', 32, 16);

  // ---- the other pages' own files ------------------------------------------------
  img('/static/img/pic.png', 'LE', 34, 16);
  img('/static/img/pic-wide.png', 'LE', 36, 16);
  img('/static/img/pic-wide-2x.png', 'LE', 72, 32);
  img('/static/img/lazy-original.png', 'LE', 38, 16);
  img('/static/img/gallery-1.png', 'LE', 42, 20);
  img('/static/img/gallery-2.png', 'LE', 44, 20);
  img('/static/contact/map.png', 'LLE', 46, 20);
  img('/static/img/submit.png', 'LLE', 48, 16);

  // ---- the CDN -------------------------------------------------------------------
  const cdn = (target: string) => `http://${cdnHost}:PORT${target}`;
  add(
    cdnHost,
    '/css/cdn.css',
    'E',
    CSS,
    '@import url("more.css");\n.cdn-box { border-left: 6px solid rgb(200, 10, 20); min-height: 20px; padding-left: 70px; background: url(../img/cdn-bg.png) no-repeat; }\n',
  );
  add(cdnHost, '/css/more.css', 'EE', CSS, '#cdn-more { color: rgb(1, 2, 3); }\n.nothing-has-this-class { background-image: url(../img/too-deep.png); }\n');
  cdnImg('/img/cdn-bg.png', 'EE', 50, 20);
  cdnImg('/img/photo.png', 'E', 52, 26);
  cdnImg('/img/photo-2x.png', 'E', 104, 52);
  cdnImg('/private/pixel.png', null, 1, 1);
  cdnImg('/img/too-deep.png', null, 54, 20);
  const cdnRobots = `User-agent: *\nCrawl-delay: ${CRAWL_DELAY_SEC}\nDisallow: /private/\n`;

  // ---- the pages -------------------------------------------------------------------
  const page = (title: string, body: string, opts: { css?: string; head?: string } = {}) =>
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n' +
    `<title>${title}</title>\n` +
    (opts.head ?? '') +
    `<link rel="stylesheet" href="${opts.css ?? '/static/main.css?v=123'}">\n` +
    `<link rel="stylesheet" href="${cdn('/css/cdn.css')}">\n` +
    '<link rel="icon" href="/static/favicon.png">\n' +
    '<script src="/static/app.js" defer></script>\n' +
    '</head><body>\n' +
    '<header><img id="logo" src="/static/img/logo.png" alt="logo" width="120" height="30">\n' +
    '<nav><a href="/">Home</a> <a href="/about">About</a> <a href="/gallery">Gallery</a></nav></header>\n' +
    `<h1 id="deep">${title}</h1>\n` +
    `<div class="cdn-box" id="cdn-box">styled from the CDN</div><p id="cdn-more">coloured by the CDN's @import</p>\n` +
    `<p><span id="glyph">${font.char.repeat(4)}</span></p>\n` +
    '<div class="tile" id="themed"></div>\n' +
    `${body}\n</body></html>\n`;
  const blank = 'data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7';
  const pages: Record<string, { hops: string; html: string }> = {
    '/': {
      hops: '',
      html: page(
        'Archive site',
        '<style>\n#styled { background-image: url(/static/img/style-block.png); }\n#escaped { background-image: url("/static/img/\\65 scaped.png"); }\n</style>\n' +
          '<div class="tile" id="styled"></div><div class="tile" id="escaped"></div>\n' +
          `<div class="tile" id="inline-bg" style="background-image:url('/static/img/inline-bg.png')"></div>\n` +
          '<p><img id="hero" src="/static/img/hero-400.png" srcset="/static/img/hero-400.png 400w, /static/img/hero-800.png 800w, /static/img/hero-1600.png 1600w" sizes="400px" alt="hero"></p>\n' +
          `<p><img id="lazy" class="lazy" src="${blank}" data-src="/static/img/lazy.png" data-srcset="/static/img/lazy-2x.png 2x" alt="lazy"></p>\n` +
          `<p><img id="cdn-photo" src="${cdn('/img/photo.png')}" srcset="${cdn('/img/photo.png')} 1x, ${cdn('/img/photo-2x.png')} 2x" alt="photo"></p>\n` +
          `<img id="tracker" src="${cdn('/private/pixel.png')}" width="1" height="1" alt="">\n` +
          '<p><img id="moved" src="/static/img/old-name.png" alt="moved"></p>\n' +
          '<video id="clip" poster="/static/img/poster.png" width="64" height="48" preload="none"></video>\n',
        {
          head:
            '<link rel="apple-touch-icon" href="/static/touch-icon.png">\n<link rel="manifest" href="/static/site.webmanifest">\n' +
            '<link rel="preload" as="image" href="/static/img/preloaded.png">\n',
        },
      ),
    },
    '/about': {
      hops: 'L',
      html: page(
        'About the archive',
        '<picture><source media="(min-width: 1px)" srcset="/static/img/pic-wide.png 1x, /static/img/pic-wide-2x.png 2x">' +
          '<img id="pic" src="/static/img/pic.png" alt="picture"></picture>\n' +
          `<p><img id="lazy-original" src="${blank}" data-original="/static/img/lazy-original.png" alt="lazy"></p>\n` +
          '<p><a href="/contact">Contact</a></p>\n',
      ),
    },
    '/gallery': {
      hops: 'L',
      html: page(
        'Gallery',
        '<p><img id="gallery-1" src="/static/img/gallery-1.png" alt="one"> <img id="gallery-2" src="/static/img/gallery-2.png" alt="two"></p>\n<p><a href="/contact">Contact</a></p>\n',
        { css: '/static/main.css?v=124' },
      ),
    },
    '/contact': {
      hops: 'LL',
      // Relative URLs below resolve against /static/contact/, not against the page.
      html: page('Contact', '<p><img id="based" src="map.png" alt="map"></p>\n<form><input id="submit-image" type="image" src="/static/img/submit.png" alt="Send"></form>\n', {
        head: '<base href="/static/contact/">\n',
      }),
    },
  };

  const serve = (h: string) => (ctx: SiteRequest) => {
    const origin = `http://${cdnHost}:${ctx.port}`;
    if (h === host && pages[ctx.path] && ctx.search === '') {
      ctx.send(200, HTML, pages[ctx.path].html.replaceAll(`http://${cdnHost}:PORT`, origin));
      return true;
    }
    if (h === cdnHost && ctx.path === '/robots.txt') {
      ctx.send(200, 'text/plain; charset=utf-8', cdnRobots);
      return true;
    }
    if (ctx.path === '/robots.txt') return false; // the test web's allow-all
    const file = files.get(`${h} ${ctx.target}`);
    if (!file) ctx.send(404, 'text/plain; charset=utf-8', 'not found\n');
    else if (file.redirectTo) ctx.send(301, 'text/plain; charset=utf-8', 'moved\n', { location: file.redirectTo });
    else ctx.send(200, file.contentType, file.body);
    return true;
  };

  return {
    host,
    cdnHost,
    specs: [
      { host, pages: 1, fanOut: 0, handler: serve(host) },
      { host: cdnHost, pages: 1, fanOut: 0, handler: serve(cdnHost) },
    ],
    pages: Object.entries(pages).map(([target, p]) => ({ host, target, hops: p.hops })),
    requisites,
    disallowed: { host: cdnHost, target: '/private/pixel.png' },
    beyondReach: { host: cdnHost, target: '/img/too-deep.png' },
    cdnCrawlDelaySec: CRAWL_DELAY_SEC,
    checks: {
      deepColour: 'rgb(12, 34, 56)',
      cdnBorderColour: 'rgb(200, 10, 20)',
      cdnImportColour: 'rgb(1, 2, 3)',
      font: { family: 'ArchiveFont', char: font.char, glyphs: 4, fontSizePx: 20, advanceEm: font.advanceEm },
    },
  };
}
