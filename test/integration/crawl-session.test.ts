// The host session run directly (no workflow), as Temporal runs it: on a
// real Redis and the test web. What one session does, what a second one
// does after the first died, how control in Redis stops one between pages,
// and how a page that can never be stored ends.
import fs from 'node:fs';
import { getEventListeners } from 'node:events';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, WorkerRuntime } from '../../activities';
import { warmRobots } from '../../activities/robots';
import { sealCampaign } from '../../activities/seal-campaign';
import type { SessionInput, SessionResult } from '../../activities/types';
import type { WorkerLoad } from '../../src/worker/worker-load';
import { resolveCampaignSettings, type CampaignInput } from '../../src/config/campaign';
import { CampaignHosts } from '../../src/redis/campaign-hosts';
import { createRedis } from '../../src/redis/client';
import { decodeEntry, Frontier } from '../../src/redis/frontier';
import { parseResolveEntries } from '../../src/http/resolve-overrides';
import { addressKeys, hostKeys, sharedHostKeys } from '../../src/redis/keys';
import { robotsCacheKey, robotsSource } from '../../src/robots/robots-store';
import type { RedisLike } from '../../src/redis/scripts';
import { readIndex } from '../../src/storage/index-writer';
import { urlFingerprint } from '../../src/url/fingerprint';
import { hostKey } from '../../src/url/normalize';
import { generateSites, startTestWeb, type TestWeb } from '../web/test-web';
import { createHarness, pageRequests, type Harness } from '../support/harness';

/** Sessions here fail on purpose (storage that cannot be written, cancellations): the SDK's WARN line for each is noise in the run's output. */
const mockEnv = () => new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });

jest.setTimeout(90_000);

let h: Harness;
let redis: RedisLike;
let rt: WorkerRuntime;
beforeAll(async () => {
  h = await createHarness('crawl-session', { workers: 0 });
  const names = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen'];
  for (const name of [...names, 'seventeen', 'eighteen', 'nineteen', 'twenty', 'twentyone', 'twentytwo', 'twentythree', 'shed']) {
    for (const spec of generateSites({ count: 1, pages: 8, fanOut: 2, hostPattern: () => `${name}.session.test`, seed: 3 })) h.web.addSite(spec);
  }
  for (const spec of generateSites({ count: 1, pages: 1, fanOut: 0, hostPattern: () => 'one-page.session.test', seed: 3 })) h.web.addSite(spec);
  redis = createRedis(process.env.REDIS_URL!);
  rt = new WorkerRuntime({ redis, temporal: h.client });
});
afterAll(async () => {
  await rt?.close();
  redis?.disconnect();
  await h?.close();
});

let n = 0;
async function prepared(name: string, extra: Partial<CampaignInput> = {}, web: TestWeb = h.web) {
  const seed = web.url(`${name}.session.test`, '/');
  const host = hostKey(seed);
  const campaignKey = `session-${process.pid}-${n++}`;
  const settings = resolveCampaignSettings(
    {
      seeds: [seed],
      scope: { mode: 'same-host' },
      politeness: { minDelayMs: 0 },
      sitemaps: 'off',
      fetch: { resolve: web.resolveArgs() },
      output: { dir: path.join(h.outDir, campaignKey) },
      ...extra,
    },
    campaignKey,
  );
  const acts = createActivities(rt);
  await mockEnv().run(acts.prepareCampaign, { settings, campaignKey });
  const hosts = new CampaignHosts(redis, campaignKey);
  // As the campaign's dispatch does: the host holds a slot with generation 1.
  await hosts.dispatched(host, '1', 1);
  const input: SessionInput = { campaignKey, campaignWorkflowId: 'no-campaign', host, gen: 1, configVersion: 1 };
  return {
    acts,
    host,
    campaignKey,
    hosts,
    input,
    dir: settings.output.dir,
    session: (env = mockEnv()) => env.run(acts.crawlSession, input) as Promise<SessionResult>,
  };
}
/**
 * Sessions run as Temporal would retry them, until one drains the host, with
 * a file where the WARC folder should be: every WARC write fails (a real
 * storage failure, not a hook in the product).
 */
async function sessionsWithUnwritableWarc(c: Awaited<ReturnType<typeof prepared>>) {
  fs.mkdirSync(c.dir, { recursive: true });
  fs.writeFileSync(path.join(c.dir, 'warc'), 'not a folder');
  const errors: unknown[] = [];
  let last: SessionResult | null = null;
  for (let i = 0; i < 10 && last?.end !== 'drained'; i++) {
    try {
      last = await c.session();
    } catch (err) {
      errors.push(err);
    }
  }
  return { last, errors };
}
const pagesOf = (host: string) => pageRequests(h.web.requests()).filter((r) => r.host === host.split(':')[0]);

test('one session crawls the host, commits every page, gives its slot up and records the host', async () => {
  const c = await prepared('one');
  const r = await c.session();
  expect(r).toMatchObject({ end: 'drained', released: true, pages: 8, stats: { fetched: 8, failed: 0 }, frontier: 0 });
  expect(pagesOf(c.host)).toHaveLength(8);
  expect(await c.hosts.counts()).toMatchObject({ active: 0, ready: 0 });
  expect(await c.hosts.get(c.host)).toMatchObject({ state: 'done', fetched: 8, frontier: 0 });
  expect(await c.hosts.totals()).toMatchObject({ fetched: 8, hosts: 1 });
  expect((await readIndex(path.join(c.dir, 'index'))).filter((e) => e.outcome === 'fetched')).toHaveLength(8);
});

