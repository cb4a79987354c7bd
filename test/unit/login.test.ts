// A handler's login without a host clock (activities/login.ts): the page's
// gate says when a login must run (before the host's first page; after a
// logged-out answer, once a page got through), and a login run hands its
// requests to whoever sends them, here this test in the session's place,
// with a fake fetcher. Redis is a map; the WARC writer a list.
import { HostLogin, MAX_LOGIN_REQUESTS, type LoginPage, type PageLogin } from '../../activities/login';
import type { LoginRun } from '../../activities/login-run';
import type { CampaignRuntime, WorkerRuntime } from '../../activities/runtime';
import { resolveCampaignSettings } from '../../src/config/campaign';
import type { Handler } from '../../src/handlers/api';
import { parseCredentials } from '../../src/http/credentials';
import type { FetchOutcome, FetchRequest } from '../../src/http/fetcher';
import type { FetchResult } from '../../src/http/http-types';
import { Logger } from '../../src/log/logger';
import { hostKeys } from '../../src/redis/keys';
import type { WarcExchange } from '../../src/storage/warc-writer';
import { fakeResponse } from '../support/fake-response';

const HOST = 'members.test';
const ORIGIN = `https://${HOST}`;
const PAGE: LoginPage = { url: `${ORIGIN}/private`, depth: 1, label: null };

interface World {
  redis: Map<string, string>;
  warc: WarcExchange[];
  login: (h: Handler, o?: { allows?: (url: string) => boolean; handlerTimeoutMs?: number }) => Promise<HostLogin>;
}

function world(): World {
  const redis = new Map<string, string>();
  const warc: WarcExchange[] = [];
  const rt = {
    deps: {
      redis: {
        get: async (k: string) => redis.get(k) ?? null,
        set: async (k: string, v: string) => {
          redis.set(k, v);
          return 'OK';
        },
      },
    },
    log: new Logger({ level: 'silent' }),
    outputs: { warc: async () => ({ writeExchange: async (ex: WarcExchange) => void warc.push(ex) }) },
  } as unknown as WorkerRuntime;
  return {
    redis,
    warc,
    login: async (handler, o = {}) => {
      const settings = resolveCampaignSettings({ seeds: [`${ORIGIN}/`], output: { dir: '/tmp/login-unit' }, handlerTimeoutMs: o.handlerTimeoutMs ?? 5_000 }, 'login-unit');
      const campaign = { key: 'c1', settings, credentials: parseCredentials(`${ORIGIN} login alice:s3cret`, 'creds') } as unknown as CampaignRuntime;
      const login = await HostLogin.open({ rt, campaign, host: HOST, handler, allows: o.allows ?? null });
      if (!login) throw new Error('a handler with a login hook has a login');
      return login;
    },
  };
}

const answer = (url: string, over: Partial<FetchResult> & { html?: string } = {}): FetchOutcome => ({ ok: true, response: fakeResponse(url, over) });

/** The session's part: each request the run hands over is sent (here answered by `site`), one at a time, until the run ends. */
async function drive(run: LoginRun, site: (req: FetchRequest) => FetchOutcome, sent: FetchRequest[] = []): Promise<{ loggedIn: boolean; sent: FetchRequest[] }> {
  for (;;) {
    const step = await run.next();
    if (step.kind === 'done') return { loggedIn: step.loggedIn, sent };
    sent.push(step.request);
    await step.settle(Promise.resolve(site(step.request)));
  }
}

const formLogin: Handler = {
  async login({ fetch, credentials }) {
    const form = await fetch('/login');
    const csrf = /csrf=(\w+)/.exec(form.text)?.[1] ?? '';
    const res = await fetch('/login', { method: 'POST', body: new URLSearchParams({ user: credentials!.user, password: credentials!.password, csrf }) });
    if (new URL(res.url).pathname !== '/account') throw new Error(`refused (HTTP ${res.status})`);
  },
  isLoggedOut: (page) => /please log in/.test(page.text),
};

/** The members' site: the form, the POST answered 303 to /account. */
function site(req: FetchRequest): FetchOutcome {
  const path = new URL(req.url).pathname;
  if (path === '/login' && req.method === 'POST') return answer(req.url, { status: 303, headers: { location: '/account' } });
  if (path === '/login') return answer(req.url, { html: '<form>csrf=t0k</form>' });
  return answer(req.url, { html: 'welcome' });
}

