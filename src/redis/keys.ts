// Every Redis key the crawler uses. Keys that one Lua script touches together
// share a hash tag, so the crawler runs unchanged on Redis Cluster:
//   {campaignKey|host}  per-campaign, per-host frontier state (one slot per domain)
//   {campaignKey}       per-campaign config and budget
//   {host}              state shared by all campaigns: host clock, robots cache
//   {workers}           the worker processes' leases and the sessions each runs (one slot: a few hundred workers)
//   {output:<id>}       an output location in object storage: who spools files for it, and its flushes
import { registrableDomain } from '../url/scope';

const P = 'crawl';

export const hostKeys = (campaignKey: string, host: string) => {
  const tag = `{${campaignKey}|${host}}`;
  return {
    /** ZSET of frontier entries, scored by depth then discovery order. */
    frontier: `${P}:${tag}:frontier`,
    /**
     * ZSET segment name → its lowest score: the frontier's cold tail, spilled to segments on the
     * campaign's output store (src/redis/frontier-spill.ts); the stats field `spilled` counts their entries.
     */
    spill: `${P}:${tag}:spill`,
    /**
     * ZSET segment name → when it was read back (epoch ms, Redis clock): its object is removed a few
     * seconds later, once Redis surely has the read-back on disk (src/redis/frontier-spill.ts).
     */
    spillDone: `${P}:${tag}:spill-done`,
    /** Held (SET NX PX, a few seconds) by the worker writing a segment of the host's tail, so two do not spill the same one. */
    spillLock: `${P}:${tag}:spill-lock`,
    /** SET of URL fingerprints ever enqueued for this host. */
    seen: `${P}:${tag}:seen`,
    /** Discovery counter, the tie-breaker that makes the frontier FIFO within a depth. */
    seq: `${P}:${tag}:seq`,
    /** The entry being worked on, so a retried session retries the same URL first. */
    current: `${P}:${tag}:current`,
    /**
     * The session attempt that owns the host now, as `<fence>/<attempt token>`: an older attempt
     * still running (its heartbeat or its workflow task timed out) claims, commits and notes nothing
     * more. A bare token: written by a release before fencing (src/redis/frontier.ts).
     */
    session: `${P}:${tag}:session`,
    /** Counter of the host's session takeovers: each attempt's fencing number, newer attempts higher (src/redis/frontier.ts). */
    fence: `${P}:${tag}:fence`,
    /** HASH member → claims so far: how often a URL was tried (a worker that died counts too). */
    attempts: `${P}:${tag}:attempts`,
    /**
     * HASH URL fingerprint → id of the attempt whose commit counted: which index line is the committed one
     * (src/storage/seal.ts). Both in binary (12 and 6 bytes, src/redis/sealing-state.ts); an older release's as text.
     */
    committed: `${P}:${tag}:committed`,
    /**
     * HASH URL fingerprint → what undoes its commit (`id\tscore\tcounter\tbytes\tmember`; with a binary id
     * `\0<6-byte id>score\t…`), for an
     * output in a bucket only, until a seal finds the committed line there: a commit whose line was
     * lost with a worker's disk is undone and fetched again (crawlUncommit, activities/requeue-lost.ts).
     */
    unsealed: `${P}:${tag}:unsealed`,
    /** HASH of the host's counters (src/stats/counters.ts), plus sitemaps and embedsQueued (the enqueue bounds) and revisit-<verdict> counts. */
    stats: `${P}:${tag}:stats`,
    /** HASH fails (robots.txt attempts that failed in a row), cause (JSON), given-up (1 once RFC 9309 says crawl nothing). */
    robots: `${P}:${tag}:robots`,
    /**
     * Set for as long as a failed robots.txt keeps the host backing off: its
     * TTL is the back-off, so Redis times it and no worker's clock (they may
     * disagree) decides when the next attempt is due.
     */
    robotsRetry: `${P}:${tag}:robots-retry`,
    /**
     * Set while the host's workflow is consuming its frontier (its last claim
     * found an entry), so producers of new URLs know nobody has to wake it.
     */
    awake: `${P}:${tag}:awake`,
    /** Set when the host's address is refused by this campaign's address policy (SSRF guard). */
    refused: `${P}:${tag}:refused`,
    /**
     * Set (for a day, as the shared robots.txt cache) when the host's
     * robots.txt redirects to an address this campaign refuses: allow all,
     * without asking again. Per campaign: another one's policy may follow it.
     */
    robotsRedirectRefused: `${P}:${tag}:robots-redirect-refused`,
    /** ZSET frontier member → when it is due again (epoch ms, Redis clock): the revisit schedule (src/redis/revisit.ts). */
    revisit: `${P}:${tag}:revisit`,
    /** HASH URL fingerprint → JSON RevisitMeta (interval, validators, digest, last capture): beside the schedule. */
    revisitMeta: `${P}:${tag}:revisit-meta`,
    /**
     * HASH [domain, path, name] → cookie JSON: the cookie jar of the
     * registrable domain this "host" is (src/http/cookie-jar.ts names it by
     * the domain, so subdomains share it as RFC 6265 shares their cookies).
     */
    cookies: `${P}:${tag}:cookies`,
    /** JSON: the host's login by the handler's login hook, logged in or failed and set aside (activities/login.ts). */
    login: `${P}:${tag}:login`,
    /**
     * HASH URL pattern → JSON {n, v} (HTML pages seen, last verdicts), and
     * `*` → the host's: what `render: auto` learnt of which pages need the
     * browser (src/browser/adaptive.ts, src/redis/render-plan.ts). Bounded
     * to MAX_RENDER_PATTERNS fields.
     */
    renderPlan: `${P}:${tag}:render-plan`,
    /**
     * HASH URL → JSON {f, o, l, s} (WARC file, offset, length, status): the
     * shared files of this host (scripts, stylesheets, images, fonts, media)
     * a rendered page fetched and archived, so later pages of any session
     * are answered from the capture (src/redis/captures.ts). Bounded to
     * MAX_CAPTURES_PER_HOST fields.
     */
    captures: `${P}:${tag}:captures`,
  };
};

