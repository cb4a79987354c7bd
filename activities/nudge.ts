// Sessions tell the campaign that something changed for it (hosts became
// ready, a slot was freed, a budget was reached) with one small signal: the
// campaign then looks at Redis, where the news is. The signal carries
// nothing, so nudges cannot be stale, only early.
//
// Every signal is an event in the campaign's history, and every one that
// finds the campaign idle one more workflow task: thousands of sessions
// nudging once a second each would fill the history in minutes. So nudges
// are coalesced across all the campaign's sessions: a nudge is sent only by
// the session that sets the campaign's `nudged` key, which the next dispatch
// round deletes before it reads Redis. A session that finds the key set
// wrote its news before looking, and a round is on its way that starts
// after that look: it sees the news, and the session sends nothing. At most
// one nudge per dispatch round (and per NUDGE_HOLD_MS, should a round never
// come) reaches the history, however many sessions there are.
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { campaignKeys, hostKeys } from '../src/redis/keys';
import type { RedisLike } from '../src/redis/scripts';
import { signalIfRunning } from '../src/temporal/signal';
import { domainWorkflowId } from '../workflows/ids';
import { campaignNudgeSignal, wakeSignal } from '../workflows/messages';
import type { WorkerRuntime } from './runtime';

/** A session sends at most one nudge per this long (its own news gathered in between). */
const NUDGE_EVERY_MS = 1_000;
/**
 * How long a sent nudge holds the key if no dispatch round deletes it (the
 * campaign continuing as new, finishing, or gone): then nudges go out again.
 */
export const NUDGE_HOLD_MS = 10_000;

/**
 * Takes the campaign's nudge: true when the caller is to send the signal
 * (nobody's is on its way), false when a round that starts later will see
 * the caller's news anyway.
 */
export async function takeNudge(redis: RedisLike, campaignKey: string): Promise<boolean> {
  return (await redis.set(campaignKeys(campaignKey).nudged, '1', 'PX', NUDGE_HOLD_MS, 'NX')) === 'OK';
}

/** A dispatch round starts: nudges sent from now on are news for the next one. */
export async function nudgesSeen(redis: RedisLike, campaignKey: string): Promise<void> {
  await redis.del(campaignKeys(campaignKey).nudged);
}

export class CampaignNudger {
  private pending = false;
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly rt: WorkerRuntime,
    private readonly campaignWorkflowId: string,
    private readonly campaignKey: string,
  ) {}

  nudge(): void {
    this.pending = true;
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.sending = this.send();
    }, NUDGE_EVERY_MS);
  }

  /** Sends a pending nudge now (the session is ending). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.sending;
    await this.send();
  }

  private async send(): Promise<void> {
    if (!this.pending) return;
    this.pending = false;
    const redis = this.rt.deps.redis;
    try {
      if (!(await takeNudge(redis, this.campaignKey))) return;
      // A campaign that is over has nobody to tell (signalIfRunning ignores that).
      await signalIfRunning(this.rt.deps.temporal, this.campaignWorkflowId, campaignNudgeSignal).catch(async (err: unknown) => {
        // Not sent: the next session's nudge must not count on this one.
        await nudgesSeen(redis, this.campaignKey);
        throw err;
      });
    } catch (err) {
      this.rt.log.warn('could not nudge the campaign', { campaign: this.campaignWorkflowId, error: String(err) });
    }
  }
}

/**
 * After a page that marked `hosts` ready before its commit (`readied` of them became so): a
 * revisit host among them that holds its slot may be asleep until its next due URL, and is woken;
 * the campaign is nudged when any host became ready (to dispatch it).
 */
export async function afterWake(
  rt: WorkerRuntime,
  nudger: CampaignNudger,
  c: { campaignKey: string; campaignId: string; revisits: boolean },
  woke: { hosts: string[]; readied: number },
): Promise<void> {
  let marked = woke.readied;
  if (c.revisits) marked += await wakeSleepingHolders(rt, c.campaignKey, c.campaignId, woke.hosts);
  if (marked > 0) nudger.nudge();
}

/**
 * Revisit campaigns: new URLs for hosts that hold their slot while they sleep
 * until their next due URL (which may be days away). markReady leaves a
 * slot holder alone, so without this the URLs would wait for that wake-up:
 * the host's workflow is woken instead (its revisit sleep ends on a wake).
 * Marking the host awake first, only if nobody did, sends one wake per sleep
 * however many sessions find URLs for it; a host that is consuming its
 * frontier is awake already. The mark expires unless a claim renews it, so
 * a wake lost on the way (a worker killed between the two) is sent again by
 * a later enqueue. A workflow that is gone gets its host marked ready; a
 * signal that fails otherwise is logged, and the URLs wait for the host's
 * own wake-up. `campaignId` names the host workflows (workflows/ids.ts); at
 * most `most` are woken. Returns how many hosts were marked ready.
 */
export async function wakeSleepingHolders(rt: WorkerRuntime, campaignKey: string, campaignId: string, hosts: string[], most = Infinity): Promise<number> {
  if (hosts.length === 0) return 0;
  const redis = rt.deps.redis;
  const holders = new CampaignHosts(redis, campaignKey);
  const gens = await holders.slotGens(hosts);
  let marked = 0;
  let sent = 0;
  for (const [i, host] of hosts.entries()) {
    const gen = gens[i];
    if (gen === null || sent >= most) continue;
    const awake = hostKeys(campaignKey, host).awake;
    if ((await redis.set(awake, '1', 'PX', WAKE_MARK_MS, 'NX')) !== 'OK') continue;
    try {
      if (await signalIfRunning(rt.deps.temporal, domainWorkflowId(campaignId, host), wakeSignal, { gen })) {
        sent++;
        continue;
      }
      await redis.del(awake);
      marked += await holders.markReady([host]);
    } catch (err) {
      await redis.del(awake).catch(() => undefined);
      rt.log.warn('could not wake a sleeping host: its new URLs wait for its next revisit', { host, error: String(err) });
    }
  }
  return marked;
}

/** How long a wake's awake mark lasts without a claim to renew it. */
const WAKE_MARK_MS = 120_000;
