// A host's slot (politeness.maxActiveHosts: how many hosts are crawled at
// once) as its session gives it up: when its frontier runs dry, when the
// campaign is ending, or (revisits, activities/revisit-parking.ts) until its
// next revisit is due. The campaign hears of it (a nudge) when a host waits
// for the slot, or when it may be done.
import type { CampaignControl, CampaignHosts } from '../src/redis/campaign-hosts';
import type { Frontier } from '../src/redis/frontier';

/** What giving up the slot needs: the campaign's hosts, the host and its frontier, the dispatch (`gen`) the session runs under. */
export interface SlotDeps {
  hosts: CampaignHosts;
  frontier: Frontier;
  host: string;
  gen: number;
  /** Tells the campaign (coalesced: activities/nudge.ts). */
  nudge: () => void;
}

type Counts = Awaited<ReturnType<Frontier['statsAndSize']>>;

/**
 * After a drained session's release: the campaign dispatches the next ready host into the slot,
 * or checks whether it is done; a host marked ready again (`late`) needs the dispatch too.
 */
export function drainedNudges(r: { released: boolean; active: number; ready: number }, late: boolean): boolean {
  return r.released && (late || r.ready > 0 || r.active === 0);
}

/**
 * The frontier ran dry: the slot is given up, unless a newer dispatch holds it. URLs enqueued
 * between the empty claim and the release found the host holding its slot and did not mark it
 * ready: it is marked now. `counted`: the host's counters and frontier size, read once after the
 * release for both (the end's record carries them); null when the slot was not released.
 */
export async function giveUpDrained(d: SlotDeps): Promise<{ released: boolean; counted: Counts | null }> {
  const r = await d.hosts.release(d.host, d.gen);
  const counted = r.released ? await d.frontier.statsAndSize() : null;
  const late = counted !== null && counted.size > 0 && (await d.hosts.markReady([d.host])) > 0;
  if (drainedNudges(r, late)) d.nudge();
  return { released: r.released, counted };
}

/** The campaign is ending: the slot is given up (its host workflow completes), and the campaign told when it was the last. */
export async function giveUpStopped(d: SlotDeps): Promise<{ released: boolean; stop: CampaignControl['stop'] }> {
  const r = await d.hosts.release(d.host, d.gen);
  if (r.active === 0) d.nudge();
  return { released: r.released, stop: (await d.hosts.control()).stop };
}
