// Seeds from a seed list landing the way a spilled tail does (issue 40, part
// 5): past the list's first loadSeeds call, a call reads a large chunk of the
// list, groups it by host, and writes ONE object under the campaign's
// `frontier/<campaign>/%seeds/` holding each host's seeds as its own block
// (the segment encoding of src/redis/frontier-spill.ts, a gzip member each,
// so a block reads back alone with a ranged read). Then a script (crawlSeedRegister,
// for the hosts of one slot together: registerGroups) marks each block's seeds seen and
// registers the block as a segment of its host: Redis keeps a seen
// fingerprint and a share of one registry entry per seed, not a frontier
// entry, and the hosts' claims read the blocks back as they drain.
//
// Why shared objects: the seeds of one host are scattered over the list (a
// list gathered from many sources names a different host on every line), so
// objects of one host could only be written one seed or two at a time; one
// object a chunk is one write per 250,000 seeds whatever the hosts.
//
// Durability, as the spill's: the object is written first, the scripts run
// after. A worker killed between them leaves an orphan object (removed with
// the campaign's others when it ends) and seeds not marked seen, which the
// retried call reads again from its last heartbeat (the chunk's start) and
// writes again into a new object. A seed the first attempt registered is seen
// by then: the retry's script skips it (its position is named in the
// segment's name, and the refill leaves it out), so nothing is queued twice
// and nothing lost. The objects stay until the campaign ends: a refill that
// Redis lost in a crash finds its block still there.
//
// Which campaigns: those marked when they were created (SEED_SEGMENTS_FIELD
// below, beside the frontier layout's marker). A campaign created before keeps
// today's path (every seed straight into its host's sorted set) for its whole
// life, so a worker of an older release, which cannot read shared segments,
// never meets one in it.
import { randomBytes } from 'node:crypto';
import { encodeEntry, frontierScoreBase } from './frontier';
import { encodeSegment, sharedSegmentKey } from './frontier-spill';
import { type FrontierLayout } from './frontier-layout';
import { keySlot } from './key-slot';
import { contentKeys, hostKeys } from './keys';
import type { RedisLike } from './scripts';
import { seenArg, type SeenMode } from './seen-set';
import type { ObjectStore } from '../storage/object-store';

/** Seeds one loadSeeds call reads into one shared object at most: bounds the worker's memory (a few hundred bytes a seed) and the call's time. */
export const SEED_SEGMENT_CHUNK = 250_000;

/** The content index's meta hash field that marks a campaign whose seed list lands in shared segments. */
export const SEED_SEGMENTS_FIELD = 'seedseg';

/** Hosts whose blocks are compressed between two yields to the event loop. */
const BUILD_SLICE = 500;

/** Scripts in flight at once while a chunk registers: each is one round trip to its hosts' slot. */
const REGISTER_CONCURRENCY = 256;

/**
 * Hosts one script registers at most. A chunk of 250,000 seeds over 100,000 hosts puts ~6 in each
 * of the 16,384 slots; the bound keeps a call's arguments and its time in Redis small whatever
 * the chunk (a script holds Redis while it runs).
 */
export const REGISTER_HOSTS_A_CALL = 32;

/** A host's seeds of one chunk: its politeness key, and each seed's fingerprint, URL and priority, in list order. */
export interface HostSeeds {
  host: string;
  seeds: { url: string; fp: string; priority: number }[];
}

/** One host's block in a shared object: where it is, and what its script is told. */
export interface SeedBlock {
  host: string;
  start: number;
  length: number;
  /** Per entry in block order: the fingerprint and the score base. */
  entries: { fp: string; base: number }[];
}

/**
 * The shared object of a chunk: each host's seeds (depth 0, no referrer, at their priority) as one
 * segment block, blocks one after another, and each block's byte range. A fingerprint listed twice
 * for a host keeps its first place only.
 */
export function buildSeedObject(hosts: HostSeeds[], layout: FrontierLayout, offset = 0): { body: Buffer; blocks: SeedBlock[] } {
  const parts: Buffer[] = [];
  const blocks: SeedBlock[] = [];
  let at = offset;
  for (const { host, seeds } of hosts) {
    const taken = new Set<string>();
    const entries: SeedBlock['entries'] = [];
    const pairs: [string, string][] = [];
    for (const s of seeds) {
      if (taken.has(s.fp)) continue;
      taken.add(s.fp);
      const base = frontierScoreBase(s.priority, 0);
      entries.push({ fp: s.fp, base });
      pairs.push([String(base), encodeEntry({ url: s.url, depth: 0, referrer: null }, host, layout)]);
    }
    if (entries.length === 0) continue;
    const block = encodeSegment(pairs);
    parts.push(block);
    blocks.push({ host, start: at, length: block.length, entries });
    at += block.length;
  }
  return { body: Buffer.concat(parts), blocks };
}

/** The member and fingerprint form of a campaign of seen mode `mode` (a Bloom filter's campaign has layout 2's), as Frontier's. */
const layoutOfMode = (mode: SeenMode): FrontierLayout => (mode === '1' ? 1 : 2);

/** A new shared object's name: random, never written twice (a retried call writes a new one). */
export const newSeedObjectName = (): string => randomBytes(8).toString('hex');

/** The registered name of a block before crawlSeedRegister adds the first number and the skipped entries. */
export const blockNamePrefix = (object: string, b: Pick<SeedBlock, 'start' | 'length'>): string => `@${object}.${b.start.toString(36)}.${b.length.toString(36)}`;

