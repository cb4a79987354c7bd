// What activities share inside one worker process: the Redis and Temporal
// clients, and per-campaign objects built once from the stored settings.
import { LocalSessionShare } from './local-share';
import type { Client } from '@temporalio/client';
import { createLogger, type Logger } from '../src/log/logger';
import type { CrawlMetrics } from '../src/metrics/crawl-metrics';
import type { CampaignSettings } from '../src/config/campaign';
import { sharedDnsCache, type DnsCache } from '../src/http/dns-cache';
import { createHttpClient } from '../src/http/http-client';
import type { HttpClient } from '../src/http/http-types';
import { parseResolveEntries, type ResolveOverrides } from '../src/http/resolve-overrides';
import { PolitenessKeys } from '../src/politeness/politeness-key';
import { AddressSlots } from '../src/redis/address-slots';
import { loadCampaignSettings } from '../src/redis/campaign-store';
import type { RedisLike } from '../src/redis/scripts';
import { IDLE_CLOSE_MS, OutputRegistry } from '../src/storage/output-registry';
import type { SpoolUploader } from '../src/storage/spool-uploader';
import { RobotsStore } from '../src/robots/robots-store';
import type { RobotsVerdict } from './robots-verdict';
import { createScope, scopeRootOf, type Scope } from '../src/url/scope';
import { campaignKeys } from '../src/redis/keys';
import { EventLoopWatch } from '../src/handlers/runner';
import { compileUrlRules, type UrlRules } from '../src/url/url-rules';
import { loadCredentialsFile, NO_CREDENTIALS, type Credentials } from '../src/http/credentials';
import { parseHeaderEntries } from '../src/http/header-rules';
import { loadProxyFiles } from '../src/http/proxies';
import { RedisProxyHealth } from '../src/redis/proxy-health';
import { CookieJars } from '../src/http/cookie-jar';
import { RedisCookieStore } from '../src/redis/cookie-store';
import { readCookiesFile } from '../src/http/cookies-file';
import { BrowserPool } from '../src/browser/browser-pool';
import type { WorkerLoad } from '../src/worker/worker-load';
import type { WorkerLiveness } from './worker-liveness';

export interface ActivityDeps {
  redis: RedisLike;
  temporal: Client;
  /**
   * `temporal` rides the worker's own NativeConnection, so a workflow can be
   * started eagerly on this worker (the SDK refuses an eager start otherwise).
   */
  eagerStart?: boolean;
  /** The worker's local activity slots, shared fairly between campaigns by their first sessions (activities/local-share.ts); absent: unbounded. */
  localSessionSlots?: number;
  /** This worker's load (src/worker/worker-load.ts): a host's first session goes elsewhere while it is full; absent: always runs here. */
  load?: WorkerLoad;
  /** Chromium's executable for `render: browser` (found or installed by the worker: src/stack/chromium.ts); absent: no page is rendered. */
  chromium?: () => Promise<string>;
  /** Why this worker could not render (no Chromium, none installable), or null: checked when an operator steers a host to rendering. */
  chromiumProblem?: () => string | null;
  /** Where this worker's connections resolve names (the worker's names its hosts file); absent: the process's cache of the system's hosts file. */
  dnsCache?: DnsCache;
  /** This worker's lease in Redis, where its regular sessions are recorded (activities/worker-liveness.ts); absent: outside a worker, or turned off. */
  liveness?: WorkerLiveness;
  /** The worker's uploader of outputs in object storage (src/storage/spool-uploader.ts); absent: every output is a folder. */
  spool?: SpoolUploader;
  /** Where outputs in object storage are mirrored to be sealed (`<LOCAL_DIR>/cache`: src/storage/output-mirror.ts); absent: such outputs cannot be sealed here. */
  outputCacheRoot?: string;
  /** Absent in tools that run activities outside a worker. */
  metrics?: CrawlMetrics;
  log?: Logger;
}

