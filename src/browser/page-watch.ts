// What can happen to a rendered page besides loading (docs/rendering.md,
// "Typed outcomes"): its tab crashes, the browser dies under it, or its
// script navigates it elsewhere. Each is watched here so that the render
// ends at once with a typed outcome instead of waiting for its deadline.
import type { Browser, Page, Request } from 'playwright-core';

export type CrashKind = 'tab' | 'browser';

/** A render's typed failures (index line `render.error.code`). */
export const RENDER_ERROR = {
  /** Chromium could not start, or the page failed otherwise. */
  failed: 'RENDER_FAILED',
  /** The page kept its thread busy past its deadline: no DOM taken. */
  timeout: 'RENDER_TIMEOUT',
  /** The page's renderer process crashed, or the browser died under it. */
  crashed: 'RENDER_CRASHED',
} as const;

export interface PageWatch {
  /** The crash seen, if any (the browser's death wins over the tab's, whose 'crash' it may also cause). */
  readonly crashed: CrashKind | null;
  /** Resolves when the main frame asks to go elsewhere after its document (a script setting location, reloading, opening a download). */
  readonly navigatedAway: Promise<void>;
  dispose(): void;
}

/** Watches `page` (of `browser`); `onCrash` is called once the page cannot go on (its requests still in flight should end). */
export function watchPage(page: Page, browser: Browser | null, onCrash: () => void): PageWatch {
  let crashed: CrashKind | null = null;
  const tab = () => {
    crashed ??= 'tab';
    onCrash();
  };
  const gone = () => {
    crashed = 'browser';
    onCrash();
  };
  let away!: () => void;
  const navigatedAway = new Promise<void>((resolve) => (away = resolve));
  let navigations = 0;
  const request = (r: Request) => {
    if (r.isNavigationRequest() && frameOf(r) === page.mainFrame() && ++navigations > 1) away();
  };
  page.on('crash', tab);
  page.on('request', request);
  browser?.on('disconnected', gone);
  return {
    get crashed() {
      return browser && !browser.isConnected() ? 'browser' : crashed;
    },
    navigatedAway,
    dispose() {
      page.off('crash', tab);
      page.off('request', request);
      browser?.off('disconnected', gone);
    },
  };
}

/** Playwright's error for a page or context gone under a call (its renderer crashed as the page was being made, before it could be watched). */
export function targetGone(err: unknown): boolean {
  return err instanceof Error && /Target crashed|Target page, context or browser has been closed/.test(err.message);
}

/** The index line's error of a crashed render. */
export function crashError(kind: CrashKind): { code: string; message: string } {
  return {
    code: RENDER_ERROR.crashed,
    message:
      kind === 'tab'
        ? "the page's renderer process crashed (out of memory, a Chromium fault, or killed): no DOM taken"
        : 'the browser process died during the render (killed, out of memory, or crashed): no DOM taken; the next page starts another browser',
  };
}

/**
 * The page's navigation until `load`, or until its script navigated it
 * elsewhere: a document whose script sets location while it loads never
 * fires `load` (the navigation stops its loading; the route answers it 204
 * and the page stays), so its render goes on with what it has instead of
 * waiting for its deadline.
 */
export async function loadedOrAway(navigation: Promise<unknown>, watch: PageWatch | undefined): Promise<void> {
  await Promise.race([navigation, ...(watch ? [watch.navigatedAway] : [])]);
}

/**
 * The page's DOM. A script navigating in a loop keeps a navigation pending
 * now and then (each answered 204, the page staying), and Playwright refuses
 * to read the DOM meanwhile: read it again a moment later.
 */
export async function contentOf(page: Page): Promise<string> {
  for (let tries = 1; ; tries++) {
    try {
      return await page.content();
    } catch (err) {
      if (tries >= CONTENT_TRIES || !(err instanceof Error && /is navigating/.test(err.message))) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
const CONTENT_TRIES = 20;

/** A service worker's request has no frame. */
function frameOf(r: Request) {
  try {
    return r.frame();
  } catch {
    return null;
  }
}