test("the campaign's summary seals its index even when another writer holds the folder's index.cdxj: the replay index is skipped, and says so", async () => {
  const c = await prepared('ten');
  await c.session();
  const lock = path.join(c.dir, 'index.cdxj.lock');
  fs.writeFileSync(lock, 'another writer\n');
  const skipped = await sealCampaign(redis, c.campaignKey, { cdxjLockWaitMs: 300 });
  expect(skipped).toMatchObject({ lines: 8, cdxj: null, cdxjSkipped: expect.stringMatching(/locked by another writer/) });
  expect(fs.existsSync(path.join(c.dir, 'index.cdxj'))).toBe(false);
  expect(fs.readFileSync(lock, 'utf8')).toBe('another writer\n');
  fs.rmSync(lock);
  const sealed = await sealCampaign(redis, c.campaignKey, { cdxjLockWaitMs: 300 });
  expect(sealed.cdxjSkipped).toBeUndefined();
  expect(sealed.cdxj).toMatchObject({ keptLines: 0, lines: expect.any(Number) });
  expect(sealed.cdxj!.lines).toBeGreaterThanOrEqual(8);
});

test('a revisit host parks only under its own generation, while the campaign is capped and hosts wait (or when it holds no slot), and queues again once due by the Redis clock', async () => {
  const hosts = new CampaignHosts(redis, `park-${process.pid}-${n++}`);
  const after = (ms: number) => new Promise((r) => setTimeout(r, ms));
  await hosts.dispatched('a.test', '0', 4);
  // Nobody waits for a slot: it keeps its own.
  expect(await hosts.park('a.test', 4, 0, true)).toEqual({ parked: null, active: 1, ready: 0 });
  await hosts.markReady(['b.test']);
  // Not capped, or a newer dispatch holds the slot: kept.
  expect((await hosts.park('a.test', 4, 0, false)).parked).toBeNull();
  expect((await hosts.park('a.test', 3, 0, true)).parked).toBeNull();
  expect(await hosts.park('a.test', 4, 300, true)).toEqual({ parked: 'released', active: 0, ready: 1 });
  // Not due yet.
  expect(await hosts.unparkDue()).toBe(0);
  await after(400);
  expect(await hosts.unparkDue()).toBe(1);
  expect((await hosts.readyBatch(10)).map((r) => r.host)).toEqual(['b.test', 'a.test']);
  expect(await hosts.unparkDue()).toBe(0);
  // No slot recorded, but in line for one: a dispatch may be on its way, nothing parked.
  await hosts.markReady(['z.test']);
  expect((await hosts.park('z.test', 9, 60_000, true)).parked).toBeNull();
  // Dispatched, parked, then run on by a wake without a slot: parked again, whatever the cap.
  const [zEntry] = (await hosts.readyBatch(10)).filter((r) => r.host === 'z.test');
  await hosts.dispatched('z.test', zEntry!.seq, 9);
  expect((await hosts.park('z.test', 9, 60_000, true)).parked).toBe('released');
  expect((await hosts.park('z.test', 9, 60_000, false)).parked).toBe('slotless');
  // Never dispatched nor parked, nobody holding a slot: a dispatch whose record is late is possible, nothing parked.
  expect((await hosts.park('x.test', 9, 60_000, true)).parked).toBeNull();
  await hosts.markReady(['y.test']);
  // One dispatched again by the time it is due (new URLs) is only dropped.
  await hosts.dispatched('c.test', '0', 5);
  expect((await hosts.park('c.test', 5, 0, true)).parked).toBe('released');
  await hosts.dispatched('c.test', '0', 6);
  await after(20);
  expect(await hosts.unparkDue()).toBe(0);
  expect((await hosts.readyBatch(10)).map((r) => r.host)).toEqual(['b.test', 'a.test', 'y.test']);
  // The sweep after a lost write parks a revisit host that has none of slot, place in line or park.
  expect(await hosts.parkIfIdle('b.test', 0)).toBe(false);
  expect(await hosts.parkIfIdle('c.test', 0)).toBe(false);
  expect(await hosts.parkIfIdle('z.test', 0)).toBe(false);
  expect(await hosts.parkIfIdle('q.test', 0)).toBe(true);
  expect(await hosts.unparkDue()).toBe(1);
  expect((await hosts.readyBatch(10)).map((r) => r.host)).toEqual(['b.test', 'a.test', 'y.test', 'q.test']);
});

test('URLs robots.txt disallows are recorded without a request, and without a delay each: the host clock counts only real requests', async () => {
  for (const spec of generateSites({ count: 1, pages: 3, fanOut: 2, hostPattern: () => 'private.session.test', seed: 3 }))
    h.web.addSite({ ...spec, robots: { disallow: ['/private/'] } });
  const disallowed = [1, 2, 3, 4, 5].map((i) => h.web.url('private.session.test', `/private/${i}`));
  // Every wait of the delay is handed back as a durable sleep (the delay is above the threshold).
  const c = await prepared('private', { seeds: disallowed, politeness: { minDelayMs: 2_000 }, session: { durableSleepMs: 1_000 } });
  const first = await c.session();
  // robots.txt went out; the next request must wait the delay.
  expect(first).toMatchObject({ end: 'wait', pages: 0 });
  await new Promise((r) => setTimeout(r, first.waitMs! + 50));
  // No request for any of them, so no delay between them: one session records all five
  // (before, each recorded URL counted as a request, and the session ended after the first).
  expect(await c.session()).toMatchObject({ end: 'drained', pages: 5, frontier: 0 });
  expect(pagesOf(c.host)).toHaveLength(0);
  const lines = await readIndex(path.join(c.dir, 'index'));
  expect(lines.map((e) => e.outcome)).toEqual(Array(5).fill('robots-disallowed'));
});

