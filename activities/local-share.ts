// A host's first session runs as a local activity on the worker that runs the
// host's first workflow task (workflows/domain-crawl.ts). Local activities
// wait for this worker's slots in the order they were asked for, outside the
// task queue's fairness: a large campaign whose hosts all start at once would
// queue its first sessions ahead of a small campaign started a moment later,
// which then waits for the large one's whole start. So while more than one
// campaign uses this worker, each may hold its share of the slots with local
// first sessions; a first session past its campaign's share ends at once
// without a page, and the host's next session goes through the task queue,
// where each campaign's fairness key applies. A worker used by one campaign
// defers nothing until its first sessions fill the session slots. The
// worker's local activity slots are more than its session slots
// (BOOKKEEPING_LOCAL_SLOTS more): the campaigns' own bookkeeping (dispatch,
// releases) runs as local activities too, and must never wait behind first
// sessions.

/** Local activity slots a worker keeps beyond its session slots, for the campaigns' bookkeeping. */
export const BOOKKEEPING_LOCAL_SLOTS = 32;

/** A campaign counts as using this worker this long after its last session or dispatch here. */
export const CAMPAIGN_SEEN_MS = 30_000;

export class LocalSessionShare {
  private readonly inFlight = new Map<string, number>();
  private readonly seenAt = new Map<string, number>();
  private total = 0;

  /** `slots`: the worker's local activity slots (null: unbounded, never deferred). */
  constructor(private readonly slots: number | null) {}

  /** A campaign's session or dispatch ran on this worker. */
  touch(campaignKey: string, now = Date.now()): void {
    this.seenAt.set(campaignKey, now);
  }

  /** Whether a campaign's first session may run here now; if so, `leave` must follow. */
  tryEnter(campaignKey: string, now = Date.now()): boolean {
    this.touch(campaignKey, now);
    const n = this.inFlight.get(campaignKey) ?? 0;
    if (this.slots !== null && (n >= this.shareAt(now) || this.total >= this.slots)) return false;
    this.total++;
    this.inFlight.set(campaignKey, n + 1);
    return true;
  }

  leave(campaignKey: string): void {
    this.total--;
    const n = (this.inFlight.get(campaignKey) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(campaignKey);
    else this.inFlight.set(campaignKey, n);
  }

  /** Slots one campaign may hold: all of them while it is alone, an equal share (at least one) otherwise. */
  private shareAt(now: number): number {
    for (const [key, at] of this.seenAt) if (now - at > CAMPAIGN_SEEN_MS && !this.inFlight.has(key)) this.seenAt.delete(key);
    const campaigns = this.seenAt.size;
    return campaigns <= 1 ? Infinity : Math.max(1, Math.floor((this.slots ?? 0) / campaigns));
  }
}
