// The links and requisites of a rendered page's other frames (docs/rendering.md):
// each frame's DOM (src/browser/frames.ts) is read against its own URL, so
// a relative link in a frame at /widgets/list.html resolves under
// /widgets/. Within what the page's own extraction left of the per-page
// budgets (links, requisites) and one time limit for all the frames. The
// page's text and duplicate verdict stay the main frame's.
import type { FrameDocument } from '../../src/browser/frames';
import { extractLinks, PARSE_TIMEOUT, type ExtractedPage } from '../../src/parse/links';
import { normalizeUrl } from '../../src/url/normalize';
import { UrlError } from '../../src/url/url-error';

export interface FrameLimits {
  /** Links still allowed for the page (budgets.maxLinksPerPage less the main frame's). */
  maxLinks: number;
  /** content.maxParseMs, for all the frames together. */
  maxParseMs: number;
  requisites: boolean;
  /** Requisites still allowed for the page. */
  maxRequisites: number;
  /** Overlong links kept for the trap rules to reject, as the main frame's. */
  maxLength: number;
  /** Links already found in the main frame: not counted again. */
  known: ReadonlySet<string>;
}

export interface FrameFindings {
  /** Links to follow (a frame's meta robots nofollow and rel=nofollow links left out), distinct, in frame order. */
  links: string[];
  requisites: string[];
  linksDropped: number;
  embedsDropped: number;
  timeout?: ExtractedPage['timeout'];
}

export function frameLinks(frames: readonly FrameDocument[], o: FrameLimits): FrameFindings {
  const out: FrameFindings = { links: [], requisites: [], linksDropped: 0, embedsDropped: 0 };
  const seen = new Set(o.known);
  const started = Date.now();
  for (const f of frames) {
    const leftMs = o.maxParseMs - (Date.now() - started);
    if (leftMs <= 0) {
      out.timeout = { code: PARSE_TIMEOUT, message: `the frames of the page outlasted content.maxParseMs (${o.maxParseMs} ms)` };
      break;
    }
    const page = extractLinks(f.html, f.url, {
      maxLength: o.maxLength,
      maxLinks: Math.max(0, o.maxLinks - out.links.length),
      maxParseMs: leftMs,
      requisites: o.requisites,
      maxRequisites: Math.max(0, o.maxRequisites - out.requisites.length),
    });
    out.linksDropped += page.linksDropped;
    out.embedsDropped += page.requisitesDropped;
    out.timeout ??= page.timeout;
    out.requisites.push(...page.requisites.map((r) => r.url));
    if (page.metaRobots.nofollow) continue;
    for (const l of page.links) {
      if (l.nofollow || seen.has(l.url)) continue;
      seen.add(l.url);
      out.links.push(l.url);
    }
  }
  return out;
}

/**
 * The links the browser behaviors found (src/browser/behaviors.ts: put in
 * the DOM by a click, an opened panel, a scrolled box, or a click's attempt
 * to leave the page), absolute already: normalised as the page's own, those
 * known from the DOM left out, within what is left of the page's links.
 */
export function behaviorLinks(urls: readonly string[], o: { maxLinks: number; maxLength: number; known: ReadonlySet<string> }): { links: string[]; dropped: number } {
  const seen = new Set(o.known);
  const links: string[] = [];
  let dropped = 0;
  for (const raw of urls) {
    let url: string;
    try {
      url = normalizeUrl(raw, undefined, { maxLength: o.maxLength });
    } catch (err) {
      if (err instanceof UrlError) continue;
      throw err;
    }
    if (seen.has(url)) continue;
    seen.add(url);
    if (links.length >= o.maxLinks) dropped++;
    else links.push(url);
  }
  return { links, dropped };
}
