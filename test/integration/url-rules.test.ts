// --include / --exclude on a test site, through `crawler crawl` and through a
// plain `temporal workflow start` with the JSON input: links are held to the
// includes, everything (page requisites and seeds too) to the excludes, and
// a pattern that is not a regular expression is refused before anything is
// fetched, naming it.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError } from '@temporalio/client';
import { createHarness, startWithTemporalCli, type Harness } from '../support/harness';
import type { SiteRequest, SiteSpec } from '../web/test-web';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { readIndex } from '../../src/storage/index-writer';
import type { CampaignInput } from '../../src/config/campaign';

jest.setTimeout(240_000);
const run = promisify(execFile);

const a = (href: string) => `<a href="${href}">${href}</a>`;
const PAGES: Record<string, string> = {
  '/': `<link rel="stylesheet" href="/static/site.css"><img src="/ads/banner.png">${a('/docs/a')}${a('/blog/x')}${a('/docs/private/secret')}${a('/ads/landing')}`,
  '/docs/a': `${a('/docs/b')}${a('/blog/y')}${a('/docs/a?print=1')}`,
  '/docs/b': `<img src="/ads/b.png"><img src="/static/diagram.png">${a('/docs/a')}`,
  '/blog/x': a('/docs/b'),
  '/blog/y': 'y',
  '/docs/private/secret': 'no',
  '/ads/landing': 'no',
  '/extra/seed': a('/docs/b'),
};

/** A small site whose pages and requisites are fixed; every other path is a 404. */
function rulesSite(host: string): SiteSpec {
  return {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx: SiteRequest) => {
      if (ctx.path === '/robots.txt') return false;
      if (ctx.path.startsWith('/static/') || ctx.path.startsWith('/ads/b')) {
        ctx.send(200, ctx.path.endsWith('.css') ? 'text/css' : 'image/png', ctx.path.endsWith('.css') ? 'body { color: black }' : 'png');
        return true;
      }
      const page = PAGES[ctx.path];
      if (page === undefined) ctx.send(404, 'text/plain', 'not found');
      else ctx.send(200, 'text/html; charset=utf-8', `<!doctype html><html><head><title>t</title></head><body>${page}</body></html>`);
      return true;
    },
  };
}

const INCLUDE = ['/docs/'];
const EXCLUDE = ['/private/', '/ads/', '[?&]print='];
// The seed and the included pages, and their stylesheet and image (requisites are not held to the includes); no blog, no ads, nothing private.
const EXPECTED = ['/', '/docs/a', '/docs/b', '/static/site.css', '/static/diagram.png'];

let h: Harness;
beforeAll(async () => {
  h = await createHarness('url-rules');
  for (const host of ['cli.rules.test', 'json.rules.test']) h.web.addSite(rulesSite(host));
});
afterAll(() => h?.close());

function requestedPaths(host: string): string[] {
  return [
    ...new Set(
      h.web
        .requests()
        .filter((r) => r.host === host && r.path !== '/robots.txt' && r.path !== '/sitemap.xml')
        .map((r) => r.path),
    ),
  ].sort();
}

async function fetchedPaths(dir: string): Promise<string[]> {
  const index = await readIndex(path.join(dir, 'index'));
  return index
    .filter((e) => e.outcome === 'fetched' && e.status === 200)
    .map((e) => new URL(e.url).pathname + new URL(e.url).search)
    .sort();
}

test('crawl --include / --exclude: only the included links are followed, and no excluded URL is requested, requisites included', async () => {
  const host = 'cli.rules.test';
  const out = path.join(h.outDir, 'cli');
  const rules = [...INCLUDE.flatMap((p) => ['--include', p]), ...EXCLUDE.flatMap((p) => ['--exclude', p])];
  const resolve = h.web.resolveArgs().flatMap((r) => ['--resolve', r]);
  // An excluded seed is refused (a problem of the campaign), the others crawled.
  const seeds = [h.web.url(host, '/'), h.web.url(host, '/ads/landing')];
  const crawl = crawlerCommand(['crawl', ...seeds, '--same-host', '--delay-ms', '20', '--out', out, '--json', ...rules, ...resolve]);
  const { stdout } = await run(crawl.command, crawl.args, { env: { ...process.env, CRAWLER_TASK_QUEUE: h.taskQueue } });
  const summary = JSON.parse(stdout.trim().split('\n').pop()!);
  expect(summary.status).toBe('completed');
  expect(summary.problems).toEqual([expect.stringContaining(`seed ${seeds[1]}: matches a scope.exclude pattern`)]);
  expect(await fetchedPaths(out)).toEqual([...EXPECTED].sort());
  expect(requestedPaths(host)).toEqual([...EXPECTED].sort());
  // The turned-away links are counted in their page's index line.
  const home = (await readIndex(path.join(out, 'index'))).find((e) => e.url === seeds[0])!;
  expect(home.rejectedLinks?.counts).toEqual({ NOT_INCLUDED: 1, EXCLUDED: 3 });
});

test('the same rules in the JSON input of `temporal workflow start`; a bad pattern fails the campaign naming it', async () => {
  await h.pool.start(1);
  const host = 'json.rules.test';
  const id = `url-rules-json-${process.pid}`;
  const input: CampaignInput = {
    seeds: [h.web.url(host, '/'), h.web.url(host, '/extra/seed')],
    scope: { mode: 'same-host', include: INCLUDE, exclude: EXCLUDE },
    politeness: { minDelayMs: 20 },
    fetch: { resolve: h.web.resolveArgs() },
    output: { dir: path.join(h.outDir, id) },
  };
  expect(startWithTemporalCli(h, id, input).status).toBe(0);
  const result = await h.client.workflow.getHandle(id).result();
  expect(result.status).toBe('completed');
  // A seed outside the includes is still crawled: it is an entry point, not a link.
  expect(await fetchedPaths(path.join(h.outDir, id))).toEqual([...EXPECTED, '/extra/seed'].sort());
  expect(requestedPaths(host)).toEqual([...EXPECTED, '/extra/seed'].sort());

  const bad = `url-rules-bad-${process.pid}`;
  const before = h.web.requests().length;
  expect(startWithTemporalCli(h, bad, { ...input, scope: { mode: 'same-host', exclude: ['/ads/', '(unclosed'] }, output: { dir: path.join(h.outDir, bad) } }).status).toBe(0);
  const failure = await h.client.workflow
    .getHandle(bad)
    .result()
    .then(
      () => null,
      (err: unknown) => err,
    );
  expect(failure).toBeInstanceOf(WorkflowFailedError);
  expect(String((failure as WorkflowFailedError).cause?.message)).toContain('scope.exclude[1] "(unclosed" is not a valid regular expression');
  expect(h.web.requests().length).toBe(before);
});
