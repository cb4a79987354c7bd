// A frontier that spills (issue 40 part 5): a host whose frontier passes
// `frontier.spillAbove` keeps its head in Redis and writes its cold tail as
// segments on the campaign's output store (shared by every worker, like the
// WARCs), read back as the host drains, so Redis grows with active hosts, not
// with URLs. Members are opaque strings here: whatever the frontier holds
// goes out and comes back byte for byte, at its score.
//
// Durability. Out: the tail is read, written as one object, and only then
// moved by one script (crawlSpill) that checks every entry is still in the
// sorted set at the same score and is not the claimed one; a worker killed
// before the script leaves an orphan object and nothing lost, after it the
// spill is done. Back: the claim script names the segment due (crawlClaim),
// the object is read, and one script (crawlRefill) puts its entries back only
// while the segment is registered; a worker killed before it leaves the
// segment registered (read again later), a second refill finds it gone.
//
// Redis may lose its last second or two of writes (appendfsync everysec,
// docs/guarantees.md): a refill lost so would leave its segment registered
// and its entries gone, so the object must outlive it. A segment read back is
// noted with the Redis time (`spillDone`), and its object is removed only
// READ_BACK_GRACE_MS later, by the host's next refill or its drained claim
// (which waits that long at most): any loss that could bring the segment back
// also loses that note, and the object is still there to read.
//
// Shared seed segments (src/redis/seed-segments.ts): a seed list's seeds past
// its first call land as one object a loadSeeds call holding a block per host,
// each block registered as a segment of its host under a name that says where
// it is (`@<object>.<start>.<length>.<first>[.<skipped>]`). They are read
// back here with a ranged read, and their objects are not removed when one
// host reads its block back (the other hosts' blocks are in it): every
// object under the campaign's `frontier/` goes when the campaign ends
// (removeCampaignSegments: its summary, and `crawler purge`).
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import { CrawlerError } from '../errors';
import type { ObjectStore } from '../storage/object-store';
import type { hostKeys } from './keys';
import type { RedisLike } from './scripts';

/** What a Frontier needs to spill and refill: built where the campaign is at hand (activities/frontier-of.ts). */
export interface SpillOptions {
  /** frontier.spillAbove; null: never spill (segments written before are still read back). */
  above: number | null;
  /** The campaign's output store: segments are objects under `frontier/` in it. */
  store: ObjectStore;
  /** A spill that failed (the store down): the frontier stays whole in Redis and the next enqueue or commit tries again. */
  onError?: (err: unknown) => void;
  /** How long a segment read back keeps its object; default READ_BACK_GRACE_MS (tests shorten it). */
  readBackGraceMs?: number;
}

/**
 * Entries in one segment at most: a host whose frontier jumps far past its bound (a seed list of a
 * million URLs for one host) spills several segments, and each script call stays short.
 */
export const MAX_SEGMENT_ENTRIES = 5000;
/** How long a segment read back keeps its object: past what a Redis crash can take of the last writes (about a second, two on a slow disk). */
export const READ_BACK_GRACE_MS = 3_000;
/** How long the spill lock is held at most: a segment's upload is seconds; one that takes longer only risks a wasted upload. */
const SPILL_LOCK_MS = 30_000;
const SEGMENT_VERSION = 1;

export type SpillErrorCode = 'SPILL_STORE_MISSING' | 'SPILL_SEGMENT_UNREADABLE';

/**
 * A host's frontier has spilled segments and this one cannot be read back (the store is down, or
 * this process was given none): the claim fails, so the session fails and is retried with
 * back-off. A host is never taken as drained while segments are left.
 */
export class FrontierSpillError extends CrawlerError<SpillErrorCode> {
  constructor(code: SpillErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'FrontierSpillError';
  }
}

/** A path segment of an object key from any string (a campaign key, a host with a port, an IPv6 literal). */
const safe = (s: string): string => encodeURIComponent(s).replaceAll('.', '%2E');

/** Where a host's segment lives in the campaign's store. */
export const segmentKey = (campaignKey: string, host: string, name: string): string => `frontier/${safe(campaignKey)}/${safe(host)}/${name}.seg`;

/** Where a campaign's segments live: what a purge removes. */
export const campaignSegmentsPrefix = (campaignKey: string): string => `frontier/${safe(campaignKey)}/`;

/** Where the shared seed segments of a campaign live: `%` never starts a path segment safe() makes of a host. */
export const sharedSegmentKey = (campaignKey: string, object: string): string => `${campaignSegmentsPrefix(campaignKey)}%seeds/${object}.seeds`;

/** A shared seed segment as its registered name tells it: its object, the block's byte range, the first discovery number, the entries skipped. */
export interface SharedSegment {
  object: string;
  start: number;
  length: number;
  first: number;
  skipped: ReadonlySet<number>;
}

