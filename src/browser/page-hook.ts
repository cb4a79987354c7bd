// The handler's onRender in the browser (docs/handlers.md, "In the browser"):
// which render hook a page runs (by its label, as onPage's routes), running
// it once within the page's deadline with a typed outcome, and merging what
// it returned with onPage's result. The hook runs in the host session, under
// the host clock, inside the render (src/browser/page-steps.ts); its result
// travels with the rendered document to the classify stage, inside the
// activity (never into workflow history), like onPage's.
import type { Handler, HandlerLog, RenderContext, RenderHook } from '../handlers/api';
import { checkOutput, MAX_ITEMS_PER_PAGE, MAX_LINKS_PER_PAGE, type HookOutput, type HookRun } from '../handlers/runner';
import type { PageContext } from '../handlers/api';

/** The page's error codes of a render hook that failed (outcome `error`, like a failed onPage). */
export const RENDER_HOOK_CODE = {
  /** It threw, rejected, or returned something that is not a result. */
  error: 'RENDER_HOOK_ERROR',
  /** It ran past its time: what remained of browser.pageTimeoutMs, or handlerTimeoutMs. */
  timeout: 'RENDER_HOOK_TIMEOUT',
} as const;

/** How a page's onRender ended. */
export type RenderHookRun =
  { ok: true; output: HookOutput; ms: number } | { ok: false; code: (typeof RENDER_HOOK_CODE)[keyof typeof RENDER_HOOK_CODE]; message: string; ms: number };

/** What the browser fetcher gets to run a page's render hook (activities/render.ts builds it from the campaign's handler). */
export interface RenderHooks {
  /** The page's render hook by its label; null: none (the page is rendered as without a handler). */
  hookFor(label: string | null): RenderHook | null;
  /** handlerTimeoutMs: a hook gets at most this long, and never past the page's deadline. */
  timeoutMs: number;
  log(url: string, label: string | null): HandlerLog;
  /** Marks a hook running on `url` (the worker's blocked-thread watch) until the returned function is called. */
  enter?(url: string): () => void;
}

/** The render hook of a page: its label's renderRoute, else onRender; null when the handler has neither. */
export function renderHookFor(h: Handler, label: string | null): RenderHook | null {
  if (label !== null && h.renderRoutes && Object.prototype.hasOwnProperty.call(h.renderRoutes, label)) return h.renderRoutes[label]!;
  return h.onRender ?? null;
}

/** Whether a handler has any render hook. */
export function hasRenderHooks(h: Handler): boolean {
  return h.onRender !== undefined || (h.renderRoutes !== undefined && Object.keys(h.renderRoutes).length > 0);
}

/**
 * The share of a page's deadline kept for its render hook: the wait for
 * the page to be done before the hook ends this long before the deadline,
 * so a page that never goes quiet (a poll, a ticker) still has its hook run.
 * Half the deadline at most, handlerTimeoutMs at most.
 */
export function hookReserveMs(pageTimeoutMs: number, handlerTimeoutMs: number): number {
  return Math.min(handlerTimeoutMs, Math.floor(pageTimeoutMs / 2));
}

/**
 * Runs a render hook once (a second attempt would find the page changed by
 * the first: clicked, scrolled). A hook past `limitMs` is left behind (its
 * page is closed under it once the render ends, which ends its Playwright
 * calls); a synchronous one that blocked past it fails when it returns.
 */
export async function runRenderHook(hook: RenderHook, ctx: RenderContext, limitMs: number): Promise<RenderHookRun> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  const timedOut = () => ({ ok: false as const, code: RENDER_HOOK_CODE.timeout, message: `onRender ran past its time limit of ${Math.round(limitMs)} ms`, ms: ms() });
  let timer: NodeJS.Timeout | undefined;
  const ran = Promise.resolve().then(() => hook(ctx));
  // Left behind at its limit, it may still reject (its page closed): not an unhandled rejection of the worker.
  ran.catch(() => undefined);
  try {
    const raw = await Promise.race([ran, new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, limitMs))))]);
    if (raw === TIMED_OUT || performance.now() - started > limitMs) return timedOut();
    return { ok: true, output: checkOutput(raw, ctx.url), ms: ms() };
  } catch (err) {
    const message = err instanceof Error ? err.message || err.name : String(err);
    return { ok: false, code: RENDER_HOOK_CODE.error, message: `onRender failed: ${message}`.slice(0, 2000), ms: ms() };
  } finally {
    clearTimeout(timer);
  }
}

const TIMED_OUT = Symbol('timed out');

/**
 * onPage's run (null: no page hook for the label) with the page's render
 * hook's (undefined: none ran). A failed render hook fails the page's
 * handler as a failed onPage does: outcome `error` with its code, neither
 * hook's items nor links taken, the page's own links followed. Otherwise
 * the render hook's items and links go first (the first link to a URL
 * decides its label), then onPage's, within the per-page limits.
 */
export function withRenderHook(run: HookRun | null, rendered: RenderHookRun | undefined, ctx: () => PageContext): HookRun | null {
  if (!rendered) return run;
  const context = run?.ctx ?? ctx();
  if (!rendered.ok) {
    const message = run && !run.ok ? `${rendered.message}; ${run.message}` : rendered.message;
    return { ok: false, code: rendered.code, message: message.slice(0, 2000), attempts: run?.attempts ?? 1, ctx: context };
  }
  if (run && !run.ok) return run;
  const page = run?.output ?? { items: [], links: [], skipDefaultLinks: false };
  const output: HookOutput = {
    items: [...rendered.output.items, ...page.items].slice(0, MAX_ITEMS_PER_PAGE),
    links: [...rendered.output.links, ...page.links].slice(0, MAX_LINKS_PER_PAGE),
    skipDefaultLinks: rendered.output.skipDefaultLinks || page.skipDefaultLinks,
  };
  return { ok: true, output, attempts: run?.attempts ?? 1, ctx: context };
}
