// The per-host frontier in Redis: a sorted set whose members carry the URL,
// its depth and its referrer, ordered by priority (higher first), then
// breadth-first (depth, then discovery).
import { FRONTIER_PRIORITY_MAX, FRONTIER_PRIORITY_MIN } from '../config/campaign';
import { hostKeys } from './keys';
import type { RedisLike } from './scripts';
import { CrawlerError } from '../errors';
import { fpField, fpOfField, idOfValue, idValue } from './sealing-state';
import type { CountedAs } from '../stats/counters';
import { refillSegment, removeReadBack, spillTail, type SpillOptions } from './frontier-spill';
import { type FrontierLayout, seenMode } from './frontier-layout';
import { seenArg, type SeenMode } from './seen-set';
import { impliedHops } from '../url/hop-path';

/**
 * page: fetch, store, follow links. sitemap / sitemap-child: fetch, store,
 * enqueue the listed URLs (a child's own index entries are not followed).
 * feed: fetch, store, enqueue its items' links. embed: a page requisite:
 * fetch and store; a stylesheet's own requisites are enqueued, nothing else
 * is parsed.
 */
export type EntryKind = 'page' | 'sitemap' | 'sitemap-child' | 'feed' | 'embed';

const ENTRY_KINDS: ReadonlySet<string> = new Set(['sitemap', 'sitemap-child', 'feed', 'embed']);

/** Kinds held to budgets.maxSitemapsPerHost (class 's' of the enqueue script): requests that list URLs, not pages. */
export const isListKind = (kind: EntryKind | undefined): boolean => kind === 'sitemap' || kind === 'sitemap-child' || kind === 'feed';

export interface FrontierEntry {
  url: string;
  depth: number;
  referrer: string | null;
  /** Default page. */
  kind?: EntryKind;
  /** Redirects that led here (each hop is its own entry); capped by fetch.maxRedirects. */
  redirects?: number;
  /** The handler route the page goes to (a link a handler returned with a label); absent: the default route. */
  label?: string;
  /** How the URL was reached (src/url/hop-path.ts); absent in entries of older releases (impliedHops). */
  hops?: string;
}

export interface EnqueueItem extends FrontierEntry {
  fp: string;
  /** frontierPriority(url, settings) of src/config/campaign.ts; default 0. */
  priority?: number;
}

/**
 * Score = −priority × 1e15 + min(depth, 999) × 1e12 + seq, lowest first;
 * seq is the host's discovery counter, added by the enqueue script. With
 * priority in ±8, depth ≤ 999 and seq < 1e12 every score is an integer
 * below 2^53 in magnitude, so the double holds it exactly and the three
 * fields never carry into each other. Priority 0 gives exactly the score
 * older releases wrote (depth × 1e12 + seq), so their frontier entries keep
 * their place. Depths past 999 share the last band, in discovery order.
 */
export const PRIORITY_STEP = 1e15;
export const DEPTH_STEP = 1e12;
export const MAX_SCORED_DEPTH = 999;

/** The part of the score the enqueue script does not add itself (it adds seq). */
export function frontierScoreBase(priority: number, depth: number): number {
  if (!Number.isInteger(priority) || priority < FRONTIER_PRIORITY_MIN || priority > FRONTIER_PRIORITY_MAX) {
    throw new RangeError(`frontier priority must be a whole number from ${FRONTIER_PRIORITY_MIN} to ${FRONTIER_PRIORITY_MAX} (got ${priority})`);
  }
  if (!Number.isInteger(depth) || depth < 0) throw new RangeError(`frontier depth must be a whole number ≥ 0 (got ${depth})`);
  return -priority * PRIORITY_STEP + Math.min(depth, MAX_SCORED_DEPTH) * DEPTH_STEP;
}

/**
 * Embeds go ahead of every page of their host (a page and its resources
 * are captured close together, or replay mixes times): one band above the
 * highest priority, in discovery order. 9e15 plus seq stays below 2^53.
 */
export const EMBED_SCORE_BASE = -(FRONTIER_PRIORITY_MAX + 1) * PRIORITY_STEP;

/** An item's score base: embeds in their own front band, everything else by priority and depth. */
export function scoreBaseOf(it: EnqueueItem): number {
  return it.kind === 'embed' ? EMBED_SCORE_BASE : frontierScoreBase(it.priority ?? 0, it.depth);
}

