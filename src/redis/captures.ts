// Where a rendered page's shared files were archived (docs/rendering.md,
// "What is archived"): a host's scripts, stylesheets, images, fonts and media,
// each by URL → the WARC file, offset and length of its response record, in
// a hash under the host's keys (hostKeys().captures: it shards with the host
// and goes with the campaign's retention). Any session of the campaign, on
// any worker, answers a later request for the file from that record instead
// of fetching it again; a worker that cannot read the file (another
// machine's folder) fetches it as before.
import { hostKey } from '../url/normalize';
import { hostKeys } from './keys';
import type { RedisLike } from './scripts';

/** Files remembered per host at most: a site's shared files are few; a host of endless image URLs stops adding past this. */
export const MAX_CAPTURES_PER_HOST = 5_000;
/** Longer URLs are not remembered (a hash field per URL: the bound is in bytes too). */
const MAX_URL_LENGTH = 2_048;

/** A response record of a WARC (a WarcLocation): basename of the file in the campaign's WARC folder, offset and length of its gzip member. */
export interface CaptureRef {
  file: string;
  offset: number;
  length: number;
  status: number;
}

export class Captures {
  constructor(
    private readonly redis: RedisLike,
    private readonly campaignKey: string,
  ) {}

  async find(url: string): Promise<CaptureRef | null> {
    const key = this.keyOf(url);
    if (!key) return null;
    return parseRef(await this.redis.hget(key, url));
  }

  /**
   * Remembers where `url` was archived, unless it is already known (the
   * first capture stays: it is the one replay finds first too) or its host
   * has MAX_CAPTURES_PER_HOST already. The count is read before the write:
   * sessions of one host writing at once may pass the bound by a few.
   */
  async remember(url: string, ref: CaptureRef): Promise<void> {
    const key = this.keyOf(url);
    if (!key) return;
    if ((await this.redis.hlen(key)) >= MAX_CAPTURES_PER_HOST) return;
    await this.redis.hsetnx(key, url, JSON.stringify({ f: ref.file, o: ref.offset, l: ref.length, s: ref.status }));
  }

  private keyOf(url: string): string | null {
    if (url.length > MAX_URL_LENGTH) return null;
    try {
      return hostKeys(this.campaignKey, hostKey(url)).captures;
    } catch {
      return null;
    }
  }
}

/** A stored reference, or null when absent or not one (a field written by another version is ignored, not trusted). */
export function parseRef(raw: string | null): CaptureRef | null {
  if (!raw) return null;
  try {
    const v = JSON.parse(raw) as { f?: unknown; o?: unknown; l?: unknown; s?: unknown };
    if (typeof v.f !== 'string' || !/^[^/\\]+$/.test(v.f) || !isCount(v.o) || !isCount(v.l) || !isCount(v.s)) return null;
    return { file: v.f, offset: v.o, length: v.l, status: v.s };
  } catch {
    return null;
  }
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
