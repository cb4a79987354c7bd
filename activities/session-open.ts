// Opening a host session: the campaign's control and settings as of now, and
// the host's frontier taken over by this attempt of the session, so that an
// older attempt still running somewhere stops at its next claim.
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { CampaignSettings } from '../src/config/campaign';
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { Frontier } from '../src/redis/frontier';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import type { SessionControl } from './session-control';
import type { SessionInput } from './types';

/** The SDK throttles heartbeats (SESSION_HEARTBEAT.throttleMs); this only keeps them coming while a page takes long. */
const HEARTBEAT_EVERY_MS = 1_000;

/** What a session starts from. `token`: this attempt's, which its claims carry. */
export interface OpenedSession {
  ctx: Context;
  hosts: CampaignHosts;
  control: SessionControl;
  campaign: CampaignRuntime;
  frontier: Frontier;
  token: string;
  heartbeat: Heartbeat;
}

/** The session's heartbeat: kept coming while it runs, and once more between pages; stopped at its end, whichever way it ends. */
export interface Heartbeat {
  beat(): void;
  stop(): void;
}

/** Local activities do not heartbeat (their workflow task is their lease). */
function heartbeatOf(ctx: Context): Heartbeat {
  if (ctx.info.isLocal) return { beat: () => undefined, stop: () => undefined };
  const timer = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  return { beat: () => ctx.heartbeat(), stop: () => clearInterval(timer) };
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

/** Reads the campaign's control and settings, and takes the host over for this attempt. */
export async function openSession(rt: WorkerRuntime, input: SessionInput): Promise<OpenedSession> {
  const ctx = Context.current();
  if (input.sleptMs) rt.deps.metrics?.recordPolitenessWait(input.sleptMs);
  const hosts = new CampaignHosts(rt.deps.redis, input.campaignKey);
  const control = await hosts.sessionControl(input.host);
  const campaign = await rt.campaign(input.campaignKey, Math.max(input.configVersion, control.version));
  if (ctx.cancellationSignal.aborted) throw new Error('session cancelled before it started');
  const frontier = new Frontier(rt.deps.redis, input.campaignKey, input.host);
  const { info } = ctx;
  const token = attemptToken({ runId: info.workflowExecution?.runId, activityId: info.activityId, attempt: info.attempt, isLocal: info.isLocal });
  await frontier.takeOver(token);
  return { ctx, hosts, control, campaign, frontier, token, heartbeat: heartbeatOf(ctx) };
}