test('only paused hosts that hold a slot count as freeing one: a paused host parked, in line or done frees none', async () => {
  const c = await prepared('eleven');
  // The prepared host holds a slot; two others are paused without holding one.
  await c.hosts.setHostPaused('in-line.session.test', true);
  await c.hosts.setHostPaused('done.session.test', true);
  expect(await c.hosts.counts()).toMatchObject({ active: 1, pausedActive: 0 });
  await c.hosts.setHostPaused(c.host, true);
  expect(await c.hosts.counts()).toMatchObject({ active: 1, pausedActive: 1 });
});

test('new settings do not close the HTTP client of the old ones under the sessions still holding it: it fetches until they end', async () => {
  const c = await prepared('twelve');
  const old = await rt.campaign(c.campaignKey, 1);
  await c.hosts.setControl({ version: 2 });
  const fresh = await rt.campaign(c.campaignKey, 2);
  expect(fresh).not.toBe(old);
  // A session that took the old runtime before the change, fetching its next page.
  expect((await old.http.fetch(h.web.url('twelve.session.test', '/'))).status).toBe(200);
});

test("a robots.txt that redirects to an address the campaign refuses is a redirect it cannot follow (allow all): the host's own pages are crawled, not refused", async () => {
  const site = h.web.site('fourteen.session.test')!;
  site.handler = ({ req, res }) => {
    if (req.url !== '/robots.txt') return false;
    res.writeHead(301, { location: `http://127.0.0.1:${h.web.port}/robots.txt` }).end();
    return true;
  };
  const c = await prepared('fourteen');
  expect(await c.session()).toMatchObject({ end: 'drained', stats: { fetched: 8, failed: 0 } });
  expect(pagesOf(c.host)).toHaveLength(8);
  expect((await readIndex(path.join(c.dir, 'index'))).filter((e) => e.outcome !== 'fetched')).toEqual([]);
  // The verdict is kept for the campaign: a later session (another worker) does not ask again.
  const robotsRequests = () => h.web.requests().filter((r) => r.host === 'fourteen.session.test' && r.path === '/robots.txt').length;
  expect(robotsRequests()).toBe(1);
  await c.hosts.dispatched(c.host, '2', 2);
  const other = new WorkerRuntime({ redis, temporal: h.client });
  try {
    await mockEnv().run(createActivities(other).crawlSession, { ...c.input, gen: 2 });
  } finally {
    await other.close();
  }
  expect(robotsRequests()).toBe(1);
});

test('a session that died mid-run is followed by one that goes on from Redis: nothing committed twice, at most the page in flight fetched again', async () => {
  const c = await prepared('two', { session: { maxPages: 3 } });
  // The page cap stands in for a session cut short: three pages committed.
  expect(await c.session()).toMatchObject({ end: 'cap', pages: 3 });
  // A session cancelled (its worker died) while a page is in flight.
  const env = mockEnv();
  const dying = c.session(env);
  await new Promise((r) => setTimeout(r, 5));
  env.cancel();
  await expect(dying).rejects.toBeDefined();
  // Run to the end in more sessions.
  for (let i = 0; i < 10; i++) if ((await c.session()).end === 'drained') break;
  const index = await readIndex(path.join(c.dir, 'index'));
  const urls = index.filter((e) => e.outcome === 'fetched').map((e) => e.url);
  expect(new Set(urls).size).toBe(8);
  expect(urls).toHaveLength(8);
  const paths = pagesOf(c.host).map((r) => r.path);
  expect(paths.length - new Set(paths).size).toBeLessThanOrEqual(1);
  expect(await redis.hget(hostKeys(c.campaignKey, c.host).stats, 'fetched')).toBe('8');
});

test('a pause in the campaign control ends a running session between pages; a new settings version ends it too', async () => {
  const c = await prepared('three', { politeness: { minDelayMs: 300 } });
  const running = c.session();
  await new Promise((r) => setTimeout(r, 1_000));
  await c.hosts.setControl({ paused: true, version: 2 });
  const t0 = Date.now();
  const r = await running;
  expect(r).toMatchObject({ end: 'paused', configVersion: 2 });
  const requestsAtPause = pagesOf(c.host).length;
  expect(requestsAtPause).toBeLessThan(8);
  // Nothing after the session ended (a request could at most have been in flight when it saw the pause).
  expect(pagesOf(c.host).filter((q) => q.t > t0 + 1_000)).toEqual([]);
  await c.hosts.setControl({ paused: false, version: 3 });
  const again = await c.session();
  // Started with the version it knew (1): it reloads the settings and goes on to the end.
  expect(again).toMatchObject({ end: 'drained', configVersion: 3 });
  await c.hosts.setControl({ version: 4 });
  expect(await c.session()).toMatchObject({ end: 'drained' });
});

test('a page that can never be stored ends as INTERNAL_ERROR after a bounded number of attempts, and the host goes on', async () => {
  const c = await prepared('four');
  const { last, errors } = await sessionsWithUnwritableWarc(c);
  expect(last).toMatchObject({ end: 'drained', stats: { fetched: 0, failed: 1 } });
  // Two failed sessions (Temporal would retry them), the third records the URL.
  expect(errors).toHaveLength(2);
  const index = await readIndex(path.join(c.dir, 'index'));
  expect(index).toEqual([
    expect.objectContaining({ outcome: 'error', error: expect.objectContaining({ code: 'INTERNAL_ERROR', message: expect.stringMatching(/processing failed 3 times: .*warc/) }) }),
  ]);
});

