// The user-facing entry points: `crawler crawl` end to end, bad input, and a
// campaign started with the plain `temporal` CLI.
import { execFile, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkflowNotFoundError } from '@temporalio/client';
import { generateSites } from '../web/test-web';
import { createHarness, startWithTemporalCli, type Harness } from '../support/harness';
import { readIndex } from '../../src/storage/index-writer';
import { crawlerCommand } from '../../src/cli/crawler-command';
import type { CampaignInput } from '../../src/config/campaign';

jest.setTimeout(240_000);
const run = promisify(execFile);

let h: Harness;
beforeAll(async () => {
  h = await createHarness('cli');
  for (const spec of generateSites({ count: 2, pages: 8, fanOut: 2, hostPattern: (i) => `w${i}.cli.test`, seed: 9 })) h.web.addSite(spec);
  for (const spec of generateSites({ count: 1, pages: 12, fanOut: 2, hostPattern: () => `k0.cli.test`, seed: 4 })) h.web.addSite(spec);
});
afterAll(() => h?.close());

const env = () => ({ ...process.env, CRAWLER_TASK_QUEUE: h.taskQueue });

test('crawl: starts its worker, crawls, prints a summary with --json as the last line', async () => {
  const seed = h.web.url('w0.cli.test', '/');
  const out = path.join(h.outDir, 'cli-crawl');
  // Pins as a flag and from a file (how thousands of them are given).
  const [first, ...others] = h.web.resolveArgs();
  const pins = path.join(h.outDir, 'cli-crawl-pins.txt');
  fs.writeFileSync(pins, `# test web\n${others.join('\n')}\n`);
  const resolve = ['--resolve', first, '--resolve-file', pins];
  const crawl = crawlerCommand(['crawl', seed, '--any-domain', '--delay-ms', '50', '--out', out, '--json', ...resolve]);
  const { stdout } = await run(crawl.command, crawl.args, { env: env() });
  const summary = JSON.parse(stdout.trim().split('\n').pop()!);
  const expected = h.web.expectedPages([seed]);
  expect(summary.status).toBe('completed');
  expect(summary.pages).toBe(expected.size);
  expect(summary.outputDir).toBe(out);
  const index = await readIndex(path.join(out, 'index'));
  expect(new Set(index.filter((e) => e.outcome === 'fetched').map((e) => e.url))).toEqual(expected);
});

test.each([
  ['a non-URL seed', ['not a url'], /seed "not a url"/],
  ['an unsupported scheme', ['ftp://example.test/'], /scheme/i],
  ['a negative budget', ['http://example.test/', '--max-pages', '-5'], /must not be negative/],
  ['a bad --resolve entry', ['http://example.test/', '--resolve', 'nonsense'], /resolve/i],
])('bad input (%s): clear error, exit code 2, nothing started', async (_name, args, message) => {
  const id = `bad-input-${Math.random().toString(36).slice(2, 8)}`;
  const cmd = crawlerCommand(['crawl', ...args, '--id', id]);
  const res = spawnSync(cmd.command, cmd.args, { env: env(), encoding: 'utf8' });
  expect(res.status).toBe(2);
  expect(res.stderr).toMatch(message);
  await expect(h.client.workflow.getHandle(id).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
});

test.each([
  ['Redis', { REDIS_URL: 'redis://127.0.0.1:1' }, /cannot reach Redis at redis:\/\/127\.0\.0\.1:1: .*ECONNREFUSED.*unset REDIS_URL/],
  ['Temporal', { TEMPORAL_ADDRESS: '127.0.0.1:1' }, /cannot reach the Temporal server at 127\.0\.0\.1:1: .*unset TEMPORAL_ADDRESS/],
])('crawl against a dead %s: a clear error naming it, exit code 1, no campaign', async (_name, dead, message) => {
  const id = `dead-server-${Math.random().toString(36).slice(2, 8)}`;
  const cmd = crawlerCommand(['crawl', 'http://example.test/', '--id', id]);
  const res = spawnSync(cmd.command, cmd.args, { env: { ...env(), ...dead }, encoding: 'utf8' });
  expect(res.status).toBe(1);
  expect(res.stderr).toMatch(message);
  await expect(h.client.workflow.getHandle(id).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
});

test('a campaign started with the temporal CLI completes', async () => {
  await h.pool.start(1);
  const seed = h.web.url('w1.cli.test', '/');
  const id = `temporal-cli-${process.pid}`;
  const input: CampaignInput = {
    seeds: [seed],
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 50 },
    fetch: { resolve: h.web.resolveArgs() },
    output: { dir: path.join(h.outDir, id) },
  };
  const start = startWithTemporalCli(h, id, input);
  expect(start.status).toBe(0);
  const result = await h.client.workflow.getHandle(id).result();
  const expected = h.web.expectedPages([seed], { hosts: [`w1.cli.test`] });
  expect(result.status).toBe('completed');
  expect(result.campaignId).toBe(id);
  expect(result.pages).toBe(expected.size);
  const index = await readIndex(path.join(h.outDir, id, 'index'));
  expect(new Set(index.filter((e) => e.outcome === 'fetched').map((e) => e.url))).toEqual(expected);
});

test('crawl: a worker that dies is replaced, and the crawl completes with every page', async () => {
  const seed = h.web.url('k0.cli.test', '/');
  const out = path.join(h.outDir, 'cli-crash');
  const resolve = h.web.resolveArgs().flatMap((r) => ['--resolve', r]);
  const crawl = crawlerCommand(['crawl', seed, '--same-host', '--delay-ms', '200', '--out', out, '--json', ...resolve]);
  // A task queue of its own: no other test's worker may pick up the work of the one killed.
  const child = spawn(crawl.command, crawl.args, { env: { ...env(), CRAWLER_TASK_QUEUE: `${h.taskQueue}-crash` }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const pages = () => h.web.requests().filter((r) => r.host === 'k0.cli.test' && r.path !== '/robots.txt' && r.path !== '/sitemap.xml');
  while (pages().length < 3) {
    if (child.exitCode !== null) throw new Error(`crawl ended early:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  // The crawl command's own worker, node running the worker bundle (the harness's servers are not its children).
  const ps = spawnSync('ps', ['-o', 'pid=,args=', '--ppid', String(child.pid)], { encoding: 'utf8' }).stdout;
  const workerPid = ps
    .split('\n')
    .filter((l) => /\/worker-[0-9a-f]{16}\.cjs\s*$/.test(l))
    .map((l) => Number(l.trim().split(/\s+/)[0]))[0];
  expect(workerPid).toBeGreaterThan(0);
  process.kill(workerPid, 'SIGKILL');
  const killedAt = pages().length;
  const code = await exited;
  // On failure, the crawl's own words say why.
  expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
  const summary = JSON.parse(stdout.trim().split('\n').pop()!);
  const expected = h.web.expectedPages([seed], { hosts: ['k0.cli.test'] });
  expect(summary.status).toBe('completed');
  expect(summary.pages).toBe(expected.size);
  // Pages after the kill were fetched by the replacement.
  expect(pages().length).toBeGreaterThan(killedAt);
  expect(stderr).toMatch(/worker #0 exited unexpectedly \(signal SIGKILL\)/);
  expect(stderr).toMatch(/worker #1 started in place of #0/);
  const index = await readIndex(path.join(out, 'index'));
  expect(new Set(index.filter((e) => e.outcome === 'fetched').map((e) => e.url))).toEqual(expected);
});
