// The fetch stage: what may be requested, the request, the retry decision,
// and what the host clock needs (the session owns the clock; the stage only
// says how long the host must stay quiet, or that nothing was requested).
import { fetchStage, hostIdle, type FetchStageDeps, type FetchStageInput, type LoginGate } from '../../activities/pipeline/fetch-stage';
import { PAGE_RETRY } from '../../src/config/retry-policy';
import { FetchError } from '../../src/http/fetch-error';
import type { PageOutcome, PageRequest } from '../../src/browser/page-fetcher';
import { fakeResponse } from '../support/fake-response';

const URL_ = 'https://a.test/page';

function setup(
  answer: PageOutcome | (() => PageOutcome),
  over: Partial<FetchStageInput> = {},
  budget: { hostRequests: number; campaignLeft: boolean; embedsLeft?: boolean } = { hostRequests: 0, campaignLeft: true },
) {
  const requests: PageRequest[] = [];
  const deps: FetchStageDeps = {
    fetcher: {
      fetch: async (req) => {
        requests.push(req);
        return typeof answer === 'function' ? answer() : answer;
      },
    },
    hostRequests: async () => budget.hostRequests,
    reserveCampaignBudget: async () => budget.campaignLeft,
    reserveEmbedBudget: async () => budget.embedsLeft ?? true,
    signal: new AbortController().signal,
  };
  const input: FetchStageInput = {
    url: URL_,
    kind: 'page',
    attempt: 1,
    delayMs: 1_000,
    allowedByRobots: null,
    maxPagesPerHost: null,
    maxPages: null,
    maxEmbeds: null,
    maxRetries: 2,
    ...over,
  };
  return { run: () => fetchStage(input, deps), requests, deps };
}
const ok = (status = 200, headers: Record<string, string> = {}): PageOutcome => ({ ok: true, response: fakeResponse(URL_, { status, headers }) });

test('a response is handed on, the host quiet for its delay after it', async () => {
  const s = setup(ok(), { headers: { 'if-none-match': '"x"' } });
  expect(await s.run()).toMatchObject({ kind: 'response', hostPauseMs: 1_000, response: { status: 200 } });
  // The entry's kind goes with the request: a browser fetcher renders pages only.
  expect(s.requests).toEqual([{ url: URL_, headers: { 'if-none-match': '"x"' }, kind: 'page' }]);
});

test("a rendered page's delay counts from its last request to the host, not from its DOM taken", async () => {
  // The render asked the host for its last file 700 ms ago (then waited for quiet and took the DOM): the host has been quiet that long.
  const rendered = (endedAt: number): PageOutcome => ({
    ok: true,
    response: { ...fakeResponse(URL_, { status: 200 }), rendered: { html: '<p>', url: URL_, done: 'quiet', ms: 900, requests: 1, hostRequestsEndedAt: endedAt } },
  });
  const r = await setup(rendered(Date.now() - 700)).run();
  expect(r).toMatchObject({ kind: 'response', hostPauseMs: 1_000 });
  expect(r.kind === 'response' && r.hostIdleMs).toBeGreaterThanOrEqual(700);
  // A page not rendered has just had its request: no idle time.
  expect((await setup(ok()).run()) as object).not.toHaveProperty('hostIdleMs');
  expect(hostIdle(10_000, 10_400)).toBe(400);
  expect(hostIdle(undefined, 10_400)).toBe(0);
  // A clock that stepped back never counts as idle time.
  expect(hostIdle(10_500, 10_400)).toBe(0);
});

test('robots.txt, the host budget and the campaign budget stop a URL before its request: nothing for the clock to wait for', async () => {
  const robots = setup(ok(), { allowedByRobots: () => false });
  expect(await robots.run()).toEqual({ kind: 'skipped', hostPauseMs: null, outcome: 'robots-disallowed' });
  const host = setup(ok(), { maxPagesPerHost: 5 }, { hostRequests: 5, campaignLeft: true, embedsLeft: true });
  expect(await host.run()).toMatchObject({ kind: 'skipped', hostPauseMs: null, outcome: 'host-budget-exhausted', error: { code: 'HOST_BUDGET' } });
  const campaign = setup(ok(), { maxPages: 10 }, { hostRequests: 0, campaignLeft: false });
  expect(await campaign.run()).toMatchObject({ kind: 'skipped', hostPauseMs: null, outcome: 'budget-exhausted', error: { code: 'PAGE_BUDGET' } });
  expect([...robots.requests, ...host.requests, ...campaign.requests]).toEqual([]);
});

