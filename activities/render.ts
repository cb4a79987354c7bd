// `render: browser` (and `auto`) in a host session: the browser fetcher (src/browser/)
// wired to this worker's Chromium, to the campaign's WARC and to the other
// hosts a page reaches. Each request a rendered page makes is archived here
// as a request/response pair by the same writer as pages (a POST's body in
// its request record), with no index line and no frontier entry of its own
// (the CDXJ for replay is built from the WARCs); those a page's requisites
// would name (scripts, stylesheets, images, fonts, media) are marked seen in
// their host's seen-set, so they are not fetched a second time as embeds.
// Data a script fetches (fetch, XHR) is not marked: the same URL may be a
// page the crawl must still visit. The shared files (src/browser/page-routes.ts)
// are remembered by where they were archived (src/redis/captures.ts), and
// later pages of the campaign, in any session, are answered from there.
import path from 'node:path';
import { adaptiveFetcher } from '../src/browser/adaptive-fetcher';
import { hasRenderHooks, renderHookFor, type RenderHooks } from '../src/browser/page-hook';
import type { Handler } from '../src/handlers/api';
import { handlerLog } from '../src/handlers/handler-log';
import { browserFetcher, type PageNetwork, type RenderingFetcher, type ScreenshotCapture, type SubresourceCapture, type TextCapture } from '../src/browser/browser-fetcher';
import { isSharedResource, type Answer } from '../src/browser/page-routes';
import { Captures } from '../src/redis/captures';
import { RenderPlans } from '../src/redis/render-plan';
import type { Fetcher } from '../src/http/fetcher';
import { Frontier } from '../src/redis/frontier';
import { warcDirOf } from '../src/storage/output-registry';
import { exchangeOf } from '../src/storage/exchange-of';
import { readResponseAt } from '../src/storage/warc-reader';
import type { WarcLocation } from '../src/storage/warc-writer';
import { urlFingerprint } from '../src/url/fingerprint';
import { hostKey, normalizeUrl } from '../src/url/normalize';
import { REQUISITE_URL_OPTIONS } from '../src/parse/css';
import { OtherHostTurns } from './render-hosts';
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
    handler?: Handler | null;
  },
): RenderingFetcher {
  const s = campaign.settings;
  const log = rt.log.child({ campaign: s.campaignId, host: o.host });
  const handler = o.handler;
  // The handler's onRender runs in the page (src/browser/page-steps.ts); its result joins onPage's in the classify stage (activities/page.ts).
  const hooks: RenderHooks | undefined =
    handler && hasRenderHooks(handler)
      ? {
          hookFor: (label) => renderHookFor(handler, label),
          timeoutMs: s.handlerTimeoutMs,
          log: (url, label) => handlerLog(log, { url, hook: 'onRender', label }),
          enter: (url) => rt.loopWatch.enter(url),
        }
      : undefined;
  const captures = new Captures(rt.deps.redis, campaign.key);
  const renderer = browserFetcher({
    pool: rt.browsers,
    inner: o.inner,
    host: o.host,
    allowedByRobots: o.allowedByRobots,
    // The campaign's sessions on this worker share a browser context: its cookies are the campaign's jar's, not the browser's.
    contextKey: campaign.key,
    settings: s.browser,
    userAgent: s.politeness.userAgent,
    maxRedirects: s.fetch.maxRedirects,
    hooks,
    network: pageNetwork(rt, campaign, o.host, captures),
    log,
    // browser.screenshot: resource records named as Browsertrix names them (urn:view:, urn:thumbnail:, urn:fullPage:), which ReplayWeb.page
    // looks up by the page's URL and time (its page list's thumbnails) and `crawler qa` compares with.
    screenshot: async (c: ScreenshotCapture) => {
      const warc = await rt.outputs.warc(s.output.dir, s.campaignId, s.output);
      await warc.writeResource({ uri: `urn:${c.kind}:${c.page}`, date: c.takenAt, contentType: c.contentType, body: c.image });
    },
    // browser.text: a resource record, named as Browsertrix names them; export --wacz lists it with the page (src/storage/wacz.ts).
    text: async (c: TextCapture) => {
      const warc = await rt.outputs.warc(s.output.dir, s.campaignId, s.output);
      const loc = await warc.writeResource({ uri: `urn:text:${c.page}`, date: c.takenAt, contentType: 'text/plain; charset=utf-8', body: Buffer.from(c.text, 'utf8') });
      return { file: loc.file, offset: loc.offset, length: loc.length };
    },
    record: async (c: SubresourceCapture) => {
      const loc = await archive(rt, campaign, c);
      const res = c.response;
      if (isSharedResource(c.resourceType, res.method ?? 'GET') && res.status === 200 && !res.truncated && loc.type === 'response') {
        await captures.remember(c.url, { file: loc.file, offset: loc.offset, length: loc.length, status: res.status });
      }
      if (REQUISITE_TYPES.has(c.resourceType)) await markSeen(rt, campaign, o, c.url);
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

/** Other hosts in their turns, earlier captures read back from this worker's WARC folder, scope.exclude. */
function pageNetwork(rt: WorkerRuntime, campaign: CampaignRuntime, host: string, captures: Captures): PageNetwork {
  const s = campaign.settings;
  const warcDir = warcDirOf(s.output.dir);
  return {
    otherHosts: new OtherHostTurns(rt, campaign, host),
    captures: {
      async find(url: string): Promise<Answer | null> {
        const ref = await captures.find(url);
        if (!ref || ref.status !== 200) return null;
        // Another worker's file on another machine is not here: the caller fetches, as before captures.
        const stored = await readResponseAt(path.join(warcDir, ref.file), ref.offset, ref.length).catch(() => null);
        if (!stored || stored.targetUri !== url || !stored.payloadDigestOk) return null;
        return { status: stored.status, headers: answerHeaders(stored.headers), body: stored.payload };
      },
    },
    excluded: campaign.urlRules.empty ? undefined : (url) => campaign.urlRules.verdict(normalizedOrSelf(url), 'embed') !== null,
  };
}

/**
 * A stored response's headers as the browser gets them again: what the
 * writer renamed (X-Crawler-Original-*) and wrote for the stored body
 * (Content-Length) go, and Set-Cookie too, which the WARC keeps redacted
 * (the cookies were taken into the campaign's jar when the file was fetched).
 */
export function answerHeaders(stored: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(stored)) if (!k.startsWith('x-crawler-original-') && k !== 'set-cookie' && k !== 'content-length') out[k] = v;
  return out;
}

/** One exchange of a page as WARC records: request (with its body) and response, and a metadata record naming the page. */
async function archive(rt: WorkerRuntime, campaign: CampaignRuntime, c: SubresourceCapture): Promise<WarcLocation> {
  const s = campaign.settings;
  const warc = await rt.outputs.warc(s.output.dir, s.campaignId, s.output);
  return warc.writeExchange(exchangeOf(c.response, { url: c.url, metadata: { via: c.page.slice(0, 2048), renderedBy: 'browser' }, keepSecrets: s.output.warcKeepSecrets }));
}

/** A requisite of the page marked seen in its own host's seen-set (another host's, when it came from there). */
async function markSeen(rt: WorkerRuntime, campaign: CampaignRuntime, o: { host: string; frontier: Frontier }, url: string): Promise<void> {
  try {
    const host = hostKey(url);
    const frontier = host === o.host ? o.frontier : new Frontier(rt.deps.redis, campaign.key, host);
    // Both spellings: a link's (query sorted) and a requisite's (as written, src/parse/css.ts).
    await frontier.markSeen([...new Set([urlFingerprint(normalizeUrl(url)), urlFingerprint(normalizeUrl(url, undefined, REQUISITE_URL_OPTIONS))])]);
  } catch {
    /* not a URL the frontier would hold */
  }
}

function normalizedOrSelf(url: string): string {
  try {
    return normalizeUrl(url);
  } catch {
    return url;
  }
}
