// Worker processes started by `crawl` (and by tests and the benchmark):
// real OS processes, so killing one with SIGKILL is a real crash.
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { WORKER_READY_LINE } from './ready-line';
import { workerCommand, workerNodeArgs, workerProcessEnv } from './worker-bundle';
import { CrawlerError } from '../errors';
import { workerRestartBackoffMs } from '../config/retry-policy';

export { WORKER_READY_LINE };

/** Port settings a pool spreads over its workers: one process per port. */
const PORT_SETTINGS = ['CRAWLER_METRICS_PORT', 'CRAWLER_SDK_METRICS_PORT'] as const;

export interface WorkerProcess {
  index: number;
  /** Stopped on purpose (stopAll, kill9): its exit is not a crash. */
  stopping?: boolean;
  /** The lowest number no other live worker of the pool holds: a fixed metrics port P becomes P + slot. */
  slot: number;
  child: ChildProcess;
  exited: Promise<number | null>;
  /** Its Prometheus endpoint, as printed in its ready line (CRAWLER_METRICS_PORT set). */
  metricsUrl?: string;
}

/**
 * Restarting workers that die on their own. A crawl's work lives in Temporal,
 * so a worker that crashed (out of memory, a native fault, killed by the OOM
 * killer or an operator) loses nothing; without a replacement, though, a
 * `crawl` with one worker would wait forever. A worker that keeps dying is a
 * fault a restart will not mend (a bad setting, a page that kills every
 * worker), so after `maxRestarts` per worker in `windowMs` the pool gives up
 * and says why.
 */
export interface SuperviseOptions {
  /** Restarts allowed per worker of the pool within `windowMs` before giving up (default 5). */
  maxRestarts?: number;
  windowMs?: number;
  /** Wait before restart n (1-based); default 1 s, 2 s, 4 s … capped at 15 s. */
  backoffMs?: (n: number) => number;
}

export class WorkerCrashLoopError extends CrawlerError<'WORKER_CRASH_LOOP'> {
  constructor(
    readonly exits: number,
    readonly windowMs: number,
    readonly lastOutput: string[],
  ) {
    super(
      'WORKER_CRASH_LOOP',
      `workers keep dying: ${exits} unexpected exits within ${Math.round(windowMs / 1000)} s, so no more restarts.` +
        (lastOutput.length ? ` Last output of the last one:\n${lastOutput.join('\n')}` : ''),
    );
    this.name = 'WorkerCrashLoopError';
  }
}

export interface WorkerPoolOptions {
  logPrefix?: string;
  onLog?: (line: string) => void;
  /** Restart workers that exit unless stopped through the pool (off by default: tests kill on purpose). */
  supervise?: SuperviseOptions | boolean;
  /** The worker's executable and arguments (default: node running the worker bundle); tests use stand-ins. */
  command?: { command: string; args: string[] };
  /** Workers started for a campaign that renders: node's options for that (scripts/worker-bundle.cjs, RENDER_WORKER_NODE_ARGS). */
  renders?: boolean;
}

