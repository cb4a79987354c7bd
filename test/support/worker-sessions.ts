// The regular host sessions a worker process has recorded under its liveness lease
// (src/redis/worker-registry.ts), read straight from Redis: its lease ids start with its
// identity (`<pid>@<host>`), and a worker found dead joins again under a new id.
import type { Redis } from 'ioredis';
import { workerKeys } from '../../src/redis/keys';
import { parseSessionRecord, type SessionRecord } from '../../src/redis/worker-registry';
import type { WorkerProcess } from '../../src/worker/worker-pool';

export async function sessionsOf(redis: Redis, w: WorkerProcess): Promise<{ ids: string[]; records: SessionRecord[] }> {
  const k = workerKeys();
  const ids = (await redis.zrange(k.leases, 0, -1)).filter((id) => id.startsWith(`${w.child.pid}@`));
  const records: SessionRecord[] = [];
  for (const id of ids) {
    for (const [field, value] of Object.entries(await redis.hgetall(k.sessions(id)))) {
      const r = parseSessionRecord(field, value);
      if (r) records.push(r);
    }
  }
  return { ids, records };
}
