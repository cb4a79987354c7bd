// What host sessions change about history and steering: a host whose
// robots.txt Crawl-delay is at or above the durable-sleep threshold sleeps
// durably between every page (one timer per page in its history); a host at
// 1 s is paced inside its sessions (no timer, a few activities for all its
// pages); a pause reaches a session that is running within 2 s.
import { temporal } from '@temporalio/proto';
import { domainWorkflowId } from '../../workflows/ids';
import { hostKey } from '../../src/url/normalize';
import { generateSites } from '../web/test-web';
import { createHarness, launch, pageRequests, sleep, type Harness } from '../support/harness';

jest.setTimeout(240_000);
const EventType = temporal.api.enums.v1.EventType;

let h: Harness;
beforeAll(async () => {
  h = await createHarness('host-sessions', { workers: 1 });
  const [slow] = generateSites({ count: 1, pages: 4, fanOut: 2, crossPerPage: 0, hostPattern: () => 'slow.sessions.test', seed: 2 });
  h.web.addSite({ ...slow, robots: { crawlDelaySec: 6 } });
  for (const spec of generateSites({ count: 1, pages: 10, fanOut: 2, crossPerPage: 0, hostPattern: () => 'fast.sessions.test', seed: 2 })) h.web.addSite(spec);
  for (const spec of generateSites({ count: 1, pages: 60, fanOut: 3, crossPerPage: 0, hostPattern: () => 'paused.sessions.test', seed: 2 })) h.web.addSite(spec);
});
afterAll(() => h?.close());

async function historyOf(campaignId: string, host: string) {
  const events = (await h.client.workflow.getHandle(domainWorkflowId(campaignId, hostKey(h.web.url(host, '/')))).fetchHistory()).events ?? [];
  const count = (t: temporal.api.enums.v1.EventType) => events.filter((e) => e.eventType === t).length;
  return { events: events.length, timers: count(EventType.EVENT_TYPE_TIMER_STARTED), sessions: count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) };
}

test('a Crawl-delay above the threshold is one durable timer per page; a 1 s delay is paced inside a few sessions', async () => {
  const handle = await launch(h, {
    seeds: [h.web.url('slow.sessions.test', '/'), h.web.url('fast.sessions.test', '/')],
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 1_000 },
    sitemaps: 'off',
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.pages).toBe(14);
  const slow = await historyOf(result.campaignId, 'slow.sessions.test');
  const fast = await historyOf(result.campaignId, 'fast.sessions.test');
  // Four pages 6 s apart (robots.txt first): a durable sleep before each page after robots.txt.
  expect(slow.timers).toBeGreaterThanOrEqual(4);
  expect(slow.sessions).toBeGreaterThanOrEqual(5);
  // Ten pages 1 s apart: no timer, one session.
  expect(fast.timers).toBe(0);
  expect(fast.sessions).toBe(1);
  expect(fast.events).toBeLessThan(20);
  // Politeness held both ways.
  const times = (host: string) =>
    h.web
      .requests()
      .filter((r) => r.host === host)
      .map((r) => r.t)
      .sort((a, b) => a - b);
  const gaps = (ts: number[]) => ts.slice(1).map((t, i) => t - ts[i]);
  expect(Math.min(...gaps(times('slow.sessions.test')))).toBeGreaterThanOrEqual(6_000);
  expect(Math.min(...gaps(times('fast.sessions.test')))).toBeGreaterThanOrEqual(1_000);
});

test('a pause reaches a running session within 2 s, and a resume lets it go on', async () => {
  const handle = await launch(h, { seeds: [h.web.url('paused.sessions.test', '/')], scope: { mode: 'same-host' }, politeness: { minDelayMs: 200 }, sitemaps: 'off' });
  const pages = () => pageRequests(h.web.requests()).filter((r) => r.host === 'paused.sessions.test');
  while (pages().length < 5) await sleep(50);
  await handle.executeUpdate('pauseCampaign');
  const pausedAt = performance.timeOrigin + performance.now();
  // Watch for 6 s: requests may arrive while the pause travels (at most 2 s), none after.
  await sleep(6_000);
  expect(pages().filter((r) => r.t > pausedAt + 2_000)).toEqual([]);
  const atPause = pages().length;
  expect(atPause).toBeLessThan(60);
  await handle.executeUpdate('resumeCampaign');
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.pages).toBe(60);
  expect(pages().length).toBe(60);
});
