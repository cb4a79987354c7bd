// The host workflow's rules, without a server: what it does after each kind of session.
import type { SessionResult } from '../../activities/types';
import { LONG_SLEEP_MS } from '../../src/config/retry-policy';
import { AWAIT_WAKE_MS, DomainBook, HOST_STARTED_AS, type DomainCrawlInput } from '../../workflows/domain-state';

const input: DomainCrawlInput = { campaignId: 'c', campaignKey: 'c.1', campaignWorkflowId: 'c', host: 'a.test', gen: 1, configVersion: 1 };
const session = (over: Partial<SessionResult>): SessionResult => ({
  end: 'drained',
  waitMs: 0,
  backingOff: false,
  released: true,
  stop: null,
  configVersion: 1,
  pages: 3,
  stats: { fetched: 3, failed: 0, skipped: 0, bytes: 30 },
  frontier: 0,
  delayMs: 1_000,
  reason: 'minimum delay 1000 ms',
  lastUrl: 'http://a.test/3',
  lastStatus: 200,
  ...over,
});

test('a drained session that gave the slot up ends the workflow; a wake that came meanwhile means one more session', () => {
  const done = new DomainBook(input);
  done.sessionInput();
  expect(done.onSession(session({}))).toEqual({ kind: 'done' });
  expect(done.result()).toEqual({ host: 'a.test', stats: { fetched: 3, failed: 0, skipped: 0, bytes: 30 }, reason: 'drained' });

  const woken = new DomainBook(input);
  woken.sessionInput();
  woken.onWake(2);
  expect(woken.onSession(session({ released: false }))).toEqual({ kind: 'continue' });
  // The next session carries the newer generation and forgets the wake.
  expect(woken.sessionInput()).toMatchObject({ gen: 2 });
  expect(woken.wakePending).toBe(false);
});

test('a drained session whose slot a newer dispatch holds waits for that wake instead of spinning', () => {
  const b = new DomainBook(input);
  b.sessionInput();
  expect(b.onSession(session({ released: false }))).toEqual({ kind: 'await-wake', ms: AWAIT_WAKE_MS });
});

test('a wait at or above the threshold becomes a durable sleep, shown as sleeping only when long', () => {
  const b = new DomainBook(input);
  b.sessionInput();
  expect(b.onSession(session({ end: 'wait', waitMs: 30_000, reason: 'robots.txt Crawl-delay 30 s' }))).toEqual({ kind: 'sleep', ms: 30_000 });
  expect(b.takeStateChange(30_000)).toBe('sleeping');
  expect(b.status()).toMatchObject({ state: 'sleeping', delayReason: 'robots.txt Crawl-delay 30 s', lastStatus: 200 });
  const short = new DomainBook(input);
  short.sessionInput();
  short.onSession(session({ end: 'wait', waitMs: LONG_SLEEP_MS - 1 }));
  expect(short.takeStateChange(LONG_SLEEP_MS - 1)).toBe('crawling');
  // Unchanged state: nothing to publish (no search-attribute event per session).
  expect(short.takeStateChange(LONG_SLEEP_MS - 1)).toBeNull();
});

test('a run that knows its starting CrawlState publishes only a change from it: a host done in its first session never does', () => {
  const b = new DomainBook(input, true);
  expect(HOST_STARTED_AS).toBe('crawling');
  // The first session runs locally and says so; a later one does not.
  expect(b.sessionInput(true)).toMatchObject({ local: true });
  expect(b.onSession(session({ end: 'cap' }))).toEqual({ kind: 'continue' });
  expect(b.takeStateChange()).toBeNull();
  expect(b.sessionInput()).not.toHaveProperty('local');
  b.onSession(session({ end: 'wait', waitMs: 30_000 }));
  expect(b.takeStateChange(30_000)).toBe('sleeping');
  // Continue-as-new carries what the run showed last (the next run inherits the attribute).
  const next = new DomainBook(b.carry(), true);
  expect(next.takeStateChange(30_000)).toBeNull();
  next.sessionInput();
  next.onSession(session({ end: 'cap' }));
  expect(next.takeStateChange()).toBe('crawling');
  // The legacy type publishes its first state whatever it is, and carries nothing of it.
  const legacy = new DomainBook(input);
  legacy.sessionInput();
  legacy.onSession(session({ end: 'cap' }));
  expect(legacy.takeStateChange()).toBe('crawling');
  expect(legacy.carry().carry).not.toHaveProperty('shown');
});

