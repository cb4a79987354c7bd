// A rendered page from its navigation to the moment its DOM is taken
// (docs/rendering.md, "How it works"): `load`, then done (quiet and idle,
// src/browser/page-done.ts), then with browser.scroll the page scrolled to
// its bottom (src/browser/scroll.ts) and done again, then the behaviors that
// are on (browser.scrollBoxes, expand, autoclick, autoplay: src/browser/behaviors.ts)
// and done again, then the handler's onRender if the page has one
// (src/browser/page-hook.ts) and done again.
// All of it within the page's deadline; with a render hook, the waits
// before it end early enough to leave the hook its share of the deadline.
import type { Page } from 'playwright-core';
import type { Logger } from '../log/logger';
import { pageIdle, waitDone, type InFlight } from './page-done';
import { hookReserveMs, runRenderHook, type RenderHookRun, type RenderHooks } from './page-hook';
import { scrollToBottom, type ScrollReport } from './scroll';
import { anyBehavior, runBehaviors, type BehaviorSettings, type BehaviorsRun } from './behaviors';
import { loadedOrAway, type PageWatch } from './page-watch';

/** The frontier entry's label and depth, which pick the page's render hook and are given to it. */
export interface RenderEntry {
  label: string | null;
  depth: number;
}

export interface SettleInput {
  page: Page;
  url: string;
  entry: RenderEntry;
  inflight: InFlight;
  settings: { pageTimeoutMs: number; quietMs: number; scroll?: boolean } & BehaviorSettings;
  /** Epoch ms: the page's deadline (browser.pageTimeoutMs after its render started). */
  deadlineAt: number;
  hooks?: RenderHooks;
  log?: Logger;
  /** The page's watch (src/browser/page-watch.ts): a navigation away ends the wait for `load`. */
  watch?: PageWatch;
}

export interface Settled {
  /** quiet: every wait ended with the page done; deadline: one of them ran out of time. */
  done: 'quiet' | 'deadline';
  scroll?: ScrollReport;
  /** What the behaviors did (counts) and the links they found; absent with none on, or when they failed. */
  behaviors?: BehaviorsRun;
  hook?: RenderHookRun;
}

/** Scrolling or behaviors past their time (a thread kept busy under an evaluate) are left behind after this much more. */
const GRACE_MS = 2_000;

/** Navigates the page and brings it to the state whose DOM is taken. Throws what the navigation throws, but its timeout. */
export async function settlePage(o: SettleInput): Promise<Settled> {
  const { page, inflight, settings } = o;
  const hook = o.hooks?.hookFor(o.entry.label) ?? null;
  // With a hook, what comes before it ends early enough to leave it its share of the deadline.
  const readyAt = hook && o.hooks ? o.deadlineAt - hookReserveMs(settings.pageTimeoutMs, o.hooks.timeoutMs) : o.deadlineAt;
  const idle = pageIdle(page);
  const out: Settled = { done: 'quiet' };
  const wait = async (until: number) => {
    if ((await waitDone(inflight, settings.quietMs, until, idle)) === 'deadline') out.done = 'deadline';
  };
  try {
    await loadedOrAway(page.goto(o.url, { waitUntil: 'load', timeout: Math.max(1, readyAt - Date.now()) }), o.watch);
  } catch (err) {
    if (!(err instanceof Error && err.name === 'TimeoutError')) throw err;
    out.done = 'deadline';
  }
  if (out.done === 'quiet') await wait(readyAt);
  if (settings.scroll && out.done === 'quiet') {
    out.scroll = await scrolled(o, readyAt, idle);
    await wait(readyAt);
  }
  if (anyBehavior(settings) && out.done === 'quiet') {
    out.behaviors = await bounded(o, 'behaviors failed', runBehaviors({ page, settings, inflight, idle, until: readyAt }), readyAt, () => undefined);
    await wait(readyAt);
  }
  if (hook && o.hooks) {
    const hooks = o.hooks;
    const leave = hooks.enter?.(o.url);
    try {
      out.hook = await runRenderHook(
        hook,
        { page, url: o.url, label: o.entry.label, depth: o.entry.depth, log: hooks.log(o.url, o.entry.label) },
        Math.min(hooks.timeoutMs, o.deadlineAt - Date.now()),
      );
    } finally {
      leave?.();
    }
    if (!out.hook.ok) o.log?.warn('onRender failed', { url: o.url, code: out.hook.code, error: out.hook.message.slice(0, 500) });
    // What the hook's clicks started is waited for, so it is in the DOM taken.
    await wait(o.deadlineAt);
  }
  return out;
}

/** browser.scroll: a scrolling that fails (the page crashed under it) is logged and the page taken as it is. */
function scrolled(o: SettleInput, until: number, idle: ReturnType<typeof pageIdle>): Promise<ScrollReport | undefined> {
  const scrolling = scrollToBottom(o.page, { inflight: o.inflight, quietMs: o.settings.quietMs, until, idle });
  return bounded(o, 'scrolling failed', scrolling, until, () => ({ steps: 0, end: 'deadline' }));
}

/**
 * A step that scripts the page (scrolling, behaviors): one past its time (a
 * thread kept busy under an evaluate) is left behind GRACE_MS after `until`
 * with what `late` says; one that fails (the page crashed under it) is logged
 * and the page taken as it is.
 */
async function bounded<T>(o: SettleInput, failed: string, running: Promise<T>, until: number, late: () => T | undefined): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const past = new Promise<T | undefined>((resolve) => (timer = setTimeout(() => resolve(late()), Math.max(0, until - Date.now()) + GRACE_MS)));
    return await Promise.race([running, past]);
  } catch (err) {
    o.log?.warn(failed, { url: o.url, error: String(err).slice(0, 300) });
    return undefined;
  } finally {
    clearTimeout(timer);
    running.catch(() => undefined);
  }
}
