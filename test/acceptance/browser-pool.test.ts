// The browser's life in one worker (src/browser/browser-pool.ts), driven
// in-process with Debian's Chromium and the browser fetcher, its pages served
// by a fetcher of the test's own: past its memory limit or its page count the
// browser is restarted between pages (a page rendering finishes first, a page
// that asks meanwhile waits and renders on the new browser), and a tab or a
// browser that dies mid-render ends that page as RENDER_CRASHED while the next
// renders. Pages that navigate in a loop, open pop-ups or start downloads end
// with their DOM. The test kills only Chromium processes this test's pool
// started (found under this process in /proc).
import fs from 'node:fs';
import { BrowserPool, type RestartReason } from '../../src/browser/browser-pool';
import { browserFetcher, type RenderSettings } from '../../src/browser/browser-fetcher';
import { processTree } from '../../src/browser/process-memory';
import type { Fetcher } from '../../src/http/fetcher';
import type { RenderedDocument } from '../../src/browser/page-fetcher';
import { fakeResponse } from '../support/fake-response';
import { findOrInstallChromium } from '../support/browser';
import { chromiumUnder } from '../support/chromium-processes';

jest.setTimeout(120_000);

let executable: string;
beforeAll(async () => {
  executable = await findOrInstallChromium((m) => process.stderr.write(`[browser] ${m}\n`));
});

const SETTINGS: RenderSettings = { pageTimeoutMs: 20_000, quietMs: 200, maxPagesAtOnce: 4, pagesPerContext: 100, maxMemoryMb: 100_000, pagesPerBrowser: 100_000 };

/** Every page's script fetches its own data and writes it into the page: a rendered DOM shows the script ran. */
const PAGE = (path: string) =>
  `<html><body><a href="/next">next</a><div id="out"></div><script>fetch('/data?p=${encodeURIComponent(path)}').then(function (r) { return r.text(); }).then(function (t) { document.getElementById('out').textContent = t; });</script></body></html>`;

/** What the test's site answers; `hold` keeps a request of a path waiting until the promise it returns settles. */
function site(log: string[], hold: (url: URL) => Promise<void> | null = () => null): Fetcher {
  return {
    async fetch(r, ctx) {
      const u = new URL(r.url);
      log.push(`${u.host} ${u.pathname}${u.search}`);
      const held = hold(u);
      // As the HTTP client does: a request given up by the page (done, crashed) ends at once.
      if (held)
        await new Promise<void>((resolve, reject) => {
          void held.then(resolve);
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        });
      return { ok: true, response: fakeResponse(r.url, { headers: { 'content-type': 'text/plain' }, body: Buffer.from(`data of ${u.searchParams.get('p')}`) }) };
    },
  };
}

function session(pool: BrowserPool, host: string, inner: Fetcher, over: Partial<RenderSettings> = {}) {
  const f = browserFetcher({
    pool,
    inner,
    host,
    allowedByRobots: null,
    record: async () => undefined,
    settings: { ...SETTINGS, ...over },
    userAgent: 'browser-pool-test',
    maxRedirects: 3,
  });
  const render = (path: string, html = PAGE(path)): Promise<RenderedDocument> => {
    const url = `http://${host}${path}`;
    return f.render(fakeResponse(url, { html }), url, new AbortController().signal);
  };
  return { render, close: () => f.close() };
}

function newPool(restarts: RestartReason[] = []) {
  return new BrowserPool(async () => executable, undefined, { restarted: (r) => restarts.push(r) });
}

/** Chromium processes under this test process (the browser has none of --type). */
function chromiumProcesses(kind: 'browser' | 'renderer'): Promise<number[]> {
  return chromiumUnder(process.pid, kind);
}

const rendered = (r: RenderedDocument, path: string) => ({ done: r.done, error: r.error?.code, data: r.html?.includes(`data of ${path}`) ?? false });
const OK = (path: string) => ({ path, r: { done: 'quiet', error: undefined, data: true } });

