// Browser behaviors (docs/rendering.md, "Behaviors"): what a rendered page
// loads only when someone interacts with it, done by the crawler before the
// page's DOM is taken, each a setting:
// - browser.scrollBoxes: the page's inner scrolling boxes (a feed in a
//   `overflow: auto` element of its own) scrolled to their bottom, a box's
//   height at a time, while they grow;
// - browser.expand: `<details>` opened, accordions (aria-expanded=false)
//   and tabs ([role=tab]) clicked open, each once;
// - browser.autoclick: what changes the page in place clicked (buttons,
//   role=button, `#` and `javascript:` links), a button clicked again while
//   its clicks add to the page ("load more"); never a form submitted, never
//   a link to another URL clicked, never the page left (behavior-page.ts);
// - browser.autoplay: each `<video>` and `<audio>` played, muted, one at a
//   time, for what a player fetches only once it plays (a script player's
//   manifest and segments, fetched by fetch() or XHR as hls.js does; the
//   source of a `preload=none` element, or one a script sets on `play`),
//   then paused; what the DOM names (src, `<source>`, poster) is taken as
//   an embed whether or not it played.
// One step at a time, each waited for as a scroll step is (its requests,
// then the thread idle), in rounds: another round follows while the last
// changed the page (a click that revealed a box to scroll, a panel opened
// with a button in it), within the steps' bounds and the page's deadline.
// Everything a step loads goes through the page's routes, archived like the
// rest of the page; links the behaviors put in the DOM (or a click tried to
// leave for) are handed to the crawl with the page's own.
import type { Page, Request } from 'playwright-core';
import { waitDone, type IdleProbe, type InFlight } from './page-done';
import { call, INSTALL, type BoxesMeasure, type ClickResult } from './behavior-page';
import { nextScroll } from './scroll';

/** Clicks of autoclick at most a page (all rounds together). */
export const MAX_CLICKS = 50;
/** Details, accordions and tabs opened at most a page. */
export const MAX_OPENED = 50;
/** Scrolling steps of the inner boxes at most a page (each step scrolls every box not at its bottom). */
export const MAX_BOX_STEPS = 50;
/** `<video>` and `<audio>` elements autoplay plays at most a page (all rounds together), in document order. */
export const MAX_PLAYED = 10;
/**
 * An element plays until the requests it started have gone quiet (as a step
 * is waited for), and at most this long: a player buffers ahead in its first
 * seconds (hls.js asks for its next segments at once); a long stream is not
 * played to its end.
 */
export const PLAY_MAX_MS = 3_000;
/** Rounds of all behaviors at most: a round follows only while the last one changed the page. */
export const MAX_ROUNDS = 3;
/** After a step, the page is waited for until none of its requests was in flight this long (or browser.quietMs if shorter)… */
const STEP_QUIET_MS = 250;
/** …and at most this long: a step whose requests never end does not hold the others. */
const STEP_MAX_MS = 5_000;

export interface BehaviorSettings {
  autoclick?: boolean;
  scrollBoxes?: boolean;
  expand?: boolean;
  autoplay?: boolean;
}

/** Whether any behavior is on. */
export function anyBehavior(s: BehaviorSettings): boolean {
  return s.autoclick === true || s.scrollBoxes === true || s.expand === true || s.autoplay === true;
}

/** What the behaviors did on a page: the index line's `render.behaviors`. */
export interface BehaviorsReport {
  /** Rounds run. */
  rounds: number;
  /** done: a round changed nothing; rounds: the last round allowed (MAX_ROUNDS) still changed the page; deadline: the page's time ran out. */
  end: 'done' | 'rounds' | 'deadline';
  /** browser.scrollBoxes: scrolling steps taken, and the most boxes a step found. */
  boxSteps?: number;
  boxes?: number;
  /** browser.expand: details, accordions and tabs opened. */
  opened?: number;
  /** browser.autoclick: clicks, and of them those whose script tried to leave the page (refused, the URL taken as a link). */
  clicks?: number;
  navigations?: number;
  /** browser.autoplay: `<video>` and `<audio>` elements played. */
  played?: number;
  /** Links seen while the behaviors ran (those in the DOM when they started, those their steps added) or clicked towards: given to the crawl, deduplicated with the DOM's own. */
  links: number;
}

export interface BehaviorsRun {
  report: BehaviorsReport;
  links: string[];
}

export interface BehaviorsInput {
  page: Page;
  settings: BehaviorSettings & { quietMs: number };
  inflight: InFlight;
  idle: IdleProbe;
  /** Epoch ms: the behaviors end by then. */
  until: number;
}

