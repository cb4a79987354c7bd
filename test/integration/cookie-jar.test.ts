// The campaign's cookie jars against a real Redis: RFC 6265 as tough-cookie
// applies it (domain, path, Secure, expiry, public suffixes), kept where any
// worker finds it, bounded against sites that set thousands of cookies, and
// gone with the campaign's keys (at once, under retention.keep summary, with the
// rest of the working state an ended campaign no longer reads).
import { randomUUID } from 'node:crypto';
import { Cookie } from 'tough-cookie';
import { CookieJars, cookieFetcher, MAX_COOKIE_BYTES, MAX_JAR_BYTES, MAX_JAR_COOKIES, setCookieLines } from '../../src/http/cookie-jar';
import type { Fetcher, FetchRequest } from '../../src/http/fetcher';
import { createRedis } from '../../src/redis/client';
import { RedisCookieStore } from '../../src/redis/cookie-store';
import { campaignKeys, cookieJarKey } from '../../src/redis/keys';
import { expireCampaign, purgeCampaign, retainCampaignSummary } from '../../src/redis/retention';
import { reconcileHostRecords } from '../../activities/campaign-hosts';
import { ContentIndex } from '../../src/dedup/content-index';
import { markContentFormat } from '../../src/dedup/content-format';
import { PayloadIndex } from '../../src/dedup/payload-index';
import { CampaignHosts, type HostRecord } from '../../src/redis/campaign-hosts';
import { reserveBudget } from '../../src/redis/campaign-store';
import { Frontier } from '../../src/redis/frontier';
import { hostKeys } from '../../src/redis/keys';
import { urlFingerprint } from '../../src/url/fingerprint';
import { normalizeUrl } from '../../src/url/normalize';
import { hostStatsOf } from '../../src/stats/counters';
import type { RedisLike } from '../../src/redis/scripts';
import { fakeResponse } from '../support/fake-response';

let redis: RedisLike;
beforeAll(() => {
  redis = createRedis(process.env.REDIS_URL!);
});
afterAll(() => redis.disconnect());

const campaign = () => `jar-${randomUUID()}`;

/** What one request to `url` would carry, as a fresh worker reads the jar. */
async function sent(jars: CookieJars, url: string): Promise<string | null> {
  return (await jars.open(url)).header(url);
}

/** A response to `url` setting these cookies. */
async function respond(jars: CookieJars, url: string, ...setCookies: string[]): Promise<number> {
  return (await jars.open(url)).take(url, setCookies);
}

test('a cookie goes back to the host that set it, on its path, and a Domain cookie to the sibling hosts as well', async () => {
  const jars = new CookieJars(new RedisCookieStore(redis, campaign()));
  await respond(jars, 'http://www.shop.test/', 'host=1', 'wide=2; Domain=shop.test', 'deep=3; Path=/account');
  expect(await sent(jars, 'http://www.shop.test/page')).toBe('host=1; wide=2');
  // Path=/account: sent there and below it, longest path first (RFC 6265 §5.4).
  expect(await sent(jars, 'http://www.shop.test/account/orders')).toBe('deep=3; host=1; wide=2');
  // A sibling host of the same registrable domain: the Domain cookie only.
  expect(await sent(jars, 'http://cart.shop.test/')).toBe('wide=2');
  // Ports do not separate cookies (RFC 6265 §8.5).
  expect(await sent(jars, 'http://www.shop.test:8080/')).toBe('host=1; wide=2');
  expect(await sent(jars, 'http://other.test/')).toBeNull();
});

test('a Domain naming a public suffix or another site is refused; a Secure cookie never goes over plain http', async () => {
  const jars = new CookieJars(new RedisCookieStore(redis, campaign()));
  await respond(jars, 'https://www.example.co.uk/', 'suffix=1; Domain=co.uk', 'elsewhere=2; Domain=other.co.uk', 'safe=3; Secure');
  expect(await sent(jars, 'https://www.example.co.uk/')).toBe('safe=3');
  expect(await sent(jars, 'http://www.example.co.uk/')).toBeNull();
  expect(await sent(jars, 'https://www.other.co.uk/')).toBeNull();
});

