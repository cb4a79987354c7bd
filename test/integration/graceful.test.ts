// Graceful operations: a worker told to stop (SIGTERM) finishes what it has
// in flight and exits 0; `stack down` leaves no server behind. (A campaign
// through the whole stack going down and coming back on the same data:
// test/acceptance/stack-restart.test.ts.)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { freePort, portOpen } from '../../src/stack/ports';
import { readStackState, startStack } from '../../src/stack/stack';
import { PROJECT_ROOT } from '../../src/stack/paths';
import { generateSites } from '../web/test-web';
import { createHarness, fetchedUrls, launch, outputOf, pageRequests, sleep, urlOf, type Harness } from '../support/harness';

jest.setTimeout(10 * 60_000);

const dataRoot = () => process.env.CRAWLER_TEST_DATA_DIR!;

describe('SIGTERM on a worker with steps in flight', () => {
  let h: Harness;
  const LATENCY = 1_000;
  beforeAll(async () => {
    // One worker, so every step in flight at the SIGTERM is that worker's;
    // slow pages, so there are some. Three links to other hosts a page, so
    // every host is found within the first pages, not one after another.
    h = await createHarness('sigterm', { workers: 1 });
    for (const spec of generateSites({ count: 6, pages: 8, fanOut: 3, crossPerPage: 3, hostPattern: (i) => `g${i}.sigterm.test`, seed: 11, latencyMs: LATENCY }))
      h.web.addSite(spec);
  });
  afterAll(() => h?.close());

  test('the worker drains and exits 0; the campaign completes with nothing lost or refetched', async () => {
    const seed = h.web.url('g0.sigterm.test', '/');
    // No /sitemap.xml probe: one slow request per host less, and not a page the test counts.
    const handle = await launch(h, { seeds: [seed], scope: { mode: 'any' }, politeness: { minDelayMs: 100 }, sitemaps: 'off' });
    // Wait until several requests are in flight: arrived less than LATENCY ago, so not answered yet.
    const inFlight = () => {
      const cutoff = performance.timeOrigin + performance.now() - LATENCY + 300;
      return pageRequests(h.web.requests()).filter((r) => r.t > cutoff);
    };
    while (pageRequests(h.web.requests()).length < 10 || inFlight().length < 2) await sleep(50);
    const [worker] = h.pool.alive();
    const pending = inFlight().map((r) => urlOf(h, r));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => worker.child.once('exit', (code, signal) => resolve({ code, signal })));
    const termAt = Date.now();
    worker.child.kill('SIGTERM');
    // The worker's shutdownGraceTime is 30 s; SIGKILL only if it hangs far beyond that.
    const guard = setTimeout(() => worker.child.kill('SIGKILL'), 120_000);
    const { code, signal } = await exit;
    clearTimeout(guard);
    if (process.env.CRAWLER_TEST_VERBOSE) process.stderr.write(`SIGTERM → exit ${code} after ${Date.now() - termAt} ms with ${pending.length} request(s) in flight\n`);
    expect({ code, signal }).toEqual({ code: 0, signal: null });

    // The steps it had in flight were finished and stored before it left.
    const storedBeforeRestart = new Set(fetchedUrls(await outputOf(h, handle.workflowId).index()));
    for (const u of pending) expect(storedBeforeRestart).toContain(u);

    await h.pool.startOne();
    const result = await handle.result();
    const expected = h.web.expectedPages([seed]);
    const fetched = pageRequests(h.web.requests()).map((r) => urlOf(h, r));
    expect(result.status).toBe('completed');
    expect(new Set(fetched)).toEqual(expected);
    // A drained step is never fetched again.
    expect(fetched.length).toBe(expected.size);
    const index = fetchedUrls(await outputOf(h, result.campaignId).index());
    expect(new Set(index)).toEqual(expected);
    expect(index.length).toBe(expected.size);
  });
});

