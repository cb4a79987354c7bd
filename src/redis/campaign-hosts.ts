// The campaign's per-host bookkeeping, kept in Redis so that the campaign
// workflow's state stays the same size whatever the number of hosts:
//   ready      hosts with URLs queued that no host workflow is consuming
//   active     hosts whose workflow holds a slot, with its dispatch generation
//   hosts      one record per host (counts, state, frontier, delay and why)
//   attention  the records ordered by what needs an operator first
//   totals     the sum of the records, moved by each record write
//   control    what running sessions look at between pages (pause, stop, settings version)
// Every key is in the campaign's hash slot, so each script is atomic on Redis Cluster too.
import { campaignKeys } from './keys';
import type { RedisLike } from './scripts';
import type { RenderMode } from '../config/campaign';
import { countersOf, hostStatsOf, type Counters, type HostStats } from '../stats/counters';
import { bloomRate } from './frontier-layout';
import { BLOOM_SKIPPED_SCALE, SEEN_SKIPPED_FIELD } from './seen-bloom';

/** A render mode as stored (an operator's, per host); anything else reads as none. */
function renderMode(v: string | null | undefined): RenderMode | null {
  return v === 'off' || v === 'browser' || v === 'auto' ? v : null;
}

/** What an operator sees of a host (also its CrawlState search attribute). */
export type HostState = 'starting' | 'crawling' | 'sleeping' | 'backing-off' | 'paused' | 'idle' | 'done' | 'given-up';

/** A host's counters (src/stats/counters.ts: the embeds only once it has any), and what it is doing. */
export interface HostRecord extends HostStats {
  state: HostState;
  /** URLs waiting in the host's frontier. */
  frontier: number;
  /** The pause between two requests now in force, and why (robots.txt, operator, back-off…). */
  delayMs: number;
  reason: string;
  lastUrl: string | null;
  lastStatus: number | null;
  /** When a sleeping or backing-off host is due again (ISO 8601). */
  nextWakeAt: string | null;
  updatedAt: string;
  /** Revisit campaigns: the host's revisit queue (URLs scheduled, the next one due, how many within an hour / a day). */
  revisit?: RevisitView;
  /** A Bloom filter campaign (src/redis/seen-bloom.ts): the URLs its seen set is expected to have skipped, in millionths. */
  seenSkipped?: number;
}

export interface RevisitView {
  scheduled: number;
  nextDueAt: string | null;
  dueHour: number;
  dueDay: number;
}

/** The sums of the host records (the totals hash): every counter, the frontiers, and how many hosts have a record. */
export interface CampaignTotals extends Counters {
  frontier: number;
  hosts: number;
  /** A campaign whose seen sets are Bloom filters: their false-positive rate and the URLs they are expected to have skipped. Absent: exact. */
  seenFilter?: SeenFilterTotals;
}

export interface SeenFilterTotals {
  rate: number;
  expectedSkipped: number;
}

export interface CampaignControl {
  /** Settings version in force: a session started with an older one ends so its host starts one with the new settings. */
  version: number;
  paused: boolean;
  stop: 'budget' | 'cancelled' | 'drained' | null;
  /** Operator's campaign-wide minimum delay, null = the settings'. */
  minDelayMs: number | null;
  /**
   * The slot cap in force (setConcurrency included), as the last dispatch
   * round wrote it: null = unlimited, undefined = not written yet (the settings' then).
   */
  maxActiveHosts?: number | null;
}

/**
 * How much a host needs an operator's attention, most first: backing off
 * (the server is refusing us now), still crawling with failures, in a long
 * sleep, paused, crawling, idle; finished hosts last, those with failures
 * before clean ones; given up before everything.
 */
export function attentionRank(r: Pick<HostRecord, 'state' | 'failed'>): number {
  switch (r.state) {
    case 'given-up':
      return 0;
    case 'backing-off':
      return 1;
    case 'done':
      return r.failed > 0 ? 7 : 8;
    case 'idle':
      return 6;
    default:
      if (r.failed > 0) return 2;
      return r.state === 'sleeping' ? 3 : r.state === 'paused' ? 4 : 5;
  }
}

/** Sorted set score: rank first, then most failures (bounded so the double stays exact), then the host name. */
function attentionScore(r: HostRecord): number {
  return attentionRank(r) * 1e10 - Math.min(r.failed, 1e9);
}

