// Issue 26, "durable and bounded", through real workers: the worker's
// Chromium restarted past its memory limit with every page still rendered
// once; a tab and the browser killed mid-render, each page ending as
// RENDER_CRASHED with its HTTP links kept while the crawl goes on, beside pages
// that navigate in a loop or open pop-ups and downloads; and one host of a
// campaign that does not render steered to rendering by an operator
// (`crawler set-render`). The worker's metrics (crawler_browser_*) count the
// restarts. The test kills only processes under the worker it started.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { request } from 'undici';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { CampaignHosts } from '../../src/redis/campaign-hosts';
import type { IndexEntry } from '../../src/storage/index-writer';
import { normalizeUrl } from '../../src/url/normalize';
import { campaignStatusQuery } from '../../workflows/messages';
import { spaSite } from '../web/spa-site';
import { generateSites, type SiteRequest, type SiteSpec } from '../web/test-web';
import { findOrInstallChromium } from '../support/browser';
import { chromiumUnder } from '../support/chromium-processes';
import { createHarness, launch, outputOf, sleep, type Harness } from '../support/harness';

jest.setTimeout(240_000);
const run = promisify(execFile);
const crawler = (...args: string[]) => {
  const cmd = crawlerCommand(args);
  return run(cmd.command, cmd.args, { env: process.env });
};

let h: Harness;

beforeAll(async () => {
  await findOrInstallChromium((m) => process.stderr.write(`[browser] ${m}\n`));
  h = await createHarness('render-life', { workers: 1, env: { CRAWLER_METRICS_PORT: '0' } });
});

afterAll(async () => {
  await h?.close();
});

/** The one worker's crawler_browser_* series, by name and labels. */
async function browserMetrics(): Promise<Map<string, number>> {
  const res = await request(h.pool.alive()[0]!.metricsUrl!);
  const out = new Map<string, number>();
  for (const l of (await res.body.text()).split('\n')) {
    const m = /^(crawler_browser_\w+)(\{[^}]*\})? (\S+)/.exec(l);
    if (m) out.set(`${m[1]}${m[2] ?? ''}`, Number(m[3]));
  }
  return out;
}

/** Chromium processes under the worker: its browser or its renderers. */
function workerChromium(kind: 'browser' | 'renderer'): Promise<number[]> {
  return chromiumUnder(h.pool.alive()[0]!.child.pid!, kind);
}

