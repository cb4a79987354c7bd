// A host's record: what `crawler status` and the domainStatus query show of
// it (src/redis/campaign-hosts.ts keeps it). Its session writes it every
// RECORD_EVERY_MS while it runs and once at its end, with the state the
// end's kind says the host is in.
import { LONG_SLEEP_MS } from '../src/config/retry-policy';
import type { CampaignHosts, HostRecord, HostState } from '../src/redis/campaign-hosts';
import type { Frontier } from '../src/redis/frontier';
import type { RevisitQueue } from '../src/redis/revisit';
import { hostStatsOf } from '../src/stats/counters';
import type { HostStats, SessionEnd, SessionResult } from './types';
import { SEEN_SKIPPED_FIELD } from '../src/redis/seen-bloom';

/** How often the host's record is brought up to date while the session runs. */
export const RECORD_EVERY_MS = 2_000;

/** What the end of a session says of its host: how long it waits, whether it backs off, whether it gave its slot up. */
export interface EndFacts {
  waitMs: number;
  backingOff?: boolean;
  released?: boolean;
}

/** The state a session's end leaves its host in, as its record shows it. */
export function hostStateAt(how: SessionEnd, end: EndFacts): HostState {
  switch (how) {
    case 'wait':
      if (end.backingOff) return 'backing-off';
      return end.waitMs >= LONG_SLEEP_MS ? 'sleeping' : 'crawling';
    case 'paused':
      return 'paused';
    case 'stopped':
      return 'done';
    case 'drained':
      // Still holding its slot: a newer dispatch holds it, and the host goes on.
      if (!end.released) return 'crawling';
      // Parked: its workflow ends, and a dispatch starts it again when a revisit is due.
      return end.waitMs > 0 ? 'sleeping' : 'done';
    case 'cap':
    case 'config':
      return 'crawling';
  }
}

/** What operators see of a host's revisit queue (host record, domainStatus query). */
export function revisitView(q: RevisitQueue, now = Date.now()): NonNullable<HostRecord['revisit']> {
  return { scheduled: q.scheduled, nextDueAt: q.nextInMs === null ? null : new Date(now + q.nextInMs).toISOString(), dueHour: q.dueHour, dueDay: q.dueDay };
}

/** What the session knows that the record and its result show: the host's delay, what it did so far. */
export interface SessionView {
  delay: { ms: number; reason: string };
  /** URLs finished by this session. */
  pages: number;
  lastUrl: string | null;
  lastStatus: number | null;
  /** Revisit campaigns: the host's revisit queue as last seen. */
  queue: RevisitQueue | null;
}

type Counts = Awaited<ReturnType<Frontier['statsAndSize']>>;

/** The host's record as one session writes it. */
export class HostRecordWriter {
  /**
   * When the record was last written: the session's start at first, so the first record is
   * written RECORD_EVERY_MS in or at the session's end, whichever is sooner. A one-page session
   * writes one record, not a 'crawling' one its end overwrites a second later (issue 27: about
   * 8 Redis commands a host).
   */
  private lastAt: number;
  /** The host's counters and frontier size when the session's end read them already (drained): the next record takes them. */
  private counted: Counts | null = null;

  constructor(
    private readonly hosts: CampaignHosts,
    private readonly frontier: Frontier,
    private readonly host: string,
    startedAt: number,
  ) {
    this.lastAt = startedAt;
  }

  /** RECORD_EVERY_MS have passed since the last record. */
  due(now = Date.now()): boolean {
    return now - this.lastAt >= RECORD_EVERY_MS;
  }

  /** Counts just read (after the host's slot was given up): the next record carries them instead of reading them again. */
  keep(counted: Counts | null): void {
    this.counted = counted;
  }

  /** Writes the record; returns the counters and frontier size it carries (the session's result takes them too). */
  async write(state: HostState, view: SessionView, extra: Partial<HostRecord> = {}): Promise<{ stats: HostStats; frontier: number }> {
    const { stats: st, size } = this.counted ?? (await this.frontier.statsAndSize());
    this.counted = null;
    const stats = hostStatsOf(st);
    this.lastAt = Date.now();
    await this.hosts.record(this.host, {
      state,
      ...stats,
      frontier: size,
      delayMs: view.delay.ms,
      reason: view.delay.reason,
      lastUrl: view.lastUrl,
      lastStatus: view.lastStatus,
      nextWakeAt: null,
      updatedAt: new Date().toISOString(),
      ...(view.queue ? { revisit: revisitView(view.queue) } : {}),
      // A Bloom filter campaign's expected skips (src/redis/seen-bloom.ts): summed into the campaign's totals.
      ...(st[SEEN_SKIPPED_FIELD] ? { seenSkipped: st[SEEN_SKIPPED_FIELD] } : {}),
      ...extra,
    });
    return { stats, frontier: size };
  }

  /**
   * The session's last record, with the state its end leaves the host in and when it wakes, and
   * the session's result. `more`: how it ended (no wait, and the delay's reason, unless it says).
   */
  async end(how: SessionEnd, more: Partial<SessionResult>, view: SessionView, o: { stop: SessionResult['stop']; configVersion: number }): Promise<SessionResult> {
    const settled = { ...more, waitMs: more.waitMs ?? 0, reason: more.reason ?? view.delay.reason };
    const nextWakeAt = settled.waitMs > 0 ? new Date(Date.now() + settled.waitMs).toISOString() : null;
    const counts = await this.write(hostStateAt(how, settled), view, { reason: settled.reason, nextWakeAt });
    return sessionResultOf(how, settled, view, { ...o, counts });
  }
}

/**
 * What a session's end hands its host workflow: how it ended and why (`more`, with the wait and
 * reason settled), what the session did, the counts its last record carried, the control's stop
 * and the settings version in force.
 */
export function sessionResultOf(
  how: SessionEnd,
  more: Partial<SessionResult> & { waitMs: number; reason: string },
  view: SessionView,
  o: { stop: SessionResult['stop']; configVersion: number; counts: { stats: HostStats; frontier: number } },
): SessionResult {
  return {
    end: how,
    waitMs: more.waitMs,
    backingOff: more.backingOff ?? false,
    ...(more.wakeable ? { wakeable: true } : {}),
    released: more.released ?? false,
    stop: more.stop ?? o.stop,
    configVersion: o.configVersion,
    pages: view.pages,
    stats: o.counts.stats,
    frontier: o.counts.frontier,
    delayMs: view.delay.ms,
    reason: more.reason,
    lastUrl: view.lastUrl,
    lastStatus: view.lastStatus,
    ...(view.queue ? { revisit: revisitView(view.queue) } : {}),
  };
}
