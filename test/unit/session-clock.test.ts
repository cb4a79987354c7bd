// The host clock as one session holds it (activities/session-clock.ts): each
// request is one turn, the clock taken (unless held already), the request
// sent, the clock given back with the host's delay; the waits in between
// count as politeness waits. The Redis clock is a fake here: what the
// session asks of it, in order, is what is checked.
import { clockLeaseMs, SessionClock } from '../../activities/session-clock';
import { resolveCampaignSettings } from '../../src/config/campaign';
import type { HostClock } from '../../src/redis/host-clock';

const DELAY = { ms: 40, reason: 'minimum delay 40 ms' };

function clock(waits: number[] = [], stamps: boolean[] = []) {
  const calls: string[] = [];
  const fake = {
    name: 'a.test',
    knownWait: () => 0,
    acquire: async (owner: string, leaseMs: number, delayMs: number) => (calls.push(`acquire ${owner} ${leaseMs} ${delayMs}`), waits.shift() ?? 0),
    release: async (owner: string, ms: number) => void calls.push(`release ${owner} ${ms}`),
    abandon: async (owner: string) => void calls.push(`abandon ${owner}`),
    stamp: async (owner: string, leaseMs: number) => (calls.push(`stamp ${owner} ${leaseMs}`), stamps.shift() ?? true),
  } as unknown as HostClock;
  const waited: number[] = [];
  const signal = new AbortController();
  const c = new SessionClock(fake, 'camp|a.test', 9_000, DELAY, signal.signal, (ms) => waited.push(ms));
  return { c, calls, waited, cancel: () => signal.abort(new Error('cancelled')) };
}

test('taken: held; a wait at the threshold or beyond is handed back for the workflow to sleep, a shorter one waited out here', async () => {
  const a = clock([0]);
  expect(await a.c.take(5_000)).toBe(0);
  expect([a.c.held, a.calls]).toEqual([true, ['acquire camp|a.test 9000 40']]);
  const b = clock([5_000]);
  expect(await b.c.take(5_000)).toBe(5_000);
  expect(b.c.held).toBe(false);
  const c = clock([3, 0]);
  expect(await c.c.take(5_000)).toBe(0);
  expect([c.waited, c.calls.length]).toEqual([[3], 2]);
});

test('a turn takes the clock unless held, sends, and gives it back with the delay, the request failing or not', async () => {
  const t = clock([0]);
  expect(await t.c.turn(async () => 'answer')).toBe('answer');
  expect(t.calls).toEqual(['acquire camp|a.test 9000 40', 'release camp|a.test 40']);
  expect(t.c.held).toBe(false);
  // Held already (the page's lease, a first login's first request): not taken again.
  await t.c.take(5_000);
  t.calls.splice(0);
  await expect(t.c.turn(async () => Promise.reject(new Error('reset')))).rejects.toThrow('reset');
  expect(t.calls).toEqual(['release camp|a.test 40']);
});

test('cancelled while it waits for the clock: nothing sent, nothing given back', async () => {
  const t = clock([30, 0]);
  t.cancel();
  const send = jest.fn(async () => 'sent');
  await expect(t.c.turn(send)).rejects.toThrow();
  expect(send).not.toHaveBeenCalled();
  expect(t.calls.filter((c) => !c.startsWith('acquire'))).toEqual([]);
});

test('a request called off while it waited its turn (a login past its time limit) is not sent, and the clock goes back unused', async () => {
  const t = clock([0]);
  const over = new AbortController();
  over.abort(new Error('the login is over'));
  const send = jest.fn(async () => 'sent');
  await expect(t.c.turn(send, over.signal)).rejects.toThrow('the login is over');
  expect(send).not.toHaveBeenCalled();
  // No delay charged to the host for a request that never went out.
  expect(t.calls).toEqual(['acquire camp|a.test 9000 40', 'abandon camp|a.test']);
  expect(t.c.held).toBe(false);
});

test('a lease given back unused, and a longer pause after a Retry-After', async () => {
  const t = clock([0, 0]);
  await t.c.take(5_000);
  await t.c.abandon();
  await t.c.take(5_000);
  await t.c.release(30_000);
  expect(t.calls.filter((c) => !c.startsWith('acquire'))).toEqual(['abandon camp|a.test', 'release camp|a.test 30000']);
  expect(t.c.held).toBe(false);
});

test("why the session waits: its own delay, or someone else's request", () => {
  const { c } = clock();
  expect(c.waitReason(40)).toBe('minimum delay 40 ms');
  expect(c.waitReason(41)).toBe('host clock: another request to this host is too recent');
});

test('a rendered page holds the clock through its render too', () => {
  const s = resolveCampaignSettings({ seeds: ['https://a.test/'], output: { dir: '/tmp/x' } }, 'c');
  expect(clockLeaseMs(s, 1_000, true) - clockLeaseMs(s, 1_000, false)).toBe(s.browser.pageTimeoutMs);
  expect(clockLeaseMs(s, 1_000, false)).toBe(s.fetch.totalTimeoutMs + 1_000 + 5_000);
});

test('a newer attempt seen by the clock (acquire -1): the take throws SESSION_SUPERSEDED at once, holding nothing', async () => {
  const t = clock([-1]);
  await expect(t.c.take(5_000)).rejects.toMatchObject({ code: 'SESSION_SUPERSEDED' });
  expect([t.c.held, t.calls]).toEqual([false, ['acquire camp|a.test 9000 40']]);
});

test('the stamp just before a request: its lease runs from now; refused, the request throws SESSION_SUPERSEDED and the turn gives the lease back unused', async () => {
  const t = clock([0, 0], [true, false]);
  expect(await t.c.turn(async () => (await t.c.stamp(), 'answer'))).toBe('answer');
  expect(t.calls).toEqual(['acquire camp|a.test 9000 40', 'stamp camp|a.test 9000', 'release camp|a.test 40']);
  t.calls.splice(0);
  const send = jest.fn(async () => 'sent');
  await expect(t.c.turn(async () => (await t.c.stamp(), send()))).rejects.toMatchObject({ code: 'SESSION_SUPERSEDED' });
  expect(send).not.toHaveBeenCalled();
  // No delay charged for a request that never went out; the abandon leaves a lease another attempt holds alone.
  expect(t.calls).toEqual(['acquire camp|a.test 9000 40', 'stamp camp|a.test 9000', 'abandon camp|a.test']);
  expect(t.c.held).toBe(false);
});