// Two member forms. Which one a campaign writes is its layout
// (src/redis/frontier-layout.ts), fixed when it is created; a member tells
// which form it is by its first character, a digit in the first, a letter or
// sign (0x40–0x7b) in the second, so decodeEntry reads either without asking.
//
// The first (layout 1, campaigns created before issue 40's compact forms):
// tab-separated depth, URL, referrer URL, kind, redirects, label, hop path.
// Normalised URLs never contain a tab (the WHATWG parser strips them), labels
// are tab-free by validation (LABEL_PATTERN of src/handlers/api.ts), hop
// paths are letters. Trailing empty fields are left out, so a seed page keeps
// the three-field form.
//
// The compact form (layout 2, issue 40 part 4): what the frontier's host
// already says is left out. One character packs the scheme, the kind, how the
// referrer is kept and whether the hop path is the one its depth implies; then
// the depth in decimal, then the path and query (from the `/` that ends the
// host: the depth's digits end there), then, tab-separated and trailing
// empties left out, the referrer, redirects, label, hop path. The referrer is
// kept whole, not as a fingerprint: the index line's `referrer` and the WARC
// metadata record's `via` name it, written when the page is fetched, and
// nothing else in Redis knows a URL by its fingerprint. A referrer of the
// frontier's own scheme and host (most links) keeps its path only; another
// keeps its URL. A URL of another host or scheme than the frontier's (none is
// enqueued so) keeps the first form.
const KIND_CODES: readonly EntryKind[] = ['page', 'sitemap', 'sitemap-child', 'feed', 'embed'];
/** How the compact form keeps the referrer: none, its path (same origin as the URL), its URL. */
const REF_NONE = 0;
const REF_PATH = 1;
const REF_URL = 2;
const COMPACT_BASE = 0x40;

function encodeLegacy(e: FrontierEntry): string {
  const kind = e.kind && e.kind !== 'page' ? e.kind : '';
  const fields = [String(e.depth), e.url, e.referrer ?? '', kind, e.redirects ? String(e.redirects) : '', e.label ?? '', e.hops ?? ''];
  let n = fields.length;
  while (n > 3 && fields[n - 1] === '') n--;
  return fields.slice(0, n).join('\t');
}

/** The member of `e` in the frontier of `host`, in the form of the campaign's `layout`. */
export function encodeEntry(e: FrontierEntry, host: string, layout: FrontierLayout): string {
  if (layout === 1) return encodeLegacy(e);
  const https = e.url.startsWith('https://');
  const origin = `${https ? 'https' : 'http'}://${host}`;
  const path = e.url.slice(origin.length);
  if (!e.url.startsWith(origin) || !path.startsWith('/')) return encodeLegacy(e);
  const refPath = e.referrer?.startsWith(origin) ? e.referrer.slice(origin.length) : null;
  const ref = e.referrer === null ? REF_NONE : refPath?.startsWith('/') ? REF_PATH : REF_URL;
  const implied = e.hops === undefined || e.hops === impliedHops(e.depth);
  const code = (https ? 1 : 0) + 2 * KIND_CODES.indexOf(e.kind ?? 'page') + 10 * ref + 30 * (implied ? 0 : 1);
  const fields = [ref === REF_PATH ? refPath! : (e.referrer ?? ''), e.redirects ? String(e.redirects) : '', e.label ?? '', implied ? '' : e.hops!];
  let n = fields.length;
  while (n > 0 && fields[n - 1] === '') n--;
  const head = `${String.fromCharCode(COMPACT_BASE + code)}${e.depth}${path}`;
  return n === 0 ? head : `${head}\t${fields.slice(0, n).join('\t')}`;
}