test('an expiry in the past or Max-Age=0 deletes the cookie; a Max-Age is kept as the moment it ends', async () => {
  const ck = campaign();
  const jars = new CookieJars(new RedisCookieStore(redis, ck));
  await respond(jars, 'http://a.test/', 'gone=1', 'also=2', 'timed=3; Max-Age=3600');
  await respond(jars, 'http://a.test/', 'gone=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT', 'also=x; Max-Age=0');
  expect(await sent(jars, 'http://a.test/')).toBe('timed=3');
  const stored = Object.entries(await redis.hgetall(cookieJarKey(ck, 'a.test')));
  expect(stored).toHaveLength(1);
  const timed = JSON.parse(stored[0][1]) as { expires: string; maxAge?: number };
  // Counted from when it was set, not from its last use: what the server meant.
  expect(timed.maxAge).toBeUndefined();
  expect(Date.parse(timed.expires) - Date.now()).toBeGreaterThan(3_500_000);
});

test('a cookie that has expired in Redis is not sent, and goes with the next write', async () => {
  const ck = campaign();
  const jars = new CookieJars(new RedisCookieStore(redis, ck));
  await respond(jars, 'http://b.test/', 'live=1', `old=2; Expires=${new Date(Date.now() + 60_000).toUTCString()}`);
  // Its time has come (written as a worker of an hour later would find it).
  const key = cookieJarKey(ck, 'b.test');
  const field = JSON.stringify(['b.test', '/', 'old']);
  const old = JSON.parse((await redis.hget(key, field))!) as Record<string, unknown>;
  await redis.hset(key, field, JSON.stringify({ ...old, expires: new Date(Date.now() - 1000).toISOString() }));
  expect(await sent(jars, 'http://b.test/')).toBe('live=1');
  await respond(jars, 'http://b.test/', 'live=2');
  expect(await redis.hexists(key, field)).toBe(0);
});

test('the jar lives in Redis: another worker (a new CookieJars) sends what the last response set', async () => {
  const ck = campaign();
  await respond(new CookieJars(new RedisCookieStore(redis, ck)), 'http://c.test/', 'session=first');
  await respond(new CookieJars(new RedisCookieStore(redis, ck)), 'http://c.test/', 'session=second');
  expect(await sent(new CookieJars(new RedisCookieStore(redis, ck)), 'http://c.test/x')).toBe('session=second');
});

test('a site setting thousands of cookies keeps at most the jar bound, the most recently set; an oversized cookie is ignored', async () => {
  const ck = campaign();
  const jars = new CookieJars(new RedisCookieStore(redis, ck));
  for (let batch = 0; batch < 4; batch++) {
    const lines = Array.from({ length: 100 }, (_, i) => `c${batch * 100 + i}=v`);
    await respond(jars, 'http://flood.test/', ...lines);
  }
  const key = cookieJarKey(ck, 'flood.test');
  expect(await redis.hlen(key)).toBe(MAX_JAR_COOKIES);
  const kept = (await sent(jars, 'http://flood.test/'))!.split('; ');
  expect(kept).toHaveLength(MAX_JAR_COOKIES);
  expect(kept).toContain('c399=v');
  expect(kept).not.toContain('c0=v');
  // Name and value over 4096 bytes: not kept at all.
  await respond(jars, 'http://big.test/', `huge=${'x'.repeat(MAX_COOKIE_BYTES)}`);
  expect(await sent(jars, 'http://big.test/')).toBeNull();
  // Within the per-cookie bound, but many: the jar's bytes are bounded.
  const fat = Array.from({ length: 40 }, (_, i) => `f${i}=${'y'.repeat(4000)}`);
  await respond(jars, 'http://fat.test/', ...fat);
  const stored = await redis.hgetall(cookieJarKey(ck, 'fat.test'));
  const bytes = Object.entries(stored).reduce((n, [f, v]) => n + f.length + v.length, 0);
  expect(bytes).toBeLessThanOrEqual(MAX_JAR_BYTES);
  expect(Object.keys(stored).length).toBeGreaterThan(5);
  expect(Object.keys(stored)).toContain(JSON.stringify(['fat.test', '/', 'f39']));
});

