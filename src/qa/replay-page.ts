// One page replayed by pywb in Chromium, as `crawler qa` sees it: its
// screenshot (the full page, or the viewport at its top when that is what
// the crawl kept), its text, and every request it made that the archive
// could not answer. pywb marks what it serves from the archive with a
// Memento-Datetime header, but for an XHR (wombat flags it, and pywb leaves
// an "ajax" answer without Memento headers), which shows the archived
// record's own headers under pywb's `X-Archive-Orig-` prefix instead; its
// "not in the archive" answer (404, or its own error page) has neither. A
// request that left pywb (the replayed page reaching for the live web:
// Chromium resolves no name, so it fails) is missing too. Bounded: the page
// gets `timeoutMs` in all, and its context is closed then whatever it is
// doing.
import type { Browser, BrowserContext, Page, Request, Response } from 'playwright-core';

/**
 * The viewport the crawl's pages were rendered at: the workers' contexts
 * take Playwright's default (src/browser/browser-fetcher.ts), so the
 * replay's screenshot is comparable with the crawl's pixel for pixel.
 */
export const CRAWL_VIEWPORT = { width: 1280, height: 720 };
/** As the crawl's screenshots (src/browser/browser-fetcher.ts SCREENSHOT_MAX_HEIGHT): a full page cut at this height. */
const SCREENSHOT_MAX_HEIGHT = 16_384;
/** After `load`, the replay is waited for until its network is quiet, within the page's time. */
const QUIET_WAIT_SHARE = 0.6;

/** A request of the replay that the archive could not answer. */
export interface MissingRequest {
  url: string;
  /** pywb's status (404 for a URL not in the index), or 0 when the request failed (left the replay, refused). */
  status: number;
  /** Chromium's resource type (script, image, fetch…). */
  type: string;
}

export interface ReplayedPage {
  /** Why the page could not be compared (not in the archive, navigation failed, timed out), else null. */
  error: string | null;
  screenshot: Buffer | null;
  text: string | null;
  /** Requests answered from the archive (the page's own document included). */
  answered: number;
  missing: MissingRequest[];
}

/** Whether pywb answered from the archive: a memento's header, or (an XHR, answered without it) the archived record's own headers. */
export function fromArchive(headers: Record<string, string>): boolean {
  return headers['memento-datetime'] !== undefined || Object.keys(headers).some((h) => h.startsWith('x-archive-orig-'));
}

/** The archived URL of a replay URL `<collection>/<timestamp><modifier>/<url>`, or null for pywb's own files. */
export function originalOf(collection: string, replayUrl: string): string | null {
  if (!replayUrl.startsWith(`${collection}/`)) return null;
  const m = /^(\d{0,14}(?:[a-z]{2}_)?\/)?(.*)$/.exec(replayUrl.slice(collection.length + 1));
  const rest = m?.[2] ?? '';
  return /^https?:\/\//i.test(rest) ? rest : rest.startsWith('//') ? `http:${rest}` : null;
}

/** Which screenshot of the replay to take: as the crawl's `urn:fullPage:`, or as its `urn:view:`. */
export type ShotKind = 'fullPage' | 'view';

/** A string: this package compiles without the DOM's types. */
const SCROLL_TO_TOP = 'window.scrollTo(0, 0)';

export async function replayPage(browser: Browser, o: { collection: string; url: string; timestamp: string; timeoutMs: number; shot?: ShotKind }): Promise<ReplayedPage> {
  const started = Date.now();
  let context: BrowserContext | null = null;
  const missing: MissingRequest[] = [];
  let answered = 0;
  const origin = new URL(o.collection).origin;
  const work = (async (): Promise<ReplayedPage> => {
    context = await browser.newContext({ viewport: CRAWL_VIEWPORT, serviceWorkers: 'block', acceptDownloads: false });
    const tab: Page = await context.newPage();
    tab.on('popup', (p) => void p.close().catch(() => undefined));
    tab.on('response', (res: Response) => {
      const original = originalOf(o.collection, res.url());
      if (original === null || (res.status() >= 300 && res.status() < 400)) return;
      if (fromArchive(res.headers())) answered++;
      else missing.push({ url: original, status: res.status(), type: res.request().resourceType() });
    });
    tab.on('requestfailed', (req: Request) => {
      const u = req.url();
      if (/^(data|blob|about|chrome-extension):/.test(u)) return;
      // Aborted by the page itself (a navigation away, a cancelled fetch) is not the archive's fault.
      if (/ERR_ABORTED/.test(req.failure()?.errorText ?? '')) return;
      const original = u.startsWith(`${origin}/`) ? originalOf(o.collection, u) : u;
      if (original !== null) missing.push({ url: original, status: 0, type: req.resourceType() });
    });
    const replayUrl = `${o.collection}/${o.timestamp}/${o.url}`;
    const doc = await tab.goto(replayUrl, { waitUntil: 'load', timeout: o.timeoutMs });
    if (!doc || doc.headers()['memento-datetime'] === undefined) {
      return { error: `not in the archive: pywb answered ${doc?.status() ?? 'nothing'}`, screenshot: null, text: null, answered, missing };
    }
    // A page whose network never goes quiet (polling, a stream) is taken as it is by then.
    const quietMs = Math.max(0, o.timeoutMs * QUIET_WAIT_SHARE - (Date.now() - started));
    await tab.waitForLoadState('networkidle', { timeout: quietMs }).catch(() => undefined);
    const timeout = Math.max(1_000, o.timeoutMs - (Date.now() - started));
    let screenshot: Buffer;
    if (o.shot === 'view') {
      // As the crawl shot its view (src/browser/browser-fetcher.ts): the viewport at the top of the page, the same size.
      await tab.evaluate(SCROLL_TO_TOP);
      screenshot = await tab.screenshot({ type: 'png', animations: 'disabled', timeout });
    } else {
      screenshot = await tab.screenshot({
        fullPage: true,
        type: 'png',
        clip: { x: 0, y: 0, width: SCREENSHOT_MAX_HEIGHT, height: SCREENSHOT_MAX_HEIGHT },
        animations: 'disabled',
        timeout,
      });
    }
    const text = await tab.evaluate('document.body ? document.body.innerText : ""');
    return { error: null, screenshot, text: typeof text === 'string' ? text : '', answered, missing };
  })();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<ReplayedPage>((resolve) => {
    timer = setTimeout(() => resolve({ error: `replay took longer than ${o.timeoutMs} ms`, screenshot: null, text: null, answered, missing: [...missing] }), o.timeoutMs + 2_000);
  });
  try {
    return await Promise.race([
      work.catch((err: unknown) => ({
        error: `replay failed: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300)}`,
        screenshot: null,
        text: null,
        answered,
        missing: [...missing],
      })),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
    // Ends whatever the page still does; the pass goes on to its next page. A context made after the
    // deadline is closed when its work ends (the browser is closed at the end of the pass at the latest).
    await (context as BrowserContext | null)?.close().catch(() => undefined);
    void work.finally(() => (context as BrowserContext | null)?.close().catch(() => undefined)).catch(() => undefined);
  }
}
