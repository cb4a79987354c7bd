// What a host session fetches with, put together once robots.txt is known:
// the campaign's HTTP client as a fetcher, behind the host's cookie jar when
// cookies are on; the browser fetcher in front of them when the host is
// rendered (docs/rendering.md); and the handler's login (activities/login.ts)
// when the handler has a login hook. A login's requests go through the same
// fetcher as the pages' (cookie jar, proxy, credentials, address policy).
import type { CampaignSettings } from '../src/config/campaign';
import type { RenderMode } from '../src/config/render-modes';
import { cookieFetcher } from '../src/http/cookie-jar';
import { httpFetcher } from '../src/http/fetcher';
import type { PageFetcher } from '../src/browser/page-fetcher';
import { loadHandler } from '../src/handlers/loader';
import type { Frontier } from '../src/redis/frontier';
import { HostLogin } from './login';
import { renderingFetcher } from './render';
import type { RobotsVerdict } from './robots-verdict';
import type { CampaignRuntime, WorkerRuntime } from './runtime';

/** A verdict under which the session goes on (not `wait`). */
export type Robots = Exclude<RobotsVerdict, { kind: 'wait' }>;

export interface SessionFetcher {
  fetcher: PageFetcher;
  /** The handler's login for this host; null when it has no login hook (or no handler applies). */
  login: HostLogin | null;
  /** The session's tab goes with it (and its hold on the campaign's browser context: src/browser/shared-contexts.ts). */
  close(): Promise<void>;
}

/**
 * The host's render mode: an operator's for the host wins over the campaign's (`crawler
 * set-render`: a change ends the session at its settings version, and the next one reads it).
 */
export function renderModeFor(hostRender: RenderMode | null, s: CampaignSettings): RenderMode {
  return hostRender ?? s.render;
}

/** robots.txt's rules for the host; null when they are not respected (or were never read). */
export function robotsRules(robots: Robots): ((url: string) => boolean) | null {
  return robots.kind === 'ok' ? robots.allows : null;
}

/** The handler to load for the session: the campaign's, when robots.txt was read and the host's address is not refused (nothing is fetched otherwise). */
export function handlerSpecFor(s: CampaignSettings, robots: Robots): string | null {
  return s.handler && robots.kind === 'ok' && !robots.refused ? s.handler : null;
}

export async function openSessionFetcher(
  rt: WorkerRuntime,
  campaign: CampaignRuntime,
  o: { host: string; frontier: Frontier; robots: Robots; mode: RenderMode },
): Promise<SessionFetcher> {
  const http = httpFetcher(campaign.http);
  const fetcher = campaign.cookies ? cookieFetcher(http, campaign.cookies) : http;
  const allows = robotsRules(o.robots);
  const spec = handlerSpecFor(campaign.settings, o.robots);
  const handler = spec ? await loadHandler(spec) : null;
  const login = handler ? await HostLogin.open({ rt, campaign, host: o.host, handler, allows }) : null;
  const { mode } = o;
  const rendering = mode !== 'off' ? renderingFetcher(rt, campaign, { host: o.host, frontier: o.frontier, inner: fetcher, allowedByRobots: allows, mode, handler }) : null;
  return { fetcher: rendering ?? fetcher, login, close: async () => rendering?.close() };
}