const PROBLEMS_KEPT = 1_000;

/** What a host shows before its session's first record: nothing counted yet. */
function startingRecord(): HostRecord {
  return {
    state: 'starting',
    ...hostStatsOf(),
    frontier: 0,
    delayMs: 0,
    reason: 'session starting',
    lastUrl: null,
    lastStatus: null,
    nextWakeAt: null,
    updatedAt: new Date().toISOString(),
  };
}

/** The control hash's fields (version, paused, stop, minDelayMs, maxActiveHosts) as read. */
function controlOf(version: string | null, paused: string | null, stop: string | null, minDelayMs: string | null, cap: string | null): CampaignControl {
  return {
    version: Number(version ?? 1),
    paused: paused === '1',
    stop: stop === 'budget' || stop === 'cancelled' || stop === 'drained' ? stop : null,
    minDelayMs: minDelayMs ? Number(minDelayMs) : null,
    ...(cap === null ? {} : { maxActiveHosts: cap === '' ? null : Number(cap) }),
  };
}

/** How long a dispatch round waits for the one under way (a long round of many hosts). */
const DISPATCH_WAIT_MS = 120_000;
/** How long the dispatch lock outlives its holder's last renewal (renewed three times as often). */
export const DISPATCH_HOLD_MS = 6_000;

export class CampaignHosts {
  private readonly k: ReturnType<typeof campaignKeys>;

  constructor(
    private readonly redis: RedisLike,
    readonly campaignKey: string,
  ) {
    this.k = campaignKeys(campaignKey);
  }

  /**
   * Hosts whose frontier got URLs while nobody consumed it. Returns how many
   * became ready; a host already ready only moves to a newer sequence
   * number (crawlDispatched) and is not counted.
   */
  async markReady(hosts: string[]): Promise<number> {
    if (hosts.length === 0) return 0;
    return this.redis.crawlMarkReady(this.k.ready, this.k.readySeq, this.k.givenUp, this.k.active, ...hosts);
  }

  /** The dispatch generation of each host's slot, null for a host that holds none. */
  async slotGens(hosts: string[]): Promise<(number | null)[]> {
    if (hosts.length === 0) return [];
    return (await this.redis.hmget(this.k.active, ...hosts)).map((g) => (g === null ? null : Number(g)));
  }

  /** The oldest ready hosts, with the sequence number each was read at. */
  async readyBatch(limit: number): Promise<{ host: string; seq: string }[]> {
    if (limit <= 0) return [];
    const flat = await this.redis.zrange(this.k.ready, 0, limit - 1, 'WITHSCORES');
    const out: { host: string; seq: string }[] = [];
    for (let i = 0; i < flat.length; i += 2) out.push({ host: flat[i], seq: flat[i + 1] });
    return out;
  }