const signal = new AbortController().signal;
const start = (gate: PageLogin, reason: 'first' | 'logged-out') => gate.start(reason, { delayMs: 0, signal });

test("before a host's first page: a login, its requests handed over one at a time (redirects on the host followed), stored, and kept for other sessions", async () => {
  const w = world();
  const gate = (await w.login(formLogin)).gateFor(PAGE);
  expect(gate.before()).toEqual({ login: 'first' });
  const run = await drive(start(gate, 'first'), site);
  expect(run.loggedIn).toBe(true);
  expect(run.sent.map((r) => `${r.method} ${new URL(r.url).pathname}`)).toEqual(['GET /login', 'POST /login', 'GET /account']);
  // The POST's form went as a form; the redirect after it is a GET without a body.
  expect(run.sent[1].headers?.['content-type']).toBe('application/x-www-form-urlencoded');
  expect(new URLSearchParams(run.sent[1].body!.toString()).get('csrf')).toBe('t0k');
  expect(run.sent[2].body).toBeUndefined();
  expect(w.warc.map((e) => [e.url, e.metadata?.crawlerRequest])).toEqual(run.sent.map((r) => [r.url, 'login']));
  expect(JSON.parse(w.redis.get(hostKeys('c1', HOST).login)!)).toMatchObject({ s: 'in' });
  // The page is requested next, without another login; it gets through.
  expect(gate.before()).toBeNull();
  expect(await gate.after(fakeResponse(PAGE.url, { html: 'the report' }))).toBeNull();
  // Another session of the host trusts the stored login.
  expect((await w.login(formLogin)).gateFor(PAGE).before()).toBeNull();
});

test('a logged-out answer calls for a login once a page got through; still logged out right after it, the page fails and the login is set aside', async () => {
  const w = world();
  w.redis.set(hostKeys('c1', HOST).login, JSON.stringify({ s: 'in', at: 0 }));
  const gate = (await w.login(formLogin)).gateFor(PAGE);
  expect(gate.before()).toBeNull();
  expect(await gate.after(fakeResponse(PAGE.url, { status: 401 }))).toEqual({ login: 'logged-out' });
  expect((await drive(start(gate, 'logged-out'), site)).loggedIn).toBe(true);
  expect(gate.before()).toBeNull();
  // A 403 the handler calls logged out, right after the login: set aside, for every session.
  const still = await gate.after(fakeResponse(PAGE.url, { status: 403, html: 'please log in' }));
  expect(still && 'failure' in still && [still.failure.code, still.failure.message]).toEqual(['LOGIN_FAILED', expect.stringContaining('still answers logged out')]);
  expect(JSON.parse(w.redis.get(hostKeys('c1', HOST).login)!)).toMatchObject({ s: 'failed', code: 'LOGIN_FAILED' });
  // Set aside: the next page that answers logged out fails without a login.
  const next = (await w.login(formLogin)).gateFor(PAGE);
  expect(next.before()).toBeNull();
  expect(await next.after(fakeResponse(PAGE.url, { status: 401 }))).toMatchObject({ failure: { code: 'LOGIN_FAILED' } });
});

test('an honest 403 (not logged out for the handler) is a page like any other', async () => {
  const w = world();
  w.redis.set(hostKeys('c1', HOST).login, JSON.stringify({ s: 'in', at: 0 }));
  const gate = (await w.login(formLogin)).gateFor(PAGE);
  expect(await gate.after(fakeResponse(PAGE.url, { status: 403, html: 'forbidden' }))).toBeNull();
});

test("a login for a logged-out answer that fails: the page fails without another request, with the login's error", async () => {
  const w = world();
  w.redis.set(hostKeys('c1', HOST).login, JSON.stringify({ s: 'in', at: 0 }));
  const refused: Handler = { ...formLogin, login: async () => Promise.reject(new Error('wrong password')) };
  const gate = (await w.login(refused)).gateFor(PAGE);
  expect(await gate.after(fakeResponse(PAGE.url, { status: 401 }))).toEqual({ login: 'logged-out' });
  expect(await drive(start(gate, 'logged-out'), site)).toEqual({ loggedIn: false, sent: [] });
  const failed = gate.before();
  expect(failed && 'failure' in failed && failed.failure.code).toBe('LOGIN_FAILED');
  expect(failed && 'failure' in failed && failed.failure.message).toContain('wrong password');
});

