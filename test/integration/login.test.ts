// A handler that logs in through a form (examples/login-handler.ts) against a
// site whose sessions expire every few pages (test/web/login-site.ts): every
// page is fetched with 200, the crawler logs in before its first page and
// again whenever the site says it is logged out (a 401, or a 403 the handler
// recognises), an honest 403 triggers no login, the login requests are in
// the WARC, spaced like pages, and the password is found nowhere: not in the
// output folder (WARCs decompressed), the workers' logs or the Temporal
// history of the campaign and its host workflow. A handler whose login
// fails records the pages that want one as LOGIN_FAILED, without looping.
import fs from 'node:fs';
import path from 'node:path';
import { createHarness, launch, minGapsByHost, outputOf, type Harness } from '../support/harness';
import { loginSite } from '../web/login-site';
import { domainWorkflowId } from '../../workflows/ids';
import { hostKey } from '../../src/url/normalize';
import { MAX_LOGIN_REQUESTS } from '../../activities/login';
import { allText } from '../support/all-text';

jest.setTimeout(240_000);

const ROOT = path.resolve(__dirname, '..', '..');
const HANDLER = path.join(ROOT, 'examples/login-handler.ts');
const PASSWORD = 'pw-Lq4-f0rm-s3cret';
const DELAY_MS = 80;

let h: Harness;
const logs: string[] = [];
beforeAll(async () => {
  h = await createHarness('login', { workers: 1, env: { CRAWLER_LOG_LEVEL: 'debug' }, onLog: (l) => logs.push(l) });
});
afterAll(() => h?.close());

