// Which worker processes are alive, and which regular host sessions each one
// runs, in Redis: the liveness that moves a dead worker's hosts on within
// seconds, without waiting for Temporal's heartbeat timeout
// (activities/worker-liveness.ts runs it; docs/architecture.md, "Liveness").
// Every write is a script on the `{workers}` slot (src/redis/keys.ts), timed by
// the Redis clock.
import { workerKeys } from './keys';
import type { RedisLike } from './scripts';

/** A regular host session as its worker records it: enough to tell the host's workflow run which of its sessions was lost. */
export interface SessionRecord {
  /** The host workflow and the run the session belongs to. */
  workflowId: string;
  runId: string;
  /** The run's number for the session (SessionInput.session). */
  session: number;
  /** The campaign's workflow (its sticky queue is reset too: it may have been cached on the dead worker). */
  campaignWorkflowId: string;
}

const fieldOf = (r: Pick<SessionRecord, 'runId' | 'session'>) => `${r.runId}|${r.session}`;

/** A record as the hash holds it; null for a field this release does not understand. */
export function parseSessionRecord(field: string, value: string): SessionRecord | null {
  const cut = field.lastIndexOf('|');
  const session = Number(field.slice(cut + 1));
  if (cut <= 0 || !Number.isInteger(session)) return null;
  try {
    const v = JSON.parse(value) as { w?: unknown; c?: unknown };
    if (typeof v.w !== 'string' || typeof v.c !== 'string') return null;
    return { workflowId: v.w, runId: field.slice(0, cut), session, campaignWorkflowId: v.c };
  } catch {
    return null;
  }
}

export class WorkerRegistry {
  private readonly k: ReturnType<typeof workerKeys>;

  /** `group`: a registry apart from the workers' own (tests). */
  constructor(
    private readonly redis: RedisLike,
    group = '',
  ) {
    this.k = workerKeys(group);
  }

  /** Worker `id` joins: its lease runs `leaseMs` from now (Redis clock). */
  async join(id: string, leaseMs: number): Promise<void> {
    await this.redis.crawlWorkerJoin(this.k.leases, id, leaseMs);
  }

  /**
   * Renews the lease of `id` for `leaseMs`, and lists (at most `limit`) workers whose lease ran out.
   * After a silence of every worker longer than a lease (Redis was away), every lease is moved on first.
   * `live` false: `id` was found dead (its lease ran out and a live worker took its cleanup): its
   * sessions are presumed lost, and it must join again under a new id.
   */
  async beat(id: string, leaseMs: number, limit: number): Promise<{ live: boolean; expired: string[] }> {
    const [live, expired] = await this.redis.crawlWorkerBeat(this.k.leases, this.k.reaping(id), this.k.lastBeat, id, leaseMs, limit);
    return { live: Number(live) === 1, expired: expired.filter((x) => x !== id) };
  }

  /** Records a regular session running on worker `id`; false when `id` was found dead (join again, then record it). */
  async register(id: string, r: SessionRecord): Promise<boolean> {
    const value = JSON.stringify({ w: r.workflowId, c: r.campaignWorkflowId });
    return (await this.redis.crawlWorkerRegister(this.k.leases, this.k.reaping(id), this.k.sessions(id), id, fieldOf(r), value)) === 1;
  }

  /** The session ended (whichever way). */
  async unregister(id: string, r: Pick<SessionRecord, 'runId' | 'session'>): Promise<void> {
    await this.redis.hdel(this.k.sessions(id), fieldOf(r));
  }

  /**
   * Takes the cleanup of worker `dead` for `claimMs` if its lease ran out and nobody else took it:
   * its sessions, for the caller to tell their hosts (then `reaped`). null: not expired, or another
   * worker cleans it up.
   */
  async claim(dead: string, claimer: string, claimMs: number): Promise<SessionRecord[] | null> {
    const flat = await this.redis.crawlWorkerClaim(this.k.leases, this.k.reaping(dead), this.k.sessions(dead), dead, claimer, claimMs);
    if (flat === null) return null;
    const records: SessionRecord[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const r = parseSessionRecord(flat[i], flat[i + 1]);
      if (r) records.push(r);
    }
    return records;
  }

  /** The hosts of worker `dead` were told: its lease and records go (false: the claim ran out first, another worker does it again). */
  async reaped(dead: string, claimer: string): Promise<boolean> {
    return (await this.redis.crawlWorkerReaped(this.k.leases, this.k.reaping(dead), this.k.sessions(dead), dead, claimer)) === 1;
  }

  /** For each id, whether it holds a lease that has not run out (Redis clock). */
  async live(ids: string[]): Promise<boolean[]> {
    if (ids.length === 0) return [];
    const [[s, us], expires] = await Promise.all([this.redis.time(), this.redis.zmscore(this.k.leases, ...ids)]);
    const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
    return expires.map((e) => e !== null && Number(e) >= now);
  }

  /** Worker `id` stops: it leaves when none of its sessions is recorded any more (true); else its lease runs out and its hosts are told. */
  async leave(id: string): Promise<boolean> {
    return (await this.redis.crawlWorkerLeave(this.k.leases, this.k.reaping(id), this.k.sessions(id), id)) === 1;
  }
}
