// A site with a members' area behind HTTP Basic and an API host behind a
// bearer token, for the credentials tests (issue 25). The public home links
// into both; every protected page answers 401 with a challenge unless the
// request carries the right credentials, and sets a session cookie when it
// does (a secret that must not reach the output either).
import type { SiteRequest, SiteSpec } from './test-web';

export interface MembersSecrets {
  user: string;
  password: string;
  token: string;
  /** The value of the session cookie members' pages set. */
  session: string;
}

export interface MembersSite {
  /** The public site with the members' area (Basic). */
  site: SiteSpec;
  /** The API host (Bearer). */
  api: SiteSpec;
  /** Paths answered 200, by host. */
  pages: { site: string[]; api: string[] };
  /** Requests that came without the right credentials (answered 401), as host + path. */
  refused: string[];
  /** Requests that carried an Authorization header meant for another host, as host + path. */
  misdirected: string[];
  /** The X-Crawl-Purpose header of every request (robots.txt included): what `--header` sends. */
  purposes: (string | undefined)[];
  /** Hosts whose robots.txt was asked for with the host's credentials (an intranet's robots.txt is behind them too). */
  robotsWithCredentials: string[];
}

const html = (body: string) => `<!doctype html><html><head><title>t</title></head><body>${body}</body></html>`;
const link = (href: string) => `<a href="${href}">${href}</a>`;

/** `host` serves / and /members/…; `apiHost` serves /api/…. Both must be added to the test web. */
export function membersSite(host: string, apiHost: string, secrets: MembersSecrets): MembersSite {
  const basic = `Basic ${Buffer.from(`${secrets.user}:${secrets.password}`).toString('base64')}`;
  const bearer = `Bearer ${secrets.token}`;
  const out: MembersSite = { site: undefined!, api: undefined!, pages: { site: [], api: [] }, refused: [], misdirected: [], purposes: [], robotsWithCredentials: [] };
  const sitePages: Record<string, string> = {
    '/': html(`${link('/members/')}${link('/about')}${link(`http://${apiHost}:PORT/api/items`)}`),
    '/about': html('public'),
    '/members/': html(`${link('/members/a')}${link('/members/b')}`),
    '/members/a': html(link('/members/b')),
    '/members/b': html(link('/members/')),
  };
  const apiPages: Record<string, string> = {
    '/api/items': html(link('/api/items/2')),
    '/api/items/2': html('the second item'),
  };
  const serve = (pages: Record<string, string>, expected: string, protectedPrefix: string, record: string[]) => (ctx: SiteRequest) => {
    out.purposes.push(ctx.req.headers['x-crawl-purpose'] as string | undefined);
    const auth = ctx.req.headers.authorization;
    if (ctx.path === '/robots.txt') {
      if (auth === expected) out.robotsWithCredentials.push(ctx.host);
      return false;
    }
    if (auth !== undefined && auth !== expected) out.misdirected.push(`${ctx.host}${ctx.path}`);
    const page = pages[ctx.path];
    if (page === undefined) return (ctx.send(404, 'text/plain', 'not found'), true);
    if (ctx.path.startsWith(protectedPrefix) && auth !== expected) {
      out.refused.push(`${ctx.host}${ctx.path}`);
      ctx.send(401, 'text/plain', 'who are you?', { 'www-authenticate': expected.startsWith('Basic') ? 'Basic realm="members"' : 'Bearer realm="api"' });
      return true;
    }
    record.push(ctx.path);
    const headers = ctx.path.startsWith(protectedPrefix) ? { 'set-cookie': `members_session=${secrets.session}; Path=/; HttpOnly` } : {};
    ctx.send(200, 'text/html; charset=utf-8', page.replace('PORT', String(ctx.port)), headers);
    return true;
  };
  out.site = { host, pages: 1, fanOut: 0, handler: serve(sitePages, basic, '/members/', out.pages.site) };
  out.api = { host: apiHost, pages: 1, fanOut: 0, handler: serve(apiPages, bearer, '/api/', out.pages.api) };
  return out;
}