/** Every run of a workflow's history, payloads decoded as the Web UI shows them. */
async function historyText(workflowId: string): Promise<string> {
  const out: string[] = [];
  for await (const wf of h.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const raw = JSON.stringify(await h.client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory());
    out.push(raw, ...[...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map((d) => Buffer.from(d[1], 'base64').toString('utf8')));
  }
  return out.join('\n');
}

function credentialsFile(name: string, origin: string, password: string): string {
  const file = path.join(h.outDir, name);
  fs.writeFileSync(file, `# the members' site\n${origin}  login alice:${password}\n`, { mode: 0o600 });
  return file;
}

test('a form login before the first page and again whenever the session expires: every page 200, login requests in the WARC, no password anywhere', async () => {
  const HOST = 'www.login.test';
  const site = loginSite(HOST, { user: 'alice', password: PASSWORD, expireAfter: 6, pages: 24 });
  h.web.addSite(site.spec);
  const seed = h.web.url(HOST, '/');
  const forbidden = h.web.url(HOST, '/private/report');
  const creds = credentialsFile('credentials.txt', seed.slice(0, -1), PASSWORD);
  const campaignId = `login-${process.pid}`;
  const result = await (
    await launch(h, { campaignId, seeds: [seed, forbidden], sitemaps: 'off', handler: HANDLER, fetch: { credentialsFile: creds }, politeness: { minDelayMs: DELAY_MS } })
  ).result();
  expect(result.status).toBe('completed');

  // Every page of the site with 200; the honest 403 recorded as it is, with no login for it.
  const index = await outputOf(h, campaignId).index();
  const expected = h.web.expectedPages([seed]);
  expect(new Set(index.filter((e) => e.url !== forbidden).map((e) => e.url))).toEqual(expected);
  expect(index.filter((e) => e.url !== forbidden && e.status !== 200).map((e) => `${e.status} ${e.url} ${e.error?.code ?? ''}`)).toEqual([]);
  expect(index.filter((e) => e.url === forbidden).map((e) => [e.status, e.outcome])).toEqual([[403, 'http-error']]);
  // No login request has an index line: the index is the frontier's URLs.
  expect(index.some((e) => new URL(e.url).pathname === '/login')).toBe(false);

  // Logged in before the first page (no page ever went anonymous), and again after sessions expired, on a 401 and on a 403.
  expect(site.anonymous).toEqual([]);
  expect(site.refused).toBe(0);
  expect(site.expired).toEqual(expect.arrayContaining([401, 403]));
  expect(site.sessions.length).toBe(site.expired.length + 1);
  expect(site.posts.every((p) => new URLSearchParams(p).get('password') === PASSWORD)).toBe(true);

  // Login requests took the host clock like pages: one at a time, spaced by the delay.
  const requests = h.web.requests().filter((r) => r.host === HOST);
  expect(requests.filter((r) => r.path === '/login').map((r) => r.method)).toEqual(site.sessions.flatMap(() => ['GET', 'POST']));
  expect(minGapsByHost(requests).get(HOST)).toBeGreaterThanOrEqual(DELAY_MS);

  // The login exchanges are in the WARC: the form, the POST (its password redacted), the redirect and /account.
  const warc = await outputOf(h, campaignId).warc();
  const loginRecords = warc.filter((r) => r.type === 'request' && /^POST \/login /.test(r.statusLine ?? ''));
  expect(loginRecords).toHaveLength(site.sessions.length);
  for (const r of loginRecords) {
    const body = new URLSearchParams(r.payload!.toString());
    expect([body.get('user'), body.get('password')]).toEqual(['alice', '[redacted]']);
  }
  expect(warc.filter((r) => r.type === 'response' && r.targetUri === h.web.url(HOST, '/login')).map((r) => r.statusLine?.split(' ')[1])).toEqual(
    site.sessions.flatMap(() => ['200', '303']),
  );
  expect(warc.filter((r) => r.type === 'response' && r.targetUri === h.web.url(HOST, '/account'))).toHaveLength(site.sessions.length);
  expect(warc.every((r) => r.blockDigestOk)).toBe(true);

  // The password, in any spelling, nowhere.
  const output = allText(outputOf(h, campaignId).dir);
  expect(output).toContain('[redacted]');
  const history = `${await historyText(campaignId)}\n${await historyText(domainWorkflowId(campaignId, hostKey(seed)))}`;
  expect(history).toContain(creds);
  expect(logs.join('\n')).toContain('logged in');
  for (const s of [PASSWORD, encodeURIComponent(PASSWORD)]) {
    expect({ where: 'output folder', found: output.includes(s) }).toEqual({ where: 'output folder', found: false });
    expect({ where: 'worker logs', found: logs.join('\n').includes(s) }).toEqual({ where: 'worker logs', found: false });
    expect({ where: 'history', found: history.includes(s) }).toEqual({ where: 'history', found: false });
  }
});

test('a login that keeps failing: pages that want it are recorded LOGIN_FAILED, the login is not tried again for every page', async () => {
  const HOST = 'www.wrong-password.test';
  const site = loginSite(HOST, { user: 'alice', password: 'the-right-one', expireAfter: 6, pages: 12 });
  h.web.addSite(site.spec);
  const seeds = ['/', '/1', '/2', '/3'].map((p) => h.web.url(HOST, p));
  const creds = credentialsFile('wrong.txt', seeds[0].slice(0, -1), 'not-the-right-one');
  const campaignId = `login-wrong-${process.pid}`;
  const result = await (await launch(h, { campaignId, seeds, sitemaps: 'off', handler: HANDLER, fetch: { credentialsFile: creds }, politeness: { minDelayMs: 20 } })).result();
  expect(result.status).toBe('completed');
  const index = await outputOf(h, campaignId).index();
  expect(index.length).toBeGreaterThanOrEqual(seeds.length);
  expect(index.map((e) => [e.outcome, e.error?.code])).toEqual(index.map(() => ['error', 'LOGIN_FAILED']));
  expect(index[0].error?.message).toContain('the site refused the login');
  // One login, set aside for the campaign: not one per page.
  expect(site.refused).toBe(1);
  expect(h.web.requests().filter((r) => r.host === HOST && r.path === '/login').length).toBeLessThanOrEqual(MAX_LOGIN_REQUESTS);
});
