// The host clock (src/redis/host-clock.ts) as one host session holds it: the
// session is its only owner (activities/crawl-session.ts). Every request of
// the session, a page's or its login's, is one turn: take, send, give back
// with the host's delay; a turn in which nothing went out gives the lease
// back unused. Each wait for the clock counts in the politeness-wait metric.
import { acquireWithin, HostClock } from '../src/redis/host-clock';
import { SessionSupersededError } from '../src/redis/frontier';
import type { CampaignSettings } from '../src/config/campaign';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import { clockOwner } from './session-open';

/**
 * How long one turn may hold the clock before another owner may take it: a request's whole
 * time, the delay, and some slack; a rendered page holds it through its render too
 * (docs/rendering.md). A session retried after its worker died may take it over once the
 * delay has passed since the dead attempt took it (crawlClockAcquire), never sooner.
 */
export function clockLeaseMs(s: CampaignSettings, delayMs: number, rendered: boolean): number {
  return s.fetch.totalTimeoutMs + delayMs + 5_000 + (rendered ? s.browser.pageTimeoutMs : 0);
}

export class SessionClock {
  /** The session holds the clock now (took it, and has not given it back). */
  held = false;

  /**
   * The host's clock (`clockKey`: under the campaign's politeness key) for one session attempt
   * (`token`, fencing number `fence`). One owner per campaign and host: a session retried after its
   * worker died may take the clock once the delay has passed since the dead attempt took it or sent
   * its request (crawlClockAcquire), never sooner; an attempt older than one the clock has seen may
   * not take it at all.
   */
  static open(
    rt: WorkerRuntime,
    campaign: CampaignRuntime,
    o: { host: string; clockKey: string; token: string; fence: number; delay: { ms: number; reason: string }; rendered: boolean; signal: AbortSignal },
  ): SessionClock {
    const clock = new HostClock(rt.deps.redis, o.clockKey, o.token, o.fence);
    const lease = clockLeaseMs(campaign.settings, o.delay.ms, o.rendered);
    return new SessionClock(clock, clockOwner(campaign.key, o.host), lease, o.delay, o.signal, (ms) => rt.deps.metrics?.recordPolitenessWait(ms));
  }

  constructor(
    private readonly clock: HostClock,
    /** One owner per campaign and host (`campaign|host`). */
    private readonly owner: string,
    private readonly leaseMs: number,
    /** The host's delay (an acquire waits this long after the host's last request), and why it is what it is. */
    private readonly delay: { ms: number; reason: string },
    private readonly signal: AbortSignal,
    private readonly onWait: (ms: number) => void,
  ) {}

  /**
   * Takes the clock, waiting here for any gap shorter than `maxWaitMs`: 0 once held, else the
   * wait still ahead, which the session hands to its workflow as a durable sleep. A login's
   * requests and the page after them wait inline whatever the wait (`Infinity`): they are one
   * turn of the session.
   */
  async take(maxWaitMs: number): Promise<number> {
    const wait = await acquireWithin(this.clock, this.owner, this.leaseMs, this.delay.ms, maxWaitMs, this.signal, this.onWait);
    if (wait === 0) this.held = true;
    return wait;
  }

  /**
   * One request in a clock turn of its own: the clock taken (inline, whatever the wait) unless the
   * session holds it already, the request sent, the clock given back with the host's delay. A
   * request `called` off before it is sent (a login past its time limit while it waited its turn)
   * is not sent: the clock goes back unused, and the turn throws the reason.
   */
  async turn<T>(send: () => Promise<T>, called?: AbortSignal): Promise<T> {
    if (!this.held) await this.take(Number.POSITIVE_INFINITY);
    if (called?.aborted) {
      await this.abandon();
      throw called.reason;
    }
    let sent = true;
    try {
      return await send();
    } catch (err) {
      // Refused by the stamp (beforeSend): nothing went out, and the lease (if still this attempt's) goes back unused.
      if (err instanceof SessionSupersededError) sent = false;
      throw err;
    } finally {
      if (sent) await this.release();
      else await this.abandon().catch(() => undefined);
    }
  }

  /**
   * Just before a request under the clock goes out (the HTTP client's `beforeSend`, once the
   * address slot is held): the clock is still this attempt's and no newer attempt of the host has
   * been seen, and the lease now runs from this moment. Throws SessionSupersededError otherwise: the
   * request must not go (a newer attempt owns the host, or will once it takes the clock).
   */
  readonly stamp = async (): Promise<void> => {
    if (!(await this.clock.stamp(this.owner, this.leaseMs))) throw new SessionSupersededError(this.clock.name);
  };

  /** Why the session waits `wait` for the clock: up to one delay away is its own pace; longer is someone else's request (another campaign, a Retry-After). */
  waitReason(wait: number): string {
    return wait <= this.delay.ms ? this.delay.reason : 'host clock: another request to this host is too recent';
  }

  /**
   * A request went out (or may have): the next one may go `pauseMs` (the delay, or a longer Retry-After) after the host's
   * last request ended, `idleMs` ago (a rendered page's last request to its host; 0: now).
   */
  async release(pauseMs = this.delay.ms, idleMs = 0): Promise<void> {
    this.held = false;
    await this.clock.release(this.owner, pauseMs, idleMs);
  }

  /** Taken, but nothing went out: the clock is free at once, the host's delay counting from its real last request. */
  async abandon(): Promise<void> {
    this.held = false;
    await this.clock.abandon(this.owner);
  }
}