export interface CampaignRuntime {
  key: string;
  version: number;
  settings: CampaignSettings;
  /** The scope of the inline seeds (what allows() knows without Redis). */
  scope: Scope;
  /** The campaign's scope for a batch of URLs, seed-list roots included (one Redis round trip for roots not cached). */
  inScope(urls: string[]): Promise<boolean[]>;
  /** scope.include / scope.exclude, compiled (src/url/url-rules.ts). */
  urlRules: UrlRules;
  http: HttpClient;
  /** The campaign's address pins (fetch.resolve): whose robots.txt it reads depends on them. */
  resolve: ResolveOverrides;
  /** Politeness clock key of a host under the campaign's politeness.key. */
  clockKeys: PolitenessKeys;
  /** The campaign's cookie jars (seeded from its cookies file, read by this worker); null with cookies off. */
  cookies: CookieJars | null;
  /** The credentials file as this worker read it: its `login` lines are a login hook's (activities/login.ts). */
  credentials: Credentials;
}

/** A campaign's runtime (settings, HTTP agents) not used for this long is closed at the next lookup. */
const CAMPAIGN_IDLE_MS = 10 * 60_000;
/**
 * A campaign runtime replaced by newer settings, or evicted, may still serve
 * sessions that took it earlier: a page in flight, a wait on the host clock
 * before the next one (a session sees the new version only between pages).
 * Its HTTP client is closed this long after, when they have surely moved on,
 * instead of at once under them (a fetch on a closed client fails, and on a
 * URL's last attempt that was the URL lost).
 */
const RETIRED_CLOSE_MS = 10 * 60_000;
/** A slot of an address outlives the fetch that took it by this much at most: only a dead worker's slot expires. */
const ADDRESS_LEASE_SLACK_MS = 10_000;

export class WorkerRuntime {
  readonly outputs: OutputRegistry;
  private readonly campaigns = new Map<string, Promise<CampaignRuntime>>();
  private readonly usedAt = new Map<string, number>();

  readonly robots: RobotsStore;
  readonly log: Logger;
  /**
   * Reports a thread blocked for a second or more (log + metric), naming the
   * handler hooks that were running: a synchronous hook cannot be stopped
   * from the thread it blocks (docs/handlers.md).
   */
  readonly loopWatch: EventLoopWatch;
  /** The worker is shutting down: sessions end after the page in flight, and Temporal hands their hosts to other workers. */
  draining = false;
  /** robots.txt fetches a dispatch started ahead of a host's first session, by campaign key and host (activities/robots.ts). */
  readonly robotsWarmups = new Map<string, Promise<RobotsVerdict>>();
  /** Verdicts of warm-ups that ended, kept for the host's first session on this worker to take (activities/robots.ts). */
  readonly robotsSettled = new Map<string, { verdict: RobotsVerdict; version: number; at: number }>();
  /**
   * Host sessions running (or opening) on this worker, by campaign key and host: a warm-up for a
   * host with none here lets its connection go (activities/robots.ts).
   */
  private readonly hostSessions = new Map<string, number>();
  /** Aborted by close(): what runs outside any activity (the warm-ups) stops with the worker. */
  readonly closing = new AbortController();
  /** The process's Chromium (render: browser), started by the first page that needs it. */
  readonly browsers: BrowserPool;
  /** Each campaign's share of this worker's local first sessions while campaigns share it. */
  readonly localShare: LocalSessionShare;
  /** Shared by every campaign's HTTP client and politeness keys (`ip` mode looks up what the fetches will dial). */
  readonly dnsCache: DnsCache;

  constructor(readonly deps: ActivityDeps) {
    this.outputs = new OutputRegistry(IDLE_CLOSE_MS, deps.spool ?? null);
    this.dnsCache = deps.dnsCache ?? sharedDnsCache();
    this.robots = new RobotsStore(deps.redis);
    this.localShare = new LocalSessionShare(deps.localSessionSlots ?? null);
    this.log = deps.log ?? createLogger({ level: 'silent' });
    this.browsers = new BrowserPool(deps.chromium ?? (() => Promise.reject(new Error('this process has no Chromium to render with'))), this.log, {
      restarted: (reason) => deps.metrics?.recordBrowserRestart(reason),
      measured: (bytes) => deps.metrics?.recordBrowserMemory(bytes),
    });
    this.loopWatch = new EventLoopWatch((ms, urls) => {
      deps.metrics?.recordEventLoopBlocked(ms);
      this.log.error('worker thread blocked', { blockedMs: ms, handlerPages: urls.slice(0, 10) });
    });
  }