/** The entry a member of `host`'s frontier names (either form). */
export function decodeEntry(member: string, host: string): FrontierEntry {
  const code = member.charCodeAt(0) - COMPACT_BASE;
  if (code < 0) return decodeLegacy(member);
  const [head, referrer, redirects, label, hops] = member.split('\t');
  const m = /^.(\d+)(\/.*)$/s.exec(head);
  if (!m) return decodeLegacy(member);
  const origin = `${code % 2 === 1 ? 'https' : 'http'}://${host}`;
  const kind = KIND_CODES[Math.floor(code / 2) % 5] ?? 'page';
  const ref = Math.floor(code / 10) % 3;
  const depth = Number(m[1]);
  const entry: FrontierEntry = { url: `${origin}${m[2]}`, depth, referrer: ref === REF_PATH ? `${origin}${referrer}` : ref === REF_URL ? referrer : null };
  if (kind !== 'page') entry.kind = kind;
  if (redirects) entry.redirects = Number(redirects);
  if (label) entry.label = label;
  // The hop path its depth implies is left out: readers take impliedHops for an entry without one.
  if (code >= 30) entry.hops = hops ?? '';
  return entry;
}

function decodeLegacy(member: string): FrontierEntry {
  const [depth, url, referrer, kind, redirects, label, hops] = member.split('\t');
  const entry: FrontierEntry = { url, depth: Number(depth), referrer: referrer ? referrer : null };
  if (kind && ENTRY_KINDS.has(kind)) entry.kind = kind as EntryKind;
  if (redirects) entry.redirects = Number(redirects);
  if (label) entry.label = label;
  if (hops) entry.hops = hops;
  return entry;
}

/**
 * What a host's frontier may still take (the enqueue script's bounds, see
 * src/redis/scripts.ts): pages up to `budgets.maxPagesPerHost` less the
 * host's requests so far and the pages it has queued; sitemaps and
 * sitemap-index children up to `budgets.maxSitemapsPerHost` ever. Null or
 * absent: no bound.
 */
export interface FrontierBounds {
  maxPagesPerHost?: number | null;
  maxSitemapsPerHost?: number | null;
}

/** A campaign's bounds, for every enqueue and commit of its frontiers. */
export function frontierBounds(budgets: FrontierBounds): FrontierBounds {
  return { maxPagesPerHost: budgets.maxPagesPerHost, maxSitemapsPerHost: budgets.maxSitemapsPerHost };
}

/**
 * URLs per script call at most: each call holds Redis (every worker's) for
 * its whole run, so a page's thousands of links go in several short calls.
 */
export const MAX_ENQUEUE_BATCH = 1000;

/** The frontier members' layout of a campaign with seen mode `mode`: a Bloom filter's campaign has layout 2's. */
const layoutOf = (mode: SeenMode): FrontierLayout => (mode === '1' ? 1 : 2);

function enqueueArgs(host: string, mode: SeenMode, items: EnqueueItem[], bounds: FrontierBounds): (string | number | Buffer)[] {
  const layout = layoutOf(mode);
  const argv: (string | number | Buffer)[] = [bounds.maxPagesPerHost ?? -1, bounds.maxSitemapsPerHost ?? -1, mode];
  for (const it of items) argv.push(seenArg(it.fp, layout), scoreBaseOf(it), encodeEntry(it, host, layout), it.kind === 'embed' ? 'e' : isListKind(it.kind) ? 's' : 'p');
  return argv;
}

/** `items` in batches of MAX_ENQUEUE_BATCH; one empty batch for no items (the call still reports the frontier). */
function batches<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += MAX_ENQUEUE_BATCH) out.push(items.slice(i, i + MAX_ENQUEUE_BATCH));
  return out.length > 0 ? out : [[]];
}

/** Longer than any session (its time cap) plus its retries. */
const SESSION_OWNER_TTL_MS = 24 * 60 * 60_000;

/**
 * A newer attempt of the host's session took over: this one must end without claiming, sending,
 * committing or recording more (its heartbeat or its workflow task timed out, and Temporal ran the
 * session again elsewhere while this one still ran).
 */
export class SessionSupersededError extends CrawlerError<'SESSION_SUPERSEDED'> {
  constructor(readonly host: string) {
    super('SESSION_SUPERSEDED', `a newer session attempt owns ${host}: this one stops (it was presumed dead and Temporal ran the session again)`);
    this.name = 'SessionSupersededError';
  }
}

