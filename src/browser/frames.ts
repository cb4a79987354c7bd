// The documents of a rendered page's other frames (docs/rendering.md): an
// iframe's DOM is not in the main frame's, so a page whose links are in a
// frame (built by a script, or a page of its own) would lose them. Each
// frame's DOM is taken with the URL its links resolve against (its own, or
// for a frame without one, about:blank or srcdoc, its document's base, the
// page's), bounded in count and size; the classify stage reads the links
// of each (activities/pipeline/frame-links.ts).
import type { Frame, Page } from 'playwright-core';

/** Frames read per page, in Chromium's order (document order, depth first): a page of hundreds of ad frames is not read whole. */
export const MAX_FRAMES = 20;
/** One frame's DOM is cut at this many characters, and all of them together at MAX_FRAMES_CHARS. */
export const MAX_FRAME_CHARS = 2 * 1024 * 1024;
export const MAX_FRAMES_CHARS = 8 * 1024 * 1024;

/** A frame's DOM and the URL its links resolve against. */
export interface FrameDocument {
  url: string;
  html: string;
}

/** What a frame says of itself (read in the frame). */
export interface FrameRead {
  /** document.URL: a frame Chromium could not load shows its error page (chrome-error:). */
  url: string;
  /** document.baseURI: an about:blank or srcdoc frame's is its parent's. */
  base: string;
  html: string;
}

/**
 * The document of a frame as the classify stage gets it, or null when it
 * has nothing to read: an error page (a request refused, another host), a
 * frame with no http(s) base, an empty document. `room`: characters still
 * allowed for this page's frames.
 */
export function frameDocument(read: FrameRead, room: number): FrameDocument | null {
  if (!/^(https?|about):/i.test(read.url) || !/^https?:/i.test(read.base)) return null;
  if (read.html.length === 0 || room <= 0) return null;
  return { url: read.base, html: read.html.slice(0, Math.min(MAX_FRAME_CHARS, room)) };
}

/** Read in a frame; the DOM cut in the page, so a huge one is not carried over whole. A string: compiled without the DOM's types. */
const READ = `(() => ({
  url: document.URL,
  base: document.baseURI,
  html: document.documentElement ? document.documentElement.outerHTML.slice(0, ${MAX_FRAME_CHARS}) : '',
}))()`;

/**
 * The other frames' documents, until `until` (epoch ms) at the latest: a
 * frame that does not answer by then (its thread busy, detached) is left out.
 */
export async function frameDocuments(page: Page, until: number): Promise<FrameDocument[]> {
  const out: FrameDocument[] = [];
  let room = MAX_FRAMES_CHARS;
  const frames = page.frames().filter((f) => f !== page.mainFrame());
  for (const f of frames.slice(0, MAX_FRAMES)) {
    const read = await readFrame(f, until - Date.now());
    const doc = read && frameDocument(read, room);
    if (!doc) continue;
    out.push(doc);
    room -= doc.html.length;
  }
  return out;
}

async function readFrame(f: Frame, ms: number): Promise<FrameRead | null> {
  if (ms <= 0 || f.isDetached()) return null;
  let timer: NodeJS.Timeout | undefined;
  const read = (f.evaluate(READ) as Promise<FrameRead>).catch(() => null);
  try {
    return await Promise.race([read, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
