// Continuous crawling (docs/continuous-crawling.md): a host whose frontier
// is empty takes what is due for a revisit into it; with nothing due it
// sleeps until the earliest revisit, in the session when that is soon, else
// by ending the session. A host that ends so gives its slot up until then
// (it is parked) when hosts wait for slots or it holds none; otherwise its
// workflow sleeps durably, and new URLs for the host end that sleep early.
import type { CampaignSettings } from '../src/config/campaign';
import type { RevisitQueue } from '../src/redis/revisit';
import type { SlotDeps } from './host-slot';
import type { SessionEnd, SessionResult } from './types';

/**
 * What a session with an empty frontier does after the due-move: claim what it moved, end
 * drained (nothing scheduled), sleep here until the next revisit (sooner than the durable-sleep
 * threshold), or end until it (parked, or asleep in its workflow).
 */
export type RevisitTurn = { kind: 'claim' } | { kind: 'drained' } | { kind: 'sleep'; ms: number } | { kind: 'until'; ms: number; reason: string };

export function revisitTurn(due: { moved: number } & RevisitQueue, thresholdMs: number): RevisitTurn {
  if (due.moved > 0) return { kind: 'claim' };
  if (due.nextInMs === null) return { kind: 'drained' };
  if (due.nextInMs < thresholdMs) return { kind: 'sleep', ms: due.nextInMs };
  const reason = `revisits: ${due.scheduled} URL(s) scheduled, the next due in ${Math.ceil(due.nextInMs / 1000)} s`;
  return { kind: 'until', ms: due.nextInMs, reason };
}

/** The slot cap a parking goes by: the operator's (maxActiveHosts as the last dispatch round saw it), else the settings'. */
export function slotCap(control: { maxActiveHosts?: number | null }, s: CampaignSettings): number | null {
  return control.maxActiveHosts !== undefined ? control.maxActiveHosts : s.politeness.maxActiveHosts;
}

/** How the session ends until its next revisit: parked (its slot free for a host waiting for one), or asleep in its workflow. */
export interface UntilRevisit {
  how: Extract<SessionEnd, 'drained' | 'wait'>;
  more: Partial<SessionResult>;
}

/** The end, from whether the host was parked. */
export function untilRevisitEnd(parked: boolean, nextInMs: number, reason: string): UntilRevisit {
  if (parked) return { how: 'drained', more: { released: true, waitMs: nextInMs, reason: `parked until a revisit is due, its slot free for a host waiting for one: ${reason}` } };
  // New URLs for this host end that sleep early (wakeSleepingHolders).
  return { how: 'wait', more: { waitMs: nextInMs, reason, wakeable: true } };
}

/**
 * Hosts wait for a slot: give this one up until its next revisit is due rather than hold it
 * asleep. A host that holds no slot parks too. URLs enqueued since the empty claim found the host
 * holding its slot: it is put in line for one now. `nudge` when the slot it gave up is free.
 */
export async function parkUntilRevisit(d: SlotDeps, cap: number | null, nextInMs: number, reason: string): Promise<UntilRevisit> {
  const p = await d.hosts.park(d.host, d.gen, nextInMs, cap !== null);
  if (p.parked) {
    if ((await d.frontier.size()) > 0) await d.hosts.markReady([d.host]);
    if (p.parked === 'released') d.nudge();
  }
  return untilRevisitEnd(p.parked !== null, nextInMs, reason);
}