/** Whether a registered segment name is a shared seed segment's (its own names start with a base-36 time). */
export const isSharedSegment = (name: string): boolean => name.startsWith('@');

/** The name's parts, or null for a host's own segment. Throws on a shared name that does not parse. */
export function parseSharedSegment(name: string): SharedSegment | null {
  if (!isSharedSegment(name)) return null;
  const m = /^@([0-9a-f]+)\.([0-9a-z]+)\.([0-9a-z]+)\.(\d+)(?:\.([\d,]+))?$/.exec(name);
  if (!m) throw new FrontierSpillError('SPILL_SEGMENT_UNREADABLE', `a shared seed segment name that does not parse: ${name.slice(0, 200)}`);
  return {
    object: m[1]!,
    start: parseInt(m[2]!, 36),
    length: parseInt(m[3]!, 36),
    first: Number(m[4]),
    skipped: new Set(m[5] ? m[5].split(',').map(Number) : []),
  };
}

/**
 * The score/member pairs a shared seed segment puts back: its block holds score bases
 * (frontierScoreBase) and members in block order; the entries not skipped are numbered from
 * `first + 1` in that order, as crawlSeedRegister numbered them (so the scores are the ones an
 * enqueue would have given, and the registered lowest score is one of them).
 */
export function sharedSegmentPairs(seg: SharedSegment, block: Buffer): [string, string][] {
  const out: [string, string][] = [];
  let n = 0;
  decodeSegment(block).forEach(([base, member], i) => {
    if (seg.skipped.has(i)) return;
    n++;
    out.push([String(Number(base) + seg.first + n), member]);
  });
  return out;
}

/**
 * Removes every segment object of the campaign (its hosts' own and its shared seed segments):
 * once it has ended nothing reads them. Returns how many went. Idempotent.
 */
export async function removeCampaignSegments(store: ObjectStore, campaignKey: string, onProgress?: () => void): Promise<number> {
  const keys: string[] = [];
  for await (const o of store.list(campaignSegmentsPrefix(campaignKey))) keys.push(o.key);
  for (let i = 0; i < keys.length; i++) {
    await store.remove(keys[i]!);
    if (i % 100 === 99) onProgress?.();
  }
  return keys.length;
}

/** A gzip of JSON lines: a header `{"v":1,"n":<entries>}`, then one `[score, member]` per entry (any member survives JSON). */
export function encodeSegment(pairs: [string, string][]): Buffer {
  const lines = [JSON.stringify({ v: SEGMENT_VERSION, n: pairs.length }), ...pairs.map((p) => JSON.stringify(p))];
  return gzipSync(lines.join('\n'));
}

