// A rendered page's requests to other hosts than its own (docs/rendering.md,
// "Politeness"): each goes out in that host's turn, as if the host's own
// session sent it. Its robots.txt, read through the campaign's cache (fetched
// now, under its clock, when no session asked yet); its operator's pause;
// its address refusal; its delay (the operator's, the settings', its
// robots.txt Crawl-delay); and its host clock, shared with every worker and
// campaign, taken under an owner of its own (`render|campaign|page host`):
// the host's own session, which takes the clock under its owner, waits for
// the request as for any other, and our request waits for the session's.
// A host on the page's host's own clock (politeness.key domain or ip: a
// sibling subdomain) is already held by the page's session: its requests go
// without taking it again. One request at a time per host from one session;
// a turn that would come after the page's deadline is not waited for: the
// request is refused (what the rendered DOM names is still fetched later as
// an embed, in the host's own session).
import { setTimeout as sleep } from 'node:timers/promises';
import type { HostTurn, PageNetwork } from '../src/browser/page-routes';
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { HostClock } from '../src/redis/host-clock';
import { campaignKeys } from '../src/redis/keys';
import { delayFor } from './host-delay';
import { ensureRobots } from './robots';
import type { CampaignRuntime, WorkerRuntime } from './runtime';

/** A turn's lease outlives the page's deadline by this much at most: only a dead worker's lease runs out. */
const LEASE_SLACK_MS = 10_000;
/** A host refused for a while (its robots.txt backing off, its clock held by a robots.txt fetch) is asked again after this at the latest. */
const RETRY_UNSETTLED_MS = 30_000;

/** What a session knows of another host, for its pages' requests. */
type HostState =
  /** `clock` null: the host is on the page's host's own clock (politeness.key domain or ip), which the page's session holds already. */
  { kind: 'ok'; allows: ((url: string) => boolean) | null; delayMs: number; clock: HostClock | null; queue: Queue } | { kind: 'refused'; why: string; until: number };

/** One request at a time, in order. */
class Queue {
  #tail: Promise<void> = Promise.resolve();
  async enter(): Promise<() => void> {
    let leave!: () => void;
    const prev = this.#tail;
    this.#tail = new Promise<void>((resolve) => (leave = resolve));
    await prev;
    return leave;
  }
}

/**
 * Whether a turn that waits `waitMs` more can still come before the page's
 * deadline: the request must also be sent and answered before it, so a turn
 * at the very end is no turn.
 */
export function turnInTime(waitMs: number, now: number, deadlineAt: number): boolean {
  return now + waitMs < deadlineAt;
}

/** Other hosts' turns for the pages of one host session (a session renders one page at a time). */
export class OtherHostTurns implements NonNullable<PageNetwork['otherHosts']> {
  readonly #hosts = new Map<string, Promise<HostState>>();
  readonly #owner: string;

  constructor(
    private readonly rt: WorkerRuntime,
    private readonly campaign: CampaignRuntime,
    private readonly pageHost: string,
  ) {
    this.#owner = `render|${campaign.key}|${pageHost}`;
  }

  async turn(url: string, host: string, deadlineAt: number, signal: AbortSignal): Promise<HostTurn | null> {
    const state = await this.stateOf(host, url, deadlineAt, signal);
    if (state.kind === 'refused' || (state.allows && !state.allows(url))) return null;
    const leave = await state.queue.enter();
    try {
      if (!(await this.take(state, deadlineAt, signal))) {
        leave();
        return null;
      }
    } catch (err) {
      leave();
      throw err;
    }
    const { clock, delayMs } = state;
    return {
      done: async (sent) => {
        try {
          // The host's delay counts from the end of our request, as from any of its own.
          if (clock && sent) await clock.release(this.#owner, delayMs);
          else if (clock) await clock.abandon(this.#owner);
        } finally {
          leave();
        }
      },
    };
  }

  /** Takes the host's clock for one request, waiting while the turn can still come before the deadline. */
  private async take(state: Extract<HostState, { kind: 'ok' }>, deadlineAt: number, signal: AbortSignal): Promise<boolean> {
    for (;;) {
      if (signal.aborted || !turnInTime(0, Date.now(), deadlineAt)) return false;
      // The page's session holds this clock: waiting for it would be waiting for the page itself.
      if (!state.clock) return true;
      const lease = deadlineAt - Date.now() + LEASE_SLACK_MS;
      const wait = await state.clock.acquire(this.#owner, lease, state.delayMs);
      if (wait === 0) return true;
      if (!turnInTime(wait, Date.now(), deadlineAt)) return false;
      this.rt.deps.metrics?.recordPolitenessWait(wait);
      try {
        await sleep(wait, undefined, { signal });
      } catch {
        return false;
      }
    }
  }

  /** What the session knows of `host`, asked once (again only after a refusal that may pass). */
  private async stateOf(host: string, url: string, deadlineAt: number, signal: AbortSignal): Promise<HostState> {
    const known = this.#hosts.get(host);
    if (known) {
      const s = await known;
      if (s.kind === 'ok' || s.until > Date.now()) return s;
    }
    const asked = this.ask(host, url, deadlineAt, signal).catch((err: unknown): HostState => {
      if (signal.aborted) throw err;
      this.rt.log.warn("another host's robots.txt or settings not read: its requests are refused for now", { host, error: String(err).slice(0, 300) });
      return { kind: 'refused', why: 'error', until: Date.now() + RETRY_UNSETTLED_MS };
    });
    this.#hosts.set(host, asked);
    return asked;
  }

  private async ask(host: string, url: string, deadlineAt: number, signal: AbortSignal): Promise<HostState> {
    const { rt, campaign } = this;
    // Listed before any per-host key of it is written (robots.txt state, seen-set, captures): the retention finds them.
    await rt.deps.redis.sadd(campaignKeys(campaign.key).pageHosts, host);
    const control = await new CampaignHosts(rt.deps.redis, campaign.key).sessionControl(host);
    if (control.hostPaused) return { kind: 'refused', why: 'paused', until: Date.now() + RETRY_UNSETTLED_MS };
    const scheme = url.startsWith('https:') ? 'https' : 'http';
    const maxWaitMs = Math.max(0, deadlineAt - Date.now());
    const [key, heldClock] = await Promise.all([campaign.clockKeys.keyFor(host), campaign.clockKeys.keyFor(this.pageHost)]);
    const robots = await ensureRobots(rt, { campaign, host, maxWaitMs, signal, forPage: { scheme, heldClock } });
    if (robots.kind === 'wait') return { kind: 'refused', why: robots.why, until: Date.now() + Math.min(robots.waitMs, RETRY_UNSETTLED_MS) };
    // RFC 9309: robots.txt that kept failing means nothing of the host is fetched, this session's requests included.
    if (robots.kind === 'unavailable') return { kind: 'refused', why: `robots.txt unavailable (${robots.code})`, until: Number.POSITIVE_INFINITY };
    if (robots.refused) return { kind: 'refused', why: 'address refused', until: Number.POSITIVE_INFINITY };
    const delayMs = delayFor(campaign.settings, control, robots.crawlDelaySec).ms;
    const clock = key === heldClock ? null : new HostClock(rt.deps.redis, key);
    return { kind: 'ok', allows: robots.allows, delayMs, clock, queue: new Queue() };
  }
}
