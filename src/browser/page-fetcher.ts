// What the page pipeline fetches with (activities/pipeline/fetch-stage.ts):
// a Fetcher whose requests say which frontier entry they are for and whose
// responses may carry the DOM a browser rendered. The HTTP layer never sees
// either: its fetchers (src/http/fetcher.ts) take the URL, headers and body
// of a request and hand back the response as the server sent it, so the
// campaign's HTTP fetcher serves as a page fetcher as it is (nothing
// rendered), and the browser's (browser-fetcher.ts, adaptive-fetcher.ts)
// read the entry and add `rendered`.
import type { FetchOutcome, FetchRequest, Fetcher } from '../http/fetcher';
import type { FetchResult } from '../http/http-types';
import type { RenderReason } from './adaptive';
import type { FrameDocument } from './frames';
import type { RenderHookRun } from './page-hook';
import type { ScrollReport } from './scroll';
import type { BehaviorsReport } from './behaviors';

export interface PageRequest extends FetchRequest {
  /** What the request is for: the frontier entry's kind (`page`, `embed`, `sitemap`…); the browser fetcher renders pages only. */
  kind?: string;
  /** The frontier entry's label and depth: the browser fetcher picks and calls the handler's render hook with them. */
  label?: string | null;
  depth?: number;
}

/** A response as the page pipeline gets it. */
export interface PageResponse extends FetchResult {
  /**
   * Set by the browser fetcher (browser-fetcher.ts) on a page it rendered:
   * the DOM after the page's scripts ran, which link extraction and the
   * handler read. Everything else here (the body included) stays the
   * document as the server sent it, which is what the WARC holds.
   */
  rendered?: RenderedDocument;
}

export type PageOutcome = FetchOutcome<PageResponse>;
export type PageFetcher = Fetcher<PageRequest, PageResponse>;

/** Where a record is in the campaign's WARC files: the file's name, the record's gzip member. */
export interface WarcPlace {
  file: string;
  offset: number;
  length: number;
}

/** What rendering made of a page (docs/rendering.md). */
export interface RenderedDocument {
  /** The serialized DOM of the main frame; null when rendering failed (the page keeps its HTTP body). */
  html: string | null;
  /** The page's URL when its DOM was taken (the History API may have changed it; same origin). */
  url: string;
  /** quiet: `load`, then browser.quietMs without a request in flight and the page's thread idle; deadline: browser.pageTimeoutMs came first; failed: see `error`. */
  done: 'quiet' | 'deadline' | 'failed';
  /** From the navigation to the DOM taken. */
  ms: number;
  /** Requests of the page answered from the network (the document excluded), each archived. */
  requests: number;
  /**
   * Epoch ms: when the render's last request to the page's own host ended (the
   * render's start when it made none after the document). The host's delay
   * counts from here, not from the DOM taken: the quiet wait, the idle check
   * and the DOM's reading ask nothing of the host (docs/rendering.md, "Politeness").
   */
  hostRequestsEndedAt?: number;
  error?: { code: string; message: string };
  /** render: auto: why this page was rendered (adaptive.ts); absent under render: browser, which renders every page. */
  reason?: RenderReason;
  /** The DOM of the page's other frames, each with the URL its links resolve against (frames.ts; bounded). */
  frames?: FrameDocument[];
  /** browser.scroll: how far the page was scrolled and why it stopped (scroll.ts). */
  scroll?: ScrollReport;
  /** browser.autoclick, expand, scrollBoxes, autoplay: what each did (behaviors.ts). */
  behaviors?: BehaviorsReport;
  /**
   * Links the behaviors put in the DOM (or a click tried to leave for): the
   * crawl follows them with the DOM's own, even those the page removed again
   * (a tab's panel replaced by the next one's).
   */
  behaviorLinks?: string[];
  /** browser.text: where the page's text was archived (a `urn:text:` resource record); absent when off or skipped. */
  textRecord?: WarcPlace;
  /** The handler's onRender, when the page had one: how it ended and what it returned (merged with onPage's in the classify stage). */
  hook?: RenderHookRun;
}
