// Opening a host session: the campaign's control and settings as of now, and
// the host's frontier taken over by this attempt of the session, so that an
// older attempt still running somewhere stops at its next claim.
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { CampaignSettings } from '../src/config/campaign';
import { SESSION_HEARTBEAT } from '../src/config/retry-policy';
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { Frontier, SessionSupersededError } from '../src/redis/frontier';
import { HostClock } from '../src/redis/host-clock';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import type { SessionControl } from './session-control';
import type { SessionInput } from './types';
import { frontierOf } from './frontier-of';

/**
 * What a session starts from. `token`: this attempt's, which its claims carry; `frontier` writes as
 * this attempt (its owner value and fencing number); `clockKey`: the host clock the session paces its
 * requests by, which knows the attempt's fencing number already.
 */
export interface OpenedSession {
  ctx: Context;
  hosts: CampaignHosts;
  control: SessionControl;
  campaign: CampaignRuntime;
  frontier: Frontier;
  token: string;
  clockKey: string;
  heartbeat: Heartbeat;
}

/** The session's heartbeat: kept coming while it runs, whatever its pages do; stopped at its end, whichever way it ends. */
export interface Heartbeat {
  stop(): void;
}

/**
 * One heartbeat every `everyMs`, the first `everyMs` after the session starts, not at once (the
 * SDK sends a session's first heartbeat to the server at once: a billable action for every
 * session). A timer rather than a beat between pages, so a page that takes long does not starve
 * it. Local activities do not heartbeat (their workflow task is their lease).
 */
export function heartbeatOf(ctx: Pick<Context, 'heartbeat'> & { info: Pick<Context['info'], 'isLocal'> }, everyMs: number = SESSION_HEARTBEAT.throttleMs): Heartbeat {
  if (ctx.info.isLocal) return { stop: () => undefined };
  const timer = setInterval(() => ctx.heartbeat(), everyMs);
  return { stop: () => clearInterval(timer) };
}

/**
 * This attempt's claim token. An older attempt of the same session still running somewhere (its
 * heartbeat timed out under load) fails its next claim and stops, so at most its page in flight is
 * fetched twice. A local session run again after its workflow task timed out (its worker stalled
 * or died) has the same run, ID and attempt as the one before: a nonce tells them apart, so the
 * older one loses its claim.
 */
export function attemptToken(info: { runId: string | undefined; activityId: string; attempt: number; isLocal: boolean }, nonce: () => string = randomUUID): string {
  const attempt = `${info.runId}/${info.activityId}/${info.attempt}`;
  return info.isLocal ? `${attempt}/local-${nonce()}` : attempt;
}

/** How long a session runs at most: session.maxMs, or session.firstLocalMs for a host's first session (a local activity) when shorter. */
export function sessionMaxMs(s: CampaignSettings, local: boolean | undefined): number {
  return local ? Math.min(s.session.maxMs, s.session.firstLocalMs) : s.session.maxMs;
}

/** A schedule time further back than this is none (a mock activity environment says 1 ms after 1970): the session's start stands in. */
const PLAUSIBLE_SCHEDULE_MS = 60 * 60_000;

/**
 * When a session that started at `started` reaches its time cap. A host's first session (a local
 * activity) counts from when its attempt was scheduled (`scheduledMs`, the worker's own clock): it
 * runs inside its workflow's task, whose timeout counted from before it began, and each of its waits
 * ends by then, so it does not outlive the task (whose retry would run it again elsewhere).
 */
export function sessionDeadline(s: CampaignSettings, local: boolean | undefined, scheduledMs: number | undefined, started: number): number {
  const plausible = scheduledMs !== undefined && scheduledMs <= started && started - scheduledMs < PLAUSIBLE_SCHEDULE_MS;
  return (local && plausible ? scheduledMs : started) + sessionMaxMs(s, local);
}

/** Reads the campaign's control and settings, and takes the host over for this attempt. */
export async function openSession(rt: WorkerRuntime, input: SessionInput): Promise<OpenedSession> {
  const ctx = Context.current();
  if (input.sleptMs) rt.deps.metrics?.recordPolitenessWait(input.sleptMs);
  const hosts = new CampaignHosts(rt.deps.redis, input.campaignKey);
  const control = await hosts.sessionControl(input.host);
  const campaign = await rt.campaign(input.campaignKey, Math.max(input.configVersion, control.version));
  if (ctx.cancellationSignal.aborted) throw new Error('session cancelled before it started');
  // With the campaign's spill options: this session's commits spill past the bound, its claims read segments back.
  const frontier = frontierOf(rt, campaign, input.host);
  const { info } = ctx;
  const token = attemptToken({ runId: info.workflowExecution?.runId, activityId: info.activityId, attempt: info.attempt, isLocal: info.isLocal });
  const clockKey = await campaign.clockKeys.keyFor(input.host);
  await takeOver(rt, frontier, token, clockKey, clockOwner(input.campaignKey, input.host));
  return { ctx, hosts, control, campaign, frontier, token, clockKey, heartbeat: heartbeatOf(ctx) };
}

/** The owner of a host's session on its clock: one per campaign and host (activities/session-clock.ts). */
export const clockOwner = (campaignKey: string, host: string): string => `${campaignKey}|${host}`;

/**
 * The host taken over under a new fencing number, made known to its clock at once: an older attempt
 * still waiting to send (for the clock, for an address slot) is refused from now on, not only once
 * this one takes the clock. A clock that knows a higher number means either a newer attempt
 * registered first (the host is no longer this one's: it stops) or, the host still this attempt's,
 * that the host's counter fell behind (Redis lost its last writes): taken over again above it.
 */
async function takeOver(rt: WorkerRuntime, frontier: Frontier, token: string, clockKey: string, owner: string): Promise<void> {
  const redis = rt.deps.redis;
  let fence = await frontier.takeOver(token);
  let newest = await new HostClock(redis, clockKey, token, fence).register(owner);
  if (newest <= fence) return;
  await frontier.assertOwner();
  fence = await frontier.takeOver(token, newest);
  newest = await new HostClock(redis, clockKey, token, fence).register(owner);
  if (newest > fence) throw new SessionSupersededError(frontier.host);
}