test('budgets count pages: a sitemap is requested whatever they say', async () => {
  const s = setup(ok(), { kind: 'sitemap', maxPagesPerHost: 1, maxPages: 1 }, { hostRequests: 9, campaignLeft: false });
  expect(await s.run()).toMatchObject({ kind: 'response' });
});

test("embeds count against their own budget, never the pages': spent, the embed is skipped unrequested", async () => {
  const pagesSpent = setup(ok(), { kind: 'embed', maxPagesPerHost: 1, maxPages: 1, maxEmbeds: 5 }, { hostRequests: 9, campaignLeft: false, embedsLeft: true });
  expect(await pagesSpent.run()).toMatchObject({ kind: 'response' });
  const embedsSpent = setup(ok(), { kind: 'embed', maxEmbeds: 5 }, { hostRequests: 0, campaignLeft: true, embedsLeft: false });
  expect(await embedsSpent.run()).toMatchObject({ kind: 'skipped', hostPauseMs: null, outcome: 'embed-budget-exhausted', error: { code: 'EMBED_BUDGET' } });
  expect(embedsSpent.requests).toEqual([]);
  // A page never touches the embed budget.
  const page = setup(ok(), { maxEmbeds: 5 }, { hostRequests: 0, campaignLeft: true, embedsLeft: false });
  expect(await page.run()).toMatchObject({ kind: 'response' });
});

test('a retryable network failure is retried up to fetch.maxRetries, then fails the URL', async () => {
  const reset: PageOutcome = { ok: false, failure: new FetchError('CONNECTION_RESET', URL_) };
  const first = await setup(reset, { attempt: 1 }).run();
  expect(first).toMatchObject({ kind: 'retry', hostPauseMs: 1_000, status: null, code: 'CONNECTION_RESET' });
  expect(first.kind === 'retry' && first.waitMs).toBeGreaterThanOrEqual(1_000);
  expect(await setup(reset, { attempt: 3 }).run()).toMatchObject({ kind: 'failed', outcome: 'error', requested: true, error: { code: 'CONNECTION_RESET' } });
});

test('a refused address is a failure with no request sent', async () => {
  const refused: PageOutcome = { ok: false, failure: new FetchError('ADDRESS_REFUSED', URL_) };
  expect(await setup(refused).run()).toMatchObject({ kind: 'failed', outcome: 'refused', requested: false, error: { code: 'ADDRESS_REFUSED' } });
});

test("a 503's Retry-After goes on the host clock and into the wait; a 429 gets extra attempts beyond maxRetries", async () => {
  expect(await setup(ok(503, { 'retry-after': '30' })).run()).toMatchObject({ kind: 'retry', hostPauseMs: 30_000, waitMs: 30_000, status: 503, code: 'HTTP_503' });
  const throttled = setup(ok(429), { attempt: 2 + PAGE_RETRY.throttleExtraAttempts });
  expect(await throttled.run()).toMatchObject({ kind: 'retry', status: 429 });
  // Past its attempts, a 503 is a response like any other: classified (http-error) and stored.
  expect(await setup(ok(503), { attempt: 3 }).run()).toMatchObject({ kind: 'response', response: { status: 503 } });
});

test('a cancelled fetch is not a failure of the URL: it rethrows', async () => {
  const s = setup(() => {
    throw new Error('cancelled');
  });
  await expect(s.run()).rejects.toThrow('cancelled');
});

test("a host's first session with little time left: a request that got no address slot within it is unsent (the lease goes back unused), whatever its attempts", async () => {
  const busy: PageOutcome = { ok: false, failure: new FetchError('ADDRESS_BUSY', URL_) };
  const late = setup(busy, { attempt: 9 + PAGE_RETRY.throttleExtraAttempts, maxSlotWaitMs: 1_500 });
  expect(await late.run()).toMatchObject({ kind: 'unsent', hostPauseMs: null, reason: expect.stringContaining('1500 ms') });
  // Any other failure is what it was.
  const reset = setup({ ok: false, failure: new FetchError('CONNECTION_RESET', URL_) }, { maxSlotWaitMs: 1_500 });
  expect(await reset.run()).toMatchObject({ kind: 'retry', hostPauseMs: 1_000, code: 'CONNECTION_RESET' });
});

