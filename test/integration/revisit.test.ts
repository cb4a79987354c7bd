// Continuous crawling (docs/continuous-crawling.md) with bounds in seconds
// (or half-seconds):
// a page that changes on every visit comes back more often than pages that
// never change; those get conditional requests, answered 304 and stored as
// server-not-modified revisit records, at growing intervals; a page that
// starts answering 404 leaves the schedule after three tries, recorded as
// gone; a link a page gains on a later visit is crawled; a sitemap's
// <changefreq> seeds a first interval. The campaign never
// completes on its own: the test cancels it.
import { hostKey } from '../../src/url/normalize';
import { hostKeys } from '../../src/redis/keys';
import { decodeEntry } from '../../src/redis/frontier';
import { domainWorkflowId } from '../../workflows/ids';
import { CrawlDueDay, CrawlNextDue } from '../../src/temporal/search-attributes';
import { addSeedsUpdate, campaignStatusQuery, cancelSignal, domainStatusQuery, setConcurrencyUpdate } from '../../workflows/messages';
import { changingSite } from '../web/changing-site';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { crawlerCommand } from '../../src/cli/crawler-command';
import type { ReportData } from '../../src/report/report-data';
import { generateSites } from '../web/test-web';
import { createHarness, launch, minGapsByHost, outputOf, pageRequests, sleep, type Harness } from '../support/harness';
import { until } from '../support/restartable-crawl';

jest.setTimeout(300_000);

const HOST = 'fresh.revisit.test';
let h: Harness;
beforeAll(async () => {
  h = await createHarness('revisit', { workers: 1 });
});
afterAll(() => h?.close());