async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; !(await cond()); i++) {
    if (i > 600) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('over its memory limit the browser is restarted between pages; every page is still rendered, the sessions on the new browser', async () => {
  const restarts: RestartReason[] = [];
  const pool = newPool(restarts);
  const log: string[] = [];
  // 64 MiB: any Chromium holds more, so the first reading of each browser asks for a restart.
  const sessions = ['a.test', 'b.test'].map((host) => session(pool, host, site(log), { maxMemoryMb: 64 }));
  try {
    for (const round of ['/one', '/two', '/three']) {
      const got = await Promise.all(sessions.map((s) => s.render(round)));
      for (const r of got) expect({ path: round, r: rendered(r, round) }).toEqual(OK(round));
      // The first page to end on each browser reads its memory, and the browser is restarted once both pages are done.
      await pool.settled();
    }
    expect(restarts).toEqual(['memory', 'memory', 'memory']);
    // Each round on a browser of its own, the sessions' contexts made again on it.
    expect(pool.stats.launches).toBe(3);
    // The reading that called for it is kept for the metrics.
    expect(pool.stats.peakMemoryBytes).toBeGreaterThan(64 * 1024 * 1024);
    // Every page's data once: nothing rendered twice.
    expect(log.filter((l) => l.includes('/data')).sort()).toEqual(
      ['a.test', 'b.test'].flatMap((h) => ['/one', '/three', '/two'].map((p) => `${h} /data?p=${encodeURIComponent(p)}`)).sort(),
    );
  } finally {
    await Promise.all(sessions.map((s) => s.close()));
    await pool.close();
  }
});

test('a restart waits for the page rendering, and a page asking meanwhile waits and renders on the new browser', async () => {
  const events: string[] = [];
  const pool = new BrowserPool(async () => executable, undefined, { restarted: (r) => events.push(`restarted ${r}`) });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const hold = (u: URL) => (u.host === 'slow.test' ? held : null);
  const log: string[] = [];
  const inner = site(log, hold);
  // The second page's request for its data, in order with the restart.
  const logged = log.push.bind(log);
  log.push = (...items: string[]) => (items.includes('quick.test /data?p=%2Fsecond') && events.push(...items), logged(...items));
  const slow = session(pool, 'slow.test', inner, { maxMemoryMb: 64 });
  const quick = session(pool, 'quick.test', inner, { maxMemoryMb: 64 });
  try {
    const slowPage = slow.render('/slow');
    await until("the slow page's data to be asked for", () => log.includes('slow.test /data?p=%2Fslow'));
    // The quick page ends while the slow one renders: its memory reading calls for a restart, which waits.
    expect(rendered(await quick.render('/first'), '/first')).toEqual(OK('/first').r);
    await until('the restart to be called for', () => pool.restartPending === 'memory');
    const second = quick.render('/second');
    events.push('slow page released');
    release();
    // The slow page was not cut short by the restart: it rendered whole, its data in its DOM.
    expect(rendered(await slowPage, '/slow')).toEqual(OK('/slow').r);
    expect(rendered(await second, '/second')).toEqual(OK('/second').r);
    // The restart waited for the slow page, and the second page for the restart: it rendered on the new browser.
    expect(events).toEqual(['slow page released', 'restarted memory', 'quick.test /data?p=%2Fsecond']);
    expect(pool.stats.launches).toBe(2);
  } finally {
    await Promise.all([slow.close(), quick.close()]);
    await pool.close();
  }
});

test('after browser.pagesPerBrowser pages the browser is restarted', async () => {
  const pool = newPool();
  const s = session(pool, 'count.test', site([]), { pagesPerBrowser: 2 });
  try {
    for (const p of ['/1', '/2', '/3', '/4']) expect({ path: p, r: rendered(await s.render(p), p) }).toEqual(OK(p));
    expect(pool.stats.restarts).toEqual({ memory: 0, pages: 2, crashed: 0 });
    expect(pool.stats.launches).toBe(2);
  } finally {
    await s.close();
    await pool.close();
  }
});

describe('a crash mid-render ends that page as RENDER_CRASHED, and the next page renders', () => {
  for (const kind of ['renderer', 'browser'] as const) {
    test(`its ${kind} process killed`, async () => {
      const pool = newPool();
      const log: string[] = [];
      const s = session(
        pool,
        'crash.test',
        site(log, (u) => (u.searchParams.get('p') === '/doomed' ? new Promise(() => undefined) : null)),
      );
      try {
        expect(rendered(await s.render('/before'), '/before')).toEqual(OK('/before').r);
        const doomed = s.render('/doomed');
        await until("the doomed page's data to be asked for", () => log.includes('crash.test /data?p=%2Fdoomed'));
        const victims = await chromiumProcesses(kind);
        if (victims.length === 0) console.log((await processTree(process.pid)).map((pid) => `${pid} ${fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').slice(0, 80)}`).join('\n'));
        expect(victims.length).toBeGreaterThan(0);
        for (const pid of victims) process.kill(pid, 'SIGKILL');
        const r = await doomed;
        expect({ done: r.done, html: r.html, code: r.error?.code }).toEqual({ done: 'failed', html: null, code: 'RENDER_CRASHED' });
        expect(r.error?.message).toContain(kind === 'renderer' ? 'renderer process crashed' : 'browser process died');
        expect(rendered(await s.render('/after'), '/after')).toEqual(OK('/after').r);
        // A dead tab costs a tab; a dead browser is counted and replaced by the next page.
        expect({ crashed: pool.stats.restarts.crashed, launches: pool.stats.launches }).toEqual(kind === 'renderer' ? { crashed: 0, launches: 1 } : { crashed: 1, launches: 2 });
      } finally {
        await s.close();
        await pool.close();
      }
    });
  }
});

test('pages that navigate in a loop, redirect by script, open pop-ups or start downloads end with their DOM', async () => {
  const pool = newPool();
  const s = session(pool, 'odd.test', site([]));
  const link = '<a href="/kept">kept</a>';
  const pages: Record<string, string> = {
    '/loop': `${link}<script>setTimeout(function () { location.href = '/loop?' + Math.random(); }, 10); setInterval(function () { location.href = '/loop?' + Math.random(); }, 20);</script>`,
    '/reload': `${link}<script>setTimeout(function () { location.reload(); }, 10);</script>`,
    // Navigates while it loads: `load` never fires for it, yet it is not held to its deadline.
    '/script-redirect': `${link}<script>location.href = '/elsewhere';</script>`,
    '/popups': `${link}<script>window.open('/popup'); window.open('http://other.test/');</script>`,
    '/download': `${link}<a id="d" href="/file.bin" download>file</a><script>document.getElementById('d').click(); setTimeout(function () { location.href = '/file.zip'; }, 10);</script>`,
  };
  try {
    for (const [path, body] of Object.entries(pages)) {
      const r = await s.render(path, `<html><body>${body}</body></html>`);
      expect({ path, done: r.done, error: r.error, kept: r.html?.includes('href="/kept"') }).toEqual({ path, done: 'quiet', error: undefined, kept: true });
    }
    // No pop-up outlived its page (the session's one tab, holding its last page frozen until the next, is all there is), and
    // the browser never died. Each page after /loop (which navigates every 20 ms, and wakes doing so as the next page's
    // navigation starts) got its own document.
    expect(pool.stats.restarts.crashed).toBe(0);
    const browser = await pool.browser();
    expect(browser.contexts().flatMap((c) => c.pages().map((p) => new URL(p.url()).pathname))).toEqual(['/download']);
  } finally {
    await s.close();
    await pool.close();
  }
});
