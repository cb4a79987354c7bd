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
import { responseRecordId, type RevisitOf } from '../storage/warc-writer';
import { contentKeys } from '../redis/keys';
import { COMPACT_LUA, compactPrefix } from './compact-store';
import { type ContentFormat, contentFormat } from './content-format';
import { exactKey, key64 } from './content-index';

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

// The compact layout (format 2, src/dedup/compact-store.ts): the same four
// steps on the map `p` (payload key, 8 bytes → state). A stored copy names
// the page of its URL in the page table (the content check's own page for
// this URL when it has one, so an HTML page's URL is kept once): 'c' + page
// (4 bytes) + WARC-Date as epoch ms (6 bytes) + record ID (16 bytes, of a
// `<urn:uuid:…>`), 27 bytes; or, when the date or the id is in another shape
// (epoch ms would not give the very text back), 'x<page>,<date>,<record id>'
// as written. Format 3 keeps what a record ID written by responseRecordId
// comes from instead of the ID: 'a' + page + epoch ms + the attempt id's 6
// bytes, 17 bytes. A claim is 'p<attempt>\\t<claimed at, ms>'. Every script
// answers as the old ones do, a stored copy as 's\\t<uri>\\t<date>\\t<record
// id>' (its date as '@<epoch ms>' when it was kept so: parseStored2).
const STORED2_LUA = `
local meta, pre = KEYS[1], ARGV[1]
${COMPACT_LUA}
local function stored(v)
  local kind = string.sub(v, 1, 1)
  local page, date, rid
  if kind == 'c' then
    page, date = struct.unpack('>I4I6', v, 2)
    date = '@' .. fmt(date)
    rid = string.format('<urn:uuid:%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x>', string.byte(v, 12, 27))
  elseif kind == 'a' then
    -- The record ID is derived again by the reader (parseStored2) from '#<attempt id, hex>'.
    page, date = struct.unpack('>I4I6', v, 2)
    date = '@' .. fmt(date)
    rid = '#' .. string.format('%02x%02x%02x%02x%02x%02x', string.byte(v, 12, 17))
  elseif kind == 'x' then
    local c1 = string.find(v, ',', 2, true)
    local c2 = string.find(v, ',', c1 + 1, true)
    page, date, rid = tonumber(string.sub(v, 2, c1 - 1)), string.sub(v, c1 + 1, c2 - 1), string.sub(v, c2 + 1)
  else
    return nil
  end
  return 's\\t' .. pageUrl(page) .. '\\t' .. date .. '\\t' .. rid
end
`;

// Formats 2 and 3 share these steps (format 3 looks in the exact key's entry
// first, then does as format 2): a claim of the payload key in `p`, a
// confirm's page (the URL's own, when the content check numbered it) and
// its write to `p`, a read of `p`.
const CLAIM_TAIL_LUA = `local v = mapGet('p', ARGV[2])
if v then
  local s = stored(v)
  if s then return s end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if v then
  local attempt, since = string.match(v, '^p([^\\t]*)\\t(%d+)$')
  if attempt == ARGV[3] then return 'o' end
  local left = tonumber(since or '0') + tonumber(ARGV[4]) - now
  if left > 0 then return 'w\\t' .. left end
end
mapPut('p', ARGV[2], 'p' .. ARGV[3] .. '\\t' .. string.format('%.0f', now))
return 'o'`;
const OWN_PAGE_LUA = `local page
local verdict = mapGet('v', ARGV[4])
if verdict then
  local own = string.match(verdict, '^(%d+)$') or string.match(verdict, '^n%d+:%d+:(%d+)$')
  if own and pageUrl(tonumber(own)) == ARGV[3] then page = tonumber(own) end
end`;
const CONFIRM_WRITE_LUA = `page = page or newPage(ARGV[3])
if ARGV[7] == 'c' or ARGV[7] == 'a' then
  mapPut('p', ARGV[2], ARGV[7] .. struct.pack('>I4I6', page, tonumber(ARGV[5])) .. ARGV[6])
else
  mapPut('p', ARGV[2], 'x' .. fmt(page) .. ',' .. ARGV[5] .. ',' .. ARGV[6])
end
return 1`;
const GET_TAIL_LUA = `local v = mapGet('p', ARGV[2])
if not v then return false end
return stored(v) or 'p'`;

// ARGV: prefix, payload key, attempt, takeover ms. As CLAIM_LUA.
const CLAIM2_LUA = `${STORED2_LUA}
${CLAIM_TAIL_LUA}`;