test('a first login that let nobody in is not run again for the next logged-out answer', async () => {
  const w = world();
  const gate = (await w.login(formLogin)).gateFor(PAGE);
  expect(gate.before()).toEqual({ login: 'first' });
  expect((await drive(start(gate, 'first'), site)).loggedIn).toBe(true);
  expect(await gate.after(fakeResponse(PAGE.url, { status: 401 }))).toMatchObject({ failure: { code: 'LOGIN_FAILED' } });
});

test("the hook's requests stay on the host, within robots.txt and MAX_LOGIN_REQUESTS: those it may not make never reach the session", async () => {
  const w = world();
  const codes: string[] = [];
  const tries = (url: string) => async (fetch: (u: string) => Promise<unknown>) => fetch(url).catch((err: { code: string }) => void codes.push(err.code));
  const wandering: Handler = {
    async login({ fetch }) {
      await tries('https://elsewhere.test/login')(fetch);
      await tries('/secret/login')(fetch);
      for (let i = 0; i < MAX_LOGIN_REQUESTS + 2; i++) await tries(`/step/${i}`)(fetch);
    },
  };
  const gate = (await w.login(wandering, { allows: (u) => !u.includes('/secret/') })).gateFor(PAGE);
  const run = await drive(start(gate, 'first'), site);
  // The disallowed request counts toward the limit (it was asked for); the one off the host does not.
  expect(codes).toEqual(['LOGIN_OFF_HOST', 'LOGIN_ROBOTS_DISALLOWED', ...Array(3).fill('LOGIN_TOO_MANY_REQUESTS')]);
  expect(run.sent.map((r) => new URL(r.url).pathname)).toEqual(Array.from({ length: MAX_LOGIN_REQUESTS - 1 }, (_, i) => `/step/${i}`));
});

test('a hook left behind at its time limit makes no more requests: the run ends failed, its late request refused', async () => {
  const w = world();
  let late: Promise<unknown> | null = null;
  const slow: Handler = {
    async login({ fetch }) {
      await fetch('/login');
      await new Promise((r) => setTimeout(r, 200));
      late = fetch('/login');
      await late;
    },
  };
  const gate = (await w.login(slow, { handlerTimeoutMs: 20 })).gateFor(PAGE);
  const run = await drive(start(gate, 'first'), site);
  expect(run.loggedIn).toBe(false);
  expect(run.sent.map((r) => new URL(r.url).pathname)).toEqual(['/login']);
  await new Promise((r) => setTimeout(r, 250));
  await expect(late).rejects.toMatchObject({ code: 'LOGIN_OVER' });
  expect(JSON.parse(w.redis.get(hostKeys('c1', HOST).login)!)).toMatchObject({ s: 'failed', code: 'LOGIN_TIMEOUT' });
});

test('a cancelled session: the run fails with the cancellation', async () => {
  const w = world();
  const stop = new AbortController();
  const gate = (await w.login(formLogin)).gateFor(PAGE);
  const run = gate.start('first', { delayMs: 0, signal: stop.signal });
  const step = await run.next();
  stop.abort(new Error('worker shutting down'));
  if (step.kind === 'request') await step.settle(Promise.reject(stop.signal.reason));
  await expect(run.next()).rejects.toThrow('worker shutting down');
});

test('a request the hook fires without awaiting it leaves no unhandled rejection behind to take the worker down', async () => {
  const unhandled: unknown[] = [];
  const seen = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', seen);
  try {
    // Off the host: refused at once (LOGIN_OFF_HOST), and nobody awaits it.
    const careless: Handler = {
      async login({ fetch }) {
        void fetch('https://elsewhere.test/');
      },
    };
    const w = world();
    const gate = (await w.login(careless)).gateFor(PAGE);
    expect((await drive(start(gate, 'first'), site)).loggedIn).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', seen);
  }
});
