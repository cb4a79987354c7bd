// A site whose pages share their static files, as most sites' do: every page
// loads the same two stylesheets (one @imports the other, which loads a web
// font), three scripts and six images from /static/, plus one or two images
// of its own. What requisites cost is then visible from the outside: a
// crawler that fetches each URL once per campaign asks for the shared files
// once per host, and every later page adds only its own images.
import type { SiteSpec } from '../test/web/test-web';
import { hashString, mulberry32 } from '../test/web/seeded';

/** The shared files of every host, by path, and their content types. */
const SHARED: Record<string, string> = {
  '/static/css/site.css': 'text/css',
  '/static/css/base.css': 'text/css',
  '/static/js/vendor.js': 'text/javascript',
  '/static/js/app.js': 'text/javascript',
  '/static/js/analytics.js': 'text/javascript',
  '/static/img/logo.png': 'image/png',
  '/static/img/icon-search.png': 'image/png',
  '/static/img/icon-menu.png': 'image/png',
  '/static/img/hero.jpg': 'image/jpeg',
  '/static/img/hero-2x.jpg': 'image/jpeg',
  // Referenced from site.css only (a background), not from the pages.
  '/static/img/bg.png': 'image/png',
  // Referenced from base.css (@font-face), which site.css @imports.
  '/static/fonts/body.woff2': 'font/woff2',
};

export const SHARED_STATIC_PATHS: readonly string[] = Object.keys(SHARED);

const WORDS = ['archive', 'harbor', 'linen', 'quartz', 'willow', 'ember', 'copper', 'saffron', 'tidal', 'maple', 'signal', 'meadow', 'lantern', 'orbit', 'cobalt', 'fable'];

export interface SharedStaticSite {
  spec: SiteSpec;
  /** Every page's URL path, the root first. */
  pagePaths: string[];
  /** Paths of each page's own images, by page path. */
  pageImages: Map<string, string[]>;
}

/** Bytes of a file, the same on every host (identical payloads), about `size` long. */
function filler(path: string, size: number): Buffer {
  const rng = mulberry32(hashString(path));
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = rng.int(256);
  return b;
}

const CSS_SITE = `@import url("base.css");\nheader { background: url("../img/bg.png") repeat-x; }\n.logo { width: 120px; }\n`;
const CSS_BASE = `@font-face { font-family: "Body"; src: url("../fonts/body.woff2") format("woff2"); }\nbody { font-family: "Body", serif; margin: 0 auto; max-width: 60em; }\n`;

/**
 * One host of `pages` pages (`/` and `/p/1`…): each links to the next three
 * (so the root reaches them all), loads the shared files, and has one image
 * of its own, two on odd pages. The text differs page to page, so near-
 * duplicate detection keeps following links.
 */
export function sharedStaticSite(host: string, pages: number): SharedStaticSite {
  const pagePaths = Array.from({ length: pages }, (_, i) => (i === 0 ? '/' : `/p/${i}`));
  const pageImages = new Map(pagePaths.map((p, i) => [p, i % 2 === 1 ? [`/img/${i}-a.jpg`, `/img/${i}-b.jpg`] : [`/img/${i}-a.jpg`]]));
  const bodies = new Map<string, { type: string; body: Buffer | string }>();
  bodies.set('/static/css/site.css', { type: 'text/css', body: CSS_SITE });
  bodies.set('/static/css/base.css', { type: 'text/css', body: CSS_BASE });
  for (const [p, type] of Object.entries(SHARED)) {
    if (!bodies.has(p)) bodies.set(p, { type, body: type.startsWith('text/') ? `/* ${p} */\n${'void 0;\n'.repeat(400)}` : filler(p, 6_000) });
  }
  const html = (i: number, path: string): string => {
    const rng = mulberry32(hashString(`${host}|${path}`));
    const text = Array.from({ length: 120 }, () => WORDS[rng.int(WORDS.length)]).join(' ');
    const links = [1, 2, 3].map((d) => pagePaths[(i + d) % pages]).filter((p) => p !== path);
    return (
      `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Page ${i} of ${host}</title>\n` +
      `<link rel="stylesheet" href="/static/css/site.css">\n` +
      `<script src="/static/js/vendor.js"></script><script src="/static/js/app.js" defer></script><script src="/static/js/analytics.js" async></script>\n` +
      `</head><body>\n<header><img class="logo" src="/static/img/logo.png" alt="logo"> <img src="/static/img/icon-search.png" alt=""> <img src="/static/img/icon-menu.png" alt=""></header>\n` +
      `<img src="/static/img/hero.jpg" srcset="/static/img/hero.jpg 1x, /static/img/hero-2x.jpg 2x" alt="">\n` +
      `<h1>Page ${i}</h1>\n<p>${text}</p>\n` +
      pageImages
        .get(path)!
        .map((src) => `<img src="${src}" alt="">`)
        .join('\n') +
      `\n<nav>${links.map((l) => `<a href="${l}">${l}</a>`).join(' ')}</nav>\n</body></html>\n`
    );
  };
  const index = new Map(pagePaths.map((p, i) => [p, i]));
  const spec: SiteSpec = {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      const page = index.get(ctx.path);
      if (page !== undefined) {
        ctx.send(200, 'text/html; charset=utf-8', html(page, ctx.path));
        return true;
      }
      const file = bodies.get(ctx.path);
      if (file) {
        ctx.send(200, file.type, file.body);
        return true;
      }
      if (/^\/img\/\d+-[ab]\.jpg$/.test(ctx.path)) {
        ctx.send(200, 'image/jpeg', filler(`${host}${ctx.path}`, 4_000));
        return true;
      }
      // robots.txt (allow all) and anything else: the test web's own answers.
      return false;
    },
  };
  return { spec, pagePaths, pageImages };
}