test('a back-off is shown as backing-off and the slept time is reported to the next session', () => {
  const b = new DomainBook(input);
  b.sessionInput();
  expect(b.onSession(session({ end: 'wait', waitMs: 120_000, backingOff: true, reason: 'HTTP 503 with Retry-After 120 s' }))).toEqual({ kind: 'sleep', ms: 120_000 });
  expect(b.state).toBe('backing-off');
  b.sleeping(0, 120_000);
  expect(b.status().nextWakeAt).toBe(new Date(120_000).toISOString());
  b.slept(120_000);
  expect(b.sessionInput().sleptMs).toBe(120_000);
  expect(b.sessionInput().sleptMs).toBeUndefined();
});

test('a pause waits for a settings version newer than the one it was seen at', () => {
  const b = new DomainBook(input);
  b.sessionInput();
  expect(b.onSession(session({ end: 'paused', configVersion: 4 }))).toEqual({ kind: 'continue' });
  expect(b.waitingForResume).toBe(true);
  expect(b.status().paused).toBe(true);
  // A resume that raced ahead of the session's answer (an older version) does not count…
  b.onSteer(3);
  expect(b.waitingForResume).toBe(true);
  // …the resume's own version does.
  b.onSteer(5);
  expect(b.waitingForResume).toBe(false);
});

test('a stop ends the workflow with the campaign’s reason; a finish signal wins over a later one', () => {
  const b = new DomainBook(input);
  b.sessionInput();
  expect(b.onSession(session({ end: 'stopped', stop: 'budget' }))).toEqual({ kind: 'done' });
  expect(b.result().reason).toBe('budget');
  const f = new DomainBook(input);
  f.onFinish('cancelled');
  f.onFinish('drained');
  expect(f.result().reason).toBe('cancelled');
});

test('each regular session of a run has its own number, which a lost-session message names; the first (local) one has none', () => {
  const b = new DomainBook(input, true);
  expect(b.sessionInput(true)).not.toHaveProperty('session');
  b.onSession(session({ end: 'cap' }));
  expect(b.sessionInput().session).toBe(1);
  b.onSession(session({ end: 'cap' }));
  expect(b.sessionInput().session).toBe(2);
  // Continued as new: the next run numbers its sessions from 1 again (a message names the run too).
  expect(new DomainBook(b.carry(), true).sessionInput().session).toBe(1);
});

test("a session lost with its worker is followed by the next at once: no back-off, the failures' count untouched", () => {
  const b = new DomainBook(input, true);
  b.sessionInput(true);
  b.onSession(session({ end: 'cap', pages: 2 }));
  b.sessionInput();
  expect(b.onSessionLost()).toEqual({ kind: 'continue' });
  expect(b.failures).toBe(0);
  expect(b.sessions).toBe(2);
  expect(b.pages).toBe(2);
  expect(b.delayReason).toMatch(/another worker/);
  expect(b.sessionInput().session).toBe(2);
});

test('failed sessions back off durably, growing and capped', () => {
  const b = new DomainBook(input);
  const waits = [1, 2, 3, 4, 5, 6, 7].map(() => (b.onSessionFailed('Redis is down') as { ms: number }).ms);
  expect(waits.slice(0, 3)).toEqual([30_000, 60_000, 120_000]);
  expect(Math.max(...waits)).toBe(600_000);
  expect(b.state).toBe('backing-off');
  expect(b.delayReason).toContain('Redis is down');
  b.sessionInput();
  b.onSession(session({}));
  expect(b.failures).toBe(0);
});