test('the bound on the slot wait and the call just before sending go to the fetcher with the request', async () => {
  const contexts: unknown[] = [];
  const beforeSend = async () => undefined;
  const s = setup(ok(), { maxSlotWaitMs: 700 });
  s.deps.beforeSend = beforeSend;
  const inner = s.deps.fetcher.fetch;
  s.deps.fetcher = { fetch: (req, ctx) => (contexts.push(ctx), inner(req, ctx)) };
  expect(await s.run()).toMatchObject({ kind: 'response' });
  expect(contexts).toEqual([{ signal: s.deps.signal, beforeSend, maxSlotWaitMs: 700 }]);
});

test("an address kept busy by the crawler's own requests (ADDRESS_BUSY) is the crawler pacing itself: as many extra attempts as a 429", async () => {
  const busy: PageOutcome = { ok: false, failure: new FetchError('ADDRESS_BUSY', URL_) };
  // Past fetch.maxRetries (2), still retried.
  expect(await setup(busy, { attempt: 2 + PAGE_RETRY.throttleExtraAttempts }).run()).toMatchObject({ kind: 'retry', code: 'ADDRESS_BUSY' });
  expect(await setup(busy, { attempt: 3 + PAGE_RETRY.throttleExtraAttempts }).run()).toMatchObject({ kind: 'failed', error: { code: 'ADDRESS_BUSY' } });
  // Any other network failure is past its attempts at the same point.
  const reset: PageOutcome = { ok: false, failure: new FetchError('CONNECTION_RESET', URL_) };
  expect(await setup(reset, { attempt: 2 + PAGE_RETRY.throttleExtraAttempts }).run()).toMatchObject({ kind: 'failed' });
});

describe("the handler's login: the stage says a login is needed, and never runs it", () => {
  const gate = (o: { before?: ReturnType<LoginGate['before']>; after?: Awaited<ReturnType<LoginGate['after']>> }): LoginGate & { seen: number[] } => {
    const seen: number[] = [];
    return { seen, before: () => o.before ?? null, after: async (res) => (seen.push(res.status), o.after ?? null) };
  };
  const withLogin = (login: LoginGate, answer: PageOutcome = ok()) => {
    const s = setup(answer);
    return {
      ...s,
      run: () =>
        fetchStage(
          { url: URL_, kind: 'page', attempt: 1, delayMs: 1_000, allowedByRobots: null, maxPagesPerHost: null, maxPages: null, maxEmbeds: null, maxRetries: 2 },
          { ...s.deps, login },
        ),
    };
  };

  test('a login due before the first page: nothing requested, the clock the session holds left for the login', async () => {
    const s = withLogin(gate({ before: { login: 'first' } }));
    expect(await s.run()).toEqual({ kind: 'login-needed', reason: 'first', hostPauseMs: null });
    expect(s.requests).toEqual([]);
  });

  test('a logged-out answer: a login again, the host quiet for its delay after that answer', async () => {
    const g = gate({ after: { login: 'logged-out' } });
    const s = withLogin(g, ok(401));
    expect(await s.run()).toEqual({ kind: 'login-needed', reason: 'logged-out', hostPauseMs: 1_000 });
    expect([s.requests.length, g.seen]).toEqual([1, [401]]);
  });

  test('a page the login cannot get in fails for good (LOGIN_FAILED, not retried), as a request', async () => {
    const failure = new FetchError('LOGIN_FAILED', URL_, { detail: 'LOGIN_ERROR: wrong password' });
    const after = withLogin(gate({ after: { failure } }), ok(401));
    expect(await after.run()).toMatchObject({ kind: 'failed', hostPauseMs: 1_000, outcome: 'error', requested: true, error: { code: 'LOGIN_FAILED' } });
    // Its login failed just before: the page is not requested again.
    const before = withLogin(gate({ before: { failure } }));
    expect(await before.run()).toMatchObject({ kind: 'failed', outcome: 'error', error: { code: 'LOGIN_FAILED' } });
    expect(before.requests).toEqual([]);
  });

  test('a page that gets through is a response like any other; a failed request is not shown to the login', async () => {
    const g = gate({});
    expect(await withLogin(g).run()).toMatchObject({ kind: 'response', response: { status: 200 } });
    expect(await withLogin(g, { ok: false, failure: new FetchError('CONNECTION_RESET', URL_) }).run()).toMatchObject({ kind: 'retry' });
    expect(g.seen).toEqual([200]);
  });
});
