// What each Redis key is for, read back from its name: the bench's memory
// scenario (bench/redis-memory.ts) sums `MEMORY USAGE` by these families to
// say where a crawl's Redis memory goes (issue 40). The tables below are
// typed by the key builders of keys.ts, so a key added there does not compile
// until it is given a family here; a name nothing here knows is `other`.
import { addressKeys, campaignKeys, contentKeys, hostKeys, outputKeys, sharedHostKeys, workerKeys } from './keys';

export const KEY_FAMILIES = [
  /** Frontier entries and what claiming them needs (discovery counter, the entry being worked on, claims so far). */
  'frontier',
  /** URL fingerprints ever enqueued, per host: the URL-seen test. */
  'seen',
  /** The content index: a URL's first verdict, exact content hashes, SimHash band entries, WARC payload digests. */
  'content-verdicts',
  'content-exact',
  'content-bands',
  'content-payloads',
  /** The compact content index's page table (each distinct page's URL, once) and its meta hash (format marker, bucket counts). */
  'content-pages',
  /** Committed attempt ids (which index line of a URL the seal keeps), and for a bucket output what undoes a commit not yet sealed. */
  'sealing',
  /** The campaign's per-host table (JSON record a host) and its attention order. */
  'host-records',
  /** Who owns a host now (session, fencing number, awake, refused, login). */
  'host-session',
  /** Hosts waiting for a slot, holding one, given up: the dispatch's bookkeeping. */
  'dispatch',
  /** Outcome counters, per host and their sums, and the campaign's problems. */
  'counters',
  /** Politeness clocks shared by every campaign (and their fences). */
  'clocks',
  /** robots.txt state per host and the shared robots.txt cache. */
  'robots',
  'cookies',
  /** Revisit schedules and what each revisit compares with. */
  'revisits',
  /** Fingerprints holding a slot of the page or embed budget. */
  'budgets',
  'other',
] as const;
export type KeyFamily = (typeof KEY_FAMILIES)[number];

/** Where the key lives: one host of a campaign, the campaign itself, or state every campaign shares. */
export type KeyScope = 'host' | 'campaign' | 'shared';

export interface KeyClass {
  family: KeyFamily;
  /** The builder and field of keys.ts that names it (`host.frontier`, `content.band`), or `unknown`. */
  kind: string;
  scope: KeyScope | null;
  /** The campaign's key (`<campaignId>.<run>`) of a campaign's or host's key. */
  campaignKey: string | null;
}

type HostKind = keyof ReturnType<typeof hostKeys>;
type CampaignKind = keyof ReturnType<typeof campaignKeys>;
type ContentKind = keyof ReturnType<typeof contentKeys>;
type SharedKind = keyof ReturnType<typeof sharedHostKeys>;
type WorkerKind = keyof ReturnType<typeof workerKeys>;
type OutputKind = keyof ReturnType<typeof outputKeys>;
type AddressKind = keyof ReturnType<typeof addressKeys>;

export const HOST_KEY_FAMILIES: Record<HostKind, KeyFamily> = {
  frontier: 'frontier',
  spill: 'frontier',
  spillLock: 'frontier',
  spillDone: 'frontier',
  seen: 'seen',
  seq: 'frontier',
  current: 'frontier',
  session: 'host-session',
  fence: 'host-session',
  attempts: 'frontier',
  committed: 'sealing',
  unsealed: 'sealing',
  stats: 'counters',
  robots: 'robots',
  robotsRetry: 'robots',
  awake: 'host-session',
  refused: 'host-session',
  robotsRedirectRefused: 'robots',
  revisit: 'revisits',
  revisitMeta: 'revisits',
  cookies: 'cookies',
  login: 'host-session',
  renderPlan: 'other',
  captures: 'other',
};

