// Where a campaign's Redis memory goes (issue 40, "measure first"): the
// server's `used_memory` (INFO memory) sampled over time, and every key's
// `MEMORY USAGE … SAMPLES 0` (all of its elements, not an estimate) summed by
// key family (src/redis/key-families.ts) and by the keys.ts field that names it.
import type { Cluster, Redis } from 'ioredis';
import { classifyKey, KEY_FAMILIES, type KeyFamily } from '../src/redis/key-families';
import type { RedisLike } from '../src/redis/scripts';
import { BLOOM_HEADER_BYTES } from '../src/redis/seen-bloom';

/** The servers that hold keys: every master of a cluster, or the one server. */
function holders(redis: RedisLike): Redis[] {
  return 'nodes' in redis && typeof (redis as Cluster).nodes === 'function' && (redis as Cluster).isCluster ? (redis as Cluster).nodes('master') : [redis as Redis];
}

/** Fields of INFO memory summed over the servers (bytes). */
async function infoMemory(redis: RedisLike, fields: string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = Object.fromEntries(fields.map((f) => [f, 0]));
  for (const node of holders(redis)) {
    const info = await node.info('memory');
    for (const f of fields) {
      const m = new RegExp(`^${f}:(\\d+)`, 'm').exec(info);
      if (!m) throw new Error(`INFO memory has no ${f}`);
      out[f] += Number(m[1]);
    }
  }
  return out;
}

/** `used_memory` summed over the servers (bytes): what Redis has allocated, its own overheads included. */
export async function usedMemory(redis: RedisLike): Promise<number> {
  return (await infoMemory(redis, ['used_memory'])).used_memory;
}

/**
 * used_memory and the parts of it that are not the data: what the clients' buffers
 * (the workers' connections), the AOF buffer and cached scripts hold, which a
 * difference of used_memory counts along with the keys.
 */
export const memoryParts = (redis: RedisLike) => infoMemory(redis, ['used_memory', 'used_memory_dataset', 'mem_clients_normal', 'mem_aof_buffer', 'used_memory_scripts']);

/**
 * `used_memory` every `everyMs` until stopped: the peak and when it was
 * reached (seconds from the start), and every sample. A sample that fails
 * (Redis busy past the timeout) is skipped, not fatal: the figure is a peak.
 */
export function watchUsedMemory(redis: RedisLike, everyMs: number): { stop: () => Promise<{ peak: number; peakAtSeconds: number; samples: [number, number][] }> } {
  const t0 = Date.now();
  const samples: [number, number][] = [];
  let inFlight: Promise<void> = Promise.resolve();
  const sample = () => {
    inFlight = usedMemory(redis).then(
      (bytes) => void samples.push([Math.round((Date.now() - t0) / 1000), bytes]),
      () => undefined,
    );
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop: async () => {
      clearInterval(timer);
      await inFlight;
      const top = samples.reduce<[number, number]>((a, b) => (b[1] > a[1] ? b : a), [0, 0]);
      return { peak: top[1], peakAtSeconds: top[0], samples };
    },
  };
}

export interface Tally {
  keys: number;
  bytes: number;
  /** Members of sets and sorted sets, fields of hashes, items of lists; a string counts 1. */
  elements: number;
}

export interface KindTally extends Tally {
  family: KeyFamily;
  /** Keys by Redis's encoding of them (listpack, hashtable, skiplist, intset, embstr…): compact or not. */
  encodings: Record<string, number>;
}

export interface MemoryBreakdown {
  keys: number;
  /** Sum of MEMORY USAGE over the keys counted (the campaign's and the state all campaigns share). */
  bytes: number;
  byFamily: Record<KeyFamily, Tally>;
  /** By keys.ts field (`host.frontier`, `campaign.hosts`, `content.band`…), largest first. */
  byKind: Record<string, KindTally>;
  /** Keys of other campaigns, left out. */
  otherCampaignKeys: number;
  /** The first names no family knows (src/redis/key-families.ts): a key family keys.ts does not build. */
  unknownKeys: string[];
  /** How long the SCAN and MEMORY USAGE of every key took (ms). */
  scanMs: number;
}

/** The URL count of a bucketed seen set's `#` field (`<level> <split> <count>`), or null for any other answer. */
const seenCount = (v: unknown): number | null => {
  const m = typeof v === 'string' ? /^\d+ \d+ (\d+)$/.exec(v) : null;
  return m ? Number(m[1]) : null;
};

const COUNT: Record<string, string | null> = { set: 'scard', zset: 'zcard', hash: 'hlen', list: 'llen', string: null, stream: 'xlen' };

/**
 * Every key on every server, through SCAN (never KEYS), with its MEMORY USAGE
 * (SAMPLES 0: every element measured), type, encoding and element count, a
 * pipeline per SCAN page. Keys of `campaignKey` and state shared by
 * campaigns (host clocks, the robots.txt cache, workers) are counted; other
 * campaigns' keys are only counted as left out. A key deleted between the
 * SCAN and its MEMORY USAGE counts nothing.
 */