test('changed pages come back sooner, unchanged ones get 304s at growing intervals, a 404 page leaves, a new link is crawled', async () => {
  const { spec, control } = changingSite(HOST);
  h.web.addSite(spec);
  const handle = await launch(h, {
    seeds: [h.web.url(HOST, '/')],
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 100 },
    // Its revisit schedule is looked at once it has been cancelled: kept (keep summary deletes it at the end).
    retention: { keep: 'all' },
    // Waits for the next revisit of half a second or more are durable timers (5 s by default: too long for bounds in seconds).
    session: { durableSleepMs: 500 },
    revisit: { enabled: true, minMs: 500, maxMs: 4_000 },
  });
  const requestsOf = (path: string) => h.web.requests().filter((r) => r.host === HOST && r.path === path);
  const answers = (path: string) => control.answers.get(path) ?? [];

  // Every page visited twice: the schedule works; then the page fades and a link appears.
  await until('a second visit of every page', () => ['/', '/hot', '/cold', '/fading'].every((p) => requestsOf(p).length >= 2));
  control.gone = true;
  control.gainLink = true;
  await until('/fading to answer 404 three times', () => answers('/fading').filter((s) => s === 404).length >= 3);
  const fadingRequestsAtGone = requestsOf('/fading').length;
  const goneAt = Date.now();
  await until('/new to be crawled', () => requestsOf('/new').length >= 1);
  await until('/listed to be revisited', () => requestsOf('/listed').length >= 2);
  // Long enough for /cold to reach its longest interval (1.4 s × 1.5 × 1.5 … up to 4 s) and be visited at it.
  await until('/cold to be revisited at 4 s', () => {
    const t = requestsOf('/cold').map((r) => r.t);
    return t.length >= 2 && t[t.length - 1] - t[t.length - 2] >= 3_900;
  });
  // The host holds its slot and sleeps until its next due URL; operators see the queue.
  const status = await handle.query(campaignStatusQuery);
  expect(status.revisit).toBe(true);
  const domain = await h.client.workflow.getHandle(domainWorkflowId(handle.workflowId, hostKey(h.web.url(HOST, '/')))).query(domainStatusQuery);
  expect(domain.revisit?.scheduled).toBeGreaterThan(0);
  expect(domain.revisit?.dueDay).toBe(domain.revisit?.scheduled);
  expect(domain.revisit?.nextDueAt).toEqual(expect.any(String));
  // …and so does the Web UI: the queue in the host's search attributes (as of a session's end), and a visibility query finds it.
  const hostWorkflow = domainWorkflowId(handle.workflowId, hostKey(h.web.url(HOST, '/')));
  const attrs = (await h.client.workflow.getHandle(hostWorkflow).describe()).typedSearchAttributes;
  expect(attrs.get(CrawlDueDay)).toBeGreaterThan(0);
  expect(attrs.get(CrawlNextDue)).toBeInstanceOf(Date);
  const dueSoon: string[] = [];
  for await (const wf of h.client.workflow.list({ query: `CrawlCampaign = '${handle.workflowId}' AND CrawlDueDay > 0` })) dueSoon.push(wf.workflowId);
  expect(dueSoon).toEqual([hostWorkflow]);
  // A longest interval (4 s) or more since its third 404: /fading was not asked for again.
  await sleep(Math.max(0, goneAt + 4_000 - Date.now()));
  expect(requestsOf('/fading').length).toBe(fadingRequestsAtGone);

  await handle.signal(cancelSignal, { reason: 'test' });
  const result = await handle.result();
  expect(result.status).toBe('cancelled');

  // The HTML report's change-rate chart, from every visit in the raw index: the hot page's revisits changed, the cold page's did not.
  const rep = crawlerCommand(['report', result.campaignId, '--out', outputOf(h, result.campaignId).dir]);
  const reportFile = execFileSync(rep.command, rep.args, { encoding: 'utf8', env: process.env }).trim().split('\n').pop()!;
  const reportHtml = fs.readFileSync(reportFile, 'utf8');
  expect(reportHtml).toContain('id="chart-change-rate"');
  const data = JSON.parse(/<script type="application\/json" id="report-data">([\s\S]*?)<\/script>/.exec(reportHtml)![1]!) as ReportData;
  const sum = (k: 'changed' | 'unchanged') => data.changeRate!.buckets.reduce((n, b) => n + b[k], 0);
  expect(sum('changed')).toBeGreaterThanOrEqual(requestsOf('/hot').length - 2);
  expect(sum('unchanged')).toBeGreaterThanOrEqual(requestsOf('/cold').length - 1);

  // Between due batches half a second or more apart the host workflow slept durably, its timers named after the revisit queue.
  const events = (await h.client.workflow.getHandle(domainWorkflowId(handle.workflowId, hostKey(h.web.url(HOST, '/')))).fetchHistory()).events ?? [];
  const timers = events.filter((e) => e.timerStartedEventAttributes);
  const sessions = events.filter((e) => e.activityTaskScheduledEventAttributes);
  // (Once /hot is due every half second its gaps are shorter than the threshold and paced inside sessions.)
  expect(timers.length).toBeGreaterThanOrEqual(1);
  const summaries = timers.flatMap((e) => (e.userMetadata?.summary ? [String(h.client.options.loadedDataConverter.payloadConverter.fromPayload(e.userMetadata.summary))] : []));
  expect(summaries).toContainEqual(expect.stringMatching(/^revisits: \d+ URL\(s\) scheduled, the next due in \d+ s — sleeping /));
  if (process.env.CRAWLER_TEST_FIGURES) {
    const revisitRequests = h.web.requests().filter((r) => r.host === HOST).length - ['/robots.txt', '/sitemap.xml', '/', '/hot', '/cold', '/fading', '/new', '/listed'].length;
    process.stderr.write(
      `revisit figures: ${JSON.stringify({ hot: requestsOf('/hot').length, cold: requestsOf('/cold').length, listed: requestsOf('/listed').length, revisitRequests, timers: timers.length, sessions: sessions.length, events: events.length })}\n`,
    );
  }

  // Changed more often than unchanged, by the request log.
  const hot = requestsOf('/hot').length;
  const cold = requestsOf('/cold').length;
  expect(hot).toBeGreaterThan(cold);
  // /cold: after its first full answer only 304s, each interval at least the one before (× 1.5 up to 4 s).
  expect(answers('/cold')[0]).toBe(200);
  expect(answers('/cold').slice(1)).toEqual(
    answers('/cold')
      .slice(1)
      .map(() => 304),
  );
  const coldTimes = requestsOf('/cold').map((r) => r.t);
  const coldGaps = coldTimes.slice(1).map((t, i) => t - coldTimes[i]);
  expect(coldGaps[0]).toBeGreaterThanOrEqual(1_400);
  expect(coldGaps[coldGaps.length - 1]).toBeGreaterThan(coldGaps[0]);
  // /listed: the sitemap says "never", so its first interval is the longest (4 s), not the geometric middle (1.4 s).
  const listed = requestsOf('/listed').map((r) => r.t);
  expect(listed[1] - listed[0]).toBeGreaterThanOrEqual(3_900);
  // /hot: every answer a full 200 (it changes), never sooner than the 500 ms floor.
  expect(answers('/hot').every((s) => s === 200)).toBe(true);
  const hotTimes = requestsOf('/hot').map((r) => r.t);
  const hotGaps = hotTimes.slice(1).map((t, i) => t - hotTimes[i]);
  expect(Math.min(...hotGaps)).toBeGreaterThanOrEqual(500);

  // The index: 304s as not-modified lines referring to the full capture, the 404 page gone, the new page fetched.
  const out = outputOf(h, result.campaignId);
  const lines = (await out.index()).filter((e) => e.host === new URL(h.web.url(HOST, '/')).host);
  const of = (path: string) => lines.filter((e) => e.url === h.web.url(HOST, path));
  const coldLines = of('/cold');
  expect(coldLines.filter((e) => e.outcome === 'not-modified').length).toBe(answers('/cold').length - 1);
  const full = coldLines.find((e) => e.outcome === 'fetched')!;
  for (const e of coldLines.filter((l) => l.outcome === 'not-modified')) {
    expect(e.status).toBe(304);
    expect(e.revisit).toMatchObject({ url: h.web.url(HOST, '/cold') });
    expect(e.revisit!.date).toBe(full.fetchedAt);
  }
  expect(of('/fading').map((e) => e.outcome)).toEqual([
    ...answers('/fading')
      .filter((s) => s !== 404)
      .map(() => expect.any(String)),
    'http-error',
    'http-error',
    'gone',
  ]);
  expect(of('/new').some((e) => e.outcome === 'fetched')).toBe(true);

  // The WARC: server-not-modified revisit records naming the capture they stand for.
  const records = await out.warc();
  const notModified = records.filter((r) => r.type === 'revisit' && r.headers['WARC-Profile'] === 'http://netpreserve.org/warc/1.1/revisit/server-not-modified');
  expect(notModified.length).toBeGreaterThanOrEqual(coldLines.length - 1);
  const coldResponse = records.find((r) => r.type === 'response' && r.targetUri === h.web.url(HOST, '/cold'))!;
  expect(notModified.filter((r) => r.targetUri === h.web.url(HOST, '/cold')).every((r) => r.headers['WARC-Refers-To'] === coldResponse.recordId)).toBe(true);

  // The schedule: /fading left it, the others (the new page too) are on it (or in the frontier, due when the cancel came).
  const host = hostKey(h.web.url(HOST, '/'));
  const keys = hostKeys(status.campaignKey, host);
  const members = [...(await h.redis.zrange(keys.revisit, 0, -1)), ...(await h.redis.zrange(keys.frontier, 0, -1))];
  const scheduled = [...new Set(members.map((m) => decodeEntry(m, host).url))];
  expect(scheduled.sort()).toEqual(['/', '/cold', '/hot', '/listed', '/new', '/sitemap.xml'].map((p) => h.web.url(HOST, p)).sort());
});