/**
 * Writes the chunk's object, then registers each block with its host (crawlSeedRegister, the
 * blocks of a slot's hosts together).
 * Returns, per host, the seeds that were new and whether its workflow must be woken (as
 * Frontier.needsWake says for an enqueue). `onProgress`: called now and then (a heartbeat).
 */
export async function landSeedChunk(
  redis: RedisLike,
  store: ObjectStore,
  campaignKey: string,
  mode: SeenMode,
  hosts: HostSeeds[],
  onProgress?: () => void,
): Promise<{ added: Map<string, number>; wake: string[]; object: string | null; bytes: number }> {
  const added = new Map<string, number>();
  const wake: string[] = [];
  // A few hundred hosts at a time, the event loop let go between them: this worker's workflow
  // tasks and queries (a pause, a status) must not wait seconds behind a chunk's compression.
  const parts: Buffer[] = [];
  const blocks: SeedBlock[] = [];
  let at = 0;
  for (let i = 0; i < hosts.length; i += BUILD_SLICE) {
    const part = buildSeedObject(hosts.slice(i, i + BUILD_SLICE), layoutOfMode(mode), at);
    parts.push(part.body);
    blocks.push(...part.blocks);
    at += part.body.length;
    await new Promise((r) => setImmediate(r));
  }
  const body = Buffer.concat(parts);
  if (blocks.length === 0) return { added, wake, object: null, bytes: 0 };
  const object = newSeedObjectName();
  await store.putBytes(sharedSegmentKey(campaignKey, object), body);
  onProgress?.();
  // Results by block, so `added` and `wake` keep the chunk's host order (the order hosts get ready) whatever the grouping.
  const results: [number, number, number][] = new Array(blocks.length);
  const groups = registerGroups(
    blocks.map((b, i) => ({ i, b })),
    ({ b }) => keySlot(hostKeys(campaignKey, b.host).seen),
  );
  const register = (group: { b: SeedBlock }[]) =>
    registerSeedBlocks(
      redis,
      campaignKey,
      mode,
      object,
      group.map(({ b }) => b),
    );
  for (let g = 0; g < groups.length; g += REGISTER_CONCURRENCY) {
    const part = groups.slice(g, g + REGISTER_CONCURRENCY);
    const answers = await Promise.all(part.map(register));
    part.forEach((group, j) => group.forEach(({ i }, m) => (results[i] = answers[j]![m]!)));
    onProgress?.();
  }
  blocks.forEach((b, i) => {
    const [n, awake, queued] = results[i]!;
    added.set(b.host, n);
    if (awake !== 1 && queued > 0) wake.push(b.host);
  });
  return { added, wake, object, bytes: body.length };
}

/**
 * Items grouped by slot, in the order each slot first appears and list order within a slot, a
 * group at most `most` items: what one script may touch on Redis Cluster, as few calls as that allows.
 */
export function registerGroups<T>(items: T[], slotOf: (item: T) => number, most = REGISTER_HOSTS_A_CALL): T[][] {
  const open = new Map<number, T[]>();
  const groups: T[][] = [];
  for (const item of items) {
    const slot = slotOf(item);
    let group = open.get(slot);
    if (!group || group.length >= most) {
      group = [];
      open.set(slot, group);
      groups.push(group);
    }
    group.push(item);
  }
  return groups;
}

/** crawlSeedRegister for blocks of hosts of one slot: {added, awake, queued} per block. */
export async function registerSeedBlocks(redis: RedisLike, campaignKey: string, mode: SeenMode, object: string, blocks: SeedBlock[]): Promise<[number, number, number][]> {
  const layout = layoutOfMode(mode);
  const keys: string[] = [];
  const argv: (string | Buffer)[] = [mode];
  for (const b of blocks) {
    const k = hostKeys(campaignKey, b.host);
    keys.push(k.seen, k.frontier, k.seq, k.awake, k.stats, k.spill);
    argv.push(blockNamePrefix(object, b), String(b.entries.length));
    for (const e of b.entries) argv.push(seenArg(e.fp, layout), String(e.base));
  }
  const flat = await redis.crawlSeedRegister(keys.length, ...keys, ...argv);
  return blocks.map((_, i) => [flat[3 * i]!, flat[3 * i + 1]!, flat[3 * i + 2]!]);
}

/** crawlSeedRegister for one block: {added, awake, queued}. */
export async function registerSeedBlock(redis: RedisLike, campaignKey: string, mode: SeenMode, object: string, b: SeedBlock): Promise<[number, number, number]> {
  return (await registerSeedBlocks(redis, campaignKey, mode, object, [b]))[0]!;
}

const marked = new Map<string, Promise<boolean>>();

/** Whether the campaign's seed list lands in shared segments (marked when it was created). Read once a process: a marker never changes. */
export function seedSegmentsOn(redis: RedisLike, campaignKey: string): Promise<boolean> {
  let f = marked.get(campaignKey);
  if (!f) {
    f = redis.hget(contentKeys(campaignKey, 0).meta, SEED_SEGMENTS_FIELD).then((v) => v === '1');
    f.catch(() => marked.delete(campaignKey));
    marked.set(campaignKey, f);
  }
  return f;
}

/** Marks a new campaign's seed list to land in shared segments: before any seed of it is read. A retried creation keeps the marker. */
export async function markSeedSegments(redis: RedisLike, campaignKey: string): Promise<void> {
  await redis.hsetnx(contentKeys(campaignKey, 0).meta, SEED_SEGMENTS_FIELD, '1');
  marked.delete(campaignKey);
}
