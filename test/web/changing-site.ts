// A site whose pages change on a schedule the test controls, for continuous
// crawling (docs/continuous-crawling.md):
//   /        links to /hot, /cold and /fading; never changes (ETag: 304s)
//   /hot     changes on every request (a counter in the body, no validators);
//            links to /new once `control.gainLink` is set
//   /cold    never changes; ETag and Last-Modified, 304 to a matching
//            conditional request
//   /fading  like /cold until `control.gone` is set, then 404
//   /new     a plain page, reachable only through /hot's late link
//   /listed  a plain page known only from /sitemap.xml, which says it never changes
// Everything else (robots.txt) falls through to the generated site.
import type { SiteRequest, SiteSpec } from './test-web';

export interface ChangingSiteControl {
  gainLink: boolean;
  gone: boolean;
  /** Status each answer got, per path, in order: what the test asserts 304s and 404s on. */
  answers: Map<string, number[]>;
}

const LAST_MODIFIED = 'Tue, 01 Sep 2026 10:00:00 GMT';

export function changingSite(host: string): { spec: SiteSpec; control: ChangingSiteControl } {
  const control: ChangingSiteControl = { gainLink: false, gone: false, answers: new Map() };
  let hotVersion = 0;
  const html = (title: string, links: string[], extra = '') =>
    `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${extra}${links.map((l) => `<a href="${l}">${l}</a>`).join(' ')}</body></html>`;
  const answer = (ctx: SiteRequest, status: number, body: string, headers: Record<string, string> = {}) => {
    control.answers.set(ctx.path, [...(control.answers.get(ctx.path) ?? []), status]);
    ctx.send(status, 'text/html; charset=utf-8', status === 304 ? '' : body, headers);
  };
  /** A page that never changes: validators, and 304 when the client has it. */
  const stable = (ctx: SiteRequest, etag: string, body: string) => {
    const validators = { ETag: etag, 'Last-Modified': LAST_MODIFIED };
    if (ctx.req.headers['if-none-match'] === etag) return answer(ctx, 304, '', validators);
    answer(ctx, 200, body, validators);
  };
  const spec: SiteSpec = {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      switch (ctx.path) {
        case '/':
          stable(ctx, '"root-1"', html('home', ['/hot', '/cold', '/fading']));
          return true;
        case '/hot':
          hotVersion++;
          answer(ctx, 200, html('hot', control.gainLink ? ['/', '/new'] : ['/'], `<p>edition ${hotVersion}</p>`));
          return true;
        case '/cold':
          stable(ctx, '"cold-1"', html('cold', ['/']));
          return true;
        case '/fading':
          if (control.gone) answer(ctx, 404, html('not found', []));
          else stable(ctx, '"fading-1"', html('fading', ['/']));
          return true;
        case '/new':
          stable(ctx, '"new-1"', html('new', ['/']));
          return true;
        case '/listed':
          stable(ctx, '"listed-1"', html('listed', ['/']));
          return true;
        case '/sitemap.xml': {
          const xml = `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${ctx.origin}/listed</loc><changefreq>never</changefreq></url></urlset>`;
          control.answers.set(ctx.path, [...(control.answers.get(ctx.path) ?? []), 200]);
          ctx.send(200, 'application/xml', xml);
          return true;
        }
        default:
          return false;
      }
    },
  };
  return { spec, control };
}
