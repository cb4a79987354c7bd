// Workers of one pool share a machine: a fixed metrics port must become one
// port per worker, or every worker but the first fails to bind.
import fs from 'node:fs';
import { ownFolders, spreadPorts, WORKER_READY_LINE, WorkerCrashLoopError, WorkerPool } from '../../src/worker/worker-pool';

// Seconds of CPU here (a large index, processes started, the worker bundled) that a loaded machine stretches past Jest's 5 s.
jest.setTimeout(60_000);

test('a fixed port becomes port + slot; 0 (any free port), unset and invalid values are left alone', () => {
  const env = { CRAWLER_METRICS_PORT: '9464', CRAWLER_SDK_METRICS_PORT: '9500', OTHER: '7' };
  expect(spreadPorts(env, 0)).toEqual(env);
  expect(spreadPorts(env, 2)).toEqual({ CRAWLER_METRICS_PORT: '9466', CRAWLER_SDK_METRICS_PORT: '9502', OTHER: '7' });
  expect(spreadPorts({ CRAWLER_METRICS_PORT: '0' }, 3)).toEqual({ CRAWLER_METRICS_PORT: '0' });
  expect(spreadPorts({}, 3)).toEqual({});
  // Left for the worker's own validation to reject with a message.
  expect(spreadPorts({ CRAWLER_SDK_METRICS_PORT: 'abc' }, 1)).toEqual({ CRAWLER_SDK_METRICS_PORT: 'abc' });
});

test('{slot} in the spool and cache folders becomes the worker slot: workers that share no folder', () => {
  const env = { CRAWLER_SPOOL_DIR: '/d/w{slot}/spool', CRAWLER_CACHE_DIR: '/d/w{slot}/cache', CRAWLER_HOME: '/h/{slot}' };
  expect(ownFolders(env, 2)).toEqual({ CRAWLER_SPOOL_DIR: '/d/w2/spool', CRAWLER_CACHE_DIR: '/d/w2/cache', CRAWLER_HOME: '/h/{slot}' });
  expect(ownFolders({ CRAWLER_SPOOL_DIR: '/shared' }, 1)).toEqual({ CRAWLER_SPOOL_DIR: '/shared' });
  expect(env.CRAWLER_SPOOL_DIR).toBe('/d/w{slot}/spool');
});

test('the input is not modified', () => {
  const env = { CRAWLER_METRICS_PORT: '9464' };
  spreadPorts(env, 1);
  expect(env).toEqual({ CRAWLER_METRICS_PORT: '9464' });
});

