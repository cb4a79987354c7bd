// What `render: auto` learnt of a host (src/browser/adaptive.ts), kept in
// Redis under the host's keys so every worker shares it and a crash loses
// none of it: one hash, a field per URL pattern and `*` for the host.
//
// Only the session that owns the host writes it (one at a time, see
// Frontier.takeOver); an older attempt still finishing its page may write
// one page's state over the newer one's, which costs at most one verdict.
import { parseState, type PatternState } from '../browser/adaptive';
import { hostKeys } from './keys';
import type { RedisLike } from './scripts';

/** Patterns kept per host: past this, a new pattern's pages follow the host's verdicts. */
export const MAX_RENDER_PATTERNS = 1000;
/** The host's own field. */
const HOST_FIELD = '*';

export interface RenderPlanRead {
  pattern: PatternState | null;
  host: PatternState | null;
  /** The host has MAX_RENDER_PATTERNS patterns and this one is not among them. */
  untracked: boolean;
}

export class RenderPlans {
  readonly key: string;

  constructor(
    private readonly redis: RedisLike,
    campaignKey: string,
    host: string,
  ) {
    this.key = hostKeys(campaignKey, host).renderPlan;
  }

  async read(pattern: string): Promise<RenderPlanRead> {
    const [[, got], [, size]] = (await this.redis.multi().hmget(this.key, pattern, HOST_FIELD).hlen(this.key).exec()) as [[unknown, (string | null)[]], [unknown, number]];
    const p = parseState(got[0]);
    return { pattern: p, host: parseState(got[1]), untracked: p === null && size - 1 >= MAX_RENDER_PATTERNS };
  }

  /** Stores a page's outcome: the pattern's state (unless untracked) and the host's. */
  async write(pattern: string, state: PatternState | null, host: PatternState): Promise<void> {
    const fields: Record<string, string> = { [HOST_FIELD]: JSON.stringify(host) };
    if (state) fields[pattern] = JSON.stringify(state);
    await this.redis.hset(this.key, fields);
  }
}
