// Worker processes started by `crawl` (and by tests and the benchmark):
// real OS processes, so killing one with SIGKILL is a real crash.
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { crawlerCommand } from '../cli/crawler-command';

export const WORKER_READY_LINE = 'crawler worker ready';

/** Port settings a pool spreads over its workers: one process per port. */
const PORT_SETTINGS = ['CRAWLER_METRICS_PORT', 'CRAWLER_SDK_METRICS_PORT'] as const;

export interface WorkerProcess {
  index: number;
  /** The lowest number no other live worker of the pool holds: a fixed metrics port P becomes P + slot. */
  slot: number;
  child: ChildProcess;
  exited: Promise<number | null>;
  /** Its Prometheus endpoint, as printed in its ready line (CRAWLER_METRICS_PORT set). */
  metricsUrl?: string;
}

export class WorkerPool {
  readonly workers: WorkerProcess[] = [];
  private next = 0;

  constructor(private readonly env: NodeJS.ProcessEnv, private readonly opts: { logPrefix?: string; onLog?: (line: string) => void } = {}) {}

  /** Starts one worker process and resolves once it polls the task queue. */
  async startOne(timeoutMs = 120_000): Promise<WorkerProcess> {
    const index = this.next++;
    const taken = new Set(this.alive().map((w) => w.slot));
    let slot = 0;
    while (taken.has(slot)) slot++;
    // Extra node flags for worker processes only, e.g. --cpu-prof when profiling the benchmark.
    const cmd = crawlerCommand(['worker'], (process.env.CRAWLER_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean));
    const child = spawn(cmd.command, cmd.args, {
      env: spreadPorts({ ...process.env, ...this.env }, slot),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const wp: WorkerProcess = { index, slot, child, exited };
    this.workers.push(wp);
    const tail: string[] = [];
    const forward = (line: string) => {
      tail.push(line);
      if (tail.length > 30) tail.shift();
      this.opts.onLog?.(`${this.opts.logPrefix ?? 'worker'}#${index}: ${line}`);
    };
    readline.createInterface({ input: child.stderr! }).on('line', forward);
    const out = readline.createInterface({ input: child.stdout! });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker #${index} not ready after ${timeoutMs} ms:\n${tail.join('\n')}`)), timeoutMs);
      out.on('line', (line) => {
        if (line.includes(WORKER_READY_LINE)) {
          wp.metricsUrl = /metrics (http:\/\/\S+?)\)?$/.exec(line)?.[1];
          clearTimeout(timer);
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
    await Promise.all(Array.from({ length: n }, () => this.startOne()));
  }

  alive(): WorkerProcess[] {
    return this.workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);
  }

  /** kill -9: no drain, no cleanup, exactly like a machine dying. */
  async kill9(w: WorkerProcess): Promise<void> {
    w.child.kill('SIGKILL');
    await w.exited;
  }

  /** Graceful stop of every live worker (SIGTERM drains in-flight activities). */
  async stopAll(timeoutMs = 45_000): Promise<void> {
    await Promise.all(
      this.alive().map(async (w) => {
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
