import fs from 'node:fs';
// Users' code on every page (docs/handlers.md): the catalogue example's
// dataset holds each product once, also after every worker is killed
// mid-crawl and when the campaign is started with the plain temporal CLI;
// a handler that throws costs only its pages; a handler's links obey the
// crawler's rules; a handler that cannot be loaded is refused up front.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { attemptKey, datasetDir, readDataset, readRawDataset } from '../../src/storage/dataset-writer';
import { readIndex } from '../../src/storage/index-writer';
import { sealedPaths } from '../../src/storage/seal';
import { sealedDatasetPath } from '../../src/storage/seal-dataset';
import { catalogueSite, type CatalogueSite } from '../web/catalogue-site';
import { generateSites } from '../web/test-web';
import { runCrawlerInProcess } from '../support/in-process-cli';
import { createHarness, startWithTemporalCli, launch, outputOf, pageRequests, sleep, type CampaignHandle, type Harness } from '../support/harness';

jest.setTimeout(300_000);

const ROOT = path.resolve(__dirname, '..', '..');
const CATALOGUE = path.join(ROOT, 'examples/catalogue-handler.ts');
const LINK_GRAPH = path.join(ROOT, 'examples/link-graph-handler.ts');

let h: Harness;
let shop: CatalogueSite;
let shop2: CatalogueSite;
/**
 * The catalogue crawl through the death of every worker: started first,
 * its workers killed after 8 product pages and one started in their place.
 * The host's session comes back only once its workflow task has timed out
 * (about 10 s); the other tests' crawls run on the new worker meanwhile.
 */
let catalogue: { handle: CampaignHandle; killedAt: number };
beforeAll(async () => {
  h = await createHarness('handlers', { workers: 2 });
  shop = catalogueSite('shop.handlers.test', { products: 30, perPage: 8, seed: 1 });
  shop2 = catalogueSite('shop2.handlers.test', { products: 12, perPage: 5, seed: 2 });
  h.web.addSite(shop.spec);
  h.web.addSite(shop2.spec);
  for (const spec of generateSites({ count: 1, pages: 12, fanOut: 2, hostPattern: () => 'h.handlers.test', seed: 7, robots: { disallow: ['/private/'] } })) h.web.addSite(spec);
  h.web.addSite({ host: 'elsewhere.other-scope.test', pages: 3, fanOut: 1 });

  const handle = await launch(h, { seeds: [h.web.url(shop.spec.host, '/')], handler: CATALOGUE, politeness: { minDelayMs: 100 } });
  const details = () => pageRequests(h.web.requests()).filter((r) => r.host === shop.spec.host && r.path.startsWith('/product/'));
  while (details().length < 8) await sleep(50);
  // Whichever worker runs the host's session: kill them all, then one fresh worker carries on.
  for (const w of h.pool.alive()) await h.pool.kill9(w);
  const killedAt = details().length;
  await h.pool.startOne();
  catalogue = { handle, killedAt };
});
afterAll(() => h?.close());

/** The products of a dataset, sorted by SKU, as the site lists them. */
const productsOf = (lines: { item: Record<string, unknown> }[]) =>
  lines.map((l) => ({ sku: l.item.sku, name: l.item.name, priceCents: l.item.priceCents })).sort((a, b) => String(a.sku).localeCompare(String(b.sku)));
const expectedProducts = (site: CatalogueSite) => site.products.map((p) => ({ sku: p.sku, name: p.name, priceCents: p.price }));

