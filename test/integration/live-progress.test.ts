// The live display as a person sees it: `crawl` runs in a real terminal
// (tmux gives it a pseudo-terminal of its own), the test reads the screen
// while it runs and checks that the counts move on one rewritten line and
// agree with the summary at the end.
import { spawnSync } from 'node:child_process';
import { generateSites } from '../web/test-web';
import { createHarness, sleep, type Harness } from '../support/harness';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { findOrInstallAptTool } from '../../src/stack/tools';

jest.setTimeout(240_000);

const HOST = 'tty.progress.test';
const PAGES = 30;
let h: Harness;
let tmuxPath = 'tmux';
const socket = `crawler-progress-${process.pid}`;
const tmux = (...args: string[]) => spawnSync(tmuxPath, ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

beforeAll(async () => {
  tmuxPath = await findOrInstallAptTool('tmux', 'tmux', 'the live-display test runs crawl in a terminal it gives it');
  h = await createHarness('progress');
  for (const spec of generateSites({ count: 1, pages: PAGES, fanOut: 3, crossPerPage: 0, hostPattern: () => HOST, seed: 11 })) h.web.addSite(spec);
});
afterAll(async () => {
  tmux('kill-server');
  await h?.close();
});

test('crawl in a terminal: one progress line whose counts move, then the summary', async () => {
  const seed = h.web.url(HOST, '/');
  const expected = h.web.expectedPages([seed]).size;
  const cmd = crawlerCommand(['crawl', seed, '--delay-ms', '250', '--out', `${h.outDir}/progress`, ...h.web.resolveArgs().flatMap((r) => ['--resolve', r])]);
  const env: Record<string, string | undefined> = { ...process.env, CRAWLER_TASK_QUEUE: `${h.taskQueue}-tty` };
  const vars = ['TEMPORAL_ADDRESS', 'REDIS_URL', 'CRAWLER_TASK_QUEUE'].map((k) => `${k}=${quote(env[k] ?? '')}`).join(' ');
  const line = `env ${vars} ${[cmd.command, ...cmd.args].map(quote).join(' ')}; echo "EXIT=$?"; sleep 600`;
  const started = tmux('new-session', '-d', '-s', 'crawl', '-x', '200', '-y', '30', line);
  expect(started.status).toBe(0);

  // Read the screen as it changes, until the command has exited.
  const screens: string[] = [];
  let screen = '';
  for (const deadline = Date.now() + 200_000; Date.now() < deadline;) {
    screen = tmux('capture-pane', '-p', '-t', 'crawl').stdout;
    screens.push(screen);
    if (/EXIT=\d+/.test(screen)) break;
    await sleep(200);
  }
  expect(screen).toMatch(/EXIT=0/);

  // While it ran: a single status line at a time (rewritten in place, not a scrolling log)…
  const progress = /running: (\d+) pages \([\d.]+\/s\), (\d+) failed, hosts (\d+) \[(\d+) active, (\d+) waiting\], frontier (\d+)/g;
  const seen: number[] = [];
  for (const s of screens) {
    const lines = [...s.matchAll(progress)];
    expect(lines.length).toBeLessThanOrEqual(1);
    if (lines[0]) seen.push(Number(lines[0][1]));
  }
  // …whose page count moved through several values on the way up, never down.
  const distinct = [...new Set(seen)];
  expect(distinct.length).toBeGreaterThanOrEqual(3);
  expect(seen).toEqual([...seen].sort((a, b) => a - b));
  expect(Math.max(...seen)).toBeLessThanOrEqual(expected);
  // The summary the display ends with agrees with the site.
  expect(screen).toMatch(new RegExp(`campaign \\S+: completed\\n\\s+pages ${expected}, failed 0`));
});