export async function memoryByFamily(redis: RedisLike, campaignKey: string): Promise<MemoryBreakdown> {
  const t0 = Date.now();
  const byFamily = Object.fromEntries(KEY_FAMILIES.map((f) => [f, { keys: 0, bytes: 0, elements: 0 }])) as Record<KeyFamily, Tally>;
  const byKind: Record<string, KindTally> = {};
  let otherCampaignKeys = 0;
  const unknownKeys: string[] = [];
  for (const node of holders(redis)) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'COUNT', 1000);
      cursor = next;
      const classes = found.map(classifyKey);
      const keys = found.filter((_, i) => {
        const c = classes[i];
        if (c.campaignKey !== null && c.campaignKey !== campaignKey) otherCampaignKeys++;
        return c.campaignKey === null || c.campaignKey === campaignKey;
      });
      const mine = classes.filter((c) => c.campaignKey === null || c.campaignKey === campaignKey);
      if (keys.length === 0) continue;
      const first = node.pipeline();
      for (const k of keys) first.call('MEMORY', 'USAGE', k, 'SAMPLES', '0').type(k).object('ENCODING', k);
      const r1 = (await first.exec()) ?? [];
      const second = node.pipeline();
      const counted: number[] = [];
      keys.forEach((k, i) => {
        const type = String(r1[i * 3 + 1]?.[1]);
        // A bucketed seen set (src/redis/seen-set.ts) counts its URLs in field `#`, not in its fields.
        if (type === 'hash' && mine[i].kind === 'host.seen') {
          second.hget(k, '#');
          counted.push(i);
          return;
        }
        // A Bloom filter seen set (src/redis/seen-bloom.ts) counts the URLs added in its header.
        if (type === 'string' && mine[i].kind === 'host.seen') {
          second.getrange(k, 0, BLOOM_HEADER_BYTES - 1);
          counted.push(i);
          return;
        }
        const cmd = COUNT[type];
        if (cmd) {
          (second as unknown as Record<string, (key: string) => void>)[cmd](k);
          counted.push(i);
        }
      });
      const r2 = counted.length ? ((await second.exec()) ?? []) : [];
      const elements = new Map(counted.map((i, j) => [i, seenCount(r2[j]?.[1]) ?? Number(r2[j]?.[1] ?? 0)]));
      keys.forEach((_, i) => {
        const bytes = r1[i * 3]?.[1];
        // Gone since the SCAN: MEMORY USAGE answers nil.
        if (bytes === null || bytes === undefined || r1[i * 3]?.[0]) return;
        const c = mine[i];
        if (c.kind === 'unknown' && unknownKeys.length < 10) unknownKeys.push(keys[i]);
        const n = elements.get(i) ?? 1;
        const f = byFamily[c.family];
        f.keys++;
        f.bytes += Number(bytes);
        f.elements += n;
        const k = (byKind[c.kind] ??= { family: c.family, keys: 0, bytes: 0, elements: 0, encodings: {} });
        k.keys++;
        k.bytes += Number(bytes);
        k.elements += n;
        const enc = String(r1[i * 3 + 2]?.[1] ?? '?');
        k.encodings[enc] = (k.encodings[enc] ?? 0) + 1;
      });
    } while (cursor !== '0');
  }
  const total = Object.values(byFamily).reduce((a, f) => ({ keys: a.keys + f.keys, bytes: a.bytes + f.bytes }), { keys: 0, bytes: 0 });
  return {
    ...total,
    byFamily,
    byKind: Object.fromEntries(Object.entries(byKind).sort((a, b) => b[1].bytes - a[1].bytes)),
    otherCampaignKeys,
    unknownKeys,
    scanMs: Date.now() - t0,
  };
}

const round = (n: number, digits = 1): number => Number(n.toFixed(digits));

/** Each family's bytes ÷ `per` (a page, a URL), with its keys and share of the whole; empty families left out. */
export function familyFigures(b: MemoryBreakdown, per: number): Record<string, { keys: number; bytes: number; elements: number; bytesPer: number; share: number }> {
  return Object.fromEntries(
    Object.entries(b.byFamily)
      .filter(([, t]) => t.keys > 0)
      .sort((a, c) => c[1].bytes - a[1].bytes)
      .map(([f, t]) => [f, { ...t, bytesPer: round(t.bytes / Math.max(1, per)), share: round(t.bytes / Math.max(1, b.bytes), 3) }]),
  );
}

/** Families that grow with URLs, not hosts: what a waiting, seen or crawled URL costs. The rest grows with hosts (and a few keys per campaign). */
export const URL_FAMILIES: KeyFamily[] = [
  'frontier',
  'seen',
  'content-verdicts',
  'content-exact',
  'content-bands',
  'content-payloads',
  'content-pages',
  'sealing',
  'budgets',
  'revisits',
];

/** Bytes of the families named. */
export const bytesOf = (b: MemoryBreakdown, families: KeyFamily[]): number => families.reduce((n, f) => n + b.byFamily[f].bytes, 0);

/** A breakdown as a table: family, keys, elements, bytes, bytes a `unit`, share. */
export function familyTable(title: string, b: MemoryBreakdown, per: number, unit: string): string {
  const rows = Object.entries(familyFigures(b, per)).map(([f, t]) => [
    f,
    String(t.keys),
    String(t.elements),
    String(t.bytes),
    String(t.bytesPer),
    `${Math.round(t.share * 100)} %`,
  ]);
  const head = ['family', 'keys', 'elements', 'bytes', `bytes a ${unit}`, 'share'];
  const all = [head, ...rows, ['all', String(b.keys), '', String(b.bytes), String(round(b.bytes / Math.max(1, per))), '100 %']];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  return [title, ...all.map((r) => r.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  '))].join('\n');
}
