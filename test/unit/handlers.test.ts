// Handlers without a crawl: loading, label routing, bounded attempts and time
// limits on one response, what a hook may return, the dataset's reduction to
// one attempt per page, its CSV, and the frontier carrying labels.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CampaignInputError, resolveCampaignSettings } from '../../src/config/campaign';
import type { Handler } from '../../src/handlers/api';
import { handlerOf, resolveHandlerSpec } from '../../src/handlers/loader';
import { checkOutput, EventLoopWatch, HANDLER_ATTEMPTS, isLoggedOutResponse, runHook, runLogin, type HookInput } from '../../src/handlers/runner';
import type { LoginContext } from '../../src/handlers/api';
import { decodeEntry, encodeEntry } from '../../src/redis/frontier';
import { attemptKey, committedAttempts, datasetCsv, DatasetWriter, readRawDataset, reduceDataset, type DatasetLine } from '../../src/storage/dataset-writer';
import type { IndexEntry } from '../../src/storage/index-writer';

const ROOT = path.resolve(__dirname, '..', '..');
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const input = (over: Partial<HookInput> = {}): HookInput => {
  const text = over.text ?? '<html><head><title>T</title></head><body><h1>Hello</h1><a href="/x">x</a></body></html>';
  return {
    url: 'http://a.test/p',
    finalUrl: 'http://a.test/p',
    depth: 1,
    label: null,
    status: 200,
    headers: {},
    contentType: 'text/html',
    body: Buffer.from(text),
    text,
    log: silent,
    ...over,
  };
};

describe('settings', () => {
  const problems = (handler: unknown): string[] => {
    try {
      resolveCampaignSettings({ seeds: ['http://a.test/'], handler } as never, 'c1');
    } catch (err) {
      if (err instanceof CampaignInputError) return err.problems;
      throw err;
    }
    return [];
  };
  test.each(['/srv/handlers/shop.ts', 'my-handler', '@acme/crawl-hooks', '@acme/crawl-hooks/shop', null, undefined])('%p is a valid handler', (h) => {
    expect(problems(h)).toEqual([]);
  });
  test.each([
    ['./shop.ts', /relative path/],
    ['../shop.ts', /relative path/],
    ['', /absolute path to a handler module or a package name/],
    [42, /absolute path to a handler module or a package name/],
    ['a b c', /absolute path to a handler module or a package name/],
  ])('%p is refused', (h, why) => {
    expect(problems(h).join('\n')).toMatch(why);
  });
  test('the time limit defaults to 30 s and must be positive', () => {
    expect(resolveCampaignSettings({ seeds: ['http://a.test/'] }, 'c1').handlerTimeoutMs).toBe(30_000);
    expect(() => resolveCampaignSettings({ seeds: ['http://a.test/'], handlerTimeoutMs: 0 }, 'c1')).toThrow(/handlerTimeoutMs must be at least 1/);
  });
  test('the CLI makes paths absolute and leaves package names alone', () => {
    expect(resolveHandlerSpec('./h.ts', '/work')).toBe('/work/h.ts');
    expect(resolveHandlerSpec('examples/catalogue-handler.ts', ROOT)).toBe(path.join(ROOT, 'examples/catalogue-handler.ts'));
    expect(resolveHandlerSpec('some-package', '/work')).toBe('some-package');
  });
});

