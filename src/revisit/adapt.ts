// Adaptive revisit intervals (the scheme of Nutch's AdaptiveFetchSchedule):
// a page that changed since its last visit comes back sooner (interval ÷
// factor), one that did not comes back later (× factor), always within the
// campaign's [minMs, maxMs]. Pure: the page step (activities/page.ts) feeds
// it what a visit saw and stores what it returns beside the host's schedule
// (src/redis/revisit.ts). docs/continuous-crawling.md explains the choices.
import type { RevisitSettings } from '../config/campaign';

/** What the schedule keeps per URL between visits (compact: one per URL of a revisit campaign, in Redis). */
export interface RevisitMeta {
  /** Current interval (ms). */
  i: number;
  /** ETag and Last-Modified of the last full response: the next visit's If-None-Match / If-Modified-Since. */
  e?: string;
  m?: string;
  /** Payload digest of the last full 2xx response, and its SimHash (hex) when the page had enough text. */
  d?: string;
  s?: string;
  /** The record holding the last full capture: what a 304's revisit record refers to. */
  r?: { u: string; t: string; id: string | null };
  /** 404/410 answers in a row. */
  g?: number;
  /** Visits and changes seen (the change rate operators look at). */
  v?: number;
  c?: number;
}

/** What one visit saw. `status` null: no response (a network failure). */
export interface Observation {
  status: number | null;
  /** Payload digest and SimHash (hex, null when the text was too short) of a 2xx body. */
  digest?: string | null;
  simhash?: string | null;
  etag?: string | null;
  lastModified?: string | null;
  /** Where this visit's full capture is (response record, or the record an identical-payload revisit refers to). */
  ref?: { u: string; t: string; id: string | null } | null;
}

/**
 * new: first visit. changed / unchanged: adapted. missing: a 404/410 kept
 * on the schedule for another try. gone: dropped after goneAfter of those.
 * kept: anything else (a redirect, another error): the interval stays.
 */
export type RevisitVerdict = 'new' | 'changed' | 'unchanged' | 'missing' | 'gone' | 'kept' | 'not-requested';

export interface RevisitPlan {
  verdict: RevisitVerdict;
  /** null: the URL leaves the schedule. */
  intervalMs: number | null;
  meta: RevisitMeta | null;
}

/**
 * The first interval of a URL with no history: the geometric middle of the
 * bounds (1 h and 30 d give about 27 h), so a page is neither hammered before
 * anything is known about it nor forgotten for a month; the factor then
 * moves it towards its true rate in a few visits (log_factor(max/min) ≈ 16
 * steps span the whole range at 1.5). A sitemap's hint, when present, wins.
 */
export function firstInterval(s: Pick<RevisitSettings, 'minMs' | 'maxMs'>, hintMs?: number | null): number {
  const base = hintMs ?? Math.sqrt(s.minMs * s.maxMs);
  return clamp(Math.round(base), s);
}

function clamp(ms: number, s: Pick<RevisitSettings, 'minMs' | 'maxMs'>): number {
  return Math.min(s.maxMs, Math.max(s.minMs, ms));
}

/** Bits that differ between two 64-bit SimHashes written as 16 hex digits. */
export function hexDistance(a: string, b: string): number {
  let x = BigInt(`0x${a}`) ^ BigInt(`0x${b}`);
  let n = 0;
  while (x) {
    n += Number(x & 1n);
    x >>= 1n;
  }
  return n;
}

/** Whether a 2xx body differs from the last one in a way that counts as a change. */
export function changed(prev: RevisitMeta, obs: Observation, minChangeDistance: number): boolean {
  if (!obs.digest || !prev.d) return true;
  if (obs.digest === prev.d) return false;
  // Same digest aside, boilerplate that changes on every request (a clock, a
  // token) is not a change: the SimHash of the text barely moves.
  if (minChangeDistance > 0 && obs.simhash && prev.s) return hexDistance(obs.simhash, prev.s) > minChangeDistance;
  return true;
}

/** The conditional request headers of a revisit. */
export function conditionalHeaders(meta: RevisitMeta | null): Record<string, string> {
  const h: Record<string, string> = {};
  if (!meta?.r) return h; // Nothing to refer a 304 to: ask for the full page.
  if (meta.e) h['if-none-match'] = meta.e;
  if (meta.m) h['if-modified-since'] = meta.m;
  return h;
}