export class WorkerPool {
  readonly workers: WorkerProcess[] = [];
  private next = 0;
  private closed = false;
  /** Times of unexpected exits, for the crash-loop window. */
  private crashes: number[] = [];
  private readonly restartTimers = new Set<NodeJS.Timeout>();
  private failure: WorkerCrashLoopError | null = null;
  private readonly failureWaiters: ((err: WorkerCrashLoopError) => void)[] = [];
  /** Workers started to replace ones that died. */
  restarts = 0;
  /** Workers asked for through start(): the crash budget scales with it. */
  private size = 0;
  /** stopAll() calls so far. */
  private stops = 0;

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly opts: WorkerPoolOptions = {},
  ) {}

  /**
   * Rejects with WorkerCrashLoopError once a supervised pool gives up; never
   * settles otherwise. Race it with whatever the workers are working for.
   */
  failed(): Promise<never> {
    return new Promise<never>((_resolve, reject) => {
      if (this.failure) reject(this.failure);
      else this.failureWaiters.push(reject);
    });
  }

  private log(line: string) {
    this.opts.onLog?.(line);
  }

  private supervise(): Required<SuperviseOptions> | null {
    const s = this.opts.supervise;
    if (!s) return null;
    const o = s === true ? {} : s;
    return {
      maxRestarts: o.maxRestarts ?? 5,
      windowMs: o.windowMs ?? 120_000,
      backoffMs: o.backoffMs ?? workerRestartBackoffMs,
    };
  }

  /** A worker exited without being asked to: start another in its place, or give up. */
  private onUnexpectedExit(wp: WorkerProcess, how: string, tail: string[]) {
    const s = this.supervise();
    if (!s || this.closed || this.failure) return;
    const now = Date.now();
    this.crashes = [...this.crashes.filter((t) => now - t < s.windowMs), now];
    // The budget grows with the pool: one event that kills every worker once
    // (the OOM killer, a host hiccup) is not a crash loop.
    if (this.crashes.length > s.maxRestarts * Math.max(1, this.size)) {
      this.failure = new WorkerCrashLoopError(this.crashes.length, s.windowMs, tail.slice(-10));
      this.log(`worker #${wp.index} ${how}; ${this.failure.message}`);
      for (const reject of this.failureWaiters.splice(0)) reject(this.failure);
      return;
    }
    const wait = s.backoffMs(this.crashes.length);
    this.log(`worker #${wp.index} ${how}; starting a replacement in ${(wait / 1000).toFixed(1)} s`);
    const timer = setTimeout(() => {
      this.restartTimers.delete(timer);
      if (this.closed || this.failure) return;
      this.restarts++;
      // A replacement that fails to start is one more exit in the window.
      this.startOne().then(
        (w) => this.log(`worker #${w.index} started in place of #${wp.index}`),
        (err: Error) => {
          if (this.closed) return;
          const [first, ...rest] = err.message.split('\n');
          this.onUnexpectedExit(wp, `could not be replaced (${first})`, rest);
        },
      );
    }, wait);
    this.restartTimers.add(timer);
  }

  /** Starts one worker process and resolves once it polls the task queue. */
  async startOne(timeoutMs = 120_000): Promise<WorkerProcess> {
    // Extra node flags for worker processes only, e.g. --cpu-prof when profiling the benchmark.
    // Before the slot is chosen: from here to the spawn nothing awaits, so
    // workers started together cannot pick the same slot.
    const stopsBefore = this.stops;
    const cmd = this.opts.command ?? (await workerCommand(workerNodeArgs(process.env, this.opts.renders)));
    // A stopAll() while the bundle was being built would miss this worker.
    if (this.stops !== stopsBefore) throw new Error('the worker pool was stopped while a worker was starting');
    const index = this.next++;
    const taken = new Set(this.alive().map((w) => w.slot));
    let slot = 0;
    while (taken.has(slot)) slot++;
    const child = spawn(cmd.command, cmd.args, {
      env: ownFolders(spreadPorts(workerProcessEnv({ ...process.env, ...this.env }), slot), slot),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tail: string[] = [];
    let ready = false;
    const exited = new Promise<number | null>((resolve) => {
      let over = false;
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        if (over) return;
        over = true;
        resolve(code);
        // Before it was ready, startOne's caller hears of it through the rejection.
        if (ready && !wp.stopping) this.onUnexpectedExit(wp, `exited unexpectedly (${signal ? `signal ${signal}` : `code ${code}`})`, tail);
      };
      // 'close', not 'exit': its last words (say, V8's "heap out of memory")
      // may still be in the pipe when the process is gone.
      child.once('close', finish);
      // A process that could not be spawned at all (EAGAIN, ENOENT) never closes.
      child.on('error', (err) => {
        if (child.pid !== undefined) return;
        tail.push(`could not start: ${err.message}`);
        finish(null, null);
      });
    });
    const wp: WorkerProcess = { index, slot, child, exited };
    this.workers.push(wp);
    const forward = (line: string) => {
      tail.push(line);
      if (tail.length > 30) tail.shift();
      this.opts.onLog?.(`${this.opts.logPrefix ?? 'worker'}#${index}: ${line}`);
    };
    readline.createInterface({ input: child.stderr! }).on('line', forward);
    const out = readline.createInterface({ input: child.stdout! });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        // Not left running: it would hold its slot, and turn up later as a worker nobody counts.
        wp.stopping = true;
        child.kill('SIGKILL');
        reject(new Error(`worker #${index} not ready after ${timeoutMs} ms:\n${tail.join('\n')}`));
      }, timeoutMs);
      out.on('line', (line) => {
        if (line.includes(WORKER_READY_LINE)) {
          wp.metricsUrl = /metrics (http:\/\/\S+?)\)?$/.exec(line)?.[1];
          clearTimeout(timer);
          ready = true;
          resolve();
        } else forward(line);
      });
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`worker #${index} exited with code ${code} before it was ready:\n${tail.join('\n')}`));
      });
    });
    return wp;
  }

  async start(n: number): Promise<void> {
    this.closed = false;
    this.size += n;
    await Promise.all(Array.from({ length: n }, () => this.startOne()));
  }

  alive(): WorkerProcess[] {
    return this.workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);
  }

  /** kill -9: no drain, no cleanup, exactly like a machine dying. */
  async kill9(w: WorkerProcess): Promise<void> {
    w.stopping = true;
    w.child.kill('SIGKILL');
    await w.exited;
  }

  /** Graceful stop of one worker (SIGTERM: its sessions end after their page in flight and hand their hosts back); resolves when it exited. */
  async terminate(w: WorkerProcess): Promise<void> {
    w.stopping = true;
    w.child.kill('SIGTERM');
    await w.exited;
  }

  /** Graceful stop of every live worker (SIGTERM drains in-flight activities). */
  async stopAll(timeoutMs = 45_000): Promise<void> {
    this.closed = true;
    this.stops++;
    for (const t of this.restartTimers) clearTimeout(t);
    this.restartTimers.clear();
    await Promise.all(
      this.alive().map(async (w) => {
        w.stopping = true;
        w.child.kill('SIGTERM');
        const t = setTimeout(() => w.child.kill('SIGKILL'), timeoutMs);
        await w.exited;
        clearTimeout(t);
      }),
    );
  }
}

