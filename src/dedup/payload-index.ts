// Which payloads the campaign has stored in full, by WARC payload digest,
// and where: what a revisit record needs to refer to the stored response
// (its target URI, WARC-Date and record ID). Shared by every worker of a
// campaign in Redis, one hash under the campaign's tag.
//
// The rule that makes every revisit point at a response that exists: a
// digest becomes `stored` only after the full response record was written
// to its WARC file (the write returned: the bytes are in the file, and a
// process dying afterwards does not take them back). Until then it is
// `pending`, claimed by the one attempt writing it; another attempt
// bringing the same payload meanwhile waits for the claim to turn into
// `stored` (milliseconds: one record write) rather than store a second
// full copy. A claimant that died (its worker was killed between claim and
// write) is taken over after CLAIM_TAKEOVER_MS: the waiter writes the full
// response itself. The attempt that wrote the original does not have to
// win its URL's commit: its record stays in the WARC whatever happens to
// the attempt, and the revisit refers to that record.
//
// HTML pages skip the claim: the content index (src/dedup/content-index.ts)
// has already named, atomically, the first URL with these exact bytes. That
// page writes and confirms without claiming; its exact duplicates wait for
// the confirm (awaitStored) under the same takeover rule. One Redis call
// fewer for almost every page; other bodies (images, PDFs) claim as above.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster, Redis, Result } from 'ioredis';
import type { RevisitOf } from '../storage/warc-writer';
import { contentKeys } from '../redis/keys';

/** A claim not confirmed for this long is taken over: its claimant most likely died. */
export const CLAIM_TAKEOVER_MS = 20_000;
/** First and longest pause between looks at a pending claim. */
const POLL_FIRST_MS = 10;
const POLL_MAX_MS = 500;

export const payloadKeys = (campaignKey: string) => ({
  /** HASH payload digest → `s\t<uri>\t<date>\t<record id>` (stored) or `p\t<attempt>\t<claimed at, ms>` (being written). */
  payloads: contentKeys(campaignKey, 0).payloads,
});

// KEYS: payloads. ARGV: digest, attempt, takeover ms. Returns the stored
// record ('s\t…'), 'o' when this attempt holds the claim (it writes the
// full response), or 'w\t<ms>' when another attempt holds a live claim
// (look again within <ms>). Redis's clock, so every worker agrees on ages.
const CLAIM_LUA = `
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, 1, 2) == 's\\t' then return v end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if v then
  local attempt, since = string.match(v, '^p\\t([^\\t]*)\\t(%d+)$')
  if attempt == ARGV[2] then return 'o' end
  local left = tonumber(since or '0') + tonumber(ARGV[3]) - now
  if left > 0 then return 'w\\t' .. left end
end
redis.call('HSET', KEYS[1], ARGV[1], 'p\\t' .. ARGV[2] .. '\\t' .. string.format('%.0f', now))
return 'o'`;

// KEYS: payloads. ARGV: digest, stored record. The first full copy written
// becomes the one revisits refer to, whoever held the claim. 1 if it did.
const CONFIRM_LUA = `
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, 1, 2) == 's\\t' then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1`;

// KEYS: payloads. ARGV: digest, attempt. Drops this attempt's claim (its write failed), so nobody waits for it.
const ABANDON_LUA = `
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, 1, 3 + #ARGV[2]) == 'p\\t' .. ARGV[2] .. '\\t' then redis.call('HDEL', KEYS[1], ARGV[1]) return 1 end
return 0`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    crawlPayloadClaim(payloads: string, digest: string, attempt: string, takeoverMs: number): Result<string, Context>;
    crawlPayloadConfirm(payloads: string, digest: string, stored: string): Result<number, Context>;
    crawlPayloadAbandon(payloads: string, digest: string, attempt: string): Result<number, Context>;
  }
}

function ensureScripts(redis: Redis | Cluster): void {
  if (typeof (redis as unknown as Record<string, unknown>).crawlPayloadClaim === 'function') return;
  redis.defineCommand('crawlPayloadClaim', { numberOfKeys: 1, lua: CLAIM_LUA });
  redis.defineCommand('crawlPayloadConfirm', { numberOfKeys: 1, lua: CONFIRM_LUA });
  redis.defineCommand('crawlPayloadAbandon', { numberOfKeys: 1, lua: ABANDON_LUA });
}

/** `original`: write the full response, then confirm(). `revisit`: write a revisit record referring to `of`. */
export type PayloadClaim = { kind: 'original' } | { kind: 'revisit'; of: RevisitOf };

function parseStored(v: string): RevisitOf {
  const [, uri, date, recordId] = v.split('\t');
  return { uri, date, recordId: recordId ? recordId : null };
}

export class PayloadIndex {
  private readonly key: string;

  constructor(
    private readonly redis: Redis | Cluster,
    campaignKey: string,
    private readonly takeoverMs = CLAIM_TAKEOVER_MS,
  ) {
    this.key = payloadKeys(campaignKey).payloads;
    ensureScripts(redis);
  }

  /**
   * Whether this attempt stores the payload in full (it then holds the
   * claim) or as a revisit of the stored copy. Waits while another attempt
   * is writing the same payload.
   */
  async claim(digest: string, attempt: string, signal?: AbortSignal): Promise<PayloadClaim> {
    let pause = POLL_FIRST_MS;
    for (;;) {
      const r = await this.redis.crawlPayloadClaim(this.key, digest, attempt, this.takeoverMs);
      if (r === 'o') return { kind: 'original' };
      if (r.startsWith('s\t')) return { kind: 'revisit', of: parseStored(r) };
      const left = Number(r.slice(2));
      await sleep(Math.max(1, Math.min(pause, left)), undefined, signal ? { signal } : undefined);
      pause = Math.min(pause * 2, POLL_MAX_MS);
    }
  }

  /**
   * For an exact duplicate the content index named (its first page stores
   * the payload without a claim): the stored copy, once its writer confirms
   * it. Falls back to claim() when another attempt holds a claim, or when
   * no copy came within the takeover time (its writer died or failed).
   */
  async awaitStored(digest: string, attempt: string, signal?: AbortSignal): Promise<PayloadClaim> {
    const deadline = Date.now() + this.takeoverMs;
    let pause = POLL_FIRST_MS;
    for (;;) {
      const v = await this.redis.hget(this.key, digest);
      if (v?.startsWith('s\t')) return { kind: 'revisit', of: parseStored(v) };
      if (v || Date.now() >= deadline) return this.claim(digest, attempt, signal);
      await sleep(pause, undefined, signal ? { signal } : undefined);
      pause = Math.min(pause * 2, POLL_MAX_MS);
    }
  }

  /** The full response is in its WARC file: revisits may refer to it from now on. Returns whether it became the stored copy. */
  async confirm(digest: string, stored: RevisitOf): Promise<boolean> {
    for (const f of [stored.uri, stored.date, stored.recordId ?? ''])
      if (/[\t\n]/.test(f)) throw new TypeError(`a stored payload's field may not contain a tab or newline: ${JSON.stringify(f)}`);
    return (await this.redis.crawlPayloadConfirm(this.key, digest, `s\t${stored.uri}\t${stored.date}\t${stored.recordId ?? ''}`)) === 1;
  }

  /** This attempt could not write its full response: others need not wait for it. */
  async abandon(digest: string, attempt: string): Promise<void> {
    await this.redis.crawlPayloadAbandon(this.key, digest, attempt);
  }
}
