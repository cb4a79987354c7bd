// Worker processes started by `crawl` (and by tests and the benchmark):
// real OS processes, so killing one with SIGKILL is a real crash.
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { crawlerCommand } from '../cli/crawler-command';

export const WORKER_READY_LINE = 'crawler worker ready';

export interface WorkerProcess {
  index: number;
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
    // Extra node flags for worker processes only, e.g. --cpu-prof when profiling the benchmark.
    const cmd = crawlerCommand(['worker'], (process.env.CRAWLER_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean));
    const child = spawn(cmd.command, cmd.args, {
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const wp: WorkerProcess = { index, child, exited };
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