// ARGV: prefix, payload key, uri, URL key (8 bytes), then epoch ms and the record ID's 16 bytes
// (kind 'c') or the attempt id's 6 bytes (kind 'a', format 3), or the date and the record ID as
// written (kind 'x'), then the kind. As CONFIRM_LUA.
const CONFIRM2_LUA = `${STORED2_LUA}
local v = mapGet('p', ARGV[2])
if v and string.sub(v, 1, 1) ~= 'p' then return 0 end
-- The URL's own page, when the content check numbered it (a unique page, or a near copy that claimed its hash).
${OWN_PAGE_LUA}
${CONFIRM_WRITE_LUA}`;

// ARGV: prefix, payload key, attempt. As ABANDON_LUA.
const ABANDON2_LUA = `${STORED2_LUA}
local v = mapGet('p', ARGV[2])
if v and string.sub(v, 1, 2 + #ARGV[3]) == 'p' .. ARGV[3] .. '\\t' then mapDel('p', ARGV[2]) return 1 end
return 0`;

// ARGV: prefix, payload key. The stored copy ('s\\t…'), 'p' while claimed, or nil.
const GET2_LUA = `${STORED2_LUA}
${GET_TAIL_LUA}`;

// Format 3: a payload whose stored copy is the page the content index named
// first for these very bytes (an HTML page that was not rendered: its exact
// key is 64 bits of the body's SHA-256, contentHashOf) is kept in that exact
// key's entry of the map `x` instead of an entry of its own in `p`: the
// owner's page number becomes 'a'/'c' + page + date + attempt or record ID,
// 17 or 27 bytes where the page number was, and the 8-byte field, the entry's
// overhead and its share of a bucket are saved. Every other payload (images,
// PDFs, a rendered page's, a copy stored by another URL than the owner: a
// takeover) is kept in `p` as in format 2. Readers look in `x` first, by
// the body key (ARGV), then in `p`. The content check reads an owner in
// either form (CONTENT_CHECK3_LUA).
const STORED3_LUA = `${STORED2_LUA}
local function merged(bodyKey)
  if bodyKey == '' then return nil end
  local v = mapGet('x', bodyKey)
  if v and (string.sub(v, 1, 1) == 'a' or string.sub(v, 1, 1) == 'c') then return v end
  return nil
end
`;

// ARGV: prefix, payload key, attempt, takeover ms, body key (8 bytes, or '' unknown). As CLAIM2_LUA.
const CLAIM3_LUA = `${STORED3_LUA}
local m = merged(ARGV[5])
if m then return stored(m) end
${CLAIM_TAIL_LUA}`;

// ARGV: as CONFIRM2_LUA, then the body key. The first full copy confirmed wins, wherever it is kept.
const CONFIRM3_LUA = `${STORED3_LUA}
local bodyKey = ARGV[8]
if merged(bodyKey) then return 0 end
local v = mapGet('p', ARGV[2])
if v and string.sub(v, 1, 1) ~= 'p' then return 0 end
${OWN_PAGE_LUA}
if page and bodyKey ~= '' and (ARGV[7] == 'a' or ARGV[7] == 'c') and mapGet('x', bodyKey) == fmt(page) then
  -- The bytes' owner stored them: kept in its exact entry; a claim it held in \`p\` goes.
  mapPut('x', bodyKey, ARGV[7] .. struct.pack('>I4I6', page, tonumber(ARGV[5])) .. ARGV[6])
  if v then mapDel('p', ARGV[2]) end
  return 1
end
${CONFIRM_WRITE_LUA}`;

// ARGV: prefix, payload key, body key. As GET2_LUA.
const GET3_LUA = `${STORED3_LUA}
local m = merged(ARGV[3])
if m then return stored(m) end
${GET_TAIL_LUA}`;

type Arg = string | number | Buffer;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    crawlPayloadClaim(payloads: string, digest: string, attempt: string, takeoverMs: number): Result<string, Context>;
    crawlPayloadConfirm(payloads: string, digest: string, stored: string): Result<number, Context>;
    crawlPayloadAbandon(payloads: string, digest: string, attempt: string): Result<number, Context>;
    crawlPayloadClaim2(meta: string, ...argv: Arg[]): Result<string, Context>;
    crawlPayloadConfirm2(meta: string, ...argv: Arg[]): Result<number, Context>;
    crawlPayloadAbandon2(meta: string, ...argv: Arg[]): Result<number, Context>;
    crawlPayloadGet2(meta: string, ...argv: Arg[]): Result<string | null, Context>;
    crawlPayloadClaim3(meta: string, ...argv: Arg[]): Result<string, Context>;
    crawlPayloadConfirm3(meta: string, ...argv: Arg[]): Result<number, Context>;
    crawlPayloadGet3(meta: string, ...argv: Arg[]): Result<string | null, Context>;
  }
}

