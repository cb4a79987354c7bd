// The embedded stack with a kill switch: Temporal and Redis on fixed ports
// and fixed data dirs, so either can be killed (or stopped) and started again
// on the same address with the same data (Temporal's SQLite file, Redis's
// AOF). Started through src/stack, exactly as the crawler starts them.
import fs from 'node:fs';
import path from 'node:path';
import type { ManagedProcess } from '../../src/stack/managed-process';
import { freePort } from '../../src/stack/ports';
import { startRedisServer } from '../../src/stack/redis-server';
import { startStack } from '../../src/stack/stack';
import { startTemporalDevServer } from '../../src/stack/temporal-dev-server';

export interface RestartableStackOptions {
  /** Holds temporal/ (SQLite + log) and redis/ (AOF + log); created if missing. */
  dataDir: string;
  /** Fixed ports; free ones are picked when omitted (and then kept for every restart). */
  temporalPort?: number;
  redisPort?: number;
  log?: (msg: string) => void;
}

export type StopMode = 'kill' | 'term';

export interface Downtime {
  /** When the server was stopped (Date.now()). */
  downAt: number;
  /** When it answered again. */
  upAt: number;
}

export class RestartableStack {
  private constructor(
    readonly opts: Required<Pick<RestartableStackOptions, 'dataDir' | 'temporalPort' | 'redisPort'>> & { log?: (msg: string) => void },
    private temporal: ManagedProcess | null,
    private redis: ManagedProcess | null,
  ) {}

  static async start(opts: RestartableStackOptions): Promise<RestartableStack> {
    fs.mkdirSync(opts.dataDir, { recursive: true });
    const temporalPort = opts.temporalPort ?? (await freePort());
    const redisPort = opts.redisPort ?? (await freePort());
    // First start through startStack (same layout as the crawler's own stack);
    // restarts go through the per-server functions with the same ports and dirs.
    const stack = await startStack({ dataDir: opts.dataDir, temporalPort, redisPort, headless: true, log: opts.log });
    const [temporal, redis] = stack.processes;
    return new RestartableStack({ dataDir: opts.dataDir, temporalPort, redisPort, log: opts.log }, temporal, redis);
  }

  get temporalAddress(): string {
    return `127.0.0.1:${this.opts.temporalPort}`;
  }

  get redisUrl(): string {
    return `redis://127.0.0.1:${this.opts.redisPort}`;
  }

  get temporalDir(): string {
    return path.join(this.opts.dataDir, 'temporal');
  }

  get redisDir(): string {
    return path.join(this.opts.dataDir, 'redis');
  }

  /** pids of the servers currently running (for /proc checks). */
  pids(): { temporal: number | null; redis: number | null } {
    return { temporal: this.temporal?.pid ?? null, redis: this.redis?.pid ?? null };
  }

  async stopRedis(mode: StopMode = 'kill'): Promise<number> {
    const p = this.redis;
    if (!p) throw new Error('redis is not running');
    this.redis = null;
    const at = Date.now();
    if (mode === 'kill') {
      p.kill9();
      await p.waitExit();
    } else await p.stop();
    return at;
  }

  async startRedis(): Promise<void> {
    if (this.redis) throw new Error('redis is already running');
    this.redis = await startRedisServer({ port: this.opts.redisPort, dataDir: this.redisDir, log: this.opts.log });
  }

  /** Stop (kill -9 by default) and start again on the same port with the same AOF. */
  async restartRedis(mode: StopMode = 'kill', downMs = 0): Promise<Downtime> {
    const downAt = await this.stopRedis(mode);
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.startRedis();
    return { downAt, upAt: Date.now() };
  }

  async stopTemporal(mode: StopMode = 'kill'): Promise<number> {
    const p = this.temporal;
    if (!p) throw new Error('temporal is not running');
    this.temporal = null;
    const at = Date.now();
    if (mode === 'kill') {
      p.kill9();
      await p.waitExit();
    } else await p.stop(30_000);
    return at;
  }

  async startTemporal(): Promise<void> {
    if (this.temporal) throw new Error('temporal is already running');
    this.temporal = await startTemporalDevServer({ port: this.opts.temporalPort, headless: true, dataDir: this.temporalDir, log: this.opts.log });
  }

  /** Stop (kill -9 by default) and start again on the same port with the same SQLite file. */
  async restartTemporal(mode: StopMode = 'kill', downMs = 0): Promise<Downtime> {
    const downAt = await this.stopTemporal(mode);
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.startTemporal();
    return { downAt, upAt: Date.now() };
  }

  /** Graceful stop of whatever runs; the data stays for a later start(). */
  async stop(): Promise<void> {
    await Promise.all([this.temporal ? this.stopTemporal('term') : null, this.redis ? this.stopRedis('term') : null]);
  }

  /** Both servers again, after stop(), on the same ports and data. */
  async startAgain(): Promise<void> {
    await Promise.all([this.temporal ? null : this.startTemporal(), this.redis ? null : this.startRedis()]);
  }
}
