// What a host session starts from (activities/session-open.ts): the token
// its claims carry, which tells its attempts apart, and how long it runs.
import { attemptToken, sessionDeadline, sessionMaxMs } from '../../activities/session-open';
import { resolveCampaignSettings } from '../../src/config/campaign';

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