test("a link to a host that sleeps until its next revisit wakes it: the new page is fetched at once, not when the host's revisits fall due", async () => {
  const news = 'news.wake.test';
  const shop = 'shop.wake.test';
  let linked = false;
  let linkServedAt: number | null = null;
  const page = (title: string, links: string[]) =>
    `<!doctype html><html><head><title>${title}</title></head><body>${links.map((l) => `<a href="${l}">${l}</a>`).join(' ')}</body></html>`;
  // The news host never stops: each story links to the next, one every half second (its Crawl-delay),
  // and, once told, to a new page of the shop. (A front page changing on every visit
  // would do as well, but comes back only at the revisit interval: tens of seconds here.)
  h.web.addSite({
    host: news,
    pages: 1,
    fanOut: 0,
    robots: { crawlDelaySec: 0.5 },
    handler: (ctx) => {
      const story = /^\/(\d*)$/.exec(ctx.path);
      if (!story) return false;
      if (linked) linkServedAt ??= performance.timeOrigin + performance.now();
      const next = h.web.url(news, `/${Number(story[1] || 0) + 1}`);
      ctx.send(200, 'text/html; charset=utf-8', page(`story ${story[1] || 0}`, linked ? [next, h.web.url(shop, '/new')] : [next]));
      return true;
    },
  });
  // The shop never changes: after its first visits it sleeps for tens of seconds between revisits.
  h.web.addSite({
    host: shop,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      if (!['/', '/new', '/seeded'].includes(ctx.path)) return false;
      const etag = `"${ctx.path}-1"`;
      if (ctx.req.headers['if-none-match'] === etag) ctx.send(304, 'text/html; charset=utf-8', '', { ETag: etag });
      else ctx.send(200, 'text/html; charset=utf-8', page(ctx.path, []), { ETag: etag });
      return true;
    },
  });
  const handle = await launch(h, {
    seeds: [h.web.url(news, '/'), h.web.url(shop, '/')],
    scope: { mode: 'same-domain' },
    politeness: { minDelayMs: 100 },
    sitemaps: 'off',
    session: { durableSleepMs: 1_000 },
    // The shop's first interval is √(1 s × 400 s) = 20 s, then 30 s, 45 s…
    revisit: { enabled: true, minMs: 1_000, maxMs: 400_000 },
  });
  const visits = (host: string, p: string) => pageRequests(h.web.requests()).filter((r) => r.host === host && r.path === p);
  const now = () => performance.timeOrigin + performance.now();
  const shopStatus = () => h.client.workflow.getHandle(domainWorkflowId(handle.workflowId, hostKey(h.web.url(shop, '/')))).query(domainStatusQuery);
  /** The shop asleep, its next revisit at least 10 s away: what it is woken from. Returns when it would wake. */
  const shopAsleep = async (): Promise<number> => {
    let wakeAt = 0;
    await until('the shop asleep for a while', async () => {
      const d = await shopStatus().catch(() => null); // not started yet
      wakeAt = d?.nextWakeAt ? Date.parse(d.nextWakeAt) : 0;
      return d?.state === 'sleeping' && wakeAt - Date.now() >= 10_000;
    });
    return wakeAt;
  };

  let wakeAt = await shopAsleep();
  const shopVisits = visits(shop, '/').length;
  linked = true;
  await until('the new shop page fetched', () => visits(shop, '/new').length > 0, 30_000);
  const fetchedAt = visits(shop, '/new')[0]!.t;
  // Seconds after the news page linked it, before the shop's own revisit was due.
  expect(fetchedAt - linkServedAt!).toBeLessThan(10_000);
  expect(fetchedAt).toBeLessThan(wakeAt);
  expect(visits(shop, '/').length).toBe(shopVisits);

  // Asleep again, the shop gets a seed from an operator: that wakes it too.
  wakeAt = await shopAsleep();
  const seededAt = now();
  const added = await handle.executeUpdate(addSeedsUpdate, { args: [{ seeds: [h.web.url(shop, '/seeded')] }] });
  expect(added.accepted).toHaveLength(1);
  await until('the seed fetched', () => visits(shop, '/seeded').length > 0, 30_000);
  expect(visits(shop, '/seeded')[0]!.t - seededAt).toBeLessThan(10_000);
  expect(visits(shop, '/seeded')[0]!.t).toBeLessThan(wakeAt);
  await handle.signal(cancelSignal, { reason: 'test' });
  expect((await handle.result()).status).toBe('cancelled');
  // Polite throughout: the shop's requests never closer than the delay.
  expect(minGapsByHost(h.web.requests()).get(shop)).toBeGreaterThanOrEqual(100);
});