test('other hosts a page links to are marked ready before its commit: a page that dies after routing (storage fails) strands none of their URLs', async () => {
  h.web.site('seventeen.session.test')!.handler = ({ req, res }) => {
    if (req.url !== '/') return false;
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<a href="${h.web.url('one.session.test', '/elsewhere')}">away</a>`);
    return true;
  };
  const c = await prepared('seventeen', { scope: { mode: 'any' } });
  fs.mkdirSync(c.dir, { recursive: true });
  fs.writeFileSync(path.join(c.dir, 'warc'), 'not a folder');
  // The page routes its link, then its WARC write fails: the session fails
  // (Temporal would retry it), nothing is committed.
  await expect(c.session()).rejects.toThrow();
  expect(await new Frontier(redis, c.campaignKey, c.host).size()).toBe(1);
  // The other host holds the link, and the campaign's dispatch will find it ready.
  const other = hostKey(h.web.url('one.session.test', '/'));
  expect(await new Frontier(redis, c.campaignKey, other).size()).toBe(1);
  expect((await c.hosts.counts()).ready).toBe(1);
});

test("with a page budget per host, links robots.txt disallows take no room in the host's frontier: the allowed links after them are all crawled", async () => {
  h.web.site('eighteen.session.test')!.handler = ({ req, res }) => {
    if (req.url === '/robots.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n');
    } else if (req.url === '/') {
      const links = [...[1, 2, 3, 4, 5, 6].map((i) => `/private/${i}`), ...[1, 2, 3].map((i) => `/open/${i}`)];
      res.writeHead(200, { 'content-type': 'text/html' }).end(links.map((l) => `<a href="${l}">${l}</a>`).join(' '));
    } else if (req.url?.startsWith('/open/')) {
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<p>open page ${req.url}</p>`);
    } else return false;
    return true;
  };
  const c = await prepared('eighteen', { budgets: { maxPagesPerHost: 4 } });
  expect(await c.session()).toMatchObject({ end: 'drained', stats: { fetched: 4 } });
  expect(
    pagesOf(c.host)
      .map((r) => r.path)
      .sort(),
  ).toEqual(['/', '/open/1', '/open/2', '/open/3']);
  const home = (await readIndex(path.join(c.dir, 'index'))).find((e) => e.url === h.web.url('eighteen.session.test', '/'));
  expect(home?.rejectedLinks?.counts).toEqual({ ROBOTS_DISALLOWED: 6 });
});

test('a page claimed past its processing attempts without a commit (its processing killed the worker each time) is recorded INTERNAL_ERROR without another request', async () => {
  const c = await prepared('sixteen');
  const seed = h.web.url('sixteen.session.test', '/');
  const frontier = new Frontier(redis, c.campaignKey, c.host);
  // Three session attempts that each took the host over, claimed the seed and
  // died before committing (out of memory, killed, blocked past the heartbeat
  // timeout): no error was ever caught for it.
  for (const token of ['dead/1', 'dead/2', 'dead/3']) {
    await frontier.takeOver(token);
    expect(await frontier.claim()).toMatchObject({ entry: { url: seed }, retried: 0 });
  }
  const r = await c.session();
  expect(r).toMatchObject({ end: 'drained', stats: { fetched: 0, failed: 1 } });
  expect(pagesOf(c.host)).toEqual([]);
  const index = await readIndex(path.join(c.dir, 'index'));
  expect(index).toEqual([
    expect.objectContaining({
      url: seed,
      outcome: 'error',
      error: expect.objectContaining({ code: 'INTERNAL_ERROR', message: expect.stringMatching(/claimed 4 times without finishing/) }),
    }),
  ]);
});

test("claims that ended in a retry (503) do not count among a page's processing attempts: it still gets three", async () => {
  const c = await prepared('thirteen');
  h.web.site('thirteen.session.test')!.statusFor = (p, n) => (p === '/' && n <= 2 ? 503 : undefined);
  const { last, errors } = await sessionsWithUnwritableWarc(c);
  // 503, 503, then three answers that cannot be stored: two failed sessions, the third records the URL.
  expect(pagesOf(c.host).filter((r) => r.path === '/')).toHaveLength(5);
  expect(errors).toHaveLength(2);
  expect(last).toMatchObject({ end: 'drained', stats: { fetched: 0, failed: 1 } });
  const index = await readIndex(path.join(c.dir, 'index'));
  expect(index).toEqual([
    expect.objectContaining({ outcome: 'error', error: expect.objectContaining({ code: 'INTERNAL_ERROR', message: expect.stringMatching(/processing failed 3 times/) }) }),
  ]);
});