describe('crawler stack up / stack down', () => {
  /** Runs stackUp/stackDown in a separate process, as the CLI does: `up` returns while the servers keep running. */
  const runStackFn = (code: string) => {
    const tsx = path.join(PROJECT_ROOT, 'node_modules', '.bin', 'tsx');
    const res = spawnSync(tsx, ['-e', code], { cwd: PROJECT_ROOT, encoding: 'utf8', timeout: 180_000 });
    if (res.status !== 0) throw new Error(`stack command failed (${res.status}): ${res.stderr}`);
    return res.stdout;
  };
  /**
   * Running processes of this stack, whatever their pids: the Temporal dev
   * server names the folder on its command line; redis-server rewrites its
   * title to `redis-server 127.0.0.1:<port>`.
   */
  const processesOf = (dir: string, redisPort: number) =>
    fs
      .readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .flatMap((pid) => {
        try {
          const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
          const state = /\) (\S)/.exec(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
          const ours = cmd.includes(dir) || (cmd.includes('redis-server') && cmd.includes(`:${redisPort}`));
          return ours && state !== 'Z' ? [`${pid} ${cmd.trim()}`] : [];
        } catch {
          return [];
        }
      });

  test('down stops what up started and leaves no process behind', async () => {
    // Own folder and free ports: never the user's 7233 / 6379 stack.
    const dir = path.join(dataRoot(), `stack-up-${process.pid}`);
    const [temporalPort, uiPort, redisPort] = [await freePort(), await freePort(), await freePort()];
    const stackModule = JSON.stringify(path.join(PROJECT_ROOT, 'src', 'stack', 'stack.ts'));
    try {
      runStackFn(
        `const { stackUp } = require(${stackModule});` +
          `stackUp({ dataDir: ${JSON.stringify(dir)}, temporalPort: ${temporalPort}, uiPort: ${uiPort}, redisPort: ${redisPort} })` +
          `.then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });`,
      );
      const state = readStackState(dir);
      const pids = [state.temporal?.pid, state.redis?.pid];
      expect(pids.every((p) => typeof p === 'number' && p > 0)).toBe(true);
      // The process that ran `up` is gone; the servers it started are not.
      for (const pid of pids) expect(fs.existsSync(`/proc/${pid}`)).toBe(true);
      expect(processesOf(dir, redisPort).length).toBeGreaterThanOrEqual(2);

      const out = runStackFn(
        `const { stackDown } = require(${stackModule});` +
          `stackDown({ dataDir: ${JSON.stringify(dir)} }).then((s) => { console.log(JSON.stringify(s)); process.exit(0); }, (e) => { console.error(e); process.exit(1); });`,
      );
      expect(JSON.parse(out.trim()).sort()).toEqual(['redis', 'temporal']);
      for (const pid of pids) {
        const stat = fs.existsSync(`/proc/${pid}/stat`) ? fs.readFileSync(`/proc/${pid}/stat`, 'utf8') : null;
        // Gone, or at most a zombie waiting for init to reap it: nothing running.
        expect(stat === null || /\) Z /.test(stat)).toBe(true);
      }
      expect(processesOf(dir, redisPort)).toEqual([]);
      expect(fs.existsSync(path.join(dir, 'stack.json'))).toBe(false);
      // The data stays for the next `stack up`.
      expect(fs.existsSync(path.join(dir, 'temporal', 'temporal.sqlite'))).toBe(true);
    } finally {
      // Whatever happened above, no server of this test survives it.
      const state = readStackState(dir);
      for (const pid of [state.temporal?.pid, state.redis?.pid]) {
        try {
          if (pid) process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    }
  });

  test('up after Redis was killed -9 starts Redis alone and records it; down then stops both', async () => {
    const dir = path.join(dataRoot(), `stack-up-again-${process.pid}`);
    const [temporalPort, uiPort, redisPort] = [await freePort(), await freePort(), await freePort()];
    const stackModule = JSON.stringify(path.join(PROJECT_ROOT, 'src', 'stack', 'stack.ts'));
    const up = () =>
      runStackFn(
        `const { stackUp } = require(${stackModule});` +
          `stackUp({ dataDir: ${JSON.stringify(dir)}, temporalPort: ${temporalPort}, uiPort: ${uiPort}, redisPort: ${redisPort} })` +
          `.then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });`,
      );
    const temporalProcesses = () => processesOf(dir, redisPort).filter((p) => /temporal server start-dev/.test(p));
    try {
      up();
      const first = readStackState(dir);
      process.kill(first.redis!.pid, 'SIGKILL');
      while (fs.existsSync(`/proc/${first.redis!.pid}`) && !/\) Z /.test(fs.readFileSync(`/proc/${first.redis!.pid}/stat`, 'utf8'))) await sleep(50);

      up();
      const second = readStackState(dir);
      // Temporal kept as it was: the same pid, and no second server for this stack.
      expect(second.temporal).toEqual(first.temporal);
      expect(temporalProcesses().map((p) => Number(p.split(' ')[0]))).toEqual([first.temporal!.pid]);
      // Redis started again, and the pid recorded is the one running.
      expect(second.redis!.pid).not.toBe(first.redis!.pid);
      expect(fs.readFileSync(`/proc/${second.redis!.pid}/cmdline`, 'utf8')).toContain(`:${redisPort}`);

      const out = runStackFn(
        `const { stackDown } = require(${stackModule});` +
          `stackDown({ dataDir: ${JSON.stringify(dir)} }).then((s) => { console.log(JSON.stringify(s)); process.exit(0); }, (e) => { console.error(e); process.exit(1); });`,
      );
      expect(JSON.parse(out.trim()).sort()).toEqual(['redis', 'temporal']);
      expect(processesOf(dir, redisPort)).toEqual([]);
    } finally {
      const state = readStackState(dir);
      for (const pid of [state.temporal?.pid, state.redis?.pid]) {
        try {
          if (pid) process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    }
  });
});

describe('a stack that cannot start', () => {
  test('a Temporal server that fails to start takes the Redis started beside it down too', async () => {
    // Its port taken: the dev server exits at once.
    const blocker = net.createServer();
    const temporalPort = await freePort();
    await new Promise<void>((r) => blocker.listen(temporalPort, '127.0.0.1', r));
    const redisPort = await freePort();
    try {
      await expect(startStack({ dataDir: path.join(dataRoot(), `failed-stack-${process.pid}`), temporalPort, redisPort, headless: true })).rejects.toThrow();
      expect(await portOpen(redisPort)).toBe(false);
    } finally {
      blocker.close();
    }
  });
});