test('with maxActiveHosts, revisit hosts take turns: one asleep on the only slot gives it up to a host waiting for one, and queues again when due', async () => {
  const [first, second] = ['first.turns.test', 'second.turns.test'];
  for (const [i, host] of [first, second].entries())
    for (const spec of generateSites({ count: 1, pages: 2, fanOut: 1, crossPerPage: 0, hostPattern: () => host, seed: 20 + i })) h.web.addSite(spec);
  const handle = await launch(h, {
    seeds: [h.web.url(first, '/')],
    // The second host is added later by an operator: in scope from the start.
    scope: { mode: 'domains', domains: ['turns.test'] },
    // Unlimited at the start: the cap comes from an operator below (setConcurrency), as sessions must see.
    politeness: { minDelayMs: 100 },
    sitemaps: 'off',
    session: { durableSleepMs: 1_000 },
    // First interval √(1 s × 225 s) = 15 s: the first host sleeps that long on the only slot
    // (if it is not seen asleep with 10 s of it left, the test waits for its next, longer sleep).
    revisit: { enabled: true, minMs: 1_000, maxMs: 225_000 },
    // A host parked off its slot queues again when its revisit is due, at the campaign's next look:
    // every 2 s here (test-only testLimits), not every TICK_MS.
    testLimits: { tickMs: 2_000 },
  });
  const homeVisits = (host: string) => pageRequests(h.web.requests()).filter((r) => r.host === host && r.path === '/');
  const firstStatus = () => h.client.workflow.getHandle(domainWorkflowId(handle.workflowId, hostKey(h.web.url(first, '/')))).query(domainStatusQuery);
  await until('the first host asleep on the slot', async () => {
    const d = await firstStatus().catch(() => null); // not started yet
    return d?.state === 'sleeping' && d.nextWakeAt !== null && Date.parse(d.nextWakeAt) - Date.now() >= 10_000;
  });
  expect(await handle.executeUpdate(setConcurrencyUpdate, { args: [{ maxActiveHosts: 1 }] })).toEqual({ maxActiveHosts: 1 });
  const wakeAt = Date.parse((await firstStatus()).nextWakeAt!);
  // A second host arrives: the sleeper is woken, finds nothing due and gives the slot up.
  const seededAt = performance.timeOrigin + performance.now();
  expect((await handle.executeUpdate(addSeedsUpdate, { args: [{ seeds: [h.web.url(second, '/')] }] })).accepted).toHaveLength(1);
  await until('the second host crawled', () => homeVisits(second).length >= 1, 30_000);
  // Before the sleeper's revisit was due: it gave the slot up, rather than the second host waiting
  // for its turn. (No tighter bound: on a loaded machine the slot may pass at the next dispatch
  // round, seconds later; CI once took 14 s.)
  expect(homeVisits(second)[0]!.t).toBeGreaterThan(seededAt);
  expect(homeVisits(second)[0]!.t).toBeLessThan(wakeAt);
  // Its revisit due, the first host gets the slot back (the second, asleep on it now, gives it up) and is revisited.
  await until('the first host revisited', () => homeVisits(first).length >= 2, 90_000);
  await handle.signal(cancelSignal, { reason: 'test' });
  expect((await handle.result()).status).toBe('cancelled');
  // Each host stays polite throughout.
  for (const n of [first, second]) expect(minGapsByHost(h.web.requests()).get(n)).toBeGreaterThanOrEqual(100);
});