export const CAMPAIGN_KEY_FAMILIES: Record<CampaignKind, KeyFamily> = {
  config: 'other',
  budget: 'budgets',
  embedBudget: 'budgets',
  control: 'other',
  pausedHosts: 'other',
  hostDelays: 'other',
  hostRender: 'other',
  ready: 'dispatch',
  readySeq: 'dispatch',
  active: 'dispatch',
  parked: 'revisits',
  gen: 'dispatch',
  nudged: 'dispatch',
  dispatching: 'dispatch',
  givenUp: 'dispatch',
  hosts: 'host-records',
  attention: 'host-records',
  totals: 'counters',
  problems: 'counters',
  scopeRoots: 'other',
  problemCount: 'counters',
  epoch: 'other',
  pageHosts: 'dispatch',
  proxiesDown: 'other',
};

export const CONTENT_KEY_FAMILIES: Record<ContentKind, KeyFamily> = {
  verdict: 'content-verdicts',
  exact: 'content-exact',
  payloads: 'content-payloads',
  band: 'content-bands',
  meta: 'content-pages',
  // A bucket's family is its map's (COMPACT_MAP_FAMILIES), read from its name.
  bucket: 'content-pages',
};

/** The compact layout's maps (src/dedup/compact-store.ts), by the map name in a bucket's key. */
// Format 3's SimHash table (s) is the band index's; its origin table (h) and map (o) the page table's.
const COMPACT_MAPS: Record<string, KeyFamily> = {
  v: 'content-verdicts',
  x: 'content-exact',
  p: 'content-payloads',
  u: 'content-pages',
  o: 'content-pages',
  h: 'content-pages',
  s: 'content-bands',
};
const compactMapFamily = (map: string): KeyFamily | undefined => COMPACT_MAPS[map] ?? (/^k\d+b\d+$/.test(map) ? 'content-bands' : undefined);
const COMPACT_BUCKET = /^content:([^:]+):\d+$/;

export const SHARED_KEY_FAMILIES: Record<SharedKind, KeyFamily> = { clock: 'clocks', clockFence: 'clocks', robots: 'robots' };
const WORKER_KEY_FAMILIES: Record<WorkerKind, KeyFamily> = { leases: 'other', lastBeat: 'other', sessions: 'other', reaping: 'other' };
const OUTPUT_KEY_FAMILIES: Record<OutputKind, KeyFamily> = { spoolers: 'other', flush: 'other', flushed: 'other' };
const ADDRESS_KEY_FAMILIES: Record<AddressKind, KeyFamily> = { slots: 'other' };

// Key names are `<prefix>:{<tag>}:<suffix>`; the suffixes are read off the builders themselves, with a tag no real key has.
const TAG = '\u0000';
/** Suffix → kind, and for builders that take a name (a worker's sessions), the suffix's start → kind. */
interface Suffixes<K> {
  exact: Map<string, K>;
  starts: [string, K][];
}
const suffixes = <K extends string>(keys: Record<K, string | ((x: string) => string)>, tag: string): Suffixes<K> => {
  const out: Suffixes<K> = { exact: new Map(), starts: [] };
  for (const [kind, v] of Object.entries(keys) as [K, string | ((x: string) => string)][]) {
    const name = typeof v === 'string' ? v : v(TAG);
    const suffix = name.slice(name.indexOf(`${tag}}:`) + tag.length + 2);
    if (typeof v === 'string') out.exact.set(suffix, kind);
    else out.starts.push([suffix.slice(0, suffix.indexOf(TAG)), kind]);
  }
  return out;
};
const lookup = <K>(s: Suffixes<K>, suffix: string): K | undefined => s.exact.get(suffix) ?? s.starts.find(([start]) => suffix.startsWith(start))?.[1];
const HOST_SUFFIXES = suffixes(hostKeys(TAG, TAG), `${TAG}|${TAG}`);
const CAMPAIGN_SUFFIXES = suffixes(campaignKeys(TAG), TAG);
const WORKER_SUFFIXES = suffixes(workerKeys(), 'workers');
const OUTPUT_SUFFIXES = suffixes(outputKeys(TAG), `output:${TAG}`);
// The band's index and the content distance are numbers in its name: BAND matches any.
const CONTENT_SUFFIXES = suffixes(
  { verdict: contentKeys(TAG, 0).verdict, exact: contentKeys(TAG, 0).exact, payloads: contentKeys(TAG, 0).payloads, meta: contentKeys(TAG, 0).meta },
  TAG,
);
const BAND = /^content:k\d+:band:\d+$/;
const prefixOf = (name: string): string => name.slice(0, name.indexOf('{'));
const SHARED_PREFIXES = new Map<string, SharedKind>(
  (Object.entries(sharedHostKeys(TAG)) as [SharedKind, string][]).map(([kind, name]) => [`${prefixOf(name)}|${name.slice(name.indexOf('}') + 1)}`, kind]),
);
/** Shared keys whose builder gives a stem the real name goes on from: the robots.txt cache adds `:<scheme>:<port>[:pinned:<address>]` (src/robots/robots-store.ts). */
const SHARED_STEMS = new Map<string, SharedKind>([[prefixOf(sharedHostKeys(TAG).robots), 'robots']]);
const ADDRESS_PREFIXES = new Map<string, AddressKind>(
  (Object.entries(addressKeys(TAG)) as [AddressKind, string][]).map(([kind, name]) => [`${prefixOf(name)}|${name.slice(name.indexOf('}') + 1)}`, kind]),
);

