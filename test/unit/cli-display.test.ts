// What operators read during a crawl: the progress line and `crawler status`.
import { PassThrough } from 'node:stream';
import { formatStatus } from '../../src/cli/commands/campaign-control';
import { ProgressReporter } from '../../src/cli/progress';
import type { CampaignStatus, HostStatus } from '../../workflows/messages';

const host = (name: string, over: Partial<HostStatus> & { fetched?: number; failed?: number }): HostStatus => ({
  host: name,
  state: over.state ?? 'running',
  domainState: over.domainState ?? 'sleeping',
  stats: { fetched: over.fetched ?? 0, failed: over.failed ?? 0, skipped: 0, bytes: 0 },
  frontier: over.frontier ?? null,
});

const status = (fetched: number, hosts: HostStatus[]): CampaignStatus => ({
  campaignId: 'c1',
  status: 'running',
  paused: false,
  startedAt: '2026-11-23T00:00:00.000Z',
  hosts,
  totals: { fetched, failed: 1, skipped: 0, bytes: 0, hosts: hosts.length, activeHosts: hosts.length, frontier: hosts.reduce((s, h) => s + (h.frontier ?? 0), 0) },
});

test('status lists hosts that need attention first: backing off, failing, long sleeps, paused, crawling, idle, then finished', () => {
  const text = formatStatus(
    status(30, [
      host('done.test', { state: 'closed', domainState: 'done', fetched: 10 }),
      host('done-failed.test', { state: 'closed', domainState: 'done', fetched: 10, failed: 4 }),
      host('idle.test', { state: 'idle', domainState: 'idle', fetched: 3 }),
      host('ok.test', { domainState: 'crawling', fetched: 10, frontier: 4 }),
      host('paused.test', { domainState: 'paused', fetched: 2 }),
      host('slow.test', { domainState: 'sleeping', fetched: 5 }),
      host('throttled.test', { domainState: 'backing-off', fetched: 5 }),
      host('broken.test', { domainState: 'crawling', failed: 3, fetched: 5 }),
      host('broken2.test', { domainState: 'crawling', failed: 7, fetched: 5 }),
    ]),
  );
  const rows = text.split('\n').slice(4).map((l) => l.split('\t'));
  expect(rows.map((r) => r[0])).toEqual([
    'throttled.test',
    'broken2.test',
    'broken.test',
    'slow.test',
    'paused.test',
    'ok.test',
    'idle.test',
    'done-failed.test',
    'done.test',
  ]);
  expect(rows.find((r) => r[0] === 'ok.test')![6]).toBe('4');
});

test('without a TTY, progress is plain lines with rate, host states, frontier and an ETA under a budget', async () => {
  jest.useFakeTimers();
  const out = new PassThrough() as unknown as NodeJS.WriteStream;
  let text = '';
  (out as unknown as PassThrough).on('data', (d: Buffer) => (text += d.toString()));
  let fetched = 0;
  const p = new ProgressReporter(out, async () => status((fetched += 50), [host('a.test', { frontier: 7 }), host('b.test', { domainState: 'backing-off', frontier: 3 })]), 1000);
  p.start();
  await jest.advanceTimersByTimeAsync(5_000);
  await jest.advanceTimersByTimeAsync(5_000);
  p.stop();
  jest.useRealTimers();
  const lines = text.trim().split('\n');
  expect(lines.length).toBe(2);
  expect(lines[1]).toMatch(/^running: 100 pages \(10\.0\/s\), 1 failed, hosts 2 \[sleeping 1, backing-off 1\], frontier 10, ETA 90 s$/);
  expect(text).not.toContain('\r');
});

test('the ETA follows a page budget an operator set while the crawl runs', async () => {
  jest.useFakeTimers();
  const out = new PassThrough() as unknown as NodeJS.WriteStream;
  let text = '';
  (out as unknown as PassThrough).on('data', (d: Buffer) => (text += d.toString()));
  let fetched = 0;
  const steered = (): CampaignStatus => ({
    ...status((fetched += 50), [host('a.test', {})]),
    steering: { configVersion: 2, minDelayMs: 1_000, hostDelays: {}, pausedHosts: [], budgets: { maxPages: 400, maxDepth: null } },
  });
  const p = new ProgressReporter(out, async () => steered(), 1000);
  p.start();
  await jest.advanceTimersByTimeAsync(10_000);
  p.stop();
  jest.useRealTimers();
  // 100 of 400 pages at 10 pages/s: 30 s left (the start-up budget of 1000 would say 90 s).
  expect(text.trim().split('\n')[1]).toMatch(/, ETA 30 s$/);
});
