// After Redis restarted under a campaign (src/redis/epoch.ts), what a lost
// tail of writes can leave behind that nothing else would repair. Every
// write of a page step (claim, cross-host enqueues, content index, commit)
// happens before the step's commit, so a lost commit only means the page is
// claimed and fetched again: the host's session finds it back in its
// frontier. That holds while the host is still crawling. A host whose
// workflow had already ended when Redis lost its last commits is another
// matter: its URLs are back in the frontier and nobody will take them, and
// if the release of its slot was lost too the campaign waits for it forever.
// This sweep finds both:
//   1. hosts holding a slot whose workflow has completed: the slot is released;
//   2. frontiers with URLs whose host holds no slot: the host is marked ready,
//      and the next dispatch round starts its workflow again.
// It reads every frontier key of the campaign (SCAN), so it runs only after a
// restart was seen, and then at most every SWEEP_EVERY_MS and whenever the
// campaign is about to complete.
import { WorkflowNotFoundError } from '@temporalio/client';
import { Cluster } from 'ioredis';
import type { CampaignHosts } from '../src/redis/campaign-hosts';
import { hostKeys } from '../src/redis/keys';
import type { RedisLike } from '../src/redis/scripts';
import { domainWorkflowId } from '../workflows/ids';
import type { WorkerRuntime } from './runtime';

/** A campaign that saw Redis restart looks for stranded hosts at most this often (and always before it completes). */
export const SWEEP_EVERY_MS = 10_000;
const DESCRIBE_CONCURRENCY = 20;

/** Glob metacharacters of SCAN's MATCH, escaped so a campaign ID is matched literally. */
const globEscape = (s: string) => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** Hosts of the campaign whose frontier (or revisit schedule) holds URLs (a sorted set exists only while it has members). */
export async function hostsWithFrontier(redis: RedisLike, campaignKey: string, key: 'frontier' | 'spill' | 'revisit' = 'frontier'): Promise<string[]> {
  const prefix = `crawl:{${campaignKey}|`;
  const suffix = `}:${key}`;
  const match = `${globEscape(prefix)}*${globEscape(suffix)}`;
  const nodes: RedisLike[] = redis instanceof Cluster ? redis.nodes('master') : [redis];
  const hosts = new Set<string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) if (k.startsWith(prefix) && k.endsWith(suffix)) hosts.add(k.slice(prefix.length, -suffix.length));
    } while (cursor !== '0');
  }
  return [...hosts].sort();
}

export interface SweepResult {
  /** Slots released because their host workflow had ended. */
  released: string[];
  /** Hosts marked ready again for URLs left in their frontier. */
  woken: string[];
}

/**
 * The sweep. `wake` false (the campaign is stopping) only releases stale
 * slots, so the finish does not wait for hosts that will never report.
 */
export async function sweepAfterRedisLoss(rt: WorkerRuntime, hosts: CampaignHosts, campaignId: string, wake: boolean): Promise<SweepResult> {
  const client = rt.deps.temporal;
  const released: string[] = [];
  for await (const page of hosts.activeHosts()) {
    for (let i = 0; i < page.length; i += DESCRIBE_CONCURRENCY) {
      await Promise.all(
        page.slice(i, i + DESCRIBE_CONCURRENCY).map(async ({ host, gen }) => {
          // Completed: it reported (drained) to a Redis that then lost the
          // release. Ended otherwise (terminated, failed…): the domain watch
          // gives the host up, as without a restart.
          let ended: boolean;
          try {
            ended = (await client.workflow.getHandle(domainWorkflowId(campaignId, host)).describe()).status.name === 'COMPLETED';
          } catch (err) {
            if (!(err instanceof WorkflowNotFoundError)) throw err;
            ended = true;
          }
          // Only the generation read here: a dispatch since then holds the slot rightly.
          if (ended && (await hosts.release(host, gen)).released) released.push(host);
        }),
      );
    }
  }
  let woken: string[] = [];
  if (wake) {
    // Spilled segments are URLs left too (src/redis/frontier-spill.ts): a host may have nothing else.
    const left = [...new Set([...(await hostsWithFrontier(rt.deps.redis, hosts.campaignKey)), ...(await hostsWithFrontier(rt.deps.redis, hosts.campaignKey, 'spill'))])].sort();
    // A revisit host whose park was lost (its slot given up, nothing queued)
    // would never come back: parked again at its next revisit, unless it
    // holds a slot, waits for one or is parked.
    for (const host of await hostsWithFrontier(rt.deps.redis, hosts.campaignKey, 'revisit')) {
      const [, due] = await rt.deps.redis.zrange(hostKeys(hosts.campaignKey, host).revisit, 0, 0, 'WITHSCORES');
      if (due !== undefined) await hosts.parkIfIdle(host, Number(due));
    }
    // markReady skips hosts that hold a slot (their session takes the URLs) and hosts given up.
    const marked = await Promise.all(left.map(async (h) => ((await hosts.markReady([h])) > 0 ? h : null)));
    woken = marked.filter((h): h is string => h !== null);
  }
  return { released: released.sort(), woken };
}