test('a handler that throws on some pages: those end HANDLER_ERROR, every other page is crawled; its links obey scope, robots and the address policy', async () => {
  const seed = h.web.url('h.handlers.test', '/');
  const handle = await launch(h, {
    seeds: [seed],
    handler: path.join(ROOT, 'test/fixtures/handlers/hostile-handler.ts'),
    // 127.0.0.1 in scope, so only the address policy stands between the handler's link and a loopback fetch.
    scope: { mode: 'domains', domains: ['h.handlers.test', '127.0.0.1'] },
    politeness: { minDelayMs: 50 },
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const expected = h.web.expectedPages([seed], { hosts: ['h.handlers.test'] });
  const throwers = [...expected].filter((u) => /\/page\/(3|7)$/.test(u));
  expect(throwers.length).toBeGreaterThan(0);
  const index = await outputOf(h, result.campaignId).index();
  const byUrl = new Map(index.map((e) => [e.url, e]));
  for (const u of expected) {
    const e = byUrl.get(u);
    const want = throwers.includes(u)
      ? { outcome: 'error', code: 'HANDLER_ERROR', message: expect.stringMatching(/handler failed 3 times: no data on \/page\/[37]/) }
      : { outcome: 'fetched', code: undefined, message: undefined };
    expect({ url: u, outcome: e?.outcome, code: e?.error?.code, message: e?.error?.message }).toEqual({ url: u, ...want });
  }
  // Failed: the throwers, and the loopback link the address policy refused.
  expect(result.failed).toBe(throwers.length + 1);
  // The handler's three links on every page: none fetched.
  const requests = h.web.requests();
  expect(requests.filter((r) => r.path.includes('handler-') || r.host !== 'h.handlers.test').filter((r) => !r.host.startsWith('shop'))).toEqual([]);
  const port = new URL(seed).port;
  expect(byUrl.get(`http://h.handlers.test:${port}/private/handler-secret`)?.outcome).toBe('robots-disallowed');
  expect(byUrl.get(`http://127.0.0.1:${port}/handler-loopback`)).toMatchObject({ outcome: 'refused', error: { code: 'ADDRESS_REFUSED' }, label: 'x' });
  expect(index.some((e) => e.host.includes('other-scope'))).toBe(false);
  // Pages whose hook failed have no items; every other page has its one.
  const items = (await readDataset(outputOf(h, result.campaignId).dir)).map((l) => l.url).sort();
  expect(items).toEqual([...expected].filter((u) => !throwers.includes(u)).sort());
});

test('link graph: one node per page with its headings and outlinks', async () => {
  const seed = h.web.url('elsewhere.other-scope.test', '/');
  const result = await (await launch(h, { seeds: [seed], handler: LINK_GRAPH, politeness: { minDelayMs: 50 } })).result();
  const expected = h.web.expectedPages([seed], { hosts: ['elsewhere.other-scope.test'] });
  const nodes = await readDataset(outputOf(h, result.campaignId).dir);
  expect(new Set(nodes.map((n) => n.item.page))).toEqual(expected);
  expect(nodes.length).toBe(expected.size);
  for (const n of nodes) {
    const path = new URL(n.url).pathname;
    expect(n.item.headings).toEqual([{ level: 1, text: `elsewhere.other-scope.test ${path}` }]);
    expect((n.item.outlinks as string[]).length).toBeGreaterThan(0);
  }
});

test("filterLink narrows the page's own links: the crawl keeps to the home and list pages", async () => {
  const seed = h.web.url(shop2.spec.host, '/');
  const handler = path.join(ROOT, 'test/fixtures/handlers/filter-handler.ts');
  const result = await (await launch(h, { seeds: [seed], handler, politeness: { minDelayMs: 50 } })).result();
  const pages = (await outputOf(h, result.campaignId).index()).filter((e) => !e.kind).map((e) => new URL(e.url).pathname);
  expect(pages.sort()).toEqual(['/', ...shop2.listPaths].sort());
  expect(await readDataset(outputOf(h, result.campaignId).dir)).toEqual([]);
});

test('a campaign started with the temporal CLI naming a handler produces the same dataset', async () => {
  const id = `temporal-cli-handler-${process.pid}`;
  const input = {
    seeds: [h.web.url(shop2.spec.host, '/')],
    handler: CATALOGUE,
    politeness: { minDelayMs: 50 },
    fetch: { resolve: h.web.resolveArgs() },
    output: { dir: path.join(h.outDir, id) },
  };
  const start = startWithTemporalCli(h, id, input);
  expect(start.status).toBe(0);
  const result = await h.client.workflow.getHandle(id).result();
  expect(result.status).toBe('completed');
  expect(productsOf(await readDataset(path.join(h.outDir, id)))).toEqual(expectedProducts(shop2));
});

test('catalogue: every product exactly once in the dataset, after every worker was killed mid-crawl; CSV from the CLI', async () => {
  const { handle, killedAt } = catalogue;
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(killedAt).toBeLessThan(shop.products.length);

  const out = outputOf(h, result.campaignId);
  // The campaign sealed its dataset with its index: the items of the attempts whose commit counted.
  expect(fs.existsSync(sealedDatasetPath(out.dir, result.campaignId, 'default'))).toBe(true);
  const dataset = await readDataset(out.dir);
  expect(productsOf(dataset)).toEqual(expectedProducts(shop));
  // Each item belongs to its page's committed attempt: the sealed index line's attempt, fetch time and WARC record.
  const index = await out.index();
  const sealed = await readIndex(path.dirname(sealedPaths(out.dir, result.campaignId).index), (f) => f.endsWith('.index.jsonl'));
  const committedIds = new Set(sealed.map((e) => e.attemptId));
  const committed = new Set(sealed.map(attemptKey));
  for (const l of dataset)
    expect({ url: l.url, label: l.label, committed: committed.has(attemptKey(l)) && committedIds.has(l.attemptId) }).toEqual({ url: l.url, label: 'detail', committed: true });
  // List pages were routed to onPage (no items), product pages to routes.detail (one each).
  const products = index.filter((e) => e.url.includes('/product/') && e.outcome === 'fetched');
  expect(new Set(products.map((e) => e.label))).toEqual(new Set(['detail']));
  expect(index.filter((e) => e.url.includes('/list/')).every((e) => e.items === 0 && e.label === undefined)).toBe(true);
  // The raw files hold at least as much (an attempt cut short by the kill may have left items behind).
  expect((await readRawDataset(datasetDir(out.dir))).length).toBeGreaterThanOrEqual(dataset.length);

  const csv = await runCrawlerInProcess(['dataset', out.dir, '--csv']);
  expect(csv.code).toBe(0);
  const rows = csv.stdout.trim().split('\r\n');
  expect(rows[0]).toBe('url,fetchedAt,warcFile,warcOffset,label,sku,name,priceCents,item.url');
  expect(
    rows
      .slice(1)
      .map((r) => r.split(',')[5])
      .sort(),
  ).toEqual(shop.products.map((p) => p.sku));
});

test('a handler that cannot be loaded: crawl exits 2 before anything starts; a campaign started otherwise fails as InvalidCampaignInput', async () => {
  const id = `bad-handler-${process.pid}`;
  const cmd = crawlerCommand(['crawl', 'http://example.test/', '--id', id, '--handler', './no-such-handler.ts']);
  const res = spawnSync(cmd.command, cmd.args, { env: { ...process.env, CRAWLER_TASK_QUEUE: h.taskQueue }, encoding: 'utf8', cwd: h.outDir });
  expect(res.status).toBe(2);
  expect(res.stderr).toContain(`handler "${path.join(h.outDir, 'no-such-handler.ts')}": cannot be loaded`);

  const handle = await launch(h, { seeds: [h.web.url(shop2.spec.host, '/')], handler: '/nonexistent/handler.ts' });
  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause as { type?: string; message?: string; cause?: { type?: string; message?: string } };
  const failure = cause?.type ? cause : cause?.cause;
  expect(failure).toMatchObject({ type: 'InvalidCampaignInput', message: expect.stringMatching(/handler "\/nonexistent\/handler\.ts": cannot be loaded/) });
});
