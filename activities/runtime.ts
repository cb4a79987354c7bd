// What activities share inside one worker process: the Redis and Temporal
// clients, and per-campaign objects built once from the stored settings.
import type { Client } from '@temporalio/client';
import { createLogger, type Logger } from '../src/log/logger';
import type { CrawlMetrics } from '../src/metrics/crawl-metrics';
import type { CampaignSettings } from '../src/config/campaign';
import { createHttpClient, type HttpClient } from '../src/http/http-client';
import { parseResolveEntries } from '../src/http/resolve-overrides';
import { PolitenessKeys } from '../src/politeness/politeness-key';
import { loadCampaignSettings } from '../src/redis/campaign-store';
import type { RedisLike } from '../src/redis/scripts';
import { OutputRegistry } from '../src/storage/output-registry';
import { RobotsStore } from '../src/robots/robots-store';
import { createScope, type Scope } from '../src/url/scope';

export interface ActivityDeps {
  redis: RedisLike;
  temporal: Client;
  /** Absent in tools that run activities outside a worker. */
  metrics?: CrawlMetrics;
  log?: Logger;
}

export interface CampaignRuntime {
  key: string;
  version: number;
  settings: CampaignSettings;
  scope: Scope;
  http: HttpClient;
  /** Politeness clock key of a host under the campaign's politeness.key. */
  clockKeys: PolitenessKeys;
}

/** A campaign's runtime (settings, HTTP agents) not used for this long is closed at the next lookup. */
const CAMPAIGN_IDLE_MS = 10 * 60_000;

export class WorkerRuntime {
  readonly outputs = new OutputRegistry();
  private readonly campaigns = new Map<string, Promise<CampaignRuntime>>();
  private readonly usedAt = new Map<string, number>();

  readonly robots: RobotsStore;
  readonly log: Logger;
  /** The worker is shutting down: sessions end after the page in flight, and Temporal hands their hosts to other workers. */
  draining = false;

  constructor(readonly deps: ActivityDeps) {
    this.robots = new RobotsStore(deps.redis);
    this.log = deps.log ?? createLogger({ level: 'silent' });
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
      if (rt) void rt.http.close().catch(() => undefined);
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
      void p?.then((rt) => rt.http.close()).catch(() => undefined);
    }
  }

  private async build(campaignKey: string, minVersion: number): Promise<CampaignRuntime> {
    const { version, settings } = await loadCampaignSettings(this.deps.redis, campaignKey);
    const f = settings.fetch;
    return {
      key: campaignKey,
      // Settings are saved before the control version that announces them,
      // so what is stored now is what that version means.
      version: Math.max(version, minVersion),
      settings,
      scope: createScope(settings.scope, settings.seeds),
      clockKeys: new PolitenessKeys(settings.politeness.key, parseResolveEntries(f.resolve)),
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
      }),
    };
  }

  async close(): Promise<void> {
    const all = [...this.campaigns.values()];
    this.campaigns.clear();
    await Promise.all(all.map(async (p) => (await p.catch(() => null))?.http.close()));
    await this.outputs.closeAll();
  }
}