export class Frontier {
  private readonly keys: ReturnType<typeof hostKeys>;
  /**
   * The session attempt this object writes for (`<fence>/<token>`, set by takeOver): its claims,
   * commits and retry notes are refused once another attempt took the host over. '' (no takeOver):
   * unfenced, as every write was before fencing.
   */
  owner = '';
  /** This attempt's fencing number (takeOver); 0: unfenced. */
  fence = 0;
  /**
   * This object's last commit left the frontier empty, and no claim was made through it since:
   * the frontier was empty then, though others may have enqueued since (a hint, never a fact).
   */
  emptyAfterCommit = false;

  /**
   * `spill`: the campaign's frontier.spillAbove and output store (src/redis/frontier-spill.ts),
   * for whoever enqueues, commits or claims with the campaign at hand; without it nothing is spilled
   * and a claim that finds segments due fails (FrontierSpillError) rather than skip them.
   */
  constructor(
    private readonly redis: RedisLike,
    private readonly campaignKey: string,
    readonly host: string,
    private readonly spill: SpillOptions | null = null,
  ) {
    this.keys = hostKeys(campaignKey, host);
  }

  /** After an enqueue or a commit left `held` entries in the sorted set: its tail to segments if that is past the bound. */
  private async spillIfDue(held: number): Promise<void> {
    const above = this.spill?.above;
    if (!this.spill || above === null || above === undefined || held <= above) return;
    // Best effort: a store that is down leaves the frontier whole in Redis, as before spilling existed.
    await spillTail(this.redis, this.keys, this.campaignKey, this.host, this.spill.store, above).catch((err: unknown) => this.spill?.onError?.(err));
  }

  /** The campaign's seen mode (src/redis/frontier-layout.ts): which seen set and member form its scripts write. */
  private mode(): Promise<SeenMode> {
    return seenMode(this.redis, this.campaignKey);
  }

  /**
   * Marks URLs seen and enqueues the new ones, within `bounds`, in batches
   * of MAX_ENQUEUE_BATCH. `added`: how many were new (and fitted);
   * `awake`: the host's workflow is consuming its frontier and will find them
   * without being woken; `queued`: frontier size afterwards (spilled entries included). Past
   * frontier.spillAbove the tail goes to segments after each batch, so a seed list of a million
   * URLs for one host never sits in Redis whole.
   */
  async enqueue(items: EnqueueItem[], bounds: FrontierBounds = {}): Promise<{ added: number; awake: boolean; queued: number }> {
    const k = this.keys;
    let added = 0;
    const mode = await this.mode();
    let last: [number, number, number, number] = [0, 0, 0, 0];
    for (const batch of batches(items)) {
      last = await this.redis.crawlEnqueue(k.seen, k.frontier, k.seq, k.awake, k.stats, ...enqueueArgs(this.host, mode, batch, bounds));
      added += last[0];
      await this.spillIfDue(last[3]);
    }
    return { added, awake: last[1] === 1, queued: last[2] };
  }

  /**
   * Marks URLs seen without enqueueing them: a rendered page's requisites,
   * archived with it, are not fetched again as embeds (docs/rendering.md).
   */
  async markSeen(fps: string[]): Promise<void> {
    if (fps.length === 0) return;
    const mode = await this.mode();
    for (const batch of batches(fps)) await this.redis.crawlSeenAdd(this.keys.seen, mode, ...batch.map((fp) => seenArg(fp, layoutOf(mode))));
  }

  /** For each URL fingerprint, whether the host has seen it (src/redis/seen-set.ts). */
  async hasSeen(fps: string[]): Promise<boolean[]> {
    const out: boolean[] = [];
    if (fps.length === 0) return out;
    const mode = await this.mode();
    for (const batch of batches(fps)) out.push(...(await this.redis.crawlSeenTest(this.keys.seen, mode, ...batch.map((fp) => seenArg(fp, layoutOf(mode))))).map((n) => n === 1));
    return out;
  }

  /** Whether someone must wake the host's workflow for URLs in its frontier. */
  static needsWake(r: { awake: boolean; queued: number }): boolean {
    // Not only when this call added URLs: a step that died after enqueueing
    // and before waking is re-run, finds its URLs already seen, and must
    // still wake the host.
    return !r.awake && r.queued > 0;
  }

