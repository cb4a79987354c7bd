// The counters of a crawl, declared once: every host keeps them (its stats
// hash in Redis, moved by each page's commit), its record and session result
// carry them, and every sum of them (campaign totals, the index tally, a
// report's summary) spells the same fields. Pure (workflows import it), and
// the field lists are the Redis hash fields: the Lua scripts that name them
// are built from these lists too (src/redis/scripts.ts).

/**
 * How a page counts: fetched (a 2xx or 3xx response, redirects and
 * duplicates included), failed (an error outcome: a final 4xx/5xx, network
 * errors, timeouts, refused addresses…), skipped (not requested on purpose:
 * robots.txt, budgets; sitemaps and feeds).
 */
export const PAGE_COUNTS = ['fetched', 'failed', 'skipped'] as const;
/** Page requisites (embeds) in the same three classes, apart from pages, so page budgets and figures count pages only. */
export const EMBED_COUNTS = ['embeds', 'embedsFailed', 'embedsSkipped'] as const;
/** How a finished URL counts (Frontier.commit's stat field): one of these, once. */
export const COUNTED = [...PAGE_COUNTS, ...EMBED_COUNTS] as const;
/** Every counter, in the order sums spell them (their JSON keeps this order): the classes, then the stored body bytes. */
export const COUNTERS = [...COUNTED, 'bytes'] as const;

export type PageCounted = (typeof PAGE_COUNTS)[number];
export type EmbedCounted = (typeof EMBED_COUNTS)[number];
export type CountedAs = (typeof COUNTED)[number];
export type Counter = (typeof COUNTERS)[number];
/** Every counter: what sums carry (campaign totals, index tally, report summary). */
export type Counters = Record<Counter, number>;
/**
 * A host's counters as its record and session result carry them: the embed
 * counters only once it has any (absent in state carried by older releases,
 * and kept absent for page-only crawls, whose JSON stays as it was).
 */
export type HostStats = Record<PageCounted | 'bytes', number> & Partial<Record<EmbedCounted, number>>;

const EMBED_OF: Readonly<Record<PageCounted, EmbedCounted>> = { fetched: 'embeds', failed: 'embedsFailed', skipped: 'embedsSkipped' };

/** An embed's class for what would be a page's. */
export function embedCounted(c: PageCounted): EmbedCounted {
  return EMBED_OF[c];
}

export function isPageCounted(c: CountedAs): c is PageCounted {
  return (PAGE_COUNTS as readonly string[]).includes(c);
}

/**
 * `fields` read from `raw` as numbers, in the order of `fields`: a Redis
 * hash's strings, counters already read, or nothing (all 0). A field that is
 * absent counts 0.
 */
export function countsOf<F extends string>(fields: readonly F[], raw?: Readonly<Partial<Record<F, string | number>>>): Record<F, number> {
  const out = {} as Record<F, number>;
  for (const f of fields) out[f] = Number(raw?.[f] ?? 0);
  return out;
}

/** Every counter of `raw` (see countsOf); all 0 without one. */
export function countersOf(raw?: Readonly<Partial<Record<Counter, string | number>>>): Counters {
  return countsOf(COUNTERS, raw);
}

/** A host's stats from its counters (Frontier.stats()): pages and bytes, then the embeds once it has any. */
export function hostStatsOf(st: Readonly<Partial<Record<Counter, number>>> = {}): HostStats {
  const stats: HostStats = { ...countsOf(PAGE_COUNTS, st), bytes: st.bytes ?? 0 };
  return EMBED_COUNTS.some((f) => st[f]) ? { ...stats, ...countsOf(EMBED_COUNTS, st) } : stats;
}

/**
 * The embeds of `t` in the page classes (`{ fetched, failed, skipped }`),
 * or null while it has none: results, cards and status lines show embeds
 * only once there are any, so page-only campaigns keep what they showed.
 */
export function embedCounts(t: Readonly<Partial<Record<EmbedCounted, number>>>): Record<PageCounted, number> | null {
  if (!EMBED_COUNTS.some((f) => t[f])) return null;
  const out = {} as Record<PageCounted, number>;
  for (const c of PAGE_COUNTS) out[c] = t[EMBED_OF[c]] ?? 0;
  return out;
}