  /** A host session starts opening on this worker; `sessionClosed` when it ends, whatever the way. */
  sessionOpened(campaignKey: string, host: string): void {
    const key = `${campaignKey}|${host}`;
    this.hostSessions.set(key, (this.hostSessions.get(key) ?? 0) + 1);
  }

  sessionClosed(campaignKey: string, host: string): void {
    const key = `${campaignKey}|${host}`;
    const n = (this.hostSessions.get(key) ?? 1) - 1;
    if (n > 0) this.hostSessions.set(key, n);
    else this.hostSessions.delete(key);
  }

  /** Whether a session of the host runs (or opens) on this worker. */
  hasSession(campaignKey: string, host: string): boolean {
    return this.hostSessions.has(`${campaignKey}|${host}`);
  }

  /**
   * Settings of a campaign as of (at least) settings version `minVersion`
   * (the campaign's control version: every operator change makes one),
   * cached per process.
   */
  async campaign(campaignKey: string, minVersion: number): Promise<CampaignRuntime> {
    this.evictIdle(campaignKey);
    const cached = this.campaigns.get(campaignKey);
    if (cached) {
      const rt = await cached.catch(() => null);
      if (rt && rt.version >= minVersion) return rt;
      if (rt) this.retire(rt.http);
      this.campaigns.delete(campaignKey);
    }
    const p = this.build(campaignKey, minVersion);
    this.campaigns.set(campaignKey, p);
    p.catch(() => this.campaigns.delete(campaignKey));
    return p;
  }

  /** Closes the runtimes of campaigns no session has asked for in a while (their HTTP agents hold sockets). */
  private evictIdle(using: string): void {
    const now = Date.now();
    this.usedAt.set(using, now);
    for (const [key, at] of this.usedAt) {
      if (now - at < CAMPAIGN_IDLE_MS) continue;
      this.usedAt.delete(key);
      const p = this.campaigns.get(key);
      this.campaigns.delete(key);
      void p?.then((rt) => this.retire(rt.http)).catch(() => undefined);
    }
  }

  private readonly retired = new Map<HttpClient, NodeJS.Timeout>();

  private retire(http: HttpClient): void {
    if (this.retired.has(http)) return;
    const timer = setTimeout(() => {
      this.retired.delete(http);
      void http.close().catch(() => undefined);
    }, RETIRED_CLOSE_MS);
    timer.unref();
    this.retired.set(http, timer);
  }

  private async build(campaignKey: string, minVersion: number): Promise<CampaignRuntime> {
    const { version, settings } = await loadCampaignSettings(this.deps.redis, campaignKey);
    const f = settings.fetch;
    const perAddress = settings.politeness.maxInFlightPerAddress;
    const scope = inlineScope(settings);
    const resolve = parseResolveEntries(f.resolve);
    // Read here, on the worker, like a handler: the secrets never ride in the settings. A file
    // gone bad since prepareCampaign checked it fails this build (and the activity, retried).
    const credentials = f.credentialsFile ? await loadCredentialsFile(f.credentialsFile) : NO_CREDENTIALS;
    // Read here, like a handler is loaded: the lists (and their passwords) never leave the workers.
    const proxyList = f.proxyFiles.length > 0 ? await loadProxyFiles(f.proxyFiles) : [];
    // The file is read here, by the worker: its cookies never travel in the campaign input.
    const cookies =
      settings.cookies === 'on'
        ? new CookieJars(new RedisCookieStore(this.deps.redis, campaignKey), settings.cookiesFile ? await readCookiesFile(settings.cookiesFile) : [])
        : null;
    return {
      key: campaignKey,
      // Settings are saved before the control version that announces them,
      // so what is stored now is what that version means.
      version: Math.max(version, minVersion),
      settings,
      scope,
      inScope: seedListScope(this.deps.redis, campaignKey, settings, scope),
      urlRules: compileUrlRules(settings.scope),
      resolve,
      clockKeys: new PolitenessKeys(settings.politeness.key, resolve, { dnsCache: this.dnsCache }),
      cookies,
      credentials,
      http: createHttpClient({
        userAgent: settings.politeness.userAgent,
        resolve: f.resolve,
        connectTimeoutMs: f.connectTimeoutMs,
        headersTimeoutMs: f.headersTimeoutMs,
        bodyTimeoutMs: f.bodyTimeoutMs,
        totalTimeoutMs: f.totalTimeoutMs,
        maxBodyBytes: f.maxBodyBytes,
        maxRedirects: f.maxRedirects,
        refusePrivateAddresses: f.refusePrivateAddresses,
        allowAddresses: f.allowAddresses,
        dnsCache: this.dnsCache,
        // Shared by every worker through Redis; idle connections are capped per process.
        addressGate: perAddress === null ? undefined : new AddressSlots(this.deps.redis, { limit: perAddress, leaseMs: f.totalTimeoutMs + ADDRESS_LEASE_SLACK_MS }),
        keepAliveOriginsPerAddress: perAddress,
        headers: parseHeaderEntries(f.headers ?? []),
        credentials,
        ...(proxyList.length > 0 ? { proxies: { list: proxyList, health: new RedisProxyHealth(this.deps.redis, campaignKey) } } : {}),
      }),
    };
  }

