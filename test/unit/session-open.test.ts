// What a host session starts from (activities/session-open.ts): the token
// its claims carry, which tells its attempts apart, and how long it runs.
import { attemptToken, sessionMaxMs } from '../../activities/session-open';
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
