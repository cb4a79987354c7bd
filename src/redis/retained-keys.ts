// Which of a campaign's keys outlive its end under `retention.keep: summary`
// (src/config/campaign.ts), and why. After the campaign's summary, its keys
// are read only by:
//   crawler status   the host table (hosts, attention, host-render), and for a
//                    revisit campaign each host's revisit schedule (nothing
//                    is scheduled any more once it has ended: it shows none)
//   crawler seal     settings, totals, host records, each host's counters and
//                    committed attempt ids, and for a bucket what undoes a commit
//                    (activities/seal-campaign.ts, reconcileHostRecords)
//   crawler purge    the host lists that name the hosts (retention.ts)
//   the summary      when retried: all of the above, the control hash (why it
//                    stopped) and the Redis epoch (restarts)
//   a host workflow  still ending: its slot (active) and record (releaseHost)
// report, dataset, cdxj, export and schedules read files or Temporal, never
// Redis. Everything else is the crawl's working state: nothing reads it once
// no session runs, so it goes at the end. The tables are typed by the key
// builders of keys.ts: a key added there does not compile until it is given
// a fate here.
import { campaignKeys, hostKeys, type contentKeys } from './keys';

type HostKind = keyof ReturnType<typeof hostKeys>;
type CampaignKind = keyof ReturnType<typeof campaignKeys>;
type ContentKind = keyof ReturnType<typeof contentKeys>;

/** true: kept for the retention; false: deleted when the campaign ends. */
export const HOST_KEYS_KEPT: Record<HostKind, boolean> = {
  // Frontier leftovers (a cancelled or budget-ended campaign's): the host record keeps their count.
  frontier: false,
  seq: false,
  current: false,
  attempts: false,
  // Spilled segments' names (src/redis/frontier-spill.ts): a completed host read every one back; a
  // cancelled or budget-ended one's objects stay under frontier/ in the output, its count in `stats`.
  spill: false,
  spillDone: false,
  spillLock: false,
  // The URL-seen test: only a session enqueuing reads it.
  seen: false,
  // Session ownership, liveness and login: only a running session reads them.
  session: false,
  fence: false,
  awake: false,
  refused: false,
  login: false,
  robots: false,
  robotsRetry: false,
  robotsRedirectRefused: false,
  // A revisit campaign that ended revisits nothing more.
  revisit: false,
  revisitMeta: false,
  // Sites' session cookies: secrets, and no request is sent any more.
  cookies: false,
  renderPlan: false,
  captures: false,
  // What `crawler seal` reads: which attempt of a URL counted, what undoes a commit not yet sealed (a bucket).
  committed: true,
  unsealed: true,
  // The host's counters: the seal and the summary reconcile the host records with them.
  stats: true,
};

export const CAMPAIGN_KEYS_KEPT: Record<CampaignKind, boolean> = {
  config: true,
  control: true,
  totals: true,
  problems: true,
  problemCount: true,
  epoch: true,
  hosts: true,
  attention: true,
  hostRender: true,
  // The host lists name every host that may have keys: purge and the retention page through them.
  ready: true,
  active: true,
  givenUp: true,
  pageHosts: true,
  pausedHosts: true,
  // Dispatch generations are never reused within a campaign (a slot is released by its generation).
  gen: true,
  // A fingerprint a page: only an enqueue reads them.
  budget: false,
  embedBudget: false,
  // A seed host each: only scoping a discovered URL reads them.
  scopeRoots: false,
  parked: false,
  readySeq: false,
  nudged: false,
  dispatching: false,
  hostDelays: false,
  proxiesDown: false,
};

/** The content index: only checking a fetched page reads it. */
export const CONTENT_KEYS_KEPT: Record<ContentKind, boolean> = { verdict: false, exact: false, payloads: false, band: false, meta: false, bucket: false };

const split = <K extends string>(keys: Record<K, string>, kept: Record<K, boolean>) => {
  const out = { keep: [] as string[], drop: [] as string[] };
  for (const kind of Object.keys(kept) as K[]) (kept[kind] ? out.keep : out.drop).push(keys[kind]);
  return out;
};

/** A host's keys that go at the end and those that stay (one slot). */
export const hostKeysAtEnd = (campaignKey: string, host: string) => split(hostKeys(campaignKey, host), HOST_KEYS_KEPT);

/** The campaign's own keys (the content index aside) that go at the end and those that stay. */
export const campaignKeysAtEnd = (campaignKey: string) => split(campaignKeys(campaignKey), CAMPAIGN_KEYS_KEPT);

/**
 * The control hash's field saying the working state is gone (`kept` = `summary`): written
 * before the first key is deleted, so a seal or a retried summary that reconciles the host
 * records keeps each record's frontier count instead of taking the deleted frontier for empty.
 */
export const KEPT_FIELD = 'kept';
