// `render: browser` (and `auto`) in a host session: the browser fetcher (src/browser/)
// wired to this worker's Chromium and to the campaign's WARC. Each request a
// rendered page makes is archived here as a request/response pair by the
// same writer as pages, with no index line and no frontier entry of its own
// (the CDXJ for replay is built from the WARCs); those a page's requisites
// would name (scripts, stylesheets, images, fonts, media) are marked
// seen in the host's seen-set, so they are not fetched a second time as
// embeds. Data a script fetches (fetch, XHR) is not marked: the same URL may
// be a page the crawl must still visit.
import { adaptiveFetcher } from '../src/browser/adaptive-fetcher';
import { browserFetcher, type RenderingFetcher, type ScreenshotCapture, type SubresourceCapture } from '../src/browser/browser-fetcher';
import { RenderPlans } from '../src/redis/render-plan';
import type { Fetcher } from '../src/http/fetcher';
import type { Frontier } from '../src/redis/frontier';
import { urlFingerprint } from '../src/url/fingerprint';
import { normalizeUrl } from '../src/url/normalize';
import { REQUISITE_URL_OPTIONS } from '../src/parse/css';
import type { CampaignRuntime, WorkerRuntime } from './runtime';

/** Chromium's resource types of what a page's requisites name (src/parse/links.ts finds these in the rendered DOM). */
// Frames (`document`) are left out: a frame's page may be one the crawl visits as a page.
const REQUISITE_TYPES = new Set(['stylesheet', 'script', 'image', 'font', 'media', 'manifest', 'texttrack']);

export function renderingFetcher(
  rt: WorkerRuntime,
  campaign: CampaignRuntime,
  o: {
    host: string;
    frontier: Frontier;
    inner: Fetcher;
    allowedByRobots: ((url: string) => boolean) | null;
    /** The host's render mode: the campaign's, or an operator's for this host (`crawler set-render`). */
    mode: 'browser' | 'auto';
  },
): RenderingFetcher {
  const s = campaign.settings;
  const log = rt.log.child({ campaign: s.campaignId, host: o.host });
  const renderer = browserFetcher({
    pool: rt.browsers,
    inner: o.inner,
    host: o.host,
    allowedByRobots: o.allowedByRobots,
    settings: s.browser,
    userAgent: s.politeness.userAgent,
    maxRedirects: s.fetch.maxRedirects,
    log,
    // browser.screenshot: a resource record, named as Browsertrix names them, so replay tools that know the convention show it.
    screenshot: async (c: ScreenshotCapture) => {
      const warc = await rt.outputs.warc(s.output.dir, s.campaignId);
      await warc.writeResource({ uri: `urn:screenshot:${c.page}`, date: c.takenAt, contentType: 'image/png', body: c.png });
    },
    record: async (c: SubresourceCapture) => {
      const res = c.response;
      const warc = await rt.outputs.warc(s.output.dir, s.campaignId);
      const u = new URL(c.url);
      await warc.writeExchange({
        url: c.url,
        fetchedAt: new Date(res.startedAt),
        ip: res.remoteAddress ?? undefined,
        request: { method: 'GET', headers: res.requestHeaders, path: `${u.pathname}${u.search}`, secretHeaders: res.secretHeaders },
        response: { status: res.status, statusText: res.statusText, headers: res.headers, body: res.body, truncated: res.truncated },
        metadata: { fetchTimeMs: String(res.endedAt - res.startedAt), via: c.page.slice(0, 2048), renderedBy: 'browser' },
        keepSecrets: s.output.warcKeepSecrets,
      });
      if (!REQUISITE_TYPES.has(c.resourceType)) return;
      try {
        // Both spellings: a link's (query sorted) and a requisite's (as written, src/parse/css.ts).
        await o.frontier.markSeen([...new Set([urlFingerprint(normalizeUrl(c.url)), urlFingerprint(normalizeUrl(c.url, undefined, REQUISITE_URL_OPTIONS))])]);
      } catch {
        /* not a URL the frontier would hold */
      }
    },
  });
  // render: auto renders only the pages its host's history says need it (src/browser/adaptive.ts).
  if (o.mode !== 'auto') return renderer;
  return adaptiveFetcher({
    inner: o.inner,
    renderer,
    plans: new RenderPlans(rt.deps.redis, campaign.key, o.host),
    options: { samples: s.browser.autoSamples, recheckEvery: s.browser.autoRecheckEvery },
    log,
  });
}
