// `render: auto` as a Fetcher (docs/rendering.md, "auto"): every page is
// fetched with HTTP first; a 2xx HTML page is then rendered when its URL
// pattern's history says so (src/browser/adaptive.ts), and the history,
// kept in Redis for every worker (src/redis/render-plan.ts), learns from
// each sampled or re-checked page what HTTP and the browser found on it.
// Everything after the fetch is the same code as for `render: browser`.
import type { FetchResult } from '../http/http-types';
import { decodeBody } from '../parse/decode';
import { extractLinks } from '../parse/links';
import type { RenderPlans } from '../redis/render-plan';
import type { Logger } from '../log/logger';
import { observe, planRender, rendererFoundMore, urlPattern, type AutoOptions, type PageFindings } from './adaptive';
import { shouldRender, type RenderingFetcher } from './browser-fetcher';
import type { Fetcher } from '../http/fetcher';
import type { RenderedDocument } from './page-fetcher';

/** Parsing one side of a comparison never holds the host clock longer than this. */
const COMPARE_PARSE_MS = 2_000;

export interface AdaptiveFetcherOptions {
  /** The campaign's HTTP fetcher (with its cookie jar). */
  inner: Fetcher;
  /** The session's browser fetcher, whose `render` is used on the pages that need it. */
  renderer: RenderingFetcher;
  plans: Pick<RenderPlans, 'read' | 'write'>;
  options: AutoOptions;
  log?: Logger;
}

/** What a page's HTML holds for the comparison: its links and the length of its visible text. */
export function findingsOf(html: string, url: string): PageFindings {
  const page = extractLinks(html, url, { withText: true, maxParseMs: COMPARE_PARSE_MS });
  return { links: new Set(page.links.map((l) => l.url)), textChars: page.text?.length ?? 0 };
}

export function adaptiveFetcher(o: AdaptiveFetcherOptions): RenderingFetcher {
  return {
    async fetch(request, ctx) {
      const got = await o.inner.fetch(request, ctx);
      if (!got.ok || !shouldRender(request.kind, got.response)) return got;
      const res = got.response;
      const pattern = urlPattern(request.url);
      const known = await o.plans.read(pattern);
      const plan = planRender(known.pattern, known.host, { ...o.options, untracked: known.untracked });
      let rendered: RenderedDocument | undefined;
      let verdict: 'D' | 'S' | null = null;
      if (plan.render) {
        rendered = { ...(await o.renderer.render(res, request.url, ctx.signal, { label: request.label ?? null, depth: request.depth ?? 0 })), reason: plan.reason ?? 'sample' };
        // A failed render tells nothing of the page: no verdict.
        if (plan.compare && rendered.html !== null) verdict = compare(res, rendered) ? 'D' : 'S';
      }
      await o.plans.write(pattern, known.untracked ? null : observe(known.pattern, verdict), observe(known.host, verdict));
      if (verdict) o.log?.debug('render compared', { url: request.url, pattern, reason: plan.reason, rendererFoundMore: verdict === 'D' });
      return rendered ? { ok: true, response: { ...res, rendered } } : got;
    },
    render: (doc, url, signal, entry) => o.renderer.render(doc, url, signal, entry),
    close: () => o.renderer.close(),
  };
}

function compare(res: FetchResult, rendered: RenderedDocument): boolean {
  const http = findingsOf(decodeBody(res.body, res.headers['content-type']).text, res.finalUrl);
  const main = findingsOf(rendered.html ?? '', rendered.url);
  // Links a script put in a frame are the browser's finding too (the text stays the main frame's, as for dedup).
  const links = new Set(main.links);
  for (const f of rendered.frames ?? []) for (const l of findingsOf(f.html, f.url).links) links.add(l);
  return rendererFoundMore(http, { links, textChars: main.textChars });
}
