import fs from 'node:fs';
import path from 'node:path';
import Redis from 'ioredis';
import { ManagedProcess } from './managed-process';
import { portOpen, waitFor } from './ports';
import { StackError } from './stack-error';
import { findOrInstallRedisServer } from './tools';

/**
 * How the embedded Redis servers (single and cluster) persist: an append-only
 * file fsynced every second, no RDB snapshots (what docs/guarantees.md says a
 * Redis crash may lose follows from this).
 */
export const REDIS_PERSISTENCE_ARGS = ['--appendonly', 'yes', '--appendfsync', 'everysec', '--save', ''];

export interface RedisServerOptions {
  port: number;
  dataDir: string;
  detached?: boolean;
  log?: (msg: string) => void;
  extraArgs?: string[];
}

export async function redisReachable(url: string, timeoutMs = 1000): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * redis-server on loopback with the append-only file on (fsync every
 * second), so a restart or a kill -9 loses at most a second of frontier
 * updates; RDB snapshots are off because AOF already covers restarts.
 */
export async function startRedisServer(opts: RedisServerOptions): Promise<ManagedProcess> {
  // Something else on the port would answer the readiness probe below while
  // our server dies on the busy port, and we would take it for ours.
  if (await portOpen(opts.port)) throw new StackError('PORT_IN_USE', `cannot start redis-server on 127.0.0.1:${opts.port}: another process already listens there`);
  const bin = await findOrInstallRedisServer(opts.log);
  fs.mkdirSync(opts.dataDir, { recursive: true });
  const args = [
    '--port',
    String(opts.port),
    '--bind',
    '127.0.0.1',
    '--dir',
    opts.dataDir,
    ...REDIS_PERSISTENCE_ARGS,
    '--daemonize',
    'no',
    '--protected-mode',
    'yes',
    ...(opts.extraArgs ?? []),
  ];
  const proc = ManagedProcess.start('redis', bin, args, {
    logFile: path.join(opts.dataDir, 'redis.log'),
    detached: opts.detached,
  });
  const url = `redis://127.0.0.1:${opts.port}`;
  try {
    await waitFor(
      `redis-server on ${url}`,
      () => redisReachable(url),
      30_000,
      () => proc.deadReason(),
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}
