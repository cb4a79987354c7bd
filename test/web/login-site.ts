// A site behind a login form, for the login-hook tests (issue 25): GET /login
// shows a form with a one-time CSRF token; POST /login with the right user,
// password and token sets a session cookie and redirects (303) to /account.
// Every other page (the generated link graph) needs a live session: without
// one it answers 403 with a "please log in" page. A session lasts
// `expireAfter` pages; then it answers logged out, with a 401 and a 403 in
// turn (both must make the crawler log in again). /private/ is forbidden to
// everybody, logged in or not: an honest 403 that no login changes.
import { randomBytes } from 'node:crypto';
import type { SiteRequest, SiteSpec } from './test-web';

export interface LoginSite {
  spec: SiteSpec;
  /** Successful logins, in order: the sessions handed out. */
  sessions: string[];
  /** Failed POSTs to /login (a wrong password or token). */
  refused: number;
  /** Logged-out answers given to requests whose session had expired, by status. */
  expired: number[];
  /** Page requests answered 403 "please log in" for want of any session. */
  anonymous: string[];
  /** The POST bodies /login received (to check what the crawler sent). */
  posts: string[];
}

const html = (title: string, body: string) => `<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`;

export function loginSite(host: string, o: { user: string; password: string; expireAfter: number; pages?: number }): LoginSite {
  const out: LoginSite = { spec: undefined!, sessions: [], refused: 0, expired: [], anonymous: [], posts: [] };
  /** Session → pages it may still see. */
  const live = new Map<string, number>();
  const expired = new Set<string>();
  const tokens = new Set<string>();
  const loginForm = (note: string) => {
    const csrf = randomBytes(6).toString('hex');
    tokens.add(csrf);
    return html(
      'Log in',
      `${note}<form method="post" action="/login"><input name="user"><input type="password" name="password"><input type="hidden" name="csrf" value="${csrf}"><button>Log in</button></form>`,
    );
  };
  const handler = (ctx: SiteRequest): boolean => {
    const { req, path } = ctx;
    if (path === '/robots.txt') return false;
    if (path === '/login' && ctx.method === 'POST') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        out.posts.push(body);
        const f = new URLSearchParams(body);
        const csrf = f.get('csrf') ?? '';
        if (f.get('user') === o.user && f.get('password') === o.password && tokens.delete(csrf)) {
          const sid = randomBytes(8).toString('hex');
          out.sessions.push(sid);
          live.set(sid, o.expireAfter);
          ctx.send(303, 'text/plain', 'welcome\n', { location: '/account', 'set-cookie': `sid=${sid}; Path=/; HttpOnly` });
        } else {
          out.refused++;
          ctx.send(200, 'text/html', loginForm('<p>Wrong user name or password.</p>'));
        }
      });
      return true;
    }
    if (path === '/login') {
      ctx.send(200, 'text/html', loginForm(''));
      return true;
    }
    const sid = /(?:^|;\s*)sid=([^;]*)/.exec(req.headers.cookie ?? '')?.[1] ?? null;
    if (path === '/account') {
      ctx.send(sid && live.has(sid) ? 200 : 403, 'text/html', html('Account', sid && live.has(sid) ? 'Your account' : 'Please log in.'));
      return true;
    }
    if (path.startsWith('/private/')) {
      ctx.send(403, 'text/html', html('Forbidden', 'Forbidden: nobody may see this.'));
      return true;
    }
    const left = sid ? live.get(sid) : undefined;
    if (left === undefined || left <= 0) {
      if (sid && (expired.has(sid) || left !== undefined)) {
        // Expired: a 401 and a 403 in turn, both saying to log in again.
        live.delete(sid);
        expired.add(sid);
        const status = out.expired.length % 2 === 0 ? 401 : 403;
        out.expired.push(status);
        ctx.send(status, 'text/html', html('Session expired', 'Your session has expired: please log in again. <a href="/login">Log in</a>'));
      } else {
        out.anonymous.push(path);
        ctx.send(403, 'text/html', html('Log in', 'Members only: please log in. <a href="/login">Log in</a>'));
      }
      return true;
    }
    live.set(sid!, left - 1);
    // The generated page.
    return false;
  };
  out.spec = { host, pages: o.pages ?? 24, fanOut: 3, seed: 25, handler, methods: ['POST'] };
  return out;
}