/** Runs the behaviors that are on, in rounds, until a round changes nothing, MAX_ROUNDS, or `until`. */
export async function runBehaviors(o: BehaviorsInput): Promise<BehaviorsRun> {
  const { page, settings: s } = o;
  const report: BehaviorsReport = { rounds: 0, end: 'done', links: 0 };
  if (s.scrollBoxes) Object.assign(report, { boxSteps: 0, boxes: 0 });
  if (s.expand) report.opened = 0;
  if (s.autoclick) Object.assign(report, { clicks: 0, navigations: 0 });
  if (s.autoplay) report.played = 0;
  // A click's script setting `location`: the routes answer it 204 (the page stays), its URL is a link.
  const left = new Set<string>();
  let clicking = false;
  const onRequest = (r: Request) => {
    if (clicking && r.isNavigationRequest() && frameOf(r) === page.mainFrame()) left.add(r.url().split('#')[0]!);
  };
  page.on('request', onRequest);
  const ev = <T>(script: string) => page.evaluate(script) as Promise<T>;
  const step = () => waitDone(o.inflight, Math.min(s.quietMs, STEP_QUIET_MS), Math.min(o.until, Date.now() + STEP_MAX_MS), o.idle);
  const late = () => Date.now() >= o.until;
  try {
    await ev(INSTALL);
    while (report.rounds < MAX_ROUNDS && !late()) {
      report.rounds++;
      let changed = false;
      if (s.scrollBoxes && report.boxSteps! < MAX_BOX_STEPS) changed ||= await scrollBoxes(o, report, ev, step);
      if (s.expand) {
        while (report.opened! < MAX_OPENED && !late() && (await ev<boolean>(call('open')))) {
          report.opened!++;
          changed = true;
          await step();
        }
      }
      if (s.autoclick) {
        while (report.clicks! < MAX_CLICKS && !late()) {
          clicking = true;
          const before = left.size;
          const clicked = await ev<boolean>(call('click'));
          if (!clicked) {
            clicking = false;
            break;
          }
          report.clicks!++;
          await step();
          clicking = false;
          const r = await ev<ClickResult>(call('clicked'));
          if (r.movedTo !== null || left.size > before) report.navigations!++;
          // What an undone move started (its popstate's work) is waited for too.
          if (r.movedTo !== null) await step();
          changed ||= r.changed;
        }
      }
      // Last in the round: media a click or an opened panel revealed plays in the same round.
      if (s.autoplay) {
        while (report.played! < MAX_PLAYED && !late() && (await ev<boolean>(call('play')))) {
          report.played!++;
          changed = true;
          await waitDone(o.inflight, Math.min(s.quietMs, STEP_QUIET_MS), Math.min(o.until, Date.now() + PLAY_MAX_MS), o.idle);
          await ev(call('pause'));
        }
      }
      if (!changed) break;
      // The last round allowed still changed the page: there may be more to do.
      if (report.rounds >= MAX_ROUNDS) report.end = 'rounds';
    }
    if (late()) report.end = 'deadline';
    const links = [...new Set([...(await ev<string[]>(call('links'))), ...left])];
    report.links = links.length;
    return { report, links };
  } finally {
    clicking = false;
    page.off('request', onRequest);
    await page.evaluate(call('stop')).catch(() => undefined);
  }
}

/** Scrolls the inner boxes to their bottom, as scroll.ts the document; whether they grew. */
async function scrollBoxes(o: BehaviorsInput, report: BehaviorsReport, ev: <T>(script: string) => Promise<T>, step: () => Promise<unknown>): Promise<boolean> {
  let m = await ev<BoxesMeasure>(call('measureBoxes'));
  const first = m.height;
  report.boxes = Math.max(report.boxes!, m.boxes);
  if (m.boxes === 0) return false;
  let settled = false;
  let height = m.height;
  for (;;) {
    if (settled) await waitDone(o.inflight, o.settings.quietMs, o.until, o.idle);
    else {
      // Counted whether or not a box moved: a box that will not scroll must not keep this going.
      await ev<number>(call('scrollBoxes'));
      report.boxSteps!++;
      await step();
    }
    m = await ev<BoxesMeasure>(call('measureBoxes'));
    report.boxes = Math.max(report.boxes!, m.boxes);
    const next = nextScroll({ steps: report.boxSteps!, atBottom: m.atBottom, grew: m.height > height, settled, now: Date.now(), until: o.until }, MAX_BOX_STEPS);
    height = m.height;
    settled = next === 'settle';
    if (next !== 'scroll' && next !== 'settle') return m.height > first;
  }
}

/** A service worker's request has no frame. */
function frameOf(r: Request) {
  try {
    return r.frame();
  } catch {
    return null;
  }
}