test('every worker stopped while the host waits for its revisits: once one is back, every due revisit happens, none twice', async () => {
  const host = 'still.revisit.test';
  for (const spec of generateSites({ count: 1, pages: 4, fanOut: 2, crossPerPage: 0, hostPattern: () => host, seed: 7 })) h.web.addSite(spec);
  const handle = await launch(h, {
    seeds: [h.web.url(host, '/')],
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 100 },
    sitemaps: 'off',
    session: { durableSleepMs: 1_000 },
    revisit: { enabled: true, minMs: 1_500, maxMs: 3_000 },
  });
  const pages = () => pageRequests(h.web.requests()).filter((r) => r.host === host);
  const byPath = () => {
    const m = new Map<string, number[]>();
    for (const r of pages()) m.set(r.path, [...(m.get(r.path) ?? []), r.t]);
    return m;
  };
  await until('every page visited twice', () => byPath().size === 4 && [...byPath().values()].every((ts) => ts.length >= 2));
  await h.pool.stopAll();
  const stoppedAt = performance.timeOrigin + performance.now();
  const atStop = pages().length;
  // Longer than the longest interval: every URL falls due while no worker runs, and nothing is fetched.
  await sleep(4_000);
  expect(pages().length).toBe(atStop);
  await h.pool.startOne();
  await until('every page revisited after the restart', () => [...byPath().values()].every((ts) => ts.some((t) => t > stoppedAt)));
  await handle.signal(cancelSignal, { reason: 'test' });
  const result = await handle.result();
  expect(result.status).toBe('cancelled');

  // Cancelled, the campaign revisits nothing more: its end deleted the schedule, what each revisit compares
  // with, the frontier and the seen-set (retention.keep summary, the default), and kept what status and seal read.
  const k = hostKeys(`${handle.workflowId}.${handle.firstExecutionRunId.slice(0, 8)}`, hostKey(h.web.url(host, '/')));
  expect(await h.redis.exists(k.revisit, k.revisitMeta, k.frontier, k.seen)).toBe(0);
  expect(await h.redis.exists(k.committed, k.stats)).toBe(2);
  const cli = (...args: string[]) => {
    const c = crawlerCommand(args);
    return JSON.parse(execFileSync(c.command, c.args, { encoding: 'utf8', env: { ...process.env, CRAWLER_TASK_QUEUE: h.taskQueue } })) as Record<string, unknown>;
  };
  const status = cli('status', handle.workflowId, '--json') as { hosts: { host: string; fetched: number }[]; revisits?: { scheduled: number } };
  expect(status.hosts.map((x) => x.host)).toEqual([hostKey(h.web.url(host, '/'))]);
  expect(status.hosts[0].fetched).toBeGreaterThanOrEqual(8);
  expect(status.revisits?.scheduled).toBe(0);
  // Sealed again, each URL's last visit once, as the campaign's own seal had it.
  const sealed = cli('seal', handle.workflowId, '--json');
  expect(sealed.lines).toBe(result.sealedIndex?.lines);
  expect(sealed.lines).toBe(4);
  // None twice: a URL's visits are never closer than the shortest interval, across the outage too.
  for (const [path, ts] of byPath()) {
    const gaps = ts.slice(1).map((t, i) => t - ts[i]);
    expect({ path, shortest: Math.min(...gaps) >= 1_500 }).toEqual({ path, shortest: true });
  }
});