// Jest replaces Node's module loading (no import(), its own require), so the
// loader runs in a plain tsx process, as the CLI runs it.
test('loading: TypeScript through tsx, ES modules through import(), once per spec; missing modules and modules without hooks refused, typed', () => {
  const fixture = (f: string) => JSON.stringify(path.join(ROOT, f));
  const script = `
    const { loadHandler } = require('./src/handlers/loader');
    const fail = (spec) => loadHandler(spec).then(() => null, (e) => ({ code: e.code, message: e.message }));
    (async () => {
      const ts = await loadHandler(${fixture('examples/catalogue-handler.ts')});
      const again = await loadHandler(${fixture('examples/catalogue-handler.ts')});
      const mjs = await loadHandler(${fixture('test/fixtures/handlers/plain.mjs')});
      console.log(JSON.stringify({
        ts: [typeof ts.onPage, typeof ts.routes.detail, ts === again],
        mjs: typeof mjs.onPage,
        noHooks: await fail(${fixture('test/fixtures/handlers/not-a-handler.mjs')}),
        missingFile: await fail('/nonexistent/handler.ts'),
        missingPackage: await fail('no-such-handler-package-xyz'),
      }));
    })();`;
  const r = spawnSync(path.join(ROOT, 'node_modules/.bin/tsx'), ['-e', script], { cwd: ROOT, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  const refused = (why: RegExp) => ({ code: 'HANDLER_LOAD', message: expect.stringMatching(why) });
  expect(JSON.parse(r.stdout)).toEqual({
    ts: ['function', 'function', true],
    mjs: 'function',
    noHooks: refused(/exports no handler/),
    missingFile: refused(/cannot be loaded: .*Cannot find module '\/nonexistent\/handler\.ts'$/),
    missingPackage: refused(/"no-such-handler-package-xyz": cannot be loaded: .*no-such-handler-package-xyz/),
  });
});

describe('running a hook', () => {
  test('routes by label, falls back to onPage, and $ parses the page', async () => {
    const h: Handler = { onPage: ({ $ }) => ({ items: [{ route: 'default', h1: $('h1').text() }] }), routes: { detail: () => ({ items: [{ route: 'detail' }] }) } };
    const run = async (label: string | null) => {
      const r = await runHook(h, input({ label }), 1000);
      return r?.ok ? r.output.items : r;
    };
    expect(await run(null)).toEqual([{ route: 'default', h1: 'Hello' }]);
    expect(await run('detail')).toEqual([{ route: 'detail' }]);
    expect(await run('unknown')).toEqual([{ route: 'default', h1: 'Hello' }]);
    expect(await runHook({ routes: { detail: () => undefined } }, input(), 1000)).toBeNull();
  });

  test(`a hook that throws gets ${HANDLER_ATTEMPTS} attempts on the same response, then a failure with its message`, async () => {
    let calls = 0;
    const bodies = new Set<Buffer>();
    const r = await runHook(
      {
        onPage: ({ body }) => {
          calls++;
          bodies.add(body);
          throw new Error('no price on this page');
        },
      },
      input(),
      1000,
    );
    expect(calls).toBe(HANDLER_ATTEMPTS);
    expect(bodies.size).toBe(1);
    expect(r).toMatchObject({ ok: false, attempts: HANDLER_ATTEMPTS, message: expect.stringMatching(/no price on this page/) });
  });

  test('a flaky hook succeeds on a later attempt', async () => {
    let calls = 0;
    const r = await runHook({ onPage: () => (++calls < 2 ? Promise.reject(new Error('flaky')) : { items: [{ n: calls }] }) }, input(), 1000);
    expect(r).toMatchObject({ ok: true, attempts: 2, output: { items: [{ n: 2 }] } });
  });

  test('an asynchronous hook past its time limit fails its attempts', async () => {
    const r = await runHook({ onPage: () => new Promise(() => undefined) }, input(), 30);
    expect(r).toMatchObject({ ok: false, message: expect.stringMatching(/ran past its time limit of 30 ms/) });
  });

  test('a synchronous hook that blocked past its time limit fails too, and the watch reports the blocked thread', async () => {
    const reports: { ms: number; during: string[] }[] = [];
    const watch = new EventLoopWatch((ms, during) => reports.push({ ms, during }), 50, 200);
    const leave = watch.enter('http://a.test/slow');
    const r = await runHook(
      {
        onPage: () => {
          const until = Date.now() + 300;
          while (Date.now() < until);
          return { items: [{}] };
        },
      },
      input(),
      100,
    );
    leave();
    await new Promise((res) => setTimeout(res, 150));
    watch.stop();
    expect(r).toMatchObject({ ok: false, message: expect.stringMatching(/time limit of 100 ms/) });
    expect(reports.length).toBeGreaterThan(0);
    expect(reports[0].ms).toBeGreaterThanOrEqual(200);
    expect(reports.flatMap((x) => x.during)).toContain('http://a.test/slow');
  });

  test('what a hook returns is checked: links resolved against the page, labels checked, bad shapes fail the attempt', () => {
    expect(checkOutput(undefined, 'http://a.test/p')).toEqual({ items: [], links: [], skipDefaultLinks: false });
    expect(checkOutput({ links: ['/x', { url: 'y?q=1', label: 'detail' }, 'http://[bad'], skipDefaultLinks: true }, 'http://a.test/dir/p')).toEqual({
      items: [],
      links: [
        { url: 'http://a.test/x', label: null },
        { url: 'http://a.test/dir/y?q=1', label: 'detail' },
      ],
      skipDefaultLinks: true,
    });
    expect(() => checkOutput({ items: [1] }, 'http://a.test/')).toThrow(/every item must be an object/);
    expect(() => checkOutput({ items: [{ n: BigInt(1) }] }, 'http://a.test/')).toThrow();
    expect(() => checkOutput({ links: [{ url: '/x', label: 'has\ttab' }] }, 'http://a.test/')).toThrow(/label/);
    expect(() => checkOutput('yes', 'http://a.test/')).toThrow(/must return/);
  });
});

describe('logging in', () => {
  const ctx = (): LoginContext => ({
    host: 'a.test',
    origin: 'http://a.test',
    reason: 'first',
    fetch: async () => ({ status: 200, headers: {}, text: '', url: 'http://a.test/' }),
    log: silent,
    credentials: { user: 'alice', password: 'pw' },
  });

  test('a module with only a login hook is a handler; a bad login or isLoggedOut, or isLoggedOut without login, is refused', () => {
    const login = async () => undefined;
    expect(handlerOf('m', { default: { login } }).login).toBe(login);
    for (const [mod, why] of [
      [{ login: 'yes' }, 'login must be a function'],
      [{ login, isLoggedOut: true }, 'isLoggedOut must be a function'],
      [{ onPage: () => undefined, isLoggedOut: () => true }, 'isLoggedOut needs a login hook'],
    ] as const) {
      expect(() => handlerOf('m', { default: mod })).toThrow(why);
    }
  });

  test('runLogin: resolved is in, a throw is LOGIN_ERROR with its message, once (never attempted again at once)', async () => {
    let calls = 0;
    expect(await runLogin({ login: () => void calls++ }, ctx(), 1000, () => undefined)).toMatchObject({ ok: true });
    const failed = await runLogin(
      {
        login: async () => {
          calls++;
          throw new Error('the site refused the login');
        },
      },
      ctx(),
      1000,
      () => undefined,
    );
    expect(failed).toMatchObject({ ok: false, code: 'LOGIN_ERROR', message: 'login hook failed: the site refused the login' });
    expect(calls).toBe(2);
  });

  test('runLogin: a hook past its limit is LOGIN_TIMEOUT and is told to stop (its fetch refuses from then on)', async () => {
    let stopped = 0;
    const run = await runLogin({ login: () => new Promise(() => undefined) }, ctx(), 50, () => stopped++);
    expect(run).toMatchObject({ ok: false, code: 'LOGIN_TIMEOUT' });
    expect(stopped).toBe(1);
    // A synchronous hook that blocked past the limit fails too, when it returns.
    const busy = await runLogin(
      {
        login: () => {
          const until = performance.now() + 80;
          while (performance.now() < until);
        },
      },
      ctx(),
      50,
      () => stopped++,
    );
    expect(busy).toMatchObject({ ok: false, code: 'LOGIN_TIMEOUT' });
  });

  test('logged out: any 401, a 403 isLoggedOut recognises, never a 200 or an honest 403; a throwing isLoggedOut means no', () => {
    const h: Handler = { login: () => undefined, isLoggedOut: ({ $ }) => $('form[action="/login"]').length > 0 };
    const form = '<html><body><form action="/login"></form></body></html>';
    expect(isLoggedOutResponse(h, input({ status: 401, text: 'x' }))).toBe(true);
    expect(isLoggedOutResponse(h, input({ status: 403, text: form }))).toBe(true);
    expect(isLoggedOutResponse(h, input({ status: 403, text: 'Forbidden' }))).toBe(false);
    expect(isLoggedOutResponse(h, input({ status: 200, text: form }))).toBe(false);
    // Without isLoggedOut only a 401 says so; without a login hook nothing does.
    expect(isLoggedOutResponse({ login: () => undefined }, input({ status: 403, text: form }))).toBe(false);
    expect(isLoggedOutResponse({ onPage: () => undefined }, input({ status: 401 }))).toBe(false);
    const warned: string[] = [];
    const throwing: Handler = {
      login: () => undefined,
      isLoggedOut: () => {
        throw new Error('bug');
      },
    };
    expect(isLoggedOutResponse(throwing, input({ status: 403, log: { ...silent, warn: (m) => warned.push(m) } }))).toBe(false);
    expect(warned).toEqual(['isLoggedOut threw; the page is taken as not logged out']);
  });
});

test('frontier entries carry a label, kind, redirects and hop path, in both layouts, and entries without them keep their old encoding', () => {
  const plain = { url: 'http://a.test/p', depth: 2, referrer: 'http://a.test/' };
  // Layout 1 (campaigns created before issue 40's compact forms) writes what older releases wrote.
  expect(encodeEntry(plain, 'a.test', 1)).toBe('2\thttp://a.test/p\thttp://a.test/');
  for (const e of [
    { ...plain, label: 'detail' },
    { ...plain, label: 'detail', redirects: 2 },
    { ...plain, kind: 'sitemap' as const, label: 'x' },
    { ...plain, kind: 'embed' as const, hops: 'LLE' },
    { ...plain, kind: 'feed' as const, hops: 'PL', label: 'news' },
    { ...plain, hops: 'LRL', redirects: 1 },
  ]) {
    for (const layout of [1, 2] as const) expect(decodeEntry(encodeEntry(e, 'a.test', layout), 'a.test')).toEqual(e);
  }
});

describe('datasets', () => {
  const line = (fp: string, fetchedAt: string, offset: number, item: Record<string, unknown>): DatasetLine => ({
    url: `http://a.test/${fp}`,
    fp,
    campaignId: 'c',
    label: null,
    fetchedAt,
    warc: { file: 'w.warc.gz', offset },
    item,
  });
  const indexLine = (fp: string, fetchedAt: string, offset: number): IndexEntry => ({
    url: `http://a.test/${fp}`,
    fp,
    host: 'a.test',
    campaignId: 'c',
    status: 200,
    outcome: 'fetched',
    contentType: 'text/html',
    bytes: 1,
    contentHash: null,
    fetchedAt,
    depth: 0,
    referrer: null,
    warc: { file: 'w.warc.gz', offset, length: 1 },
  });

  test('only the committed attempt of each page keeps its items (a retried page, a dead attempt without an index line)', () => {
    const lines = [
      line('p1', '2026-01-01T00:00:01.000Z', 0, { n: 1 }),
      line('p1', '2026-01-01T00:00:01.000Z', 0, { n: 2 }),
      // Retried after its worker died between the index line and the commit: both attempts are indexed.
      line('p1', '2026-01-01T00:00:09.000Z', 500, { n: 1 }),
      line('p1', '2026-01-01T00:00:09.000Z', 500, { n: 2 }),
      // Died before its index line: never indexed.
      line('p2', '2026-01-01T00:00:02.000Z', 100, { n: 3 }),
      line('p2', '2026-01-01T00:00:05.000Z', 300, { n: 3 }),
    ];
    const index = [indexLine('p1', '2026-01-01T00:00:01.000Z', 0), indexLine('p1', '2026-01-01T00:00:09.000Z', 500), indexLine('p2', '2026-01-01T00:00:05.000Z', 300)];
    const keys = committedAttempts(index);
    const kept = reduceDataset(lines, (l) => keys.has(attemptKey(l)));
    expect(kept.map((l) => [l.fp, l.warc.offset, l.item.n])).toEqual([
      ['p1', 500, 1],
      ['p1', 500, 2],
      ['p2', 300, 3],
    ]);
  });

  test('the writer puts a page in one write; a torn last line is skipped when read', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dataset-'));
    const w = await DatasetWriter.open(dir);
    await w.appendAll([line('p1', 't', 0, { a: 1 }), line('p1', 't', 0, { a: 2 })]);
    await w.close();
    fs.appendFileSync(w.path, '{"url":"http://a.test/torn","item":{');
    expect((await readRawDataset(dir)).map((l) => l.item)).toEqual([{ a: 1 }, { a: 2 }]);
  });

  test('CSV: the tags, then every item field seen, quoted where needed', () => {
    const csv = datasetCsv([line('p1', 't1', 0, { name: 'Mug, blue', price: 3 }), line('p2', 't2', 7, { name: 'Say "hi"', tags: ['a'], url: 'x' })]);
    expect(csv.split('\r\n')).toEqual([
      'url,fetchedAt,warcFile,warcOffset,label,name,price,tags,item.url',
      'http://a.test/p1,t1,w.warc.gz,0,,"Mug, blue",3,,',
      'http://a.test/p2,t2,w.warc.gz,7,,"Say ""hi""",,"[""a""]",x',
      '',
    ]);
  });
});