function ensureScripts(redis: Redis | Cluster): void {
  if (typeof (redis as unknown as Record<string, unknown>).crawlPayloadClaim3 === 'function') return;
  redis.defineCommand('crawlPayloadClaim', { numberOfKeys: 1, lua: CLAIM_LUA });
  redis.defineCommand('crawlPayloadConfirm', { numberOfKeys: 1, lua: CONFIRM_LUA });
  redis.defineCommand('crawlPayloadAbandon', { numberOfKeys: 1, lua: ABANDON_LUA });
  redis.defineCommand('crawlPayloadClaim2', { numberOfKeys: 1, lua: CLAIM2_LUA });
  redis.defineCommand('crawlPayloadConfirm2', { numberOfKeys: 1, lua: CONFIRM2_LUA });
  redis.defineCommand('crawlPayloadAbandon2', { numberOfKeys: 1, lua: ABANDON2_LUA });
  redis.defineCommand('crawlPayloadGet2', { numberOfKeys: 1, lua: GET2_LUA });
  redis.defineCommand('crawlPayloadClaim3', { numberOfKeys: 1, lua: CLAIM3_LUA });
  redis.defineCommand('crawlPayloadConfirm3', { numberOfKeys: 1, lua: CONFIRM3_LUA });
  redis.defineCommand('crawlPayloadGet3', { numberOfKeys: 1, lua: GET3_LUA });
}

const UUID_RECORD_ID = /^<urn:uuid:([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})>$/;

const ATTEMPT_ID = /^[A-Za-z0-9_-]{8}$/;

/**
 * A stored copy's date and record id as CONFIRM2_LUA takes them: [date, record id, kind]. `derived`
 * (format 3, the attempt that wrote it given): the record ID is responseRecordId's, kept as the attempt's 6 bytes.
 */
function packStored(stored: RevisitOf, derivedFrom?: string): [string, string | Buffer, 'a' | 'c' | 'x'] {
  const ms = Date.parse(stored.date);
  const uuid = stored.recordId ? UUID_RECORD_ID.exec(stored.recordId) : null;
  // Epoch ms only when it gives the very text back: WARC-Refers-To-Date must equal the original's WARC-Date.
  const exactMs = Number.isInteger(ms) && ms >= 0 && ms < 2 ** 48 && new Date(ms).toISOString() === stored.date;
  if (exactMs && derivedFrom !== undefined && ATTEMPT_ID.test(derivedFrom) && stored.recordId === responseRecordId(stored.uri, stored.date, derivedFrom)) {
    return [String(ms), Buffer.from(derivedFrom, 'base64url'), 'a'];
  }
  if (uuid && exactMs) {
    return [String(ms), Buffer.from(uuid.slice(1).join(''), 'hex'), 'c'];
  }
  // '#' starts an attempt's record ID (kind 'a') in the scripts' answer; a WARC-Record-ID is `<…>`.
  if (stored.recordId?.startsWith('#')) throw new TypeError(`a stored payload's record id may not start with '#': ${JSON.stringify(stored.recordId)}`);
  if (stored.date.includes(',')) throw new TypeError(`a stored payload's date may not contain a comma: ${JSON.stringify(stored.date)}`);
  return [stored.date, stored.recordId ?? '', 'x'];
}

/** A stored copy as the format-2 and 3 scripts answer it: its date back from epoch ms, its record ID from the attempt ('#<hex>'). */
function parseStored2(v: string): RevisitOf {
  const of = parseStored(v);
  const date = of.date.startsWith('@') ? new Date(Number(of.date.slice(1))).toISOString() : of.date;
  if (of.recordId?.startsWith('#')) return { ...of, date, recordId: responseRecordId(of.uri, date, Buffer.from(of.recordId.slice(1), 'hex').toString('base64url')) };
  return { ...of, date };
}

/**
 * What names a payload: its WARC payload digest, and when known the body's contentHashOf (the
 * content index's exact hash of it), under which a format-3 campaign keeps an HTML page's stored
 * copy with its exact entry.
 */
export type PayloadKey = string | { digest: string; contentHash: string };
const digestOf = (k: PayloadKey): string => (typeof k === 'string' ? k : k.digest);
const bodyKeyOf = (k: PayloadKey): Buffer | string => (typeof k === 'string' ? '' : exactKey(k.contentHash));

/** `original`: write the full response, then confirm(). `revisit`: write a revisit record referring to `of`. */
export type PayloadClaim = { kind: 'original' } | { kind: 'revisit'; of: RevisitOf };

function parseStored(v: string): RevisitOf {
  const [, uri, date, recordId] = v.split('\t');
  return { uri, date, recordId: recordId ? recordId : null };
}

