// A client-rendered site (issue 26): every route answers the same shell, an
// empty <div id="app"> and a script. The script fetches the site's pages
// from a JSON file, renders the current route's title, text and links, adds
// an image, and routes with the History API (a click renders in place,
// pushState changes the URL). Without JavaScript the shell has no link at
// all: a crawler that does not render finds `/` and stops there.
import type { SiteRequest, SiteSpec } from './test-web';
import { png } from '../support/media';

export interface SpaPage {
  path: string;
  title: string;
  text: string;
  links: string[];
}

export interface SpaSite {
  host: string;
  spec: SiteSpec;
  pages: SpaPage[];
  /** What every page needs besides its document, as requested. */
  files: { script: string; data: string; image: string };
}

const SHELL = `<!doctype html>
<html><head><meta charset="utf-8"><title>Loading…</title><script src="/static/app.js" defer></script></head>
<body><div id="app"></div></body></html>
`;

// Plain ES5-ish script: what a small single-page application does.
const APP = `(function () {
  function render(pages, path) {
    var page = pages.filter(function (p) { return p.path === path; })[0];
    var app = document.getElementById('app');
    if (!page) { document.title = 'Not found'; app.textContent = 'Not found'; return; }
    document.title = page.title;
    var html = '<h1 id="title">' + page.title + '</h1><p id="text">' + page.text + '</p><nav>';
    page.links.forEach(function (l) { html += '<a href="' + l + '">' + l + '</a> '; });
    app.innerHTML = html + '</nav>';
    var img = new Image();
    img.id = 'logo';
    img.alt = 'logo';
    img.src = '/img/logo.png';
    app.appendChild(img);
  }
  fetch('/api/pages.json').then(function (r) { return r.json(); }).then(function (data) {
    render(data.pages, location.pathname);
    document.addEventListener('click', function (e) {
      var a = e.target.closest && e.target.closest('a');
      if (!a || a.origin !== location.origin) return;
      e.preventDefault();
      history.pushState({}, '', a.pathname);
      render(data.pages, a.pathname);
    });
    window.addEventListener('popstate', function () { render(data.pages, location.pathname); });
  });
})();
`;

export interface SpaSiteOptions {
  /**
   * Generate this many pages (`/`, `/p/1`…) instead of the four hand-written
   * ones: each links to the next three (so the home page reaches them all),
   * with a title and text of its own. For benchmarks needing more pages.
   */
  pages?: number;
}

/** The four hand-written pages the tests know: page three is linked only from the rendered page two. */
const FOUR: SpaPage[] = [
  { path: '/', title: 'Spa home', text: 'Welcome to a site built by its script.', links: ['/p/one', '/p/two'] },
  { path: '/p/one', title: 'Page one', text: 'The first page, rendered in the browser.', links: ['/'] },
  { path: '/p/two', title: 'Page two', text: 'The second page links a third one.', links: ['/p/three'] },
  { path: '/p/three', title: 'Page three', text: 'Only the rendered page two links here.', links: ['/p/one'] },
];

function generatedPages(host: string, n: number): SpaPage[] {
  const paths = Array.from({ length: n }, (_, i) => (i === 0 ? '/' : `/p/${i}`));
  return paths.map((path, i) => ({
    path,
    title: `Page ${i} of ${host}`,
    text: `Page ${i} of ${host}, rendered in the browser from the site's JSON.`,
    links: [1, 2, 3].map((d) => paths[(i + d) % n]).filter((l, j, all) => l !== path && all.indexOf(l) === j),
  }));
}

export function spaSite(host = 'spa.test', opts: SpaSiteOptions = {}): SpaSite {
  const pages = opts.pages === undefined ? FOUR : generatedPages(host, Math.max(1, Math.floor(opts.pages)));
  const files = { script: '/static/app.js', data: '/api/pages.json', image: '/img/logo.png' };
  const logo = png(4, 4, [0x20, 0x80, 0x40]);
  const handler = (ctx: SiteRequest): boolean => {
    if (ctx.path === '/robots.txt') return false;
    if (ctx.path === files.script) ctx.send(200, 'text/javascript; charset=utf-8', APP);
    else if (ctx.path === files.data) ctx.send(200, 'application/json', JSON.stringify({ pages }));
    else if (ctx.path === files.image) ctx.send(200, 'image/png', logo);
    // Every route gets the shell; the script decides what it shows (unknown routes too, as SPAs do).
    else if (ctx.path === '/' || ctx.path.startsWith('/p/')) ctx.send(200, 'text/html; charset=utf-8', SHELL);
    else ctx.send(404, 'text/plain', 'not found');
    return true;
  };
  return { host, spec: { host, pages: 1, fanOut: 0, handler }, pages, files };
}
