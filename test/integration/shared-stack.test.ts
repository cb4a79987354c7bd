// Two `crawl`s at once in one project folder, neither given TEMPORAL_ADDRESS
// or REDIS_URL: they share the folder's one embedded stack (one Temporal dev
// server, one redis-server on its data folder), the first to finish leaves
// it running for the other, and the last to finish stops it. Real servers
// started by the crawls themselves, in a throwaway CRAWLER_HOME.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { processRunning } from '../../src/stack/process-identity';
import { redisReachable } from '../../src/stack/redis-server';
import { readStackState } from '../../src/stack/stack';
import { liveStackUsers } from '../../src/stack/stack-users';
import { temporalReachable } from '../../src/stack/temporal-dev-server';
import { findOrInstallTemporalCli } from '../../src/stack/tools';
import { readIndex } from '../../src/storage/index-writer';
import { generateSites, startTestWeb, type TestWeb } from '../web/test-web';
import { isHousekeepingPath } from '../support/harness';
import { tempDirs } from '../support/temp-dirs';

jest.setTimeout(300_000);

let web: TestWeb;
const tempDir = tempDirs('shared-stack-');

beforeAll(async () => {
  web = await startTestWeb();
  for (const host of ['a0.shared.test', 'b0.shared.test']) {
    for (const spec of generateSites({ count: 1, pages: 8, fanOut: 2, hostPattern: () => host, seed: 7 })) web.addSite(spec);
  }
});
afterAll(async () => {
  await web?.close();
});

