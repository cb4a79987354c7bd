// A handler that logs in through a form before crawling a members' site
// (docs/handlers.md, "Logging in"). Its user name and password come from
// the credentials file's `login user:password` line for the site's origin,
// read by the workers: nothing secret rides in the campaign input.
//
//   # credentials.txt (chmod 600)
//   https://members.example.com  login alice:s3cret
//
//   npm run crawl -- https://members.example.com/ --handler examples/login-handler.ts --credentials-file credentials.txt
//
// Run against the test web in test/integration/login.test.ts.
import type { Handler } from '../src/handlers/api';

const handler: Handler = {
  async login({ fetch, credentials, log }) {
    if (!credentials) throw new Error('no "login user:password" line for this origin in the credentials file');
    // The form first: it carries a one-time CSRF token the POST must send back.
    const form = await fetch('/login');
    const csrf = /name="csrf" value="([^"]*)"/.exec(form.text)?.[1];
    if (form.status !== 200 || csrf === undefined) throw new Error(`no login form at /login (HTTP ${form.status})`);
    const res = await fetch('/login', { method: 'POST', body: new URLSearchParams({ user: credentials.user, password: credentials.password, csrf }) });
    // The site redirects to /account once logged in, and shows the form again otherwise: say so, or the crawl goes on logged out.
    if (new URL(res.url).pathname !== '/account' || res.status !== 200) throw new Error(`the site refused the login (HTTP ${res.status} at ${res.url})`);
    log.info('logged in', { user: credentials.user });
  },
  // A 403 is either "log in first" or an honest "forbidden": only the first calls for a login.
  isLoggedOut: (page) => /please log in/i.test(page.text),
};

export default handler;
