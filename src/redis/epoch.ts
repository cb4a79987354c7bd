// Noticing that Redis restarted under a campaign. Redis persists through an
// append-only file fsynced once a second (`appendfsync everysec`, the
// embedded stack's setting and Redis's default): a crash can come back
// without its last second or so of writes. What comes back is an earlier,
// consistent state (the file is ordered, each script is atomic), so nothing
// in Redis itself says that anything is missing. The campaign keeps the
// server's run ID (new on every start, per node on a cluster) in its
// `epoch` hash; a different one means Redis restarted since and may have
// lost a tail of writes, and the campaign then checks what only such a loss
// can break (docs/guarantees.md, "What a Redis crash may lose"):
//   - hosts holding a slot whose workflow has already ended (their release was lost),
//   - frontiers with URLs that no host workflow will take (a lost commit put them back),
//   - the summary, recounted from the output index.
import { Cluster, type Result } from 'ioredis';
import { campaignKeys } from './keys';
import type { RedisLike } from './scripts';

/** The run ID of the Redis server, or of every master of a cluster (sorted, comma-separated): it changes whenever a server restarts or fails over. */
export async function redisRunId(redis: RedisLike): Promise<string> {
  const runIdOf = (info: string) => /^run_id:(\w+)/m.exec(info)?.[1] ?? '';
  if (redis instanceof Cluster) {
    // The node list fills once the client has the slot map: a first command waits for it.
    if (redis.nodes('master').length === 0) await redis.ping();
    const ids = await Promise.all(redis.nodes('master').map(async (n) => runIdOf(await n.info('server'))));
    return ids.sort().join(',');
  }
  return runIdOf(await redis.info('server'));
}

export interface EpochCheck {
  /** Restarts seen since the campaign started (0: every write it made is still there). */
  restarts: number;
  /** This check is the first to see the current server. */
  changed: boolean;
}

// KEYS: epoch. ARGV: run ID now. Records the run ID the first time; a
// different one counts a restart. One script, so two dispatch rounds that
// look at once count one restart.
const EPOCH_CHECK_LUA = `
local known = redis.call('HGET', KEYS[1], 'runId')
if not known then
  redis.call('HSET', KEYS[1], 'runId', ARGV[1])
  return {tonumber(redis.call('HGET', KEYS[1], 'restarts') or '0'), 0}
end
if known == ARGV[1] then return {tonumber(redis.call('HGET', KEYS[1], 'restarts') or '0'), 0} end
redis.call('HSET', KEYS[1], 'runId', ARGV[1])
return {redis.call('HINCRBY', KEYS[1], 'restarts', 1), 1}`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    crawlEpochCheck(epoch: string, runId: string): Result<[number, number], Context>;
  }
}
export class CampaignEpoch {
  private readonly key: string;

  constructor(
    private readonly redis: RedisLike,
    campaignKey: string,
  ) {
    this.key = campaignKeys(campaignKey).epoch;
    if (typeof (redis as unknown as Record<string, unknown>).crawlEpochCheck !== 'function') {
      redis.defineCommand('crawlEpochCheck', { numberOfKeys: 1, lua: EPOCH_CHECK_LUA });
    }
  }

  /**
   * Compares the server's run ID with the campaign's. The first call (the
   * campaign's preparation) records it; a campaign started by a release
   * without epochs gets one at its next dispatch round.
   */
  async check(): Promise<EpochCheck> {
    const [restarts, changed] = await this.redis.crawlEpochCheck(this.key, await redisRunId(this.redis));
    return { restarts: Number(restarts), changed: Number(changed) === 1 };
  }

  /** When the campaign last looked for hosts a lost write left behind (ms, 0 = never). */
  async lastSweep(): Promise<number> {
    return Number((await this.redis.hget(this.key, 'sweptAt')) ?? 0);
  }

  async swept(at: number): Promise<void> {
    await this.redis.hset(this.key, 'sweptAt', String(at));
  }
}