test('what continue-as-new carries stays the same size however many sessions ran', () => {
  const b = new DomainBook(input);
  const size0 = JSON.stringify(b.carry()).length;
  for (let i = 0; i < 10_000; i++) {
    b.sessionInput();
    b.onSession(session({ end: 'cap', stats: { fetched: i, failed: i, skipped: i, bytes: i * 1000 } }));
  }
  expect(b.sessions).toBe(10_000);
  expect(JSON.stringify(b.carry()).length).toBeLessThan(size0 + 200);
  expect(b.shouldContinueAsNew({ historyLength: 2_001, continueAsNewSuggested: false })).toBe(true);
  expect(b.shouldContinueAsNew({ historyLength: 100, continueAsNewSuggested: false })).toBe(false);
  const next = new DomainBook(b.carry());
  expect(next.status()).toMatchObject({ sessions: 10_000, pages: 30_000 });
});

test('a revisit wait sleeps until the earliest due URL, and the status shows the host’s revisit queue', () => {
  const b = new DomainBook(input);
  b.sessionInput();
  const revisit = { scheduled: 12, nextDueAt: '2026-11-24T05:00:00.000Z', dueHour: 3, dueDay: 12 };
  expect(b.onSession(session({ end: 'wait', waitMs: 3_600_000, released: false, reason: 'revisits: 12 URL(s) scheduled, the next due in 3600 s', revisit }))).toEqual({
    kind: 'sleep',
    ms: 3_600_000,
  });
  expect(b.status()).toMatchObject({ state: 'sleeping', revisit });
  // A later session that says nothing of revisits (a cap in between) keeps what was known.
  b.sessionInput();
  b.onSession(session({ end: 'cap' }));
  expect(b.status().revisit).toEqual(revisit);
  expect(new DomainBook(input).status().revisit).toBeUndefined();
});

test('only a revisit wait may be ended early by a wake; a crawl-delay or a back-off is slept in full', () => {
  const b = new DomainBook(input);
  b.sessionInput();
  expect(b.onSession(session({ end: 'wait', waitMs: 3_600_000, released: false, wakeable: true, reason: 'revisits: 2 URL(s) scheduled, the next due in 3600 s' }))).toEqual({
    kind: 'sleep',
    ms: 3_600_000,
    wakeable: true,
  });
  // The wake that ends it is consumed by the session that follows.
  b.onWake(1);
  expect(b.wakePending).toBe(true);
  b.sessionInput();
  expect(b.wakePending).toBe(false);
  expect(b.onSession(session({ end: 'wait', waitMs: 30_000, reason: 'robots.txt Crawl-delay 30 s' }))).toEqual({ kind: 'sleep', ms: 30_000 });
  expect(b.onSession(session({ end: 'wait', waitMs: 120_000, backingOff: true, reason: 'HTTP 503 with Retry-After 120 s' }))).toEqual({ kind: 'sleep', ms: 120_000 });
});

test('a revisit host publishes its queue when it changes, other hosts never', () => {
  const plain = new DomainBook({ campaignId: 'c', campaignKey: 'c.k', campaignWorkflowId: 'c', host: 'a.test', gen: 1, configVersion: 1 });
  expect(plain.takeRevisitChange()).toBeNull();
  const book = new DomainBook({ campaignId: 'c', campaignKey: 'c.k', campaignWorkflowId: 'c', host: 'b.test', gen: 1, configVersion: 1 });
  book.revisit = { scheduled: 5, nextDueAt: '2026-11-24T05:00:00.000Z', dueHour: 2, dueDay: 5 };
  expect(book.takeRevisitChange()).toEqual({ nextDueAt: '2026-11-24T05:00:00.000Z', dueDay: 5 });
  expect(book.takeRevisitChange()).toBeNull();
  book.revisit = { scheduled: 5, nextDueAt: '2026-11-24T06:00:00.000Z', dueHour: 0, dueDay: 5 };
  expect(book.takeRevisitChange()).toEqual({ nextDueAt: '2026-11-24T06:00:00.000Z', dueDay: 5 });
});

test('only the first session of a host, in its first run, is the first session (it may be dispatched eagerly)', () => {
  const b = new DomainBook(input);
  expect(b.firstSession).toBe(true);
  b.sessionInput();
  b.onSessionFailed('worker died');
  expect(b.firstSession).toBe(false);
  const c = new DomainBook(input);
  c.sessionInput();
  c.onSession(session({ end: 'cap' }));
  expect(c.firstSession).toBe(false);
  // Continued as new: the sessions carried over say it is not the first.
  expect(new DomainBook(c.carry()).firstSession).toBe(false);
});