export class PayloadIndex {
  private readonly key: string;
  private readonly meta: string;
  private readonly prefix: string;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly campaignKey: string,
    private readonly takeoverMs = CLAIM_TAKEOVER_MS,
  ) {
    this.key = payloadKeys(campaignKey).payloads;
    this.meta = contentKeys(campaignKey, 0).meta;
    this.prefix = compactPrefix(campaignKey);
    ensureScripts(redis);
  }

  private format(): Promise<ContentFormat> {
    return contentFormat(this.redis, this.campaignKey);
  }

  private async claimOnce(key: PayloadKey, attempt: string): Promise<string> {
    const f = await this.format();
    const digest = digestOf(key);
    if (f === 3) return this.redis.crawlPayloadClaim3(this.meta, this.prefix, key64(digest), attempt, this.takeoverMs, bodyKeyOf(key));
    if (f === 2) return this.redis.crawlPayloadClaim2(this.meta, this.prefix, key64(digest), attempt, this.takeoverMs);
    return this.redis.crawlPayloadClaim(this.key, digest, attempt, this.takeoverMs);
  }

  /** The payload's state: the stored copy ('s\t…'), something else while claimed, or null. */
  private async look(key: PayloadKey): Promise<string | null> {
    const f = await this.format();
    const digest = digestOf(key);
    if (f === 3) return this.redis.crawlPayloadGet3(this.meta, this.prefix, key64(digest), bodyKeyOf(key));
    if (f === 2) return this.redis.crawlPayloadGet2(this.meta, this.prefix, key64(digest));
    return this.redis.hget(this.key, digest);
  }

  private async parse(v: string): Promise<RevisitOf> {
    return (await this.format()) !== 1 ? parseStored2(v) : parseStored(v);
  }

  /**
   * Whether this attempt stores the payload in full (it then holds the
   * claim) or as a revisit of the stored copy. Waits while another attempt
   * is writing the same payload.
   */
  async claim(digest: PayloadKey, attempt: string, signal?: AbortSignal): Promise<PayloadClaim> {
    let pause = POLL_FIRST_MS;
    for (;;) {
      const r = await this.claimOnce(digest, attempt);
      if (r === 'o') return { kind: 'original' };
      if (r.startsWith('s\t')) return { kind: 'revisit', of: await this.parse(r) };
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
  async awaitStored(digest: PayloadKey, attempt: string, signal?: AbortSignal): Promise<PayloadClaim> {
    const deadline = Date.now() + this.takeoverMs;
    let pause = POLL_FIRST_MS;
    for (;;) {
      const v = await this.look(digest);
      if (v?.startsWith('s\t')) return { kind: 'revisit', of: await this.parse(v) };
      if (v || Date.now() >= deadline) return this.claim(digest, attempt, signal);
      await sleep(pause, undefined, signal ? { signal } : undefined);
      pause = Math.min(pause * 2, POLL_MAX_MS);
    }
  }

  /**
   * The full response is in its WARC file: revisits may refer to it from now on. Returns whether
   * it became the stored copy. `attemptId`: the attempt that wrote it; when its record ID is
   * responseRecordId's, a format-3 campaign keeps the attempt instead of the ID.
   */
  async confirm(key: PayloadKey, stored: RevisitOf, attemptId?: string): Promise<boolean> {
    const digest = digestOf(key);
    for (const f of [stored.uri, stored.date, stored.recordId ?? ''])
      if (/[\t\n]/.test(f)) throw new TypeError(`a stored payload's field may not contain a tab or newline: ${JSON.stringify(f)}`);
    const f = await this.format();
    if (f !== 1) {
      if (stored.uri.includes('\n')) throw new TypeError(`a stored payload's uri may not contain a newline: ${JSON.stringify(stored.uri)}`);
      const [date, rid, kind] = packStored(stored, f === 3 ? attemptId : undefined);
      if (f === 3) return (await this.redis.crawlPayloadConfirm3(this.meta, this.prefix, key64(digest), stored.uri, key64(stored.uri), date, rid, kind, bodyKeyOf(key))) === 1;
      return (await this.redis.crawlPayloadConfirm2(this.meta, this.prefix, key64(digest), stored.uri, key64(stored.uri), date, rid, kind)) === 1;
    }
    return (await this.redis.crawlPayloadConfirm(this.key, digest, `s\t${stored.uri}\t${stored.date}\t${stored.recordId ?? ''}`)) === 1;
  }

  /** This attempt could not write its full response: others need not wait for it. */
  async abandon(key: PayloadKey, attempt: string): Promise<void> {
    const digest = digestOf(key);
    // Format 3 keeps claims in `p` only, as format 2 does.
    if ((await this.format()) !== 1) await this.redis.crawlPayloadAbandon2(this.meta, this.prefix, key64(digest), attempt);
    else await this.redis.crawlPayloadAbandon(this.key, digest, attempt);
  }
}
