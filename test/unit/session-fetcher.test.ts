// What a host session fetches with (activities/session-fetcher.ts): the
// campaign's HTTP client, behind the host's cookie jar when cookies are on;
// the handler (and its login) only where robots.txt was read and the host's
// address is not refused; the render mode an operator set for the host over
// the campaign's. The HTTP client and the cookie jar are fakes here.
import { handlerSpecFor, openSessionFetcher, renderModeFor, robotsRules, type Robots } from '../../activities/session-fetcher';
import type { CampaignRuntime, WorkerRuntime } from '../../activities/runtime';
import { resolveCampaignSettings, type CampaignInput } from '../../src/config/campaign';
import type { CookieJars } from '../../src/http/cookie-jar';
import type { FetchOptions, HttpClient } from '../../src/http/http-types';
import type { Frontier } from '../../src/redis/frontier';
import { fakeResponse } from '../support/fake-response';

const settings = (over: Partial<CampaignInput> = {}) => resolveCampaignSettings({ seeds: ['https://a.test/'], output: { dir: '/tmp/x' }, ...over }, 'c');
const allowsAll = () => true;
const ok: Robots = { kind: 'ok', allows: allowsAll, crawlDelaySec: null };
const refused: Robots = { kind: 'ok', allows: null, crawlDelaySec: null, refused: 'a.test resolves to 10.0.0.1' };
const unavailable: Robots = { kind: 'unavailable', code: 'HTTP_503', detail: 'HTTP 503' };

test("the host's render mode: an operator's for the host, else the campaign's", () => {
  expect(renderModeFor('browser', settings())).toBe('browser');
  expect(renderModeFor(null, settings({ render: 'auto' }))).toBe('auto');
});

test("robots.txt's rules, and the handler, only where robots.txt was read and the host may be fetched", () => {
  expect(robotsRules(ok)).toBe(allowsAll);
  expect(robotsRules(unavailable)).toBeNull();
  const s = settings({ handler: '/handlers/site.ts' });
  expect(handlerSpecFor(s, ok)).toBe('/handlers/site.ts');
  expect(handlerSpecFor(s, refused)).toBeNull();
  expect(handlerSpecFor(s, unavailable)).toBeNull();
  expect(handlerSpecFor(settings(), ok)).toBeNull();
});

describe('the fetcher', () => {
  const rt = {} as WorkerRuntime;
  const frontier = {} as Frontier;
  function campaign(o: { settings?: ReturnType<typeof settings>; cookies?: CookieJars | null; headers?: Record<string, string> } = {}) {
    const sent: { url: string; opts?: FetchOptions }[] = [];
    const http: HttpClient = { fetch: async (url, opts) => (sent.push({ url, opts }), fakeResponse(url, { headers: o.headers ?? {} })), close: async () => undefined };
    const c = { key: 'c', settings: o.settings ?? settings(), http, cookies: o.cookies ?? null } as unknown as CampaignRuntime;
    return { c, sent };
  }
  const signal = new AbortController().signal;

  test("the campaign's HTTP client, redirects not followed, no login without a handler", async () => {
    const { c, sent } = campaign();
    const f = await openSessionFetcher(rt, c, { host: 'a.test', frontier, robots: ok, mode: 'off' });
    expect(f.login).toBeNull();
    expect(await f.fetcher.fetch({ url: 'https://a.test/p' }, { signal })).toMatchObject({ ok: true, response: { url: 'https://a.test/p' } });
    expect(sent.map((r) => [r.url, r.opts?.followRedirect?.('https://a.test/p', 'https://a.test/q')])).toEqual([['https://a.test/p', false]]);
    await f.close();
  });

  test("cookies on: the host's jar sends its cookies and takes the response's", async () => {
    const taken: string[][] = [];
    const jars = { open: async () => ({ header: async () => 'sid=abc', take: async (_url: string, lines: string[]) => void taken.push(lines) }) } as unknown as CookieJars;
    const { c, sent } = campaign({ cookies: jars, headers: { 'set-cookie': 'sid=def; Path=/' } });
    const f = await openSessionFetcher(rt, c, { host: 'a.test', frontier, robots: ok, mode: 'off' });
    await f.fetcher.fetch({ url: 'https://a.test/p' }, { signal });
    expect(sent[0].opts?.headers).toEqual({ cookie: 'sid=abc' });
    expect(taken).toEqual([['sid=def; Path=/']]);
  });

  test('the handler is loaded only where it applies: a refused host loads none', async () => {
    const s = settings({ handler: '/nowhere/missing-handler.ts' });
    const r = await openSessionFetcher(rt, campaign({ settings: s }).c, { host: 'a.test', frontier, robots: refused, mode: 'off' });
    expect(r.login).toBeNull();
    await expect(openSessionFetcher(rt, campaign({ settings: s }).c, { host: 'a.test', frontier, robots: ok, mode: 'off' })).rejects.toThrow('cannot be loaded');
  });
});
