// `render: auto` (docs/rendering.md, "auto"): which HTML pages are rendered,
// decided per host and URL pattern from what rendering found on a sample of
// them, as Crawlee's adaptive crawler does. Pure: the state it reads and
// returns is kept in Redis by activities/render.ts (src/redis/render-plan.ts),
// so every worker shares it and a crash loses none of it.
//
// A pattern is the page's host and path with the parts that vary between
// pages of one kind generalised (`urlPattern`). Its first pages are rendered
// too (reason `sample`), and what HTTP and the browser found is compared
// (`rendererFoundMore`): a client-rendered shell has few links and little
// text before its script runs. Once `samples` pages of the pattern were
// compared, the last `samples` verdicts decide by majority (a tie renders:
// a page not rendered loses its links, a page rendered costs a second). A
// pattern whose first verdict agrees with every one of the host's last
// `samples` verdicts follows the host at once: a static site does not pay
// `samples` renders for each of its kinds of page. Every `recheckEvery`-th
// page of a decided pattern is rendered and compared again (`recheck`), so
// a decision can change as the site does.

/** Verdicts kept per pattern and for the host: D, rendering found more; S, it found the same. */
export const VERDICT_WINDOW = 8;
/** Characters of a pattern kept (a Redis hash field): longer ones are cut. */
export const MAX_PATTERN_CHARS = 200;

/** A pattern's (or the host's) history: HTML pages seen, and the last verdicts, oldest first. */
export interface PatternState {
  n: number;
  v: string;
}

export type RenderReason = 'sample' | 'pattern-differs' | 'host-differs' | 'recheck';

export interface RenderPlan {
  render: boolean;
  /** Why the page is rendered; null when it is not. */
  reason: RenderReason | null;
  /** Compare what HTTP and the browser find, and record the verdict. */
  compare: boolean;
}

export interface AutoOptions {
  /** Pages of a pattern compared before it is decided (and the verdicts a decision looks at). */
  samples: number;
  /** Every this many pages of a decided pattern, one is rendered and compared again; 0: never. */
  recheckEvery: number;
}

const NUMERIC = /^\d+$/;
// Hex runs, UUIDs, and long tokens mixing letters and digits (ids, hashes, base64): generated, not chosen.
const HEXLIKE = /^(?=.*\d)[0-9a-f]{8,}$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TOKEN = /^(?=.*\d)(?=.*[a-z])[a-z0-9_-]{16,}$/i;

/** One path segment with what varies between pages of a kind generalised: `{n}` numbers, `{h}` hashes and ids. */
export function generaliseSegment(seg: string): string {
  if (seg === '') return seg;
  if (NUMERIC.test(seg)) return '{n}';
  if (UUID.test(seg) || HEXLIKE.test(seg) || TOKEN.test(seg)) return '{h}';
  return seg;
}

/**
 * The pattern of a page: `host/path?names`. Numeric and hash-like segments
 * are generalised; in a path of two or more segments the last one (a slug:
 * `/blog/my-post`, `/p/one`) becomes `*`, its extension kept (`*.html`); a
 * one-segment path (`/about`) is kept, as is `/`. The query keeps its
 * parameter names, sorted, not their values. An unparsable URL is its own
 * pattern.
 */
export function urlPattern(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url.slice(0, MAX_PATTERN_CHARS);
  }
  const segs = u.pathname.split('/').slice(1).map(generaliseSegment);
  const named = segs.filter((s) => s !== '');
  if (named.length >= 2) {
    const last = segs.length - 1;
    // A trailing slash names a folder: its last named segment is the slug.
    const i = segs[last] === '' ? last - 1 : last;
    const seg = segs[i]!;
    if (seg !== '{n}' && seg !== '{h}') {
      const dot = seg.lastIndexOf('.');
      segs[i] = dot > 0 ? `*${seg.slice(dot)}` : '*';
    }
  }
  const names = [...new Set([...u.searchParams.keys()])].sort();
  const query = names.length ? `?${names.join(',')}` : '';
  return `${u.host}/${segs.join('/')}${query}`.slice(0, MAX_PATTERN_CHARS);
}

