// What a host session starts from (activities/session-open.ts): the token
// its claims carry, which tells its attempts apart, how long it runs, and its
// heartbeat. Each heartbeat that reaches the server is a billable Temporal
// Cloud action, and the SDK sends a session's first one at once: so the
// session beats first after SESSION_HEARTBEAT.throttleMs, then that often, on
// a timer of its own; a session shorter than that sends none, a local one never.
import { attemptToken, heartbeatOf, sessionDeadline, sessionMaxMs } from '../../activities/session-open';
import { resolveCampaignSettings } from '../../src/config/campaign';
import { SESSION_HEARTBEAT } from '../../src/config/retry-policy';

afterEach(() => jest.useRealTimers());

test("an attempt's token names its run, activity and attempt; a local session's adds a nonce, so a re-run of the same attempt is another owner", () => {
  const info = { runId: 'run-1', activityId: '3', attempt: 2 };
  expect(attemptToken({ ...info, isLocal: false })).toBe('run-1/3/2');
  let n = 0;
  const nonce = () => `n${++n}`;
  const first = attemptToken({ ...info, isLocal: true }, nonce);
  const again = attemptToken({ ...info, isLocal: true }, nonce);
  expect([first, again]).toEqual(['run-1/3/2/local-n1', 'run-1/3/2/local-n2']);
});

test("a host's first session (local) runs no longer than session.firstLocalMs", () => {
  const s = resolveCampaignSettings({ seeds: ['https://a.test/'], output: { dir: '/tmp/x' }, session: { maxMs: 120_000, firstLocalMs: 5_000 } }, 'c');
  expect(sessionMaxMs(s, true)).toBe(5_000);
  expect(sessionMaxMs(s, undefined)).toBe(120_000);
});

test("a host's first session counts its time from when its attempt was scheduled (its workflow task's clock ran from before it began); a regular one from its start", () => {
  const s = resolveCampaignSettings({ seeds: ['https://a.test/'], output: { dir: '/tmp/x' }, session: { maxMs: 120_000, firstLocalMs: 5_000 } }, 'c');
  const started = 1_800_000_000_000;
  expect(sessionDeadline(s, true, started - 3_000, started)).toBe(started + 2_000);
  expect(sessionDeadline(s, undefined, started - 3_000, started)).toBe(started + 120_000);
  // No plausible schedule time (none, later than the start, a mock environment's 1 ms after 1970): the start counts.
  for (const scheduled of [undefined, started + 10, 1]) expect(sessionDeadline(s, true, scheduled, started)).toBe(started + 5_000);
});

function session(isLocal = false) {
  const beats: number[] = [];
  const t0 = Date.now();
  const hb = heartbeatOf({ info: { isLocal }, heartbeat: () => beats.push(Date.now() - t0) });
  return { beats, hb };
}

test('a session heartbeats: none before the throttle, then one each throttle, none after the session stops', () => {
  jest.useFakeTimers();
  const { beats, hb } = session();
  const every = SESSION_HEARTBEAT.throttleMs;
  jest.advanceTimersByTime(every - 1);
  expect(beats).toEqual([]);
  jest.advanceTimersByTime(2 * every + 1);
  expect(beats).toEqual([every, 2 * every, 3 * every]);
  hb.stop();
  jest.advanceTimersByTime(5 * every);
  expect(beats).toHaveLength(3);
});

test('a session of the default cap (session.maxMs, 2 min) sends none; a local one never does', () => {
  jest.useFakeTimers();
  const { maxMs } = resolveCampaignSettings({ seeds: ['https://a.test/'], output: { dir: '/tmp/x' } }, 'c').session;
  // With room for a slow last page.
  expect(SESSION_HEARTBEAT.throttleMs).toBeGreaterThanOrEqual(maxMs + 20_000);
  // One beat late or lost still leaves the session within its timeout.
  expect(2 * SESSION_HEARTBEAT.throttleMs).toBeLessThanOrEqual(SESSION_HEARTBEAT.timeoutMs);
  const regular = session();
  jest.advanceTimersByTime(maxMs + 20_000);
  regular.hb.stop();
  expect(regular.beats).toEqual([]);
  const local = session(true);
  jest.advanceTimersByTime(10 * SESSION_HEARTBEAT.throttleMs);
  local.hb.stop();
  expect(local.beats).toEqual([]);
});