/** The pairs of a segment; throws when it is not a whole segment (gzip's CRC, the header's count). */
export function decodeSegment(body: Buffer): [string, string][] {
  const lines = gunzipSync(body).toString('utf8').split('\n');
  const head = JSON.parse(lines[0]!) as { v?: number; n?: number };
  if (head.v !== SEGMENT_VERSION) throw new Error(`a segment of version ${String(head.v)}, not ${SEGMENT_VERSION}`);
  const pairs = lines.slice(1).map((l) => JSON.parse(l) as [string, string]);
  if (pairs.length !== head.n || pairs.some((p) => !Array.isArray(p) || typeof p[0] !== 'string' || typeof p[1] !== 'string'))
    throw new Error(`a segment of ${String(head.n)} entries holds ${pairs.length} readable ones`);
  return pairs;
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const newSegmentName = (): string => `${Date.now().toString(36)}-${randomBytes(8).toString('hex')}`;

type Keys = ReturnType<typeof hostKeys>;

/** crawlSpill on the host's keys: 1 when `pairs` left the sorted set for segment `name`, 0 when the tail changed meanwhile. */
export const registerSegment = (redis: RedisLike, k: Keys, name: string, pairs: [string, string][]): Promise<number> =>
  redis.crawlSpill(k.frontier, k.spill, k.stats, k.current, name, ...pairs.flat());

/** crawlRefill on the host's keys: 1 when segment `name` was registered and its entries went back, 0 when another refill took it. */
export const restoreSegment = (redis: RedisLike, k: Keys, name: string, pairs: [string, string][]): Promise<number> =>
  redis.crawlRefill(k.frontier, k.spill, k.stats, k.spillDone, name, ...pairs.flat());

/** crawlSpillAged on the host's keys: segments read back at least `graceMs` ago, and the ms until the next one is (-1: none). */
export const agedSegments = (redis: RedisLike, k: Keys, graceMs: number, limit = 100): Promise<[string[], number]> => redis.crawlSpillAged(k.spillDone, graceMs, limit);

/** The host's spill lock let go, if it is still `token`'s. */
export const unlockSpill = (redis: RedisLike, k: Keys, token: string): Promise<number> => redis.crawlUnlock(k.spillLock, token);

/**
 * Writes the tail of the host's frontier beyond its head (about half the bound) to segments, while
 * the sorted set holds more than `above`: one segment of at most MAX_SEGMENT_ENTRIES entries at a
 * time, highest scores first, until the head is left. The claimed entry stays. Nothing is done
 * while another worker holds the host's spill lock. Returns how many entries were spilled.
 */
export async function spillTail(redis: RedisLike, k: Keys, campaignKey: string, host: string, store: ObjectStore, above: number): Promise<number> {
  const keep = Math.floor(above / 2);
  const token = randomBytes(8).toString('hex');
  if ((await redis.set(k.spillLock, token, 'PX', SPILL_LOCK_MS, 'NX')) !== 'OK') return 0;
  let spilled = 0;
  try {
    let held = await redis.zcard(k.frontier);
    if (held <= above) return 0;
    while (held > keep) {
      const flat = await redis.zrange(k.frontier, Math.max(keep, held - MAX_SEGMENT_ENTRIES), -1, 'WITHSCORES');
      const current = await redis.get(k.current);
      const pairs: [string, string][] = [];
      for (let i = 0; i < flat.length; i += 2) if (flat[i] !== current) pairs.push([flat[i + 1]!, flat[i]!]);
      if (pairs.length === 0) break;
      const name = newSegmentName();
      const key = segmentKey(campaignKey, host, name);
      await store.putBytes(key, encodeSegment(pairs));
      // A call whose answer is lost (Redis away) may have registered the segment: its object stays.
      const moved = await registerSegment(redis, k, name, pairs);
      if (moved !== 1) {
        // The tail changed meanwhile (a claim, a commit, another worker's spill): nothing moved, the object goes.
        await store.remove(key).catch(() => undefined);
        break;
      }
      spilled += pairs.length;
      held = await redis.zcard(k.frontier);
    }
  } finally {
    await unlockSpill(redis, k, token).catch(() => undefined);
  }
  return spilled;
}

/**
 * Reads segment `name` back into the host's frontier (the claim found it due): its entries at
 * their scores, the segment unregistered, its object removed once READ_BACK_GRACE_MS have passed
 * (removeReadBack, by a later refill or the drained claim). A segment another refill took
 * meanwhile changes nothing. Throws FrontierSpillError when a segment still registered cannot be read.
 */
export async function refillSegment(
  redis: RedisLike,
  k: Keys,
  campaignKey: string,
  host: string,
  store: ObjectStore | null,
  name: string,
  graceMs = READ_BACK_GRACE_MS,
): Promise<void> {
  if (!store) throw new FrontierSpillError('SPILL_STORE_MISSING', `the frontier of ${host} has spilled segments and this process has no store to read them from`);
  const shared = parseSharedSegment(name);
  const key = shared ? sharedSegmentKey(campaignKey, shared.object) : segmentKey(campaignKey, host, name);
  let pairs: [string, string][];
  try {
    pairs = shared
      ? sharedSegmentPairs(shared, await readAll(await store.read(key, { start: shared.start, length: shared.length })))
      : decodeSegment(await readAll(await store.read(key)));
  } catch (err) {
    // Another refill took it and removed its object: nothing left to do.
    if ((await redis.zscore(k.spill, name)) === null) return;
    throw new FrontierSpillError('SPILL_SEGMENT_UNREADABLE', `cannot read the spilled frontier segment ${key} of ${host} from ${store.location}`, { cause: err });
  }
  await restoreSegment(redis, k, name, pairs);
  // Objects of earlier refills whose writes are surely on disk by now go; this one's later.
  await removeReadBack(redis, k, campaignKey, host, store, false, graceMs).catch(() => undefined);
}

/**
 * Removes the objects of the host's segments read back at least `graceMs` ago, and forgets them.
 * `all`: waits for the younger ones to be that old too (the host drained: no later refill of its
 * would remove them), at most `graceMs`. Best effort: an object left is
 * never read again (its segment is not registered).
 */
export async function removeReadBack(redis: RedisLike, k: Keys, campaignKey: string, host: string, store: ObjectStore, all: boolean, graceMs = READ_BACK_GRACE_MS): Promise<void> {
  for (;;) {
    const [aged, wait] = await agedSegments(redis, k, graceMs);
    // A shared seed segment's object holds other hosts' blocks: it goes when the campaign ends.
    for (const name of aged) if (!isSharedSegment(name)) await store.remove(segmentKey(campaignKey, host, name));
    if (aged.length > 0) await redis.zrem(k.spillDone, ...aged);
    if (aged.length === 100) continue;
    if (!all || wait < 0) return;
    await new Promise((r) => setTimeout(r, Math.min(wait, graceMs) + 10));
  }
}