const UNKNOWN: KeyClass = { family: 'other', kind: 'unknown', scope: null, campaignKey: null };

/** The family, kind and owner of a key, from its name alone. */
export function classifyKey(name: string): KeyClass {
  const open = name.indexOf('{');
  const close = name.indexOf('}', open + 1);
  if (open < 0 || close < 0) return UNKNOWN;
  const prefix = name.slice(0, open);
  const tag = name.slice(open + 1, close);
  const rest = name.slice(close + 1);
  // State shared by every campaign: the tag is a host or an address, the prefix says what it is.
  const shared = SHARED_PREFIXES.get(`${prefix}|${rest}`) ?? (rest.startsWith(':') ? SHARED_STEMS.get(prefix) : undefined);
  if (shared) return { family: SHARED_KEY_FAMILIES[shared], kind: `shared.${shared}`, scope: 'shared', campaignKey: null };
  const address = ADDRESS_PREFIXES.get(`${prefix}|${rest}`);
  if (address) return { family: ADDRESS_KEY_FAMILIES[address], kind: `address.${address}`, scope: 'shared', campaignKey: null };
  if (prefix !== 'crawl:' || !rest.startsWith(':')) return UNKNOWN;
  const suffix = rest.slice(1);
  if (tag === 'workers' || tag.startsWith('workers:')) {
    const kind = lookup(WORKER_SUFFIXES, suffix);
    return kind ? { family: WORKER_KEY_FAMILIES[kind], kind: `worker.${kind}`, scope: 'shared', campaignKey: null } : UNKNOWN;
  }
  if (tag.startsWith('output:')) {
    const kind = lookup(OUTPUT_SUFFIXES, suffix);
    return kind ? { family: OUTPUT_KEY_FAMILIES[kind], kind: `output.${kind}`, scope: 'shared', campaignKey: null } : UNKNOWN;
  }
  const bar = tag.indexOf('|');
  if (bar >= 0) {
    const kind = lookup(HOST_SUFFIXES, suffix);
    return kind ? { family: HOST_KEY_FAMILIES[kind], kind: `host.${kind}`, scope: 'host', campaignKey: tag.slice(0, bar) } : UNKNOWN;
  }
  const campaign = lookup(CAMPAIGN_SUFFIXES, suffix);
  if (campaign) return { family: CAMPAIGN_KEY_FAMILIES[campaign], kind: `campaign.${campaign}`, scope: 'campaign', campaignKey: tag };
  const bucket = COMPACT_BUCKET.exec(suffix);
  const bucketFamily = bucket ? compactMapFamily(bucket[1]) : undefined;
  if (bucket && bucketFamily) return { family: bucketFamily, kind: `content.bucket:${bucket[1]}`, scope: 'campaign', campaignKey: tag };
  const content = BAND.test(suffix) ? 'band' : lookup(CONTENT_SUFFIXES, suffix);
  if (content) return { family: CONTENT_KEY_FAMILIES[content], kind: `content.${content}`, scope: 'campaign', campaignKey: tag };
  return UNKNOWN;
}