/**
 * Workers of one pool run on one machine, so a fixed metrics port would be
 * taken by the first and refused to the others: worker `slot` gets the
 * configured port + slot. 0 (any free port, printed at start) and unset stay
 * as they are; anything else is left for the worker's own validation.
 */
export function spreadPorts(env: NodeJS.ProcessEnv, slot: number): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const key of PORT_SETTINGS) {
    const raw = env[key];
    if (raw === undefined || !/^\d+$/.test(raw) || Number(raw) === 0) continue;
    out[key] = String(Number(raw) + slot);
  }
  return out;
}

/** The worker's own folders: settings whose value may name the worker's slot. */
const PER_WORKER_FOLDERS = ['CRAWLER_SPOOL_DIR', 'CRAWLER_CACHE_DIR'] as const;

/**
 * Workers of one pool standing for machines that share no folder: `{slot}` in
 * CRAWLER_SPOOL_DIR or CRAWLER_CACHE_DIR becomes the worker's slot, so each
 * has a local disk of its own (a worker started in a dead one's slot takes
 * its folder, as a machine restarted on its disk would).
 */
export function ownFolders(env: NodeJS.ProcessEnv, slot: number): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const key of PER_WORKER_FOLDERS) {
    const raw = env[key];
    if (raw?.includes('{slot}')) out[key] = raw.replaceAll('{slot}', String(slot));
  }
  return out;
}
