// The campaign's cookie jars in Redis (src/http/cookie-jar.ts): one HASH per
// campaign and registrable domain, field [domain, path, name] → the cookie
// as tough-cookie's JSON. The key is in the host family of the registrable
// domain (`{campaignKey|example.com}`): one slot, so a transaction on it
// runs on Redis Cluster, and the campaign's retention and purge reach it
// (retention.ts).
import type { CookieStore } from '../http/cookie-jar';
import { cookieJarKey } from './keys';
import type { RedisLike } from './scripts';

export class RedisCookieStore implements CookieStore {
  constructor(
    private readonly redis: RedisLike,
    private readonly campaignKey: string,
  ) {}

  read(host: string): Promise<Record<string, string>> {
    return this.redis.hgetall(cookieJarKey(this.campaignKey, host));
  }

  async seed(host: string, fields: [string, string][], mark: [string, string]): Promise<void> {
    const key = cookieJarKey(this.campaignKey, host);
    // HSETNX: a field already set keeps its value.
    const tx = this.redis.multi();
    for (const [field, value] of fields) tx.hsetnx(key, field, value);
    tx.hset(key, ...mark);
    await tx.exec();
  }

  async write(host: string, sets: [string, string][], deletes: string[]): Promise<void> {
    const key = cookieJarKey(this.campaignKey, host);
    const tx = this.redis.multi();
    if (sets.length > 0) tx.hset(key, ...sets.flat());
    if (deletes.length > 0) tx.hdel(key, ...deletes);
    const results = await tx.exec();
    for (const [err] of results ?? []) if (err) throw err;
  }
}