/**
 * The cookie jar a request to `host` uses: the `cookies` key of its
 * registrable domain (port dropped), the largest unit RFC 6265 shares a
 * cookie in (src/http/cookie-jar.ts).
 */
export const cookieJarKey = (campaignKey: string, host: string): string => hostKeys(campaignKey, registrableDomain(host)).cookies;

export const campaignKeys = (campaignKey: string) => {
  const tag = `{${campaignKey}}`;
  return {
    config: `${P}:${tag}:config`,
    /** SET of fingerprints that hold a slot of the page budget. */
    budget: `${P}:${tag}:budget`,
    /** SET of fingerprints that hold a slot of the embed budget (budgets.maxEmbeds). */
    embedBudget: `${P}:${tag}:embed-budget`,
    /**
     * HASH version (settings version in force), paused (1/0), stop (why the
     * campaign ends: budget / cancelled / drained), minDelayMs (operator's
     * campaign-wide delay): what running host sessions look at between pages.
     * kept (summary): the campaign's end deleted its working state (src/redis/retained-keys.ts).
     */
    control: `${P}:${tag}:control`,
    /** SET of hosts an operator paused on their own; HASH host → operator's delay for that host. */
    pausedHosts: `${P}:${tag}:paused-hosts`,
    hostDelays: `${P}:${tag}:host-delays`,
    /** HASH host → operator's render mode for that host (off, browser, auto), over the campaign's `render`. */
    hostRender: `${P}:${tag}:host-render`,
    /** ZSET host → ready sequence: hosts with URLs queued and nobody known to consume them. */
    ready: `${P}:${tag}:ready`,
    readySeq: `${P}:${tag}:ready-seq`,
    /** HASH host → dispatch generation of the host workflow that holds the host's slot. */
    active: `${P}:${tag}:active`,
    /**
     * ZSET host → when its next revisit is due (epoch ms, Redis clock): revisit
     * hosts that gave their slot up to hosts waiting for one (maxActiveHosts);
     * each dispatch round puts those now due back in `ready`.
     */
    parked: `${P}:${tag}:parked`,
    /** Dispatch generation counter. */
    gen: `${P}:${tag}:gen`,
    /**
     * Set by the session whose nudge is on its way to the campaign, deleted
     * when the next dispatch round starts: other sessions' news is seen by
     * that round, so they send nothing (activities/nudge.ts).
     */
    nudged: `${P}:${tag}:nudged`,
    /** Held by the dispatch round running now (a round run again after its workflow task timed out waits for it). */
    dispatching: `${P}:${tag}:dispatching`,
    /** SET of hosts given up (their workflow ended without releasing): never dispatched again. */
    givenUp: `${P}:${tag}:given-up`,
    /** HASH host → JSON record (counts, state, frontier, delay and why): the per-host table. */
    hosts: `${P}:${tag}:hosts`,
    /** ZSET host → attention score (most in need of an operator first). */
    attention: `${P}:${tag}:attention`,
    /** HASH of the counters (src/stats/counters.ts), frontier and hosts: the sum of the host records. */
    totals: `${P}:${tag}:totals`,
    /** LIST of problem strings (capped) and their total count. */
    problems: `${P}:${tag}:problems`,
    /** SET of scope roots (hosts or registrable domains) of seeds read from a seed list: too many for the settings. */
    scopeRoots: `${P}:${tag}:scope-roots`,
    problemCount: `${P}:${tag}:problem-count`,
    /**
     * HASH runId (the Redis server's when the campaign last looked), restarts
     * (how often it changed: each time the last second of writes may be gone),
     * sweptAt (when the campaign last looked for what a lost write left behind).
     */
    epoch: `${P}:${tag}:epoch`,
    /**
     * SET of hosts a rendered page's requests reached (activities/render-hosts.ts): such a host
     * may have no frontier, record or slot, yet per-host keys (robots.txt state, seen-set,
     * captures); listed here so the campaign's retention finds them.
     */
    pageHosts: `${P}:${tag}:page-hosts`,
    /** ZSET proxy id → until when it is set aside (epoch ms, Redis clock): proxies that failed, for every worker (src/redis/proxy-health.ts). */
    proxiesDown: `${P}:${tag}:proxies-down`,
  };
};

