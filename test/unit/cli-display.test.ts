// What operators read during a crawl: the progress line and `crawler status`.
import { PassThrough } from 'node:stream';
import { formatStatus } from '../../src/cli/commands/campaign-control';
import { ProgressReporter } from '../../src/cli/progress';
import { attentionRank, type HostRecord } from '../../src/redis/campaign-hosts';
import type { CampaignStatus, HostStatus } from '../../workflows/messages';

const host = (name: string, over: Partial<HostRecord>): HostStatus => ({
  host: name,
  state: 'crawling',
  fetched: 0,
  failed: 0,
  skipped: 0,
  bytes: 0,
  frontier: 0,
  delayMs: 1000,
  reason: 'minimum delay 1000 ms',
  lastUrl: null,
  lastStatus: null,
  nextWakeAt: null,
  updatedAt: '2026-11-23T00:00:01.000Z',
  ...over,
});

const status = (fetched: number, over: Partial<CampaignStatus> = {}): CampaignStatus => ({
  campaignId: 'c1',
  campaignKey: 'c1.abcd1234',
  status: 'running',
  paused: false,
  startedAt: '2026-11-23T00:00:00.000Z',
  updatedAt: '2026-11-23T00:00:05.000Z',
  problems: 0,
  totals: { fetched, failed: 1, skipped: 0, bytes: 0, hosts: 2, activeHosts: 2, readyHosts: 1, frontier: 10 },
  steering: { configVersion: 1, minDelayMs: 1000, budgets: { maxPages: null, maxDepth: null }, maxActiveHosts: null, pausedHosts: 0 },
  ...over,
});

test('hosts that need attention come first: given up, backing off, failing, long sleeps, paused, crawling, idle, then finished', () => {
  const hosts = [
    host('done.test', { state: 'done', fetched: 10 }),
    host('done-failed.test', { state: 'done', fetched: 10, failed: 4 }),
    host('idle.test', { state: 'idle', fetched: 3 }),
    host('ok.test', { fetched: 10, frontier: 4 }),
    host('paused.test', { state: 'paused', fetched: 2 }),
    host('slow.test', { state: 'sleeping', fetched: 5 }),
    host('throttled.test', { state: 'backing-off', fetched: 5 }),
    host('broken.test', { failed: 3, fetched: 5 }),
    host('gone.test', { state: 'given-up' }),
  ];
  const order = [...hosts].sort((a, b) => attentionRank(a) - attentionRank(b)).map((h) => h.host);
  expect(order).toEqual(['gone.test', 'throttled.test', 'broken.test', 'slow.test', 'paused.test', 'ok.test', 'idle.test', 'done-failed.test', 'done.test']);
});

test('status prints totals, then the page of hosts it was given with their delay and why', () => {
  const text = formatStatus(status(30, { problems: 2 }), [host('slow.test', { state: 'sleeping', delayMs: 30_000, reason: 'robots.txt Crawl-delay 30 s', frontier: 4 })]);
  const lines = text.split('\n');
  expect(lines[1]).toBe('pages 30, failed 1, skipped 0, bytes 0, hosts 2 (2 active, 1 waiting for a slot), frontier 10, problems 2');
  expect(lines[3].split('\t')).toEqual(['HOST', 'STATE', 'PAGES', 'FAILED', 'SKIPPED', 'FRONTIER', 'DELAY', 'WHY']);
  expect(lines[4].split('\t')).toEqual(['slow.test', 'sleeping', '0', '0', '0', '4', '30000 ms', 'robots.txt Crawl-delay 30 s']);
  // An operator's render mode for a host follows its why.
  expect(
    formatStatus(status(30), [{ ...host('spa.test', {}), render: 'browser' }])
      .split('\n')[4]
      .split('\t')
      .at(-1),
  ).toBe('minimum delay 1000 ms; render browser (set-render)');
  // Without Redis the totals still show, and the table says what it needs.
  expect(formatStatus(status(30), null)).toContain('set REDIS_URL');
});