test('in a revisit campaign, a URL robots.txt disallows when it falls due stays on its schedule at a longer interval, nothing requested; one never visited does not join it', async () => {
  let disallow = false;
  h.web.site('fifteen.session.test')!.handler = ({ req, res }) => {
    if (req.url !== '/robots.txt' || !disallow) return false;
    res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /\n');
    return true;
  };
  const c = await prepared('fifteen', { revisit: { enabled: true, minMs: 60_000, maxMs: 600_000 } });
  expect(await c.session()).toMatchObject({ stats: { fetched: 8 } });
  const k = hostKeys(c.campaignKey, c.host);
  const r = redis as unknown as {
    zrange(k: string, a: number, b: number): Promise<string[]>;
    zadd(k: string, score: number, m: string): Promise<number>;
    zscore(k: string, m: string): Promise<string | null>;
    hget(k: string, f: string): Promise<string | null>;
  };
  const home = h.web.url('fifteen.session.test', '/');
  const member = (await r.zrange(k.revisit, 0, -1)).find((m) => decodeEntry(m, c.host).url === home)!;
  const interval = async () => (JSON.parse((await r.hget(k.revisitMeta, urlFingerprint(home)))!) as { i: number; v: number }).i;
  const before = await interval();
  // robots.txt now says Disallow: / (asked again: a new worker, the cached copy gone), and the home page is due.
  disallow = true;
  await redis.del(robotsCacheKey(robotsSource(`http://${c.host}/robots.txt`, parseResolveEntries(h.web.resolveArgs()))));
  await r.zadd(k.revisit, 0, member);
  // And a link found now, never visited: disallowed from the start.
  const fresh = h.web.url('fifteen.session.test', '/found-later');
  await new Frontier(redis, c.campaignKey, c.host).enqueue([{ url: fresh, depth: 1, referrer: home, fp: urlFingerprint(fresh) }]);
  const requested = pagesOf(c.host).length;
  const other = new WorkerRuntime({ redis, temporal: h.client });
  try {
    expect(await mockEnv().run(createActivities(other).crawlSession, c.input)).toMatchObject({ stats: { skipped: 2 } });
  } finally {
    await other.close();
  }
  expect(pagesOf(c.host)).toHaveLength(requested);
  // Back on the schedule, due later than before, at a longer interval.
  expect(Number(await r.zscore(k.revisit, member))).toBeGreaterThan(Date.now() + before);
  expect(await interval()).toBeGreaterThan(before);
  expect((await r.zrange(k.revisit, 0, -1)).map((m) => decodeEntry(m, c.host).url)).not.toContain(fresh);
});

test('in a revisit campaign, a URL that ends as INTERNAL_ERROR stays on its revisit schedule', async () => {
  const c = await prepared('five', { revisit: { enabled: true, minMs: 60_000, maxMs: 120_000 } });
  fs.mkdirSync(c.dir, { recursive: true });
  fs.writeFileSync(path.join(c.dir, 'warc'), 'not a folder');
  const indexed = async () => (await readIndex(path.join(c.dir, 'index'))).filter((e) => e.error?.code === 'INTERNAL_ERROR');
  for (let i = 0; i < 10 && (await indexed()).length === 0; i++) await c.session().catch(() => undefined);
  expect(await indexed()).toHaveLength(1);
  // Taken off the schedule when it fell due, put back by the failure: it is tried again at its interval.
  const scheduled = await (redis as unknown as { zrange(k: string, a: number, b: number): Promise<string[]> }).zrange(hostKeys(c.campaignKey, c.host).revisit, 0, -1);
  expect(scheduled.map((m) => decodeEntry(m, c.host).url)).toEqual([h.web.url('five.session.test', '/')]);
});

const robotsOf = (host: string) => h.web.requests().filter((r) => r.host === host.split(':')[0] && r.path === '/robots.txt');

/**
 * Starts a warm-up of the host's robots.txt on `rt` and returns once its
 * request has arrived, held in flight (and the host clock with it) until
 * release(); `status` answers it with that status instead of the file.
 */
async function warmUpHeld(c: Awaited<ReturnType<typeof prepared>>, status?: number) {
  const site = h.web.site(c.host.split(':')[0])!;
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  site.holdUntil = (p) => (p === '/robots.txt' ? held : undefined);
  if (status) site.statusFor = (p) => (p === '/robots.txt' ? status : undefined);
  warmRobots(rt, await rt.campaign(c.campaignKey, 1), c.host);
  const inFlight = rt.robotsWarmups.size;
  while (robotsOf(c.host).length === 0) await new Promise((r) => setTimeout(r, 20));
  return {
    inFlight,
    release,
    restore: () => {
      delete site.holdUntil;
      delete site.statusFor;
      release();
    },
  };
}

test("a dispatch's robots.txt warm-up is the host's only robots.txt request: the session on the same worker waits for it and takes its verdict", async () => {
  const c = await prepared('six');
  const warm = await warmUpHeld(c);
  try {
    expect(warm.inFlight).toBe(1);
    // The session starts while the warm-up's request is in flight, and asks nothing of its own.
    const running = c.session();
    await new Promise((r) => setTimeout(r, 300));
    expect(robotsOf(c.host)).toHaveLength(1);
    expect(pagesOf(c.host)).toHaveLength(0);
    warm.release();
    const r = await running;
    expect(r).toMatchObject({ end: 'drained', pages: 8, stats: { fetched: 8, failed: 0 } });
    expect(robotsOf(c.host)).toHaveLength(1);
    expect(rt.robotsWarmups.size).toBe(0);
  } finally {
    warm.restore();
  }
});