  /**
   * The entry to work on (the one claimed before and not yet committed,
   * else the head), how often it has been claimed, this time included, and
   * how many of those claims ended in a deliberate retry (`retried`).
   */
  async claim(): Promise<{ member: string; entry: FrontierEntry; attempts: number; retried: number } | null> {
    const k = this.keys;
    this.emptyAfterCommit = false;
    let r = await this.redis.crawlClaim(k.frontier, k.current, k.awake, k.attempts, k.session, k.spill, k.stats, this.owner);
    // A segment holds an entry ahead of the head (or the sorted set is empty): read it back, claim again.
    // Each refill unregisters one segment, so this ends.
    while (r && Number(r[1]) === -2) {
      await refillSegment(this.redis, k, this.campaignKey, this.host, this.spill?.store ?? null, r[0], this.spill?.readBackGraceMs);
      r = await this.redis.crawlClaim(k.frontier, k.current, k.awake, k.attempts, k.session, k.spill, k.stats, this.owner);
    }
    if (r && Number(r[1]) === -1) throw new SessionSupersededError(this.host);
    // Drained: the objects of the segments it read back go (no later refill of this host would remove them).
    if (!r && this.spill)
      await removeReadBack(this.redis, k, this.campaignKey, this.host, this.spill.store, true, this.spill.readBackGraceMs).catch((err: unknown) => this.spill?.onError?.(err));
    return r ? { member: r[0], entry: decodeEntry(r[0], this.host), attempts: Number(r[1]), retried: Number(r[2] ?? 0) } : null;
  }

  /**
   * This claim of `member` ends in a deliberate retry (the server was
   * overloaded, the network failed): the claims left for processing
   * failures (attempts − retried) are not used up by it.
   */
  async noteRetry(member: string): Promise<void> {
    if ((await this.redis.crawlNoteRetry(this.keys.attempts, this.keys.session, member, this.owner)) === -1) throw new SessionSupersededError(this.host);
  }

  /**
   * Makes session attempt `token` the host's owner under a new fencing number (returned; higher
   * than every earlier attempt's and than `floor`): claims, commits and retry notes of any other
   * attempt fail from now on, and this object's carry the new owner.
   */
  async takeOver(token: string, floor = 0): Promise<number> {
    const [n, owner] = await this.redis.crawlTakeOver(this.keys.session, this.keys.fence, token, SESSION_OWNER_TTL_MS, floor);
    this.fence = Number(n);
    this.owner = owner;
    return this.fence;
  }

  /**
   * Throws SessionSupersededError when another attempt owns the host now: asked before the writes
   * no script can fence (the index line, the WARC records). A takeover just after it still lets
   * those writes through; the commit, fenced, then refuses them, and sealing keeps the index line
   * of the commit that counted. Unfenced (no takeOver): nothing asked.
   */
  async assertOwner(): Promise<void> {
    if (this.owner === '') return;
    if ((await this.redis.get(this.keys.session)) !== this.owner) throw new SessionSupersededError(this.host);
  }

  /**
   * Finishes an entry: removes it, counts the outcome once, enqueues
   * same-host links (within `bounds`; past MAX_ENQUEUE_BATCH, the first
   * batches just before the commit). `attempt`: the URL's fingerprint and the id the
   * attempt wrote into its index line; the commit that counts records it
   * (`removed`), so the sealed index keeps exactly that line. Throws
   * SessionSupersededError, nothing committed, when another session attempt
   * took the host over since this object's takeOver.
   */
  async commit(
    member: string,
    outcome: CountedAs,
    bytes: number,
    links: EnqueueItem[],
    attempt: { fp: string; id: string; keepUndo?: boolean } | null = null,
    bounds: FrontierBounds = {},
  ): Promise<{ removed: boolean; added: number; remaining: number }> {
    const k = this.keys;
    // All but the last batch go ahead of the commit: a worker that dies
    // between them leaves the entry claimed, and its retry finds those
    // links in the seen-set (nothing is lost, nothing doubled).
    const mode = await this.mode();
    const parts = batches(links);
    const last = parts.pop()!;
    let before = 0;
    for (const batch of parts) before += (await this.redis.crawlEnqueue(k.seen, k.frontier, k.seq, k.awake, k.stats, ...enqueueArgs(this.host, mode, batch, bounds)))[0];
    const [removed, added, remaining, held] = await this.redis.crawlCommit(
      k.seen,
      k.frontier,
      k.seq,
      k.current,
      k.stats,
      k.attempts,
      k.committed,
      k.session,
      k.unsealed,
      member,
      outcome,
      bytes,
      attempt ? fpField(attempt.fp) : '',
      attempt ? idValue(attempt.id) : '',
      this.owner,
      attempt?.keepUndo ? '1' : '',
      ...enqueueArgs(this.host, mode, last, bounds),
    );
    if (removed === -1) throw new SessionSupersededError(this.host);
    this.emptyAfterCommit = remaining === 0;
    await this.spillIfDue(held);
    return { removed: removed === 1, added: before + added, remaining };
  }