  /**
   * Runs `fn` as the campaign's only dispatch round: a round that runs again
   * (its workflow task timed out on a loaded machine while the first attempt
   * went on) waits for the one under way instead of starting the same hosts twice.
   */
  async exclusiveDispatch<T>(fn: () => Promise<T>, waitMs = DISPATCH_WAIT_MS, holdMs = DISPATCH_HOLD_MS): Promise<T> {
    const token = `${process.pid}-${Math.random().toString(36).slice(2)}`;
    const deadline = Date.now() + waitMs;
    while ((await this.redis.set(this.k.dispatching, token, 'PX', holdMs, 'NX')) !== 'OK') {
      if (Date.now() > deadline) throw new Error(`another dispatch round of ${this.campaignKey} has held the lock for ${waitMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Renewed while the round runs, so a long round keeps it, and a holder that dies (a worker
    // killed mid-round) leaves it for holdMs, not for the longest round there could be: with a
    // 120 s lock, a kill mid-round held every new host of the campaign back for 106 s.
    const renew = setInterval(() => void this.renewDispatch(token, holdMs).catch(() => undefined), Math.floor(holdMs / 3));
    try {
      return await fn();
    } finally {
      clearInterval(renew);
      if ((await this.redis.get(this.k.dispatching)) === token) await this.redis.del(this.k.dispatching);
    }
  }

  /** The dispatch lock held under `token` lasts `holdMs` more; false when it is not (or no longer) that holder's. */
  async renewDispatch(token: string, holdMs: number): Promise<boolean> {
    return (await this.redis.crawlLockRenew(this.k.dispatching, token, holdMs)) === 1;
  }

  /** `count` new dispatch generations, the last one returned. */
  nextGens(count: number): Promise<number> {
    return this.redis.incrby(this.k.gen, count);
  }

  async dispatched(host: string, seq: string, gen: number): Promise<void> {
    await this.redis.crawlDispatched(this.k.ready, this.k.active, host, seq, gen);
  }

  /** The host's workflow gives its slot up (only if generation `gen` still holds it). */
  async release(host: string, gen: number): Promise<{ released: boolean; active: number; ready: number }> {
    const [released, active, ready] = await this.redis.crawlRelease(this.k.active, this.k.ready, host, gen);
    return { released: released === 1, active, ready };
  }

  /**
   * A revisit host with nothing due for `dueInMs` is parked until then:
   * under its own generation `gen` when hosts wait for a slot and `capped`
   * (it gives the slot up); again when it is parked already, nobody holds
   * its slot and no dispatch is on its way (a wake made its workflow run on
   * after parking: it must not sleep slotless, out of the campaign's sight).
   * Not when a dispatch holds the slot or is on its way (the host is in ready).
   */
  async park(host: string, gen: number, dueInMs: number, capped: boolean): Promise<{ parked: 'released' | 'slotless' | null; active: number; ready: number }> {
    const [how, active, ready] = await this.redis.crawlPark(this.k.active, this.k.ready, this.k.parked, host, gen, Math.max(0, Math.round(dueInMs)), capped ? 1 : 0);
    return { parked: how === 1 ? 'released' : how === 2 ? 'slotless' : null, active, ready };
  }

  /** After a lost write (the sweep): parks a revisit host at `dueAt` (Redis clock) unless it holds a slot, waits for one or is parked. */
  async parkIfIdle(host: string, dueAt: number): Promise<boolean> {
    return (await this.redis.crawlParkIfIdle(this.k.active, this.k.ready, this.k.parked, host, Math.round(dueAt))) === 1;
  }

  /** Parked hosts, a page at a time. */
  async *parkedHosts(): AsyncGenerator<string[]> {
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.zscan(this.k.parked, cursor, 'COUNT', 500);
      cursor = next;
      yield flat.filter((_, i) => i % 2 === 0);
    } while (cursor !== '0');
  }

  /** Parked hosts whose revisits are due go back in line for a slot (at most `limit` a call); how many did. */
  async unparkDue(limit = 1_000): Promise<number> {
    return this.redis.crawlUnpark(this.k.parked, this.k.ready, this.k.readySeq, this.k.givenUp, this.k.active, limit);
  }

  /** How many hosts wait for a slot. */
  async readyCount(): Promise<number> {
    return this.redis.zcard(this.k.ready);
  }

  /**
   * Hosts holding a slot, hosts waiting for one, and how many of the slot
   * holders an operator paused (`pausedActive`): a paused host that holds no
   * slot (parked, waiting in line, done) frees none.
   */
  async counts(): Promise<{ active: number; ready: number; pausedActive: number }> {
    const [active, ready, paused] = await Promise.all([this.redis.hlen(this.k.active), this.redis.zcard(this.k.ready), this.redis.smembers(this.k.pausedHosts)]);
    const held = paused.length === 0 ? [] : await this.redis.hmget(this.k.active, ...paused);
    return { active, ready, pausedActive: held.filter((g) => g !== null).length };
  }

  /** Active hosts and their generations, a page at a time (HSCAN: bounded work per call). */
  async *activeHosts(): AsyncGenerator<{ host: string; gen: number }[]> {
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(this.k.active, cursor, 'COUNT', 500);
      cursor = next;
      const page: { host: string; gen: number }[] = [];
      for (let i = 0; i < flat.length; i += 2) page.push({ host: flat[i], gen: Number(flat[i + 1]) });
      if (page.length) yield page;
    } while (cursor !== '0');
  }

  async isActive(host: string): Promise<boolean> {
    return (await this.redis.hexists(this.k.active, host)) === 1;
  }

  /** A host whose workflow ended without releasing: its slot is freed and it is never dispatched again. */
  async giveUp(host: string, problem: string): Promise<boolean> {
    const [added] = await Promise.all([this.redis.sadd(this.k.givenUp, host), this.redis.hdel(this.k.active, host), this.redis.zrem(this.k.ready, host)]);
    if (added === 1) await this.addProblem(problem);
    return added === 1;
  }

  /** For each host, whether it was given up. One call for a whole dispatch batch. */
  async givenUpOf(hosts: string[]): Promise<boolean[]> {
    if (hosts.length === 0) return [];
    return (await this.redis.smismember(this.k.givenUp, ...hosts)).map((m) => m === 1);
  }

  async record(host: string, r: HostRecord): Promise<boolean> {
    return (await this.redis.crawlHostRecord(this.k.hosts, this.k.totals, this.k.attention, host, JSON.stringify(r), attentionScore(r))) === 1;
  }

  async get(host: string): Promise<HostRecord | null> {
    const raw = await this.redis.hget(this.k.hosts, host);
    return raw ? (JSON.parse(raw) as HostRecord) : null;
  }

  /** The records of these hosts (null where there is none), in one call. */
  async getMany(hosts: string[]): Promise<(HostRecord | null)[]> {
    if (hosts.length === 0) return [];
    return (await this.redis.hmget(this.k.hosts, ...hosts)).map((raw) => (raw ? (JSON.parse(raw) as HostRecord) : null));
  }

  /** For each host, whether it has a record (a session of its workflow has run). One call. */
  async haveRecords(hosts: string[]): Promise<boolean[]> {
    if (hosts.length === 0) return [];
    return (await this.redis.hmget(this.k.hosts, ...hosts)).map((r) => r !== null);
  }

  /**
   * Hosts in order of attention, `offset` and `limit` bounding the work (a page of `crawler status`).
   * The first page also shows the hosts that may be requesting but whose session has not written
   * its record yet (`starting`): a session writes its first record 2 s in or at its end (issue 27),
   * so without them a host dispatched a moment ago would be missing, or show the 'done' of its
   * previous run, while it fetches.
   */
  async page(offset: number, limit: number): Promise<(HostRecord & { host: string })[]> {
    if (limit <= 0) return [];
    const hosts = await this.redis.zrange(this.k.attention, offset, offset + limit - 1);
    const records = await this.getMany(hosts);
    const listed = hosts.flatMap((host, i) => (records[i] ? [{ host, ...records[i] }] : []));
    if (offset > 0) return listed;
    const starting = await this.starting(limit);
    // A host re-dispatched after a run that ended keeps that run's counts (the totals hold them), shown as starting.
    const rerun = new Set(starting.filter((x) => x.hasRecord).map((x) => x.host));
    const fresh = starting.filter((x) => !x.hasRecord).map(({ host }) => ({ host, ...startingRecord() }));
    return [...listed.map((r) => (rerun.has(r.host) ? { ...r, state: 'starting' as const } : r)), ...fresh];
  }

  /**
   * Up to `limit` hosts holding a slot whose record is missing or says 'done' (a run before this
   * dispatch). HSCAN over the slots: bounded work per call.
   */
  private async starting(limit: number): Promise<{ host: string; hasRecord: boolean }[]> {
    const found: { host: string; hasRecord: boolean }[] = [];
    for await (const batch of this.activeHosts()) {
      const records = await this.getMany(batch.map((b) => b.host));
      batch.forEach((b, i) => {
        const r = records[i];
        if (found.length < limit && (r === null || r.state === 'done')) found.push({ host: b.host, hasRecord: r !== null });
      });
      if (found.length >= limit) break;
    }
    return found;
  }

  /** Every host record, a page at a time (HSCAN: bounded work per call, stable under concurrent writes). */
  async *records(): AsyncGenerator<(HostRecord & { host: string })[]> {
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(this.k.hosts, cursor, 'COUNT', 500);
      cursor = next;
      const page: (HostRecord & { host: string })[] = [];
      for (let i = 0; i < flat.length; i += 2) page.push({ host: flat[i], ...(JSON.parse(flat[i + 1]) as HostRecord) });
      if (page.length) yield page;
    } while (cursor !== '0');
  }

  async totals(): Promise<CampaignTotals> {
    const [t, rate] = await Promise.all([this.redis.hgetall(this.k.totals), bloomRate(this.redis, this.campaignKey)]);
    const filter = rate === null ? {} : { seenFilter: { rate, expectedSkipped: Number(t[SEEN_SKIPPED_FIELD] ?? 0) / BLOOM_SKIPPED_SCALE } };
    return { ...countersOf(t), frontier: Number(t.frontier ?? 0), hosts: Number(t.hosts ?? 0), ...filter };
  }

  /** Totals with the slot counts: what a progress display shows, as fresh as the sessions' last records (≤ 2 s). */
  async live(): Promise<CampaignTotals & { activeHosts: number; readyHosts: number }> {
    const [t, c] = await Promise.all([this.totals(), this.counts()]);
    return { ...t, activeHosts: c.active, readyHosts: c.ready };
  }

  async control(): Promise<CampaignControl> {
    const [version, paused, stop, minDelayMs, cap] = await this.redis.hmget(this.k.control, 'version', 'paused', 'stop', 'minDelayMs', 'maxActiveHosts');
    return controlOf(version, paused, stop, minDelayMs, cap);
  }

  /** What a session checks between pages: the control hash plus its own host's pause, delay and render mode, in one command (all under the campaign's tag). */
  async sessionControl(host: string): Promise<CampaignControl & { hostPaused: boolean; hostDelayMs: number | null; hostRender: RenderMode | null; hostGivenUp: boolean }> {
    const [version, paused, stop, minDelayMs, cap, hostPaused, hostDelay, hostRender, hostGivenUp] = await this.redis.crawlSessionControl(
      this.k.control,
      this.k.pausedHosts,
      this.k.hostDelays,
      this.k.hostRender,
      this.k.givenUp,
      host,
    );
    return {
      ...controlOf(version, paused, stop, minDelayMs, cap),
      hostPaused: hostPaused === 1,
      hostDelayMs: hostDelay ? Number(hostDelay) : null,
      hostRender: renderMode(hostRender),
      hostGivenUp: hostGivenUp === 1,
    };
  }

  async setControl(fields: Partial<{ version: number; paused: boolean; stop: CampaignControl['stop']; minDelayMs: number | null; maxActiveHosts: number | null }>): Promise<void> {
    const flat: string[] = [];
    for (const [f, v] of Object.entries(fields)) flat.push(f, v === null ? '' : typeof v === 'boolean' ? (v ? '1' : '0') : String(v));
    if (flat.length) await this.redis.hset(this.k.control, ...flat);
  }

  /** The first reason to stop wins (a budget reached, then a cancel, is still a budget stop). */
  async requestStop(reason: NonNullable<CampaignControl['stop']>): Promise<CampaignControl['stop']> {
    await this.redis.hsetnx(this.k.control, 'stop', reason);
    return (await this.control()).stop;
  }

  async setHostPaused(host: string, paused: boolean): Promise<void> {
    if (paused) await this.redis.sadd(this.k.pausedHosts, host);
    else await this.redis.srem(this.k.pausedHosts, host);
  }

  async pausedHosts(): Promise<string[]> {
    return this.redis.smembers(this.k.pausedHosts);
  }

  async setHostDelay(host: string, ms: number): Promise<void> {
    await this.redis.hset(this.k.hostDelays, host, String(ms));
  }

  async hostDelays(): Promise<Record<string, number>> {
    const raw = await this.redis.hgetall(this.k.hostDelays);
    return Object.fromEntries(Object.entries(raw).map(([h, v]) => [h, Number(v)]));
  }

  /** An operator's render mode for one host (null: the campaign's own again). */
  async setHostRender(host: string, render: RenderMode | null): Promise<void> {
    if (render === null) await this.redis.hdel(this.k.hostRender, host);
    else await this.redis.hset(this.k.hostRender, host, render);
  }

  /** The hosts whose render mode an operator set, and to what. */
  async hostRenders(): Promise<Record<string, RenderMode>> {
    const out: Record<string, RenderMode> = {};
    for (const [h, v] of Object.entries(await this.redis.hgetall(this.k.hostRender))) {
      const mode = renderMode(v);
      if (mode) out[h] = mode;
    }
    return out;
  }

  async addProblem(text: string): Promise<void> {
    const n = await this.redis.incr(this.k.problemCount);
    if (n <= PROBLEMS_KEPT) await this.redis.rpush(this.k.problems, text);
  }

  async problems(limit: number): Promise<{ count: number; list: string[] }> {
    const [count, list] = await Promise.all([this.redis.get(this.k.problemCount), this.redis.lrange(this.k.problems, 0, limit - 1)]);
    return { count: Number(count ?? 0), list };
  }
}