test("a warm-up that ended before the host's session began leaves it its verdict: the session asks Redis nothing about robots.txt", async () => {
  const c = await prepared('twenty');
  warmRobots(rt, await rt.campaign(c.campaignKey, 1), c.host);
  expect(await rt.robotsWarmups.get(`${c.campaignKey}|${c.host}`)).toMatchObject({ kind: 'ok' });
  expect(rt.robotsSettled.has(`${c.campaignKey}|${c.host}`)).toBe(true);
  // Nothing of the warm-up stays attached to the worker's closing signal: no listener, and none
  // of the references Node 20 keeps there for each AbortSignal.any made from it.
  expect(getEventListeners(rt.closing.signal, 'abort')).toHaveLength(0);
  const dependants = Object.getOwnPropertySymbols(rt.closing.signal).find((x) => x.description === 'kDependantSignals');
  expect(dependants ? (rt.closing.signal as unknown as Record<symbol, Set<unknown>>)[dependants].size : 0).toBe(0);
  // The back-off read (one of the reads a session without a verdict makes), watched, not replaced.
  const pttl = jest.spyOn(redis, 'pttl');
  try {
    expect(await c.session()).toMatchObject({ end: 'drained', pages: 8, stats: { fetched: 8, failed: 0 } });
    expect(pttl.mock.calls.filter(([k]) => k === hostKeys(c.campaignKey, c.host).robotsRetry)).toHaveLength(0);
  } finally {
    pttl.mockRestore();
  }
  expect(robotsOf(c.host)).toHaveLength(1);
  // Taken once: the host's next session asks as before.
  expect(rt.robotsSettled.has(`${c.campaignKey}|${c.host}`)).toBe(false);
});

const accepted = () => [...h.web.load().values()].reduce((n, l) => n + l.accepted, 0);
// No cap per address: its slots live in the Redis every test file shares, and a request to
// 127.0.0.1 from another file in flight at the same moment made this one's address contended,
// and a contended address keeps no idle connection (src/http/http-client.ts), whatever the warm-up did.
const uncapped: Partial<CampaignInput> = { politeness: { minDelayMs: 0, maxInFlightPerAddress: null } };

test('a warm-up for a host with no session on this worker lets its connection go; one a session here waits on, or an eager start will run here, is kept for the session', async () => {
  // The dispatch warms up a host whose session then runs on another worker: no keep-alive connection stays behind here.
  const away = await prepared('twentyone', uncapped);
  const awayName = away.host.split(':')[0];
  warmRobots(rt, await rt.campaign(away.campaignKey, 1), away.host);
  expect(await rt.robotsWarmups.get(`${away.campaignKey}|${away.host}`)).toMatchObject({ kind: 'ok' });
  expect(robotsOf(away.host)).toHaveLength(1);
  for (let t0 = Date.now(); h.web.openConnections(awayName) > 0 && Date.now() - t0 < 5_000;) await new Promise((r) => setTimeout(r, 20));
  expect(h.web.openConnections(awayName)).toBe(0);
  // The host's session starts here while its warm-up is in flight: robots.txt and every page on one connection.
  const here = await prepared('twentytwo', uncapped);
  h.web.resetLoad();
  const warm = await warmUpHeld(here);
  try {
    const running = here.session();
    await new Promise((r) => setTimeout(r, 300));
    warm.release();
    expect(await running).toMatchObject({ end: 'drained', pages: 8 });
    expect(accepted()).toBe(1);
  } finally {
    warm.restore();
  }
  // A host started eagerly here: its session may begin only after the warm-up ended, and still finds the connection.
  const eager = await prepared('twentythree', uncapped);
  h.web.resetLoad();
  warmRobots(rt, await rt.campaign(eager.campaignKey, 1), eager.host, false, true);
  expect(await rt.robotsWarmups.get(`${eager.campaignKey}|${eager.host}`)).toMatchObject({ kind: 'ok' });
  expect(await eager.session()).toMatchObject({ end: 'drained', pages: 8 });
  expect(accepted()).toBe(1);
});

test('a one-page host ends once its page is committed: it neither waits out its delay nor takes the host clock to find its frontier empty', async () => {
  const c = await prepared('one-page', { politeness: { minDelayMs: 500 } });
  const clockCalls = (spy: jest.SpyInstance) => spy.mock.calls.filter(([k]) => String(k).includes('one-page.session.test')).length;
  // Watched, not replaced: the host clock's scripts as the session calls them.
  const acquire = jest.spyOn(redis, 'crawlClockAcquire');
  const abandon = jest.spyOn(redis, 'crawlClockAbandon');
  try {
    expect(await c.session()).toMatchObject({ end: 'drained', pages: 1, stats: { fetched: 1 } });
    // robots.txt's request and the page's, each taking the clock once (the page's after waiting out robots.txt's delay).
    expect(clockCalls(acquire)).toBe(2);
    expect(clockCalls(abandon)).toBe(0);
  } finally {
    acquire.mockRestore();
    abandon.mockRestore();
  }
  expect(pagesOf(c.host)).toHaveLength(1);
});

test('a URL enqueued just after a commit left the frontier empty is claimed, then fetched once the clock allows', async () => {
  const c = await prepared('one-page', { politeness: { minDelayMs: 300 } });
  const late = h.web.url('one-page.session.test', '/found-late');
  const commit = redis.crawlCommit.bind(redis);
  // Another host's page links here right after this host's only page was committed (real Redis, this interleaving).
  const spy = jest.spyOn(redis, 'crawlCommit').mockImplementationOnce(async (...a: Parameters<typeof commit>) => {
    const r = await commit(...a);
    await new Frontier(redis, c.campaignKey, c.host).enqueue([{ url: late, depth: 1, referrer: 'http://elsewhere.test/', fp: urlFingerprint(late) }]);
    return r;
  });
  try {
    expect(await c.session()).toMatchObject({ end: 'drained', pages: 2 });
  } finally {
    spy.mockRestore();
  }
  expect(pagesOf(c.host).filter((r) => r.path === '/found-late')).toHaveLength(1);
  expect(await new Frontier(redis, c.campaignKey, c.host).size()).toBe(0);
});