test('cookies of a cookies.txt seed the jar once: a cookie the site deletes stays deleted', async () => {
  const ck = campaign();
  const file = [
    new Cookie({ key: 'sid', value: 'from-file', domain: 'members.test', path: '/', hostOnly: false }),
    new Cookie({ key: 'pref', value: 'dark', domain: 'www.members.test', path: '/', hostOnly: true }),
  ];
  const jars = new CookieJars(new RedisCookieStore(redis, ck), file);
  expect(await sent(jars, 'http://www.members.test/')).toBe('sid=from-file; pref=dark');
  expect(await sent(jars, 'http://forum.members.test/')).toBe('sid=from-file');
  expect(await sent(jars, 'http://else.test/')).toBeNull();
  await respond(jars, 'http://www.members.test/logout', 'sid=; Domain=members.test; Max-Age=0');
  // Another worker with the same file: the jar was seeded already.
  expect(await sent(new CookieJars(new RedisCookieStore(redis, ck), file), 'http://www.members.test/')).toBe('pref=dark');
});

test('several Set-Cookie headers come apart whole, commas of an Expires included', () => {
  expect(setCookieLines('a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT\nb=2')).toEqual(['a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT', 'b=2']);
  expect(setCookieLines(undefined)).toEqual([]);
});

test('the cookie fetcher sends the jar through the request headers and keeps what a redirect sets', async () => {
  const jars = new CookieJars(new RedisCookieStore(redis, campaign()));
  const seen: FetchRequest[] = [];
  const inner: Fetcher = {
    fetch(request) {
      seen.push(request);
      const headers: Record<string, string> =
        request.url === 'http://d.test/login' ? { location: '/home', 'set-cookie': 'sid=abc; Path=/; HttpOnly\ntheme=dark; Expires=Wed, 21 Oct 2037 07:28:00 GMT' } : {};
      return Promise.resolve({ ok: true, response: fakeResponse(request.url, { status: headers.location ? 302 : 200, headers }) });
    },
  };
  const f = cookieFetcher(inner, jars);
  const signal = new AbortController().signal;
  await f.fetch({ url: 'http://d.test/login' }, { signal });
  await f.fetch({ url: 'http://d.test/home', headers: { 'if-none-match': '"v1"' } }, { signal });
  expect(seen[0].headers?.cookie).toBeUndefined();
  expect(seen[1].headers).toEqual({ 'if-none-match': '"v1"', cookie: 'sid=abc; theme=dark' });
});

test("the jar's key goes with the campaign's: a retention expires it, a purge deletes it", async () => {
  const ck = campaign();
  const jars = new CookieJars(new RedisCookieStore(redis, ck));
  // Hosts the campaign knows; their jar is their registrable domain's.
  await redis.hset(campaignKeys(ck).hosts, 'www.kept.test', '{}', 'cdn.kept.test:8080', '{}');
  await respond(jars, 'http://www.kept.test/', 'a=1');
  const key = cookieJarKey(ck, 'www.kept.test');
  expect(key).toBe(cookieJarKey(ck, 'cdn.kept.test:8080'));
  expect(await redis.pttl(key)).toBe(-1);
  await expireCampaign(redis, ck, 60_000);
  expect(await redis.pttl(key)).toBeGreaterThan(0);
  await purgeCampaign(redis, ck);
  expect(await redis.exists(key)).toBe(0);
});