/** The majority of the last `k` verdicts: D (render) or S; ties render. */
function majority(v: string, k: number): 'D' | 'S' {
  const last = v.slice(-k);
  let d = 0;
  for (const c of last) if (c === 'D') d++;
  return d * 2 >= last.length ? 'D' : 'S';
}

/** The verdict a pattern follows, or null while it is still being sampled. */
export function decided(pattern: PatternState | null, host: PatternState | null, o: AutoOptions): { verdict: 'D' | 'S'; by: 'pattern' | 'host' } | null {
  const k = Math.max(1, o.samples);
  const p = pattern ?? { n: 0, v: '' };
  if (p.v.length >= k) return { verdict: majority(p.v, k), by: 'pattern' };
  // A pattern that agrees with a host whose last k verdicts are unanimous follows the host.
  if (host && host.v.length >= k && p.v.length >= 1) {
    const recent = host.v.slice(-k);
    const all = recent[0]!;
    if ([...recent].every((c) => c === all) && [...p.v].every((c) => c === all)) return { verdict: all as 'D' | 'S', by: 'host' };
  }
  return null;
}

/**
 * Whether the next HTML page of `pattern` is rendered, and why. `pattern`
 * null with `untracked`: the host has too many patterns to keep another,
 * and its pages follow the host's last verdicts (sampled until it has any).
 */
export function planRender(pattern: PatternState | null, host: PatternState | null, o: AutoOptions & { untracked?: boolean }): RenderPlan {
  const k = Math.max(1, o.samples);
  const d = o.untracked ? (host && host.v.length >= 1 ? { verdict: majority(host.v, k), by: 'host' as const } : null) : decided(pattern, host, o);
  if (!d) return { render: true, reason: 'sample', compare: true };
  const n = (o.untracked ? host?.n : pattern?.n) ?? 0;
  // The page about to be seen is the (n+1)-th.
  const recheck = o.recheckEvery > 0 && (n + 1) % o.recheckEvery === 0;
  if (recheck) return { render: true, reason: 'recheck', compare: true };
  if (d.verdict === 'D') return { render: true, reason: d.by === 'pattern' ? 'pattern-differs' : 'host-differs', compare: false };
  return { render: false, reason: null, compare: false };
}

/** A state after one more HTML page, and the verdict its comparison gave (none when it was not compared or the render failed). */
export function observe(s: PatternState | null, verdict: 'D' | 'S' | null): PatternState {
  const prev = s ?? { n: 0, v: '' };
  return { n: prev.n + 1, v: verdict ? `${prev.v}${verdict}`.slice(-VERDICT_WINDOW) : prev.v };
}

/** What one fetcher found on a page. */
export interface PageFindings {
  /** Distinct links (normalised URLs). */
  links: ReadonlySet<string>;
  /** Characters of visible text. */
  textChars: number;
}

/**
 * Whether the browser found more than HTTP: links HTTP did not see, at
 * least one and at least a tenth of what HTTP found (a script adding a
 * link or two to a large page is no reason to render), or half as much
 * text again and 200 characters more (a shell has little text; a page
 * whose script adds a cookie banner does not gain that much).
 */
export function rendererFoundMore(http: PageFindings, browser: PageFindings): boolean {
  let added = 0;
  for (const l of browser.links) if (!http.links.has(l)) added++;
  if (added >= Math.max(1, Math.ceil(http.links.size / 10))) return true;
  return browser.textChars >= http.textChars * 1.5 + 200;
}

/** Parses a stored state; anything else (another version's, damaged) counts as none. */
export function parseState(raw: string | null | undefined): PatternState | null {
  if (!raw) return null;
  try {
    const o = JSON.parse(raw) as Partial<PatternState>;
    if (typeof o.n !== 'number' || typeof o.v !== 'string' || !/^[DS]*$/.test(o.v)) return null;
    return { n: o.n, v: o.v.slice(-VERDICT_WINDOW) };
  } catch {
    return null;
  }
}