test('a host paused after the commit that left its frontier empty fetches nothing more: the URL enqueued since waits for its next session', async () => {
  const c = await prepared('one-page', { politeness: { minDelayMs: 300 } });
  const late = h.web.url('one-page.session.test', '/paused-late');
  const commit = redis.crawlCommit.bind(redis);
  const spy = jest.spyOn(redis, 'crawlCommit').mockImplementationOnce(async (...a: Parameters<typeof commit>) => {
    const r = await commit(...a);
    await new Frontier(redis, c.campaignKey, c.host).enqueue([{ url: late, depth: 1, referrer: 'http://elsewhere.test/', fp: urlFingerprint(late) }]);
    await c.hosts.setHostPaused(c.host, true);
    // Past CONTROL_EVERY_MS: the session reads the control before its next request.
    await new Promise((r) => setTimeout(r, 300));
    return r;
  });
  try {
    expect(await c.session()).toMatchObject({ end: 'paused', pages: 1 });
  } finally {
    spy.mockRestore();
  }
  expect(pagesOf(c.host).filter((r) => r.path === '/paused-late')).toHaveLength(0);
  await c.hosts.setHostPaused(c.host, false);
  expect(await c.session()).toMatchObject({ end: 'drained', pages: 1 });
  expect(pagesOf(c.host).filter((r) => r.path === '/paused-late')).toHaveLength(1);
});

test("a new host's warm-up skips the reads before the clock, yet a robots.txt another campaign cached is not asked for again", async () => {
  // One campaign's session fetches the host's robots.txt into the shared cache.
  const first = await prepared('nineteen');
  expect(await first.session()).toMatchObject({ end: 'drained', pages: 8 });
  expect(robotsOf(first.host)).toHaveLength(1);
  // Another campaign's dispatch warms the same host up as one without a record (unseen): the check
  // made once the clock is held finds the cached file, so no request goes out.
  const second = await prepared('nineteen');
  const campaign = await rt.campaign(second.campaignKey, 1);
  warmRobots(rt, campaign, second.host, true);
  const verdict = await rt.robotsWarmups.get(`${campaign.key}|${second.host}`);
  expect(verdict).toMatchObject({ kind: 'ok' });
  expect(robotsOf(second.host)).toHaveLength(1);
});

test("a warm-up's failed robots.txt sets a back-off that a session waiting on another worker keeps: no second request", async () => {
  const c = await prepared('eight', { politeness: { minDelayMs: 300 } });
  const warm = await warmUpHeld(c, 503);
  const other = new WorkerRuntime({ redis, temporal: h.client });
  try {
    const running = mockEnv().run(createActivities(other).crawlSession, c.input) as Promise<SessionResult>;
    await new Promise((r) => setTimeout(r, 300));
    warm.release();
    const r = await running;
    // The session waits out the back-off durably instead of asking again a delay later.
    expect(r).toMatchObject({ end: 'wait', backingOff: true, pages: 0 });
    expect(r.waitMs).toBeGreaterThan(5_000);
    expect(robotsOf(c.host)).toHaveLength(1);
    expect(pagesOf(c.host)).toHaveLength(0);
  } finally {
    warm.restore();
    await other.close();
  }
});

test("the robots.txt back-off is timed by Redis, not by a worker's clock: a worker an hour ahead still keeps it", async () => {
  const c = await prepared('nine', { politeness: { minDelayMs: 300 } });
  const site = h.web.site(c.host.split(':')[0])!;
  site.statusFor = (p) => (p === '/robots.txt' ? 503 : undefined);
  const other = new WorkerRuntime({ redis, temporal: h.client });
  const skew = jest.spyOn(Date, 'now');
  try {
    const first = await c.session();
    expect(first).toMatchObject({ end: 'wait', backingOff: true, pages: 0 });
    // Redis holds the back-off as a key that expires with it.
    const ttl = await redis.pttl(hostKeys(c.campaignKey, c.host).robotsRetry);
    expect(ttl).toBeGreaterThan(first.waitMs - 2_000);
    expect(ttl).toBeLessThanOrEqual(first.waitMs);
    // Another worker whose clock runs an hour ahead: the back-off has not
    // passed for Redis, so it neither asks for robots.txt nor fetches a page.
    const real = Date.now();
    skew.mockImplementation(() => real + 3_600_000);
    const second = (await mockEnv().run(createActivities(other).crawlSession, c.input)) as SessionResult;
    skew.mockRestore();
    expect(second).toMatchObject({ end: 'wait', backingOff: true, pages: 0 });
    expect(second.waitMs).toBeGreaterThan(first.waitMs - 5_000);
    expect(robotsOf(c.host)).toHaveLength(1);
    expect(pagesOf(c.host)).toHaveLength(0);
  } finally {
    skew.mockRestore();
    delete site.statusFor;
    await other.close();
  }
});