// Supervision, with real processes standing in for workers: a node one-liner
// that prints the ready line, then either stays up or exits after a moment.
describe('supervised pool', () => {
  const standIn = (mode: 'stay' | 'crash' | 'mute') => ({
    command: process.execPath,
    args: [
      '-e',
      mode === 'mute'
        ? 'setInterval(() => {}, 1000)'
        : `console.log(${JSON.stringify(WORKER_READY_LINE)}); ${mode === 'crash' ? 'setTimeout(() => process.exit(3), 100)' : 'setInterval(() => {}, 1000)'}`,
    ],
  });
  const until = async (what: string, ok: () => boolean, ms = 20_000) => {
    const end = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const pools: WorkerPool[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.stopAll(2000)));
  });
  const makePool = (mode: 'stay' | 'crash' | 'mute', supervise: boolean | object, lines: string[]) => {
    const pool = new WorkerPool({}, { command: standIn(mode), supervise, onLog: (l) => lines.push(l) });
    pools.push(pool);
    return pool;
  };

  test('a worker killed from outside is replaced in its slot', async () => {
    const lines: string[] = [];
    const pool = makePool('stay', { backoffMs: () => 50 }, lines);
    await pool.start(2);
    const victim = pool.alive()[0];
    process.kill(victim.child.pid!, 'SIGKILL');
    await victim.exited;
    await until('a replacement', () => pool.alive().length === 2 && pool.restarts === 1);
    const replacement = pool.alive().find((w) => w !== pool.workers[1]);
    expect(replacement!.child.pid).not.toBe(victim.child.pid);
    expect(replacement!.slot).toBe(victim.slot);
    expect(lines.join('\n')).toMatch(/worker #0 exited unexpectedly \(signal SIGKILL\)/);
  });

  test('workers stopped through the pool, or in an unsupervised pool, are not replaced', async () => {
    const lines: string[] = [];
    const supervised = makePool('stay', { backoffMs: () => 10 }, lines);
    await supervised.start(2);
    await supervised.kill9(supervised.alive()[0]);
    const plain = makePool('stay', false, lines);
    await plain.start(1);
    const pid = plain.alive()[0].child.pid!;
    process.kill(pid, 'SIGKILL');
    await plain.workers[0].exited;
    await supervised.stopAll(2000);
    // Long enough for a 10 ms restart to have happened.
    await new Promise((r) => setTimeout(r, 500));
    expect(supervised.restarts).toBe(0);
    expect(supervised.alive()).toHaveLength(0);
    expect(plain.restarts).toBe(0);
    expect(plain.alive()).toHaveLength(0);
    expect(lines.filter((l) => /unexpectedly/.test(l))).toEqual([]);
  });

  test('workers that keep dying: the pool gives up with the reason and starts no more', async () => {
    const lines: string[] = [];
    const pool = makePool('crash', { maxRestarts: 3, windowMs: 60_000, backoffMs: () => 20 }, lines);
    const failed = pool.failed();
    failed.catch(() => undefined);
    await pool.start(1);
    const err = await failed.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkerCrashLoopError);
    expect((err as WorkerCrashLoopError).exits).toBe(4);
    expect((err as Error).message).toMatch(/4 unexpected exits within 60 s/);
    expect(pool.restarts).toBe(3);
    await new Promise((r) => setTimeout(r, 300));
    expect(pool.workers).toHaveLength(4);
    expect(pool.alive()).toHaveLength(0);
    // A late caller hears the same verdict.
    await expect(pool.failed()).rejects.toBe(err);
  });

  test('a worker that never gets ready is killed, not left holding its slot', async () => {
    const pool = makePool('mute', true, []);
    await expect(pool.startOne(300)).rejects.toThrow(/not ready after 300 ms/);
    await pool.workers[0].exited;
    expect(pool.alive()).toHaveLength(0);
    expect(pool.restarts).toBe(0);
  });

  test('the crash budget is per worker: a pool of two may lose each of them once', async () => {
    const pool = makePool('crash', { maxRestarts: 1, windowMs: 60_000, backoffMs: () => 20 }, []);
    const failed = pool.failed();
    failed.catch(() => undefined);
    await pool.start(2);
    const err = (await failed.then(
      () => null,
      (e: unknown) => e,
    )) as WorkerCrashLoopError;
    expect(err).toBeInstanceOf(WorkerCrashLoopError);
    expect(err.exits).toBe(3);
    expect(pool.restarts).toBe(2);
  });
});

describe('worker process environment', () => {
  const envOf = (pid: number) =>
    Object.fromEntries(
      fs
        .readFileSync(`/proc/${pid}/environ`, 'utf8')
        .split('\0')
        .filter(Boolean)
        .map((kv: string) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
  const stay = { command: process.execPath, args: ['-e', `console.log(${JSON.stringify(WORKER_READY_LINE)}); setInterval(() => {}, 1000)`] };

  test("a pool worker gets at most two malloc arenas and glibc's fixed mmap threshold unless its environment says otherwise", async () => {
    const saved = { arenas: process.env.MALLOC_ARENA_MAX, mmap: process.env.MALLOC_MMAP_THRESHOLD_ };
    delete process.env.MALLOC_ARENA_MAX;
    delete process.env.MALLOC_MMAP_THRESHOLD_;
    const plain = new WorkerPool({}, { command: stay });
    const told = new WorkerPool({ MALLOC_ARENA_MAX: '8', MALLOC_MMAP_THRESHOLD_: '65536' }, { command: stay });
    try {
      await plain.start(1);
      await told.start(1);
      expect(envOf(plain.alive()[0].child.pid!)).toMatchObject({ MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' });
      expect(envOf(told.alive()[0].child.pid!)).toMatchObject({ MALLOC_ARENA_MAX: '8', MALLOC_MMAP_THRESHOLD_: '65536' });
    } finally {
      if (saved.arenas !== undefined) process.env.MALLOC_ARENA_MAX = saved.arenas;
      if (saved.mmap !== undefined) process.env.MALLOC_MMAP_THRESHOLD_ = saved.mmap;
      await Promise.all([plain.stopAll(2000), told.stopAll(2000)]);
    }
  });
});
