// A host's record as its session writes it (activities/host-record.ts): the
// state a session's end leaves the host in, what operators see of its
// revisit queue, and the session's result.
import { hostStateAt, HostRecordWriter, revisitView, sessionResultOf, type SessionView } from '../../activities/host-record';
import { LONG_SLEEP_MS } from '../../src/config/retry-policy';
import type { CampaignHosts, HostRecord } from '../../src/redis/campaign-hosts';
import type { Frontier } from '../../src/redis/frontier';

test("the host's state after each kind of end", () => {
  expect(hostStateAt('wait', { waitMs: 1_000, backingOff: true })).toBe('backing-off');
  expect(hostStateAt('wait', { waitMs: LONG_SLEEP_MS })).toBe('sleeping');
  expect(hostStateAt('wait', { waitMs: LONG_SLEEP_MS - 1 })).toBe('crawling');
  expect(hostStateAt('paused', { waitMs: 0 })).toBe('paused');
  expect(hostStateAt('stopped', { waitMs: 0, released: false })).toBe('done');
  // Drained: done once its slot is given up; parked until a revisit is due, asleep; a newer dispatch holding the slot, it goes on.
  expect(hostStateAt('drained', { waitMs: 0, released: true })).toBe('done');
  expect(hostStateAt('drained', { waitMs: 60_000, released: true })).toBe('sleeping');
  expect(hostStateAt('drained', { waitMs: 0, released: false })).toBe('crawling');
  expect(hostStateAt('cap', { waitMs: 0 })).toBe('crawling');
  expect(hostStateAt('config', { waitMs: 0 })).toBe('crawling');
});

test('the revisit queue as operators see it: when the next revisit is due', () => {
  const now = Date.UTC(2026, 0, 1);
  expect(revisitView({ scheduled: 3, nextInMs: 60_000, dueHour: 1, dueDay: 2 }, now)).toEqual({ scheduled: 3, nextDueAt: '2026-01-01T00:01:00.000Z', dueHour: 1, dueDay: 2 });
  expect(revisitView({ scheduled: 0, nextInMs: null, dueHour: 0, dueDay: 0 }, now).nextDueAt).toBeNull();
});

const view = (over: Partial<SessionView> = {}): SessionView => ({
  delay: { ms: 500, reason: 'minimum delay 500 ms' },
  pages: 4,
  lastUrl: 'https://a.test/4',
  lastStatus: 200,
  queue: null,
  ...over,
});
const counts = { stats: { fetched: 4, failed: 0, skipped: 0, bytes: 40 }, frontier: 0 };

test("the session's result: the end's facts, what the session did, the record's counts", () => {
  const r = sessionResultOf('wait', { waitMs: 9_000, reason: 'robots.txt Crawl-delay 9 s' }, view(), { stop: null, configVersion: 3, counts });
  expect(r).toEqual({
    end: 'wait',
    waitMs: 9_000,
    backingOff: false,
    released: false,
    stop: null,
    configVersion: 3,
    pages: 4,
    stats: counts.stats,
    frontier: 0,
    delayMs: 500,
    reason: 'robots.txt Crawl-delay 9 s',
    lastUrl: 'https://a.test/4',
    lastStatus: 200,
  });
  // A revisit host asleep in its workflow may be woken; a stop read at the end wins over the control's.
  const woken = sessionResultOf('wait', { waitMs: 9_000, reason: 'r', wakeable: true, stop: 'budget' }, view({ queue: { scheduled: 2, nextInMs: 9_000, dueHour: 2, dueDay: 2 } }), {
    stop: null,
    configVersion: 3,
    counts,
  });
  expect([woken.wakeable, woken.stop, woken.revisit?.scheduled]).toEqual([true, 'budget', 2]);
});

describe('the record writer', () => {
  function writer() {
    const records: HostRecord[] = [];
    let reads = 0;
    const hosts = { record: async (_h: string, r: HostRecord) => void records.push(r) } as unknown as CampaignHosts;
    const frontier = { statsAndSize: async () => (reads++, { stats: { fetched: reads }, size: 7 }) } as unknown as Frontier;
    return { w: new HostRecordWriter(hosts, frontier, 'a.test', Date.now()), records, reads: () => reads };
  }

  test('counts read by the drained end are written once, then read again', async () => {
    const { w, records, reads } = writer();
    w.keep({ stats: { fetched: 99 }, size: 0 });
    expect(await w.write('crawling', view())).toEqual({ stats: { fetched: 99, failed: 0, skipped: 0, bytes: 0 }, frontier: 0 });
    expect(reads()).toBe(0);
    await w.write('crawling', view());
    expect([reads(), records.map((r) => r.fetched)]).toEqual([1, [99, 1]]);
  });

  test("the end's record: its state, reason and wake-up time, and the same counts in the result", async () => {
    const { w, records } = writer();
    const r = await w.end('wait', { waitMs: LONG_SLEEP_MS, reason: 'Retry-After' }, view(), { stop: null, configVersion: 1 });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ state: 'sleeping', reason: 'Retry-After', fetched: 1, frontier: 7, delayMs: 500, lastUrl: 'https://a.test/4' });
    expect(Date.parse(records[0].nextWakeAt!)).toBeGreaterThan(Date.now());
    expect([r.stats.fetched, r.frontier, r.reason]).toEqual([1, 7, 'Retry-After']);
    // No wait: no wake-up time, and the delay's reason.
    await w.end('drained', { released: true }, view(), { stop: null, configVersion: 1 });
    expect(records[1]).toMatchObject({ state: 'done', reason: 'minimum delay 500 ms', nextWakeAt: null });
  });

  test('the first record is due RECORD_EVERY_MS after the session started, not at once', () => {
    const { w } = writer();
    expect(w.due()).toBe(false);
    expect(w.due(Date.now() + 60_000)).toBe(true);
  });
});
