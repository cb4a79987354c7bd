// browser.scroll (docs/rendering.md): content a page loads only when it is
// scrolled into view (lazy images, an endless feed's next items, watched by
// an IntersectionObserver or a scroll listener) is loaded by scrolling the
// page to its bottom one viewport at a time, waiting after each step for
// what the step started (its requests, then the thread idle), until the page
// stops growing, or SCROLL_MAX_STEPS, or the time given, whichever first.
// The bottom counts once the page, waited for a whole browser.quietMs
// there, has not grown: a feed's next batch may start loading only as the
// step's short wait ends.
import type { Page } from 'playwright-core';
import { waitDone, type IdleProbe, type InFlight } from './page-done';

/** Steps at most: an endless feed would otherwise be scrolled until the deadline on every page. */
export const SCROLL_MAX_STEPS = 50;
/** After a step, the page is waited for until none of its requests was in flight this long (or browser.quietMs if shorter)… */
const STEP_QUIET_MS = 250;
/** …and at most this long: a step whose requests never end does not hold the others. */
const STEP_MAX_MS = 5_000;

export type ScrollEnd = 'bottom' | 'steps' | 'deadline';

/** How the scrolling of a page went: the index line's `render.scroll`. */
export interface ScrollReport {
  steps: number;
  end: ScrollEnd;
}

/** What the page looked like after a step. */
export interface ScrollState {
  /** Steps taken so far. */
  steps: number;
  /** The viewport's bottom reached the document's. */
  atBottom: boolean;
  /** The document grew with the last step (what the step loaded added to it). */
  grew: boolean;
  /** This look followed a whole quiet wait at the bottom, not a step's short one. */
  settled: boolean;
  /** Now, and when the scrolling must end (epoch ms). */
  now: number;
  until: number;
}

/**
 * Scroll again, wait longer at the bottom (`settle`), or why not: the
 * bottom reached with nothing added after a whole wait, the steps spent,
 * the time spent.
 */
export function nextScroll(s: ScrollState, maxSteps = SCROLL_MAX_STEPS): 'scroll' | 'settle' | ScrollEnd {
  if (s.atBottom && !s.grew) return s.settled ? 'bottom' : s.now >= s.until ? 'deadline' : 'settle';
  if (s.steps >= maxSteps) return 'steps';
  if (s.now >= s.until) return 'deadline';
  return 'scroll';
}

/** Where the viewport's bottom and the document's are. A string: compiled without the DOM's types. */
const MEASURE = `(() => {
  const doc = document.scrollingElement || document.documentElement;
  return { bottom: Math.ceil(window.scrollY + window.innerHeight), height: doc ? doc.scrollHeight : 0 };
})()`;
const STEP = 'window.scrollBy(0, window.innerHeight)';

/**
 * Scrolls the page to its bottom step by step, each step waited for (its
 * requests and the thread idle, STEP_MAX_MS at most), until `until`.
 */
export async function scrollToBottom(page: Page, o: { inflight: InFlight; quietMs: number; until: number; idle: IdleProbe }): Promise<ScrollReport> {
  const measure = () => page.evaluate(MEASURE) as Promise<{ bottom: number; height: number }>;
  let height = (await measure()).height;
  let steps = 0;
  let settled = false;
  for (;;) {
    if (settled) {
      await waitDone(o.inflight, o.quietMs, o.until, o.idle);
    } else {
      await page.evaluate(STEP);
      steps++;
      await waitDone(o.inflight, Math.min(o.quietMs, STEP_QUIET_MS), Math.min(o.until, Date.now() + STEP_MAX_MS), o.idle);
    }
    const m = await measure();
    const next = nextScroll({ steps, atBottom: m.bottom >= m.height - 1, grew: m.height > height, settled, now: Date.now(), until: o.until });
    height = m.height;
    settled = next === 'settle';
    if (next !== 'scroll' && next !== 'settle') return { steps, end: next };
  }
}