// The content index (src/dedup/content-index.ts): all under the campaign's hash tag, so one script may touch them on Redis Cluster.
export const contentKeys = (campaignKey: string, maxDistance: number) => {
  const tag = `{${campaignKey}}`;
  return {
    /** HASH url -> verdict of its first check, which makes checks idempotent per URL. */
    verdict: `${P}:${tag}:content:verdict`,
    /** HASH exact content hash -> first URL that had it. */
    exact: `${P}:${tag}:content:exact`,
    /** HASH WARC payload digest -> the stored full copy revisit records refer to (src/dedup/payload-index.ts). */
    payloads: `${P}:${tag}:content:payloads`,
    /**
     * HASH per band: band value (hex) -> newline-separated records, each
     * 16 hex digits of SimHash followed by the URL. The band layout depends
     * on maxDistance, so it is part of the name: workers configured
     * differently never read each other's buckets as if they lined up.
     */
    band: (i: number) => `${P}:${tag}:content:k${maxDistance}:band:${i}`,
    /**
     * HASH: the compact layout's marker (`v` = 2 or 3: src/dedup/content-format.ts; absent, the
     * campaign has the layout above), each map's linear-hashing state (`<map>:l`, `<map>:s`,
     * `<map>:n`) and the pages numbered so far (`pages`): src/dedup/compact-store.ts.
     */
    meta: `${P}:${tag}:content:meta`,
    /**
     * The compact layout's buckets: `v` verdicts (URL key → verdict), `x` exact hashes (→ page
     * number), `p` payload digests (→ stored copy), `k<d>b<i>` SimHash band records (strings of
     * 12-byte records; 5-byte in format 3), and `u` the pages' URLs (strings, PAGE_SLOTS URLs
     * each); format 3 adds `h` the origins (strings), `o` origin key → number, and `s` the pages'
     * SimHashes (strings, SIM_SLOTS each). Bucket n of map m.
     */
    bucket: (map: string, n: number) => `${P}:${tag}:content:${map}:${n}`,
  };
};

/** Largest content.maxSimhashDistance + 1: the most band keys a content index has. */
export const MAX_CONTENT_BANDS = 16;

export const sharedHostKeys = (host: string) => ({
  /** HASH next (epoch ms, Redis clock), owner: one politeness clock per host for every worker and campaign. */
  clock: `${P}:clock:{${host}}`,
  /**
   * HASH clock owner (`campaign|host`) → the newest fencing number of its sessions that the clock
   * has seen: an attempt with a lower one is superseded and may neither take nor use the clock
   * (src/redis/host-clock.ts). Beside the clock, in its slot.
   */
  clockFence: `${P}:clock:{${host}}:fence`,
  robots: `${P}:robots:{${host}}`,
});

/**
 * State of one IP address shared by all workers and campaigns (its own hash
 * tag: one key per address, so a script touching it stays on one node of a
 * Redis Cluster).
 */
export const addressKeys = (address: string) => ({
  /** ZSET holder → lease expiry (epoch ms, Redis clock): the requests in flight to the address (src/redis/address-slots.ts). */
  slots: `${P}:addr:{${address}}:slots`,
});

/**
 * The worker processes' liveness (src/redis/worker-registry.ts), shared by every campaign: one hash
 * tag for all of it, so one script may read a worker's lease and its sessions together. One slot
 * holds it on a cluster: a renewal a second and two writes a session per worker is little load for
 * a few hundred workers.
 */
export const workerKeys = (group = '') => {
  // `group`: a registry of its own (tests), never seen by the workers of the default one.
  const tag = group ? `{workers:${group}}` : '{workers}';
  return {
    /** ZSET worker id → when its lease expires (epoch ms, Redis clock): renewed about every second by the worker itself. */
    leases: `${P}:${tag}:leases`,
    /** STRING when any worker last beat (epoch ms, Redis clock): a silence of everyone is Redis's, and runs out no lease. */
    lastBeat: `${P}:${tag}:last-beat`,
    /** HASH `<workflow run id>|<session number>` → JSON (host workflow, campaign workflow): the regular sessions the worker runs now. */
    sessions: (workerId: string) => `${P}:${tag}:sessions:${workerId}`,
    /** Held (by the reaper's worker id, for a few seconds) while a live worker tells a dead one's hosts that their sessions are lost. */
    reaping: (workerId: string) => `${P}:${tag}:reaping:${workerId}`,
  };
};

/**
 * An output location in object storage (src/redis/output-flush.ts): the workers that spool files
 * for it, and the flush a seal asks of them. `id`: a short hash of the location.
 */
export const outputKeys = (id: string) => {
  const tag = `{output:${id}}`;
  return {
    /** SET of worker ids that spooled files for the location. */
    spoolers: `${P}:${tag}:spoolers`,
    /** STRING: when the last flush was asked for (epoch ms, Redis clock). */
    flush: `${P}:${tag}:flush`,
    /** HASH worker id → the flush (its time) whose files it has all uploaded. */
    flushed: `${P}:${tag}:flushed`,
  };
};