export function planRevisit(prev: RevisitMeta | null, obs: Observation, s: RevisitSettings, hintMs?: number | null): RevisitPlan {
  const current = prev?.i ?? firstInterval(s, hintMs);
  const visits = (prev?.v ?? 0) + 1;
  const st = obs.status;
  if (st === 404 || st === 410) {
    const g = (prev?.g ?? 0) + 1;
    if (g >= s.goneAfter) return { verdict: 'gone', intervalMs: null, meta: null };
    // Retried at the shortest interval: a page that is back is found soon, one that is gone leaves soon.
    return { verdict: 'missing', intervalMs: s.minMs, meta: { ...(prev ?? { i: current }), g, v: visits } };
  }
  const base: RevisitMeta = { ...(prev ?? { i: current }), v: visits };
  delete base.g;
  if (st === 304 && prev?.r) {
    const i = clamp(Math.round(current * s.factor), s);
    return { verdict: 'unchanged', intervalMs: i, meta: { ...base, i, ...(obs.etag ? { e: obs.etag } : {}), ...(obs.lastModified ? { m: obs.lastModified } : {}) } };
  }
  if (st !== null && st >= 200 && st < 300 && obs.digest) {
    const full: RevisitMeta = { ...base, d: obs.digest };
    if (obs.simhash) full.s = obs.simhash;
    else delete full.s;
    if (obs.etag) full.e = obs.etag;
    else delete full.e;
    if (obs.lastModified) full.m = obs.lastModified;
    else delete full.m;
    if (obs.ref) full.r = obs.ref;
    if (!prev?.d) return { verdict: 'new', intervalMs: current, meta: { ...full, i: current } };
    const didChange = changed(prev, obs, s.minChangeDistance);
    const i = clamp(Math.round(didChange ? current / s.factor : current * s.factor), s);
    return { verdict: didChange ? 'changed' : 'unchanged', intervalMs: i, meta: { ...full, i, c: (prev.c ?? 0) + (didChange ? 1 : 0) } };
  }
  // A redirect, an empty body, another error or no response: nothing learnt about change.
  return { verdict: 'kept', intervalMs: current, meta: { ...base, i: current } };
}

/**
 * A URL on the schedule that came due but was not requested (robots.txt
 * disallows it for now, its host resolves to a refused address, robots.txt
 * is unavailable): robots.txt and addresses change, so it stays, at a
 * longer interval each time (× factor, at most maxMs), no visit counted.
 * Null for a URL never visited: a link that was disallowed from the start
 * does not join the schedule.
 */
export function planNotRequested(prev: RevisitMeta | null, s: RevisitSettings): RevisitPlan | null {
  if (prev === null) return null;
  const i = clamp(Math.round(prev.i * s.factor), s);
  return { verdict: 'not-requested', intervalMs: i, meta: { ...prev, i } };
}

const HOUR = 60 * 60_000;
const DAY = 24 * HOUR;
/** sitemaps.org's change frequencies as intervals; always and never are the bounds. */
const CHANGEFREQ_MS: Record<string, number> = { hourly: HOUR, daily: DAY, weekly: 7 * DAY, monthly: 30 * DAY, yearly: 365 * DAY };

/**
 * The first interval a sitemap suggests for a URL, or null: its
 * <changefreq> (always = min, never = max), else the age of its <lastmod>
 * (a page unchanged for a week is unlikely to change within the hour; the
 * adaptation corrects a poor guess in a few visits). Within the bounds.
 */
export function sitemapHintMs(hint: { lastmod?: string; changefreq?: string }, now: number, s: Pick<RevisitSettings, 'minMs' | 'maxMs'>): number | null {
  if (hint.changefreq === 'always') return s.minMs;
  if (hint.changefreq === 'never') return s.maxMs;
  if (hint.changefreq && CHANGEFREQ_MS[hint.changefreq]) return clamp(CHANGEFREQ_MS[hint.changefreq], s);
  if (hint.lastmod) {
    const t = Date.parse(hint.lastmod);
    if (Number.isFinite(t) && t <= now) return clamp(now - t, s);
  }
  return null;
}