/** Every key of the campaign in this Redis (its tag and its hosts'), with its time to live (-1: none). */
async function keysOfCampaign(ck: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const match of [`crawl:{${ck}}:*`, `crawl:{${ck}|*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) out.set(k, await redis.pttl(k));
    } while (cursor !== '0');
  }
  return out;
}

// A campaign's state as its sessions leave it at the end (a page committed, two URLs left in the
// frontier, a cookie, the content index in any layout: a campaign of an older release has the
// first or the second), then its summary's retention under keep summary, run twice as a retried activity would.
test.each([1, 2, 3] as const)(
  'keep summary, content layout %d: the end deletes the working state and the jar at once; what status and seal read stays, timed, and a retry does it again harmlessly',
  async (layout) => {
    const ck = campaign();
    if (layout !== 1) await markContentFormat(redis, ck, layout);
    const host = 'www.ended.test';
    const url = (p: string) => normalizeUrl(`http://${host}${p}`);
    const items = ['/', '/a', '/b'].map((p, i) => ({ url: url(p), fp: urlFingerprint(url(p)), depth: i === 0 ? 0 : 1, referrer: null }));
    const f = new Frontier(redis, ck, host);
    await f.enqueue(items.slice(0, 1));
    await f.takeOver('attempt-token');
    const claimed = await f.claim();
    expect(claimed?.entry.url).toBe(items[0].url);
    expect(await reserveBudget(redis, ck, items[0].fp, 10)).toBe(true);
    await f.commit(claimed!.member, 'fetched', 100, items.slice(1), { fp: items[0].fp, id: 'AAAAAAAA' });
    const hosts = new CampaignHosts(redis, ck);
    const rec: HostRecord = {
      ...hostStatsOf(await f.stats()),
      state: 'done',
      frontier: 2,
      delayMs: 0,
      reason: '',
      lastUrl: null,
      lastStatus: null,
      nextWakeAt: null,
      updatedAt: '',
    };
    await hosts.record(host, rec);
    await hosts.setControl({ stop: 'cancelled' });
    const content = new ContentIndex(redis, ck);
    expect(await content.check({ url: items[0].url, exactHash: 'sha256:abc', simhash: 0x0123456789abcdefn })).toEqual({ kind: 'unique' });
    expect(await new PayloadIndex(redis, ck).claim('sha1:ENDED', 'AAAAAAAA')).toEqual({ kind: 'original' });
    await respond(new CookieJars(new RedisCookieStore(redis, ck)), `http://${host}/`, 'sid=secret');
    const jar = cookieJarKey(ck, host);
    const before = await keysOfCampaign(ck);
    const hk = hostKeys(ck, host);
    expect([...before.keys()]).toEqual(expect.arrayContaining([jar, hk.frontier, hk.seen, hk.session, hk.committed, hk.stats, campaignKeys(ck).budget, campaignKeys(ck).hosts]));
    const contentKeys = [...before.keys()].filter((k) => k.includes(':content:'));
    expect(contentKeys.length).toBeGreaterThan(1);

    for (let run = 0; run < 2; run++) {
      expect(await retainCampaignSummary(redis, ck, 3_600_000)).toEqual({ hosts: 1 });
      // What a retried summary and `crawler seal` do first: the records keep the frontier they had, not the deleted frontier's 0.
      await reconcileHostRecords(redis, ck);
      const after = await keysOfCampaign(ck);
      expect([...after.keys()].sort()).toEqual(
        [hk.committed, hk.stats, ...['config', 'control', 'hosts', 'attention', 'totals'].map((s) => `crawl:{${ck}}:${s}`)].filter((k) => before.has(k)).sort(),
      );
      expect([...after].filter(([, ttl]) => !(ttl > 3_500_000 && ttl <= 3_600_000))).toEqual([]);
      expect((await hosts.get(host))?.frontier).toBe(2);
      expect((await hosts.totals()).frontier).toBe(2);
      expect(await f.committedAttempts([items[0].fp])).toEqual(['AAAAAAAA']);
    }
    // Nothing of the campaign is left for a purge to miss.
    await purgeCampaign(redis, ck);
    expect((await keysOfCampaign(ck)).size).toBe(0);
  },
);

test('keep summary with no retention (null): the working state still goes at the end, and what stays has no time to live', async () => {
  const ck = campaign();
  const host = 'www.kept-forever.test';
  await redis.hset(campaignKeys(ck).hosts, host, '{}');
  await redis.hset(hostKeys(ck, host).stats, 'fetched', '1');
  await redis.sadd(hostKeys(ck, host).seen, 'fp');
  await respond(new CookieJars(new RedisCookieStore(redis, ck)), `http://${host}/`, 'sid=secret');
  await retainCampaignSummary(redis, ck, null);
  expect(await redis.exists(hostKeys(ck, host).seen, cookieJarKey(ck, host))).toBe(0);
  expect([await redis.pttl(hostKeys(ck, host).stats), await redis.pttl(campaignKeys(ck).hosts)]).toEqual([-1, -1]);
  await purgeCampaign(redis, ck);
});
