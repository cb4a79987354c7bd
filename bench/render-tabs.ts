// What a rendered page costs Chromium, by how its tab is opened (scenario v
// of docs/benchmarks-history.md: why our browser mode spends several times
// Crawlee's CPU a page). The client-rendered test sites, rendered by
// playwright-core in the Chromium the workers use, hosts side by side and
// each host's pages one after another, as host sessions render them:
//   npx tsx bench/render-tabs.ts [--hosts 2] [--pages 20] [--quiet-ms 500] [--only 1,3]
// Prints, per way of opening tabs, pages/s, CPU a page (this process and
// Chromium's tree) and peak PSS. Not our fetcher: routes answer from the test
// web directly, and the quiet period is a plain wait after `load`.
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { findOrInstallChromium } from '../src/stack/chromium';
import { startTestWeb, type TestWeb } from '../test/web/test-web';
import { spaSite, type SpaSite } from '../test/web/spa-site';
import { treeCpuSeconds, treePssMb } from './figures';

interface Way {
  name: string;
  /** One persistent context for every host (Crawlee's default), instead of a fresh context per host session (ours). */
  persistent?: boolean;
  /** A blank tab kept open in the context while the session's pages open and close theirs. */
  keepBlankTab?: boolean;
  /** One tab per session, navigated to each page, instead of a new tab per page. */
  reuseTab?: boolean;
  /** With reuseTab: the tab sent to about:blank after each page (ours: the page's scripts stop before the next page is routed). */
  blankBetween?: boolean;
  /** With reuseTab: the tab frozen (Page.setWebLifecycleState) after each page, made active before the next. */
  freezeBetween?: boolean;
  /** Chromium started without site isolation (one renderer process may serve several sites). */
  noSiteIsolation?: boolean;
  /** Every request answered by a route (ours), instead of Chromium's own network. */
  routes?: boolean;
}

const WAYS: Way[] = [
  { name: 'new tab per page, fresh context per session, routes, quiet period (ours before tab reuse)', routes: true },
  { name: 'the same, a blank tab kept open in the context', routes: true, keepBlankTab: true },
  { name: 'one tab per session, navigated page to page, routes, quiet period', routes: true, reuseTab: true },
  { name: "new tab per page, one persistent context, no routes, wait for #title (Crawlee's PlaywrightCrawler)", persistent: true },
  { name: 'one tab per session, about:blank between pages, routes, quiet period (ours until issue 41)', routes: true, reuseTab: true, blankBetween: true },
  { name: 'one tab per session, frozen between pages, routes, quiet period (ours now)', routes: true, reuseTab: true, freezeBetween: true },
  { name: 'the same, without site isolation', routes: true, reuseTab: true, blankBetween: true, noSiteIsolation: true },
];

/** Routes every request of a tab to the test web through undici, as ours routes them (page.route) through its HTTP client. */
async function routeToWeb(page: Page, agent: Agent): Promise<void> {
  await page.route('**/*', async (route) => {
    const res = await request(route.request().url(), { dispatcher: agent });
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) if (k !== 'content-length' && k !== 'connection' && v !== undefined) headers[k] = String(v);
    await route.fulfill({ status: res.statusCode, headers, body: Buffer.from(await res.body.arrayBuffer()) });
  });
}

async function renderSession(way: Way, ctx: BrowserContext, site: SpaSite, web: TestWeb, agent: Agent, quietMs: number): Promise<void> {
  const blank = way.keepBlankTab ? await ctx.newPage() : null;
  let tab: Page | null = null;
  const open = async (): Promise<Page> => {
    const page = await ctx.newPage();
    if (way.routes) await routeToWeb(page, agent);
    return page;
  };
  let cdp: import('playwright-core').CDPSession | null = null;
  for (const p of site.pages) {
    const page = way.reuseTab ? (tab ??= await open()) : await open();
    if (way.freezeBetween) {
      cdp ??= await ctx.newCDPSession(page);
      await cdp.send('Page.setWebLifecycleState', { state: 'active' });
    }
    await page.goto(web.url(site.host, p.path), { waitUntil: 'load' });
    // Ours: a quiet period after load; Crawlee's handler in the bench waits for the rendered title.
    if (way.routes) await page.waitForTimeout(quietMs);
    else await page.waitForSelector('#title');
    await page.content();
    if (!way.reuseTab) await page.close();
    else if (way.blankBetween) await page.goto('about:blank');
    else if (way.freezeBetween) await cdp!.send('Page.setWebLifecycleState', { state: 'frozen' });
  }
  await tab?.close();
  await blank?.close();
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { hosts: { type: 'string', default: '2' }, pages: { type: 'string', default: '20' }, 'quiet-ms': { type: 'string', default: '500' }, only: { type: 'string' } },
  });
  const hosts = Number(values.hosts);
  const pages = Number(values.pages);
  const quietMs = Number(values['quiet-ms']);
  const only = values.only?.split(',').map(Number);
  const executablePath = await findOrInstallChromium();
  const web = await startTestWeb();
  const sites = Array.from({ length: hosts }, (_, i) => spaSite(`tabs${i}.test`, { pages }));
  for (const s of sites) web.addSite(s.spec);
  const agent = new Agent({ connect: { lookup: web.lookup } });
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const args = [...(root ? ['--no-sandbox'] : []), '--disable-dev-shm-usage', `--host-resolver-rules=${sites.map((s) => `MAP ${s.host} ${web.address}`).join(', ')}`];
  try {
    for (const [i, way] of WAYS.entries()) {
      if (only && !only.includes(i + 1)) continue;
      const wayArgs = way.noSiteIsolation ? [...args, '--disable-site-isolation-trials', '--disable-features=IsolateOrigins,site-per-process'] : args;
      const persistent = way.persistent ? await chromium.launchPersistentContext('', { executablePath, headless: true, args: wayArgs }) : null;
      const browser = persistent ? null : await chromium.launch({ executablePath, headless: true, args: wayArgs });
      let peakPss = 0;
      const sampler = setInterval(() => (peakPss = Math.max(peakPss, treePssMb(process.pid))), 500);
      const cpu0 = treeCpuSeconds(process.pid);
      const t0 = Date.now();
      await Promise.all(
        sites.map(async (site) => {
          const ctx = persistent ?? (await browser!.newContext());
          await renderSession(way, ctx, site, web, agent, quietMs);
          if (!persistent) await ctx.close();
        }),
      );
      const seconds = (Date.now() - t0) / 1000;
      const cpu = treeCpuSeconds(process.pid) - cpu0;
      clearInterval(sampler);
      const n = hosts * pages;
      process.stdout.write(`${i + 1}. ${way.name}: ${(n / seconds).toFixed(2)} pages/s, ${((cpu * 1000) / n).toFixed(0)} ms CPU a page, peak PSS ${peakPss.toFixed(0)} MB\n`);
      await (persistent ?? browser)!.close();
    }
  } finally {
    await agent.close();
    await web.close();
  }
}

main().catch((err) => {
  process.stderr.write(`render-tabs failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
