// Issue 26, "durable and bounded": a worker killed with SIGKILL in the middle
// of a render loses nothing. The client-rendered site (test/web/spa-site.ts)
// holds back the JSON one page's script asks for, so that page is rendering
// when its worker is killed; a fresh worker takes the host session over,
// renders the page again, and the sealed index holds every page once. The
// killed worker's Chromium (a child of the worker, with its own renderer
// processes) must not outlive it: nothing is left to close it later.
import fs from 'node:fs';
import { normalizeUrl } from '../../src/url/normalize';
import { spaSite } from '../web/spa-site';
import type { SiteRequest } from '../web/test-web';
import { findOrInstallChromium } from '../support/browser';
import { createHarness, launch, outputOf, sleep, type Harness } from '../support/harness';

jest.setTimeout(180_000);

/** Every process under `root` (its children, theirs…), from /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}

/** Still a live process (a zombie has exited: it only waits for its parent to reap it). */
function running(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

let h: Harness;

beforeAll(async () => {
  await findOrInstallChromium((m) => process.stderr.write(`[browser] ${m}\n`));
  h = await createHarness('render-crash', { workers: 1 });
});

afterAll(async () => {
  await h?.close();
});

test('kill -9 of a worker mid-render: its Chromium goes with it, the page is rendered again on another worker, every page once in the sealed index', async () => {
  const site = spaSite('crash.spa.test');
  const inner = site.spec.handler!;
  const DATA_HELD = 3;
  let held = false;
  // The third JSON request (the third page's render) is answered only after the test is over: that page is mid-render when the kill comes.
  site.spec.handler = (ctx: SiteRequest) => {
    if (ctx.path === site.files.data && ctx.attempt === DATA_HELD) {
      held = true;
      ctx.later(120_000, () => ctx.send(200, 'application/json', '{"pages":[]}'));
      return true;
    }
    return inner(ctx);
  };
  h.web.addSite(site.spec);
  const handle = await launch(h, { seeds: [h.web.url(site.host, '/')], render: 'browser', politeness: { minDelayMs: 20 } });
  while (!held) await sleep(50);
  const victim = h.pool.alive()[0]!;
  const browserProcesses = descendants(victim.child.pid!);
  // The worker renders with a Chromium of its own: the main process and its helpers.
  expect(browserProcesses.length).toBeGreaterThan(0);
  const renderingPage = h.web
    .requests()
    .filter((r) => r.host === site.host && site.pages.some((p) => p.path === r.path))
    .pop()!.path;
  await h.pool.kill9(victim);
  await h.pool.startOne();
  const result = await handle.result();
  expect(result.status).toBe('completed');

  // Every page once in the sealed index, rendered to the end (the one being rendered at the kill too).
  const sealed = await outputOf(h, result.campaignId).sealed();
  const pages = sealed.filter((e) => !e.kind);
  const url = (path: string) => normalizeUrl(h.web.url(site.host, path));
  expect(pages.map((e) => e.url).sort()).toEqual(site.pages.map((p) => url(p.path)).sort());
  for (const p of site.pages) {
    const line = pages.find((e) => e.url === url(p.path));
    expect({ page: p.path, outcome: line?.outcome, done: line?.render?.done }).toEqual({ page: p.path, outcome: 'fetched', done: 'quiet' });
  }
  // The page in flight was fetched again (at most once more); the others once.
  const requested = (path: string) => h.web.requests().filter((r) => r.host === site.host && r.path === path).length;
  for (const p of site.pages) expect({ page: p.path, n: requested(p.path) }).toEqual({ page: p.path, n: p.path === renderingPage ? 2 : 1 });

  // The killed worker's Chromium is gone, not left running without anyone to close it.
  expect(browserProcesses.filter(running)).toEqual([]);
});
