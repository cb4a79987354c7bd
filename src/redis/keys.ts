// Every Redis key the crawler uses. Keys that one Lua script touches together
// share a hash tag, so the crawler runs unchanged on Redis Cluster:
//   {campaignKey|host}  per-campaign, per-host frontier state (one slot per domain)
//   {campaignKey}       per-campaign config and budget
//   {host}              state shared by all campaigns: host clock, robots cache
const P = 'crawl';

export const hostKeys = (campaignKey: string, host: string) => {
  const tag = `{${campaignKey}|${host}}`;
  return {
    /** ZSET of frontier entries, scored by depth then discovery order. */
    frontier: `${P}:${tag}:frontier`,
    /** SET of URL fingerprints ever enqueued for this host. */
    seen: `${P}:${tag}:seen`,
    /** Discovery counter, the tie-breaker that makes the frontier FIFO within a depth. */
    seq: `${P}:${tag}:seq`,
    /** The entry the current step works on, so a retried step retries the same URL. */
    current: `${P}:${tag}:current`,
    /** HASH of counters (fetched, failed, skipped, bytes). */
    stats: `${P}:${tag}:stats`,
    /** `<stepId>\n<result JSON>` of the host's last committed step (crawlCommit). */
    step: `${P}:${tag}:step`,
    /**
     * Set while the host's workflow is consuming its frontier (its last claim
     * found an entry), so producers of new URLs know nobody has to wake it.
     */
    awake: `${P}:${tag}:awake`,
    /** Set when the host's address is refused by this campaign's address policy (SSRF guard). */
    refused: `${P}:${tag}:refused`,
  };
};

export const campaignKeys = (campaignKey: string) => {
  const tag = `{${campaignKey}}`;
  return {
    config: `${P}:${tag}:config`,
    /** SET of fingerprints that hold a slot of the page budget. */
    budget: `${P}:${tag}:budget`,
  };
};

export const sharedHostKeys = (host: string) => ({
  /** HASH next (epoch ms, Redis clock), owner: one politeness clock per host for every worker and campaign. */
  clock: `${P}:clock:{${host}}`,
  robots: `${P}:robots:{${host}}`,
});