  /** For each fingerprint, the id of the attempt whose commit counted, or null (not committed, or committed before ids were recorded). */
  async committedAttempts(fps: string[]): Promise<(string | null)[]> {
    if (fps.length === 0) return [];
    // The compact form first (src/redis/sealing-state.ts), then the text form a commit of an older release wrote.
    const ids = (await this.redis.hmgetBuffer(this.keys.committed, ...fps.map(fpField))).map(idOfValue);
    const missing = fps.filter((fp, i) => ids[i] === null && typeof fpField(fp) !== 'string');
    if (missing.length === 0) return ids;
    const older = new Map(missing.map((fp, i) => [fp, i]));
    const found = await this.redis.hmget(this.keys.committed, ...missing);
    return ids.map((id, i) => id ?? found[older.get(fps[i]) ?? -1] ?? null);
  }

  /**
   * Of the commits kept for undoing (`keepUndo`: an output in a bucket), those whose line a seal
   * has not found yet: their fingerprints, a page at a time (HSCAN).
   */
  async *unsealed(): AsyncGenerator<string[]> {
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscanBuffer(this.keys.unsealed, cursor, 'COUNT', 500);
      cursor = next.toString();
      const fps = flat.filter((_, i) => i % 2 === 0).map(fpOfField);
      if (fps.length) yield fps;
    } while (cursor !== '0');
  }

  /** A seal found these fingerprints' committed lines in the bucket: their commits are never undone. */
  async sealed(fps: string[]): Promise<void> {
    // Both forms: a commit of an older release left its record under the text one.
    if (fps.length > 0) await this.redis.hdel(this.keys.unsealed, ...fps.flatMap((fp) => [...new Set([fpField(fp), fp])]));
  }

  /**
   * Undoes the commits of `fps` whose lines are not in the bucket (crawlUncommit): their entries
   * go back in the frontier to be fetched again. `undone`: how many were; `queued`: frontier size.
   */
  async uncommit(fps: string[]): Promise<{ undone: number; queued: number }> {
    let undone = 0;
    let queued = 0;
    for (const batch of batches(fps)) {
      const k = this.keys;
      const [n, size] = await this.redis.crawlUncommit(k.frontier, k.stats, k.committed, k.unsealed, ...batch.flatMap((fp) => [...new Set([fpField(fp), fp])]));
      undone += n;
      queued = size;
    }
    return { undone, queued };
  }

  async peek(): Promise<FrontierEntry | null> {
    const [head] = await this.redis.zrange(this.keys.frontier, 0, 0);
    return head ? decodeEntry(head, this.host) : null;
  }

  /** Entries queued: in the sorted set and in spilled segments. */
  async size(): Promise<number> {
    return (await this.statsAndSize()).size;
  }

  async stats(): Promise<Record<string, number>> {
    return numbers(await this.redis.hgetall(this.keys.stats));
  }

  /** stats() and size() in one round trip (one slot: a pipeline even on a cluster); size counts spilled entries. */
  async statsAndSize(): Promise<{ stats: Record<string, number>; size: number }> {
    const res = await this.redis.pipeline().hgetall(this.keys.stats).zcard(this.keys.frontier).exec();
    const [[statsErr, raw], [sizeErr, size]] = res!;
    if (statsErr ?? sizeErr) throw statsErr ?? sizeErr;
    const stats = numbers(raw as Record<string, string>);
    // Entries in spilled segments are queued too: a host with only those is not empty.
    return { stats, size: (size as number) + (stats.spilled ?? 0) };
  }
}

const numbers = (raw: Record<string, string>): Record<string, number> => Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Number(v)]));