test('a session on another worker that finds the host clock held by a warm-up waits for it and does not ask for robots.txt again', async () => {
  const c = await prepared('seven', { politeness: { minDelayMs: 300 } });
  // The warm-up's robots.txt stays in flight (and its clock held) until the other worker's session has looked.
  const warm = await warmUpHeld(c);
  const other = new WorkerRuntime({ redis, temporal: h.client });
  try {
    const running = mockEnv().run(createActivities(other).crawlSession, c.input) as Promise<SessionResult>;
    await new Promise((r) => setTimeout(r, 500));
    warm.release();
    const r = await running;
    expect(r).toMatchObject({ end: 'drained', pages: 8, stats: { fetched: 8, failed: 0 } });
    expect(robotsOf(c.host)).toHaveLength(1);
    // And politely: robots.txt and the pages all at least the delay apart.
    const times = h.web
      .requests()
      .filter((q) => q.host === c.host.split(':')[0])
      .map((q) => q.t)
      .sort((a, b) => a - b);
    expect(times).toHaveLength(9);
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(300);
  } finally {
    warm.restore();
    await other.close();
  }
});

test("two first sessions of one host at once (the first one's workflow task timed out while it waited for its address slot): the URL in flight is requested once, every request a delay apart, one index line per URL", async () => {
  // An address of its own: the blocker below fills its slots, and no other test's requests go there.
  const web = await startTestWeb({ host: '127.0.0.38' });
  const other = new WorkerRuntime({ redis, temporal: h.client });
  try {
    for (const spec of generateSites({ count: 1, pages: 4, fanOut: 2, hostPattern: () => 'fenced.session.test', seed: 3 })) web.addSite(spec);
    const slots = addressKeys(web.address).slots;
    // The seed's answer waits until another holder fills the address's only slot (as 299 other hosts
    // on one address would): the next page, its clock taken, waits for a slot.
    web.site('fenced.session.test')!.holdUntil = (p) => (p === '/' ? redis.zadd(slots, Date.now() + 60_000, 'blocker') : undefined);
    const c = await prepared('fenced', { politeness: { minDelayMs: 1_000, maxInFlightPerAddress: 1 }, session: { durableSleepMs: 10_000, firstLocalMs: 8_000 } }, web);
    const clock = sharedHostKeys(c.host).clock;
    const k = hostKeys(c.campaignKey, c.host);
    const local = () => new MockActivityEnvironment({ isLocal: true, currentAttemptScheduledTimestampMs: Date.now() }, { logger: new DefaultLogger('ERROR') });
    const until = async (what: () => Promise<boolean>) => {
      for (let t0 = Date.now(); !(await what());) {
        if (Date.now() - t0 > 20_000) throw new Error('timed out');
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const input: SessionInput = { ...c.input, local: true };
    // The first session, on this worker: it claims the second page and takes the clock for it.
    const first = (local().run(c.acts.crawlSession, input) as Promise<SessionResult>).then(
      (r) => ({ r }),
      (err: unknown) => ({ err }),
    );
    let holderA: string | null = null;
    await until(async () => {
      const current = await redis.get(k.current);
      holderA = await redis.hget(clock, 'holder');
      return current !== null && decodeEntry(current, c.host).url !== web.url('fenced.session.test', '/') && !!holderA;
    });
    // Its workflow task timed out: the task's next attempt runs the first session again, on another worker.
    const second = local().run(createActivities(other).crawlSession, input) as Promise<SessionResult>;
    await until(async () => (await redis.hget(clock, 'holder')) !== holderA);
    await redis.zrem(slots, 'blocker');
    const r = await second;
    const a = await first;
    expect(r).toMatchObject({ end: 'drained', stats: { fetched: 4, failed: 0 } });
    expect('err' in a && (a.err as { code?: string }).code).toBe('SESSION_SUPERSEDED');
    const hostRequests = web.requests().filter((q) => q.host === 'fenced.session.test');
    const paths = hostRequests.filter((q) => q.path !== '/robots.txt').map((q) => q.path);
    expect(paths).toHaveLength(4);
    expect(new Set(paths).size).toBe(4);
    const times = hostRequests.map((q) => q.t).sort((x, y) => x - y);
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(1_000);
    const lines = await readIndex(path.join(c.dir, 'index'));
    expect(lines.map((e) => e.url).sort()).toEqual([...new Set(paths.map((p) => web.url('fenced.session.test', p)))].sort());
    expect(await redis.hget(k.stats, 'fetched')).toBe('4');
  } finally {
    await redis.del(addressKeys(web.address).slots);
    await other.close();
    await web.close();
  }
});

test("a host's first session on a full worker ends at its cap after its first page, leaving the rest to a worker with room; a one-page host still ends in it", async () => {
  // A worker that reads full (src/worker/worker-load.ts): its floor of sessions running, its thread saturated.
  const full = new WorkerRuntime({
    redis,
    temporal: h.client,
    load: { full: () => true, admitFirstSession: async () => true, started: () => undefined, ended: () => undefined } as unknown as WorkerLoad,
  });
  try {
    const local = () => new MockActivityEnvironment({ isLocal: true, currentAttemptScheduledTimestampMs: Date.now() }, { logger: new DefaultLogger('ERROR') });
    const many = await prepared('shed');
    const r = (await local().run(createActivities(full).crawlSession, { ...many.input, local: true as const })) as SessionResult;
    expect(r).toMatchObject({ end: 'cap', pages: 1 });
    // A regular session on the same worker is not shed: it crawls the rest.
    expect(await many.session()).toMatchObject({ end: 'drained', pages: 7 });

    const one = await prepared('one-page');
    const o = (await local().run(createActivities(full).crawlSession, { ...one.input, local: true as const })) as SessionResult;
    expect(o).toMatchObject({ end: 'drained', pages: 1 });
  } finally {
    await full.close();
  }
});