async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; !(await cond()); i++) {
    if (i > 1200) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const pageLines = (lines: IndexEntry[]) => lines.filter((e) => !e.kind);

test('past browser.maxMemoryMb the worker restarts its browser between pages, and every page is rendered once', async () => {
  const site = spaSite('memory.spa.test');
  h.web.addSite(site.spec);
  const before = (await browserMetrics()).get('crawler_browser_restarts_total{reason="memory"}') ?? 0;
  // 64 MiB: any Chromium holds more, so the first reading of each browser calls for a restart.
  const handle = await launch(h, { seeds: [h.web.url(site.host, '/')], render: 'browser', politeness: { minDelayMs: 20 }, browser: { maxMemoryMb: 64 } });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const pages = pageLines(await outputOf(h, result.campaignId).sealed());
  const url = (path: string) => normalizeUrl(h.web.url(site.host, path));
  // Every page found (its links exist only once rendered), once, rendered to the end.
  expect(pages.map((e) => e.url).sort()).toEqual(site.pages.map((p) => url(p.path)).sort());
  for (const p of site.pages) {
    const line = pages.find((e) => e.url === url(p.path));
    expect({ page: p.path, done: line?.render?.done }).toEqual({ page: p.path, done: 'quiet' });
  }
  const m = await browserMetrics();
  expect((m.get('crawler_browser_restarts_total{reason="memory"}') ?? 0) - before).toBeGreaterThanOrEqual(1);
  // What the readings found, for operators and the bench.
  expect(m.get('crawler_browser_memory_peak_bytes')).toBeGreaterThan(64 * 1024 * 1024);
  expect(m.get('crawler_browser_memory_bytes')).toBeGreaterThan(0);
});

/**
 * A site whose pages each misbehave one way: two whose script asks for data
 * the test holds until it has killed a renderer or the browser, one that
 * navigates in a loop, one that opens pop-ups and starts downloads. Each
 * links, in its HTML, a page only it names.
 */
function faultySite(host: string, held: (which: string) => void): SiteSpec & { paths: string[] } {
  const page = (body: string, only: string) => `<!doctype html><html><head><title>${only}</title></head><body><a href="/only${only}">only</a>${body}</body></html>`;
  const bodies: Record<string, string> = {
    '/': ['/crash-tab', '/crash-browser', '/loop', '/popups'].map((p) => `<a href="${p}">${p}</a>`).join(' '),
    '/crash-tab': `<script>fetch('/api/hold?tab');</script>`,
    '/crash-browser': `<script>fetch('/api/hold?browser');</script>`,
    '/loop': `<script>setInterval(function () { location.href = '/loop?' + Math.random(); }, 20);</script>`,
    '/popups': `<a id="d" href="/file.bin" download>file</a><script>window.open('/popup'); document.getElementById('d').click();</script>`,
  };
  const handler = (ctx: SiteRequest): boolean => {
    if (ctx.path === '/robots.txt') return false;
    if (ctx.path === '/api/hold') {
      held(ctx.search.slice(1));
      // Answered after the test is over: the page is rendering when its process is killed.
      ctx.later(120_000, () => ctx.send(200, 'application/json', '{}'));
      return true;
    }
    const body = bodies[ctx.path];
    if (body !== undefined) ctx.send(200, 'text/html; charset=utf-8', page(body, ctx.path === '/' ? '/home' : ctx.path));
    else if (ctx.path.startsWith('/only/')) ctx.send(200, 'text/html; charset=utf-8', `<!doctype html><title>${ctx.path}</title><p>plain</p>`);
    else ctx.send(404, 'text/plain', 'not found');
    return true;
  };
  // The download's link is a link like any other: crawled, and answered 404.
  return { host, pages: 1, fanOut: 0, handler, paths: [...Object.keys(bodies), ...Object.keys(bodies).map((p) => `/only${p === '/' ? '/home' : p}`), '/file.bin'] };
}

test('a tab and the browser killed mid-render: those pages end as RENDER_CRASHED with their HTTP links, looping and pop-up pages end with their DOM, the crawl goes on', async () => {
  const seen = new Set<string>();
  const site = faultySite('faults.test', (which) => seen.add(which));
  h.web.addSite(site);
  const before = (await browserMetrics()).get('crawler_browser_restarts_total{reason="crashed"}') ?? 0;
  const handle = await launch(h, { seeds: [h.web.url(site.host, '/')], render: 'browser', politeness: { minDelayMs: 20 } });
  // The two pages render in the frontier's order, one at a time: each is killed as its data is asked for.
  const killed = new Set<string>();
  for (let i = 0; i < 2; i++) {
    await until('a crash page to ask for its data', () => [...seen].some((w) => !killed.has(w)));
    const which = [...seen].find((w) => !killed.has(w))!;
    killed.add(which);
    const victims = await workerChromium(which === 'tab' ? 'renderer' : 'browser');
    expect({ which, found: victims.length > 0 }).toEqual({ which, found: true });
    for (const pid of victims) process.kill(pid, 'SIGKILL');
  }
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const pages = pageLines(await outputOf(h, result.campaignId).sealed());
  const url = (path: string) => normalizeUrl(h.web.url(site.host, path));
  // Every page once, those only a crashed page links (in its HTML) included.
  expect(pages.map((e) => e.url).sort()).toEqual(site.paths.map(url).sort());
  const how = (path: string) => {
    const line = pages.find((e) => e.url === url(path));
    return { path, outcome: line?.outcome, done: line?.render?.done, code: line?.render?.error?.code };
  };
  for (const p of ['/crash-tab', '/crash-browser']) expect(how(p)).toEqual({ path: p, outcome: 'fetched', done: 'failed', code: 'RENDER_CRASHED' });
  for (const p of ['/', '/loop', '/popups', '/only/crash-tab', '/only/crash-browser']) expect(how(p)).toEqual({ path: p, outcome: 'fetched', done: 'quiet', code: undefined });
  // The dead browser was counted, and the pages after it rendered on a new one.
  expect(((await browserMetrics()).get('crawler_browser_restarts_total{reason="crashed"}') ?? 0) - before).toBe(1);
});

test('a campaign that does not render, with one host steered to `browser` (crawler set-render): only that host is rendered', async () => {
  const spa = spaSite('steered.spa.test');
  const plain = generateSites({ count: 1, pages: 5, fanOut: 2, crossPerPage: 0, hostPattern: () => 'plain.steer-render.test', seed: 3 })[0]!;
  // The rendered host's robots.txt is held until it is steered: its session waits, and takes the new mode up.
  let steered!: () => void;
  const robotsHeld = new Promise<void>((resolve) => (steered = resolve));
  const inner = spa.spec.handler!;
  spa.spec.handler = (ctx: SiteRequest) => {
    if (ctx.path !== '/robots.txt') return inner(ctx);
    void robotsHeld.then(() => ctx.send(200, 'text/plain', 'User-agent: *\nAllow: /\n'));
    return true;
  };
  h.web.addSite(spa.spec);
  h.web.addSite(plain);
  const handle = await launch(h, { seeds: [h.web.url(spa.host, '/'), h.web.url(plain.host, '/')], politeness: { minDelayMs: 20 } });
  const id = handle.workflowId;
  const key = `${spa.host}:${h.web.port}`;
  // A mode the campaign does not know is refused with exit code 2, and nothing changes.
  await expect(crawler('set-render', id, '--host', spa.host, '--mode', 'chrome')).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining('render must be one of off, browser, auto'),
  });
  const { stdout } = await crawler('set-render', id, '--host', spa.host, '--mode', 'browser');
  expect(stdout).toContain(`${key} render browser, from its next session`);
  // Durable: in Redis, where every worker's next session of the host reads it.
  const { campaignKey } = await handle.query(campaignStatusQuery);
  expect(await new CampaignHosts(h.redis, campaignKey).hostRenders()).toEqual({ [key]: 'browser' });
  steered();
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const pages = pageLines(await outputOf(h, id).sealed());
  const ofHost = (host: string) => pages.filter((e) => new URL(e.url).hostname === host);
  // The steered host: every page found (its links exist only once rendered), each rendered.
  expect(
    ofHost(spa.host)
      .map((e) => [new URL(e.url).pathname, e.render?.done])
      .sort(),
  ).toEqual(spa.pages.map((p) => [p.path, 'quiet']).sort());
  // The other host: fetched with HTTP only.
  expect(ofHost(plain.host).length).toBeGreaterThan(1);
  expect(ofHost(plain.host).filter((e) => e.render)).toEqual([]);
  // `crawler status` shows the operator's mode beside the host.
  const status = JSON.parse((await crawler('status', id, '--json')).stdout) as { hosts: { host: string; render?: string }[] };
  expect(status.hosts.filter((x) => x.render)).toEqual([expect.objectContaining({ host: key, render: 'browser' })]);
});