test("a revisit campaign's status shows its revisit queue, and each host's after its why", () => {
  const revisit = { scheduled: 40, nextDueAt: '2026-11-24T05:00:00.000Z', dueHour: 5, dueDay: 30 };
  const text = formatStatus(status(30), [host('fresh.test', { state: 'sleeping', reason: 'revisits: 40 URL(s) scheduled, the next due in 600 s', revisit })], 1, {
    scheduled: 40,
    dueNow: 2,
    dueHour: 5,
    dueDay: 30,
    nextDueAt: '2026-11-24T04:50:00.000Z',
  });
  const lines = text.split('\n');
  expect(lines[2]).toBe('revisits: 40 scheduled, due now 2, within an hour 5, within a day 30, next 2026-11-24T04:50:00.000Z');
  expect(lines[5].split('\t').at(-1)).toBe(
    'revisits: 40 URL(s) scheduled, the next due in 600 s (revisits: 40 scheduled, 5 due within an hour, 30 within a day, next 2026-11-24T05:00:00.000Z)',
  );
});

test('without a TTY, progress is plain lines with rate, host counts, frontier and an ETA under a budget', async () => {
  jest.useFakeTimers();
  const out = new PassThrough() as unknown as NodeJS.WriteStream;
  let text = '';
  (out as unknown as PassThrough).on('data', (d: Buffer) => (text += d.toString()));
  let fetched = 0;
  const p = new ProgressReporter(out, async () => status((fetched += 50)), 1000);
  p.start();
  await jest.advanceTimersByTimeAsync(5_000);
  await jest.advanceTimersByTimeAsync(5_000);
  p.stop();
  jest.useRealTimers();
  const lines = text.trim().split('\n');
  expect(lines.length).toBe(2);
  expect(lines[1]).toMatch(/^running: 100 pages \(10\.0\/s\), 1 failed, hosts 2 \[2 active, 1 waiting\], frontier 10, ETA 90 s$/);
  expect(text).not.toContain('\r');
});

test('the ETA follows a page budget an operator set while the crawl runs', async () => {
  jest.useFakeTimers();
  const out = new PassThrough() as unknown as NodeJS.WriteStream;
  let text = '';
  (out as unknown as PassThrough).on('data', (d: Buffer) => (text += d.toString()));
  let fetched = 0;
  const steered = (): CampaignStatus => {
    const s = status((fetched += 50));
    return { ...s, steering: { ...s.steering, configVersion: 2, budgets: { maxPages: 400, maxDepth: null } } };
  };
  const p = new ProgressReporter(out, async () => steered(), 1000);
  p.start();
  await jest.advanceTimersByTimeAsync(10_000);
  p.stop();
  jest.useRealTimers();
  // 100 of 400 pages at 10 pages/s: 30 s left (the start-up budget of 1000 would say 90 s).
  expect(text.trim().split('\n')[1]).toMatch(/, ETA 30 s$/);
});

/** What a terminal shows for `text`: ESC[2K clears the row (the reporter always sends it right after `\r`), `\n` starts a new one. */
function screenOf(text: string): string[] {
  const rows = [''];
  const clear = '\x1b[2K';
  for (const part of text.split(new RegExp(`(\r|\n|${clear.replace('[', '\\[')})`))) {
    if (part === '\n') rows.push('');
    else if (part === clear) rows[rows.length - 1] = '';
    else if (part === '\r') continue;
    else rows[rows.length - 1] += part;
  }
  return rows;
}

test("on a terminal, a worker's log line goes above the status line, which is redrawn under it: one status line on screen", async () => {
  jest.useFakeTimers();
  const wasTty = process.stdout.isTTY;
  process.stdout.isTTY = true;
  try {
    const out = new PassThrough() as unknown as NodeJS.WriteStream & { isTTY: boolean };
    out.isTTY = true;
    let text = '';
    (out as unknown as PassThrough).on('data', (d: Buffer) => (text += d.toString()));
    let fetched = 0;
    const p = new ProgressReporter(out, async () => status((fetched += 10)), null);
    p.print('before any status line');
    p.start();
    await jest.advanceTimersByTimeAsync(1_000);
    p.print('worker#0: a warning');
    await jest.advanceTimersByTimeAsync(1_000);
    p.print('worker#1: another');
    await p.stop();
    const rows = screenOf(text);
    expect(rows.filter((r) => r.startsWith('running:'))).toHaveLength(1);
    expect(rows).toEqual(['before any status line', 'worker#0: a warning', 'worker#1: another', expect.stringMatching(/^running: 20 pages /), '']);
  } finally {
    process.stdout.isTTY = wasTty;
    jest.useRealTimers();
  }
});