/** Processes by procfs, for what the tests count: [pid, command line, working folder]. */
function processes(): { pid: number; cmdline: string; cwd: string }[] {
  const out: { pid: number; cmdline: string; cwd: string }[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      out.push({ pid: Number(name), cmdline, cwd: fs.readlinkSync(`/proc/${name}/cwd`) });
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** The servers of the project folder `home`: redis-server runs in its data folder (--dir), Temporal names its database. */
function serversOf(home: string): { redis: number[]; temporal: number[] } {
  const all = processes().filter((p) => processRunning(p.pid));
  return {
    redis: all.filter((p) => /^(\S*\/)?redis-server\s/.test(p.cmdline) && p.cwd === path.join(home, 'stack', 'redis')).map((p) => p.pid),
    temporal: all.filter((p) => p.cmdline.includes(path.join(home, 'stack', 'temporal', 'temporal.sqlite'))).map((p) => p.pid),
  };
}

function parentOf(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/** The servers a crawl's workers were told to use, read from their environment. */
function workerEndpoints(crawlPid: number): { TEMPORAL_ADDRESS?: string; REDIS_URL?: string }[] {
  return processes()
    .filter((p) => /\/worker-[0-9a-f]{16}\.cjs$/.test(p.cmdline) && parentOf(p.pid) === crawlPid)
    .map((p) => {
      const env = Object.fromEntries(
        fs
          .readFileSync(`/proc/${p.pid}/environ`, 'utf8')
          .split('\0')
          .filter(Boolean)
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
      return { TEMPORAL_ADDRESS: env.TEMPORAL_ADDRESS, REDIS_URL: env.REDIS_URL };
    });
}

interface Crawl {
  child: ChildProcess;
  out: string;
  seed: string;
  host: string;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

test('two crawls at once share one Temporal and one Redis; the last one out stops them', async () => {
  const home = tempDir();
  // The crawls start their own servers: nothing may point them at the test stack.
  const env: NodeJS.ProcessEnv = { ...process.env, CRAWLER_HOME: home, TEMPORAL_CLI: await findOrInstallTemporalCli() };
  delete env.TEMPORAL_ADDRESS;
  delete env.REDIS_URL;
  // Crawl b's pages past its home page wait until crawl a has finished, so a finishes first.
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  web.site('b0.shared.test')!.holdUntil = (p) => (p === '/' || isHousekeepingPath(p) ? undefined : released);

  const crawl = (name: string): Crawl => {
    const host = `${name}0.shared.test`;
    const seed = web.url(host, '/');
    const out = path.join(home, `out-${name}`);
    const cmd = crawlerCommand(['crawl', seed, '--same-host', '--delay-ms', '50', '--out', out, '--json', ...web.resolveArgs().flatMap((r) => ['--resolve', r])]);
    // A task queue each: neither crawl's workers run the other's campaign, so stopping one crawl's workers cannot touch the other's.
    const child = spawn(cmd.command, cmd.args, { env: { ...env, CRAWLER_TASK_QUEUE: `shared-stack-${name}-${process.pid}` }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((r) => child.once('exit', (code) => r({ code, stdout, stderr })));
    return { child, out, seed, host, done };
  };
  const expectComplete = async (c: Crawl) => {
    const r = await c.done;
    // On failure, the crawl's own words say why.
    expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
    const summary = JSON.parse(r.stdout.trim().split('\n').pop()!);
    const expected = web.expectedPages([c.seed], { hosts: [c.host] });
    expect(summary.status).toBe('completed');
    expect(summary.pages).toBe(expected.size);
    const index = await readIndex(path.join(c.out, 'index'));
    expect(new Set(index.filter((e) => e.outcome === 'fetched').map((e) => e.url))).toEqual(expected);
  };

  // Both at once: they race for the stack.
  const a = crawl('a');
  const b = crawl('b');
  try {
    // Crawl b is fetching (so both crawls are up and crawling): one server of each kind for the folder.
    const heldRequest = () => web.requests().some((r) => r.host === 'b0.shared.test' && r.path !== '/' && !isHousekeepingPath(r.path));
    while (!heldRequest()) {
      if (b.child.exitCode !== null) throw new Error(`crawl b ended early:\n${(await b.done).stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const during = serversOf(home);
    expect({ redis: during.redis.length, temporal: during.temporal.length }).toEqual({ redis: 1, temporal: 1 });
    const state = readStackState(path.join(home, 'stack'));
    expect([state.temporal?.pid, state.redis?.pid]).toEqual([during.temporal[0], during.redis[0]]);
    // Crawl b's workers use the recorded servers (crawl a's, if it is still running, too).
    const used = [...workerEndpoints(b.child.pid!), ...(a.child.exitCode === null ? workerEndpoints(a.child.pid!) : [])];
    expect(used.length).toBeGreaterThan(0);
    for (const e of used) expect(e).toEqual({ TEMPORAL_ADDRESS: state.temporal!.address, REDIS_URL: state.redis!.url });

    await expectComplete(a);
    // Crawl a is done; b still crawls, on the same servers, which still answer.
    expect(b.child.exitCode).toBeNull();
    expect(serversOf(home)).toEqual(during);
    expect(await temporalReachable(state.temporal!.address)).toBe(true);
    expect(await redisReachable(state.redis!.url)).toBe(true);
    expect(liveStackUsers(path.join(home, 'stack'))).toEqual([b.child.pid]);

    release();
    await expectComplete(b);
    // The last crawl out stopped the folder's servers, and nothing of them is recorded any more.
    expect(serversOf(home)).toEqual({ redis: [], temporal: [] });
    expect(readStackState(path.join(home, 'stack'))).toEqual({});
    expect(liveStackUsers(path.join(home, 'stack'))).toEqual([]);
  } finally {
    release();
    // Whatever a failed run left: no crawl (it stops its workers on SIGTERM) and no server of this folder outlives the test.
    for (const c of [a, b]) {
      if (c.child.exitCode !== null || c.child.signalCode !== null) continue;
      c.child.kill('SIGTERM');
      const timer = setTimeout(() => c.child.kill('SIGKILL'), 30_000);
      await c.done;
      clearTimeout(timer);
    }
    const left = serversOf(home);
    for (const pid of [...left.redis, ...left.temporal]) process.kill(pid, 'SIGKILL');
  }
});