  async close(): Promise<void> {
    this.loopWatch.stop();
    // robots.txt warm-ups in flight stop (their lease on the host clock runs out by itself) before the clients go.
    this.draining = true;
    this.closing.abort();
    await Promise.all([...this.robotsWarmups.values()]);
    await this.browsers.close();
    const all = [...this.campaigns.values()];
    this.campaigns.clear();
    await Promise.all(all.map(async (p) => (await p.catch(() => null))?.http.close()));
    const retired = [...this.retired];
    this.retired.clear();
    await Promise.all(
      retired.map(([http, timer]) => {
        clearTimeout(timer);
        return http.close().catch(() => undefined);
      }),
    );
    await this.outputs.closeAll();
  }
}

/** The scope of the inline seeds; a campaign seeded only from a list starts with none (its roots are in Redis). */
function inlineScope(settings: CampaignSettings): Scope {
  const fromList = settings.seedsFile !== null && (settings.scope.mode === 'same-host' || settings.scope.mode === 'same-domain');
  if (fromList && settings.seeds.length === 0)
    return { mode: settings.scope.mode, roots: [], allows: () => false, describe: () => `${settings.scope.mode}: the seed list's hosts` };
  return createScope(settings.scope, settings.seeds);
}

/** Scope roots remembered per campaign and process (a hit or a miss), so most pages cost no Redis call. */
const ROOT_CACHE_SIZE = 10_000;

/**
 * Same-host and same-domain campaigns seeded from a list keep their roots
 * in Redis (SET scope-roots, filled by loadSeeds): a million seed sites would
 * not fit the settings. A URL the inline seeds do not allow is looked up by
 * its root, with a bounded per-process cache in front.
 */
function seedListScope(redis: RedisLike, campaignKey: string, settings: CampaignSettings, scope: Scope): (urls: string[]) => Promise<boolean[]> {
  const fromList = settings.seedsFile !== null && (settings.scope.mode === 'same-host' || settings.scope.mode === 'same-domain');
  if (!fromList) return async (urls) => urls.map((u) => scope.allows(u));
  const cache = new Map<string, boolean>();
  const key = campaignKeys(campaignKey).scopeRoots;
  return async (urls) => {
    const out = urls.map((u) => scope.allows(u));
    const roots = urls.map((u, i) => (out[i] ? null : scopeRootOf(settings.scope, u)));
    const unknown = [...new Set(roots.filter((r): r is string => r !== null && !cache.has(r)))];
    if (unknown.length > 0) {
      const found = await redis.smismember(key, ...unknown);
      if (cache.size + unknown.length > ROOT_CACHE_SIZE) cache.clear();
      unknown.forEach((r, i) => cache.set(r, found[i] === 1));
    }
    return out.map((ok, i) => ok || (roots[i] !== null && cache.get(roots[i]!) === true));
  };
}
