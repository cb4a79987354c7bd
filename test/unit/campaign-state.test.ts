// The campaign workflow's rules, without a server: completion, dispatch rounds, steering and size.
import type { CampaignSnapshot } from '../../activities/types';
import { resolveCampaignSettings } from '../../src/config/campaign';
import { CampaignBook, DISPATCH_RETRY_MS, MAX_HISTORY_EVENTS, TICK_MS, WATCH_MARGIN_MS } from '../../workflows/campaign-state';
import { MAX_LOST_CHECKS } from '../../workflows/lost-pages';

const settings = resolveCampaignSettings({ seeds: ['http://a.test/'], politeness: { maxActiveHosts: 10 } }, 'c');
const snap = (over: Partial<CampaignSnapshot>): CampaignSnapshot => ({
  dispatched: 0,
  active: 0,
  ready: 0,
  paused: false,
  stop: null,
  configVersion: 1,
  totals: { fetched: 0, failed: 0, skipped: 0, bytes: 0, hosts: 0, frontier: 0 },
  problems: 0,
  givenUp: 0,
  ...over,
});

test('done only when no host holds or waits for a slot and no operator request could add work', () => {
  const b = new CampaignBook(settings, 'c.1', 0);
  b.nudged = false;
  expect(b.onSnapshot(snap({ active: 2 }), 1)).toBe('wait');
  expect(b.onSnapshot(snap({ ready: 1 }), 2)).toBe('wait');
  b.inflight = 1;
  expect(b.onSnapshot(snap({}), 3)).toBe('wait');
  b.inflight = 0;
  // A paused campaign with nothing active is not done: its hosts wait for the resume.
  expect(b.onSnapshot(snap({ paused: true }), 4)).toBe('wait');
  expect(b.onSnapshot(snap({}), 5)).toBe('done');
  expect(b.finalStatus()).toBe('completed');
});

test('a full dispatch round with more hosts ready asks for another round at once', () => {
  const b = new CampaignBook(settings, 'c.1', 0);
  b.nudged = false;
  expect(b.onSnapshot(snap({ dispatched: 200, active: 200, ready: 50 }), 1)).toBe('again');
  b.nudged = false;
  expect(b.onSnapshot(snap({ dispatched: 0, active: 10, ready: 50 }), 2)).toBe('wait');
});

test('a budget reached in Redis stops the campaign, and the first reason wins', () => {
  const b = new CampaignBook(settings, 'c.1', 0);
  expect(b.onSnapshot(snap({ active: 3, stop: 'budget' }), 1)).toBe('done');
  b.requestStop('cancelled');
  expect(b.finalStatus()).toBe('budget-exhausted');
  expect(b.open).toBe(false);
});

test('steering: versions follow each other, the status shows what is in force', () => {
  const b = new CampaignBook(settings, 'c.1', 0);
  const v = b.nextVersion();
  expect(v).toBe(2);
  b.applied({ kind: 'pause' }, { configVersion: v, budgets: { maxPages: null, maxDepth: null } });
  b.applied({ kind: 'delay', host: null, minDelayMs: 2_500 }, { configVersion: b.nextVersion(), budgets: { maxPages: 50, maxDepth: null } });
  b.applied({ kind: 'pause-host', host: 'x.test' }, { configVersion: b.nextVersion(), budgets: { maxPages: 50, maxDepth: null } });
  const s = b.statusView('c');
  expect(s).toMatchObject({ paused: true, campaignKey: 'c.1', steering: { configVersion: 4, minDelayMs: 2_500, budgets: { maxPages: 50 }, pausedHosts: 1, maxActiveHosts: 10 } });
});

test('a million hosts pass through the bookkeeping while the state it keeps stays bounded', () => {
  const b = new CampaignBook(settings, 'c.1', 0);
  const sizes: number[] = [];
  let active = 0;
  let hosts = 0;
  for (let round = 0; round < 5_000; round++) {
    // Each round: 200 hosts dispatched, 200 finished.
    hosts += 200;
    active = Math.min(active + 200, 10);
    b.onSnapshot(
      snap({ dispatched: 200, active, ready: 1_000_000 - hosts, totals: { fetched: hosts * 3, failed: hosts, skipped: 0, bytes: hosts * 3e4, hosts, frontier: 5 } }),
      round,
    );
    if (round % 1000 === 0) sizes.push(JSON.stringify(b.carry).length + JSON.stringify(b.statusView('c')).length);
  }
  expect(hosts).toBe(1_000_000);
  expect(b.statusView('c').totals.hosts).toBe(1_000_000);
  // What continue-as-new carries and what the status query answers: bounded, well under 64 KB.
  expect(Math.max(...sizes)).toBeLessThan(64 * 1024);
  expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThan(100);
  expect(new CampaignBook(settings, 'ignored', 0, b.carry).statusView('c').totals.fetched).toBe(3_000_000);
});

test('a revisit campaign is never done on its own: only a cancel or a budget ends it', () => {
  const revisit = resolveCampaignSettings({ seeds: ['http://a.test/'], revisit: { minMs: 1_000, maxMs: 8_000 } }, 'c');
  const b = new CampaignBook(revisit, 'c.1', 0);
  // No host active or ready, nothing in flight: a plain campaign would be done here.
  expect(b.onSnapshot(snap({}), 1)).not.toBe('done');
  expect(b.onSnapshot(snap({}), 2)).not.toBe('done');
  expect(b.statusView('c').revisit).toBe(true);
  expect(b.onSnapshot(snap({ stop: 'cancelled' }), 2)).toBe('done');
  expect(b.finalStatus()).toBe('cancelled');
  expect(new CampaignBook(settings, 'c.1', 0).statusView('c').revisit).toBeUndefined();
});

test("the Web UI's card shows the last look at Redis while running, and the summary's totals at the end", () => {
  const b = new CampaignBook(settings, 'c.1', 0);
  b.onSnapshot(snap({ active: 2, ready: 1, totals: { fetched: 7, failed: 1, skipped: 0, bytes: 10, hosts: 3, frontier: 5 } }), 1_000);
  expect(b.card('c')).toContain('**Pages:** 7 fetched, 1 errors');
  expect(b.card('c')).toContain('2 active, 1 waiting for a slot');
  const final = b.card('c', { totals: { fetched: 9, failed: 1, skipped: 2, bytes: 20, hosts: 3, frontier: 0 }, active: 0, problems: { count: 4, list: [] } });
  expect(final).toContain('**Pages:** 9 fetched, 1 errors, 2 skipped');
  expect(final).toContain('0 active, 0 waiting');
  expect(final).toContain('**Problems:** 4');
});

test('a failed dispatch round is tried again after a pause and shown in the status until a round succeeds', () => {
  const b = new CampaignBook(settings, 'c.1', 1_000);
  b.nudged = false;
  expect(b.onDispatchFailed('redis: connection refused', 5_000)).toBe(DISPATCH_RETRY_MS);
  expect(b.due).toBe(true);
  b.onDispatchFailed('redis: connection refused again', 20_000);
  expect(b.statusView('c').dispatchError).toEqual({ message: 'redis: connection refused again', at: new Date(20_000).toISOString(), failures: 2 });
  expect(b.card('c')).toContain('**Dispatch failing** (2×');
  b.onSnapshot(snap({ active: 1 }), 30_000);
  expect(b.statusView('c').dispatchError).toBeUndefined();
});

test('the watch is due a minute after the start, then a minute after its last look, not on every round', () => {
  const b = new CampaignBook(settings, 'c.1', 1_000);
  expect(b.watchDue(1_000 + 59_999)).toBe(false);
  expect(b.watchDue(1_000 + 60_000)).toBe(true);
  b.watchedAt(600_000);
  // It still looks back over the margin (visibility lags), but that does not make it due again.
  expect(b.carry.watchSince).toBe(600_000 - WATCH_MARGIN_MS);
  expect(b.watchDue(600_001)).toBe(false);
  expect(b.watchDue(659_999)).toBe(false);
  expect(b.watchDue(660_000)).toBe(true);
  // A carry from before the last look was kept: due, as it was then.
  const old = new CampaignBook(settings, 'c.1', 1_000, { ...b.carry, watchedAt: undefined });
  expect(old.watchDue(600_001)).toBe(true);
});

test("a test's limits (testLimits) bring the tick, the watch and the dispatch retry to seconds; without them the constants hold", () => {
  const fast = new CampaignBook(settings, 'c.1', 1_000, undefined, { tickMs: 2_000, dispatchRetryMs: 500 });
  expect(fast.tickMs).toBe(2_000);
  expect(fast.watchDue(1_000 + 3_999)).toBe(false);
  expect(fast.watchDue(1_000 + 4_000)).toBe(true);
  expect(fast.onDispatchFailed('redis: connection refused', 2_000)).toBe(500);
  const plain = new CampaignBook(settings, 'c.1', 1_000);
  expect(plain.tickMs).toBe(TICK_MS);
  expect(plain.onDispatchFailed('redis: connection refused', 2_000)).toBe(DISPATCH_RETRY_MS);
});

test('a dispatch round fills free slots and watches when due; while finishing it starts no host and always watches the whole campaign', () => {
  const b = new CampaignBook(settings, 'c.1', 1_000);
  const wf = { workflowId: 'c', taskQueue: 'q' };
  b.carry.maxActiveHosts = 7;
  b.watchedAt(600_000);
  expect(b.dispatchInput(wf, false)).toEqual({
    campaignKey: 'c.1',
    campaignId: settings.campaignId,
    campaignWorkflowId: 'c',
    taskQueue: 'q',
    maxActiveHosts: 7,
    watch: false,
    watchSince: new Date(b.carry.watchSince).toISOString(),
  });
  expect(b.carry.watchSince).toBeGreaterThan(1_000);
  b.finishing = true;
  expect(b.dispatchInput(wf, false)).toMatchObject({ maxActiveHosts: 0, watch: true, watchSince: new Date(1_000).toISOString() });
});

describe('a seed list', () => {
  const listed = resolveCampaignSettings({ seedsFile: '/lists/seeds.txt.gz' }, 'c');
  const read = (next: number, done = false) => ({ next: { line: next, byte: next * 20, seeds: next }, done, hosts: 10, seeds: 10, rejected: 0 });

  test('keeps the campaign from being done until it is read, but not from continuing as new', () => {
    const b = new CampaignBook(listed, 'c.1', 0);
    expect(b.seeding).toBe(true);
    b.nudged = false;
    // Nothing in Redis yet: the rest of the list is still to come.
    expect(b.onSnapshot(snap({}), 1)).toBe('wait');
    // Past the history limit while the list is read: the run continues as new.
    expect(b.shouldContinueAsNew({ historyLength: 9_000, continueAsNewSuggested: false })).toBe(true);
    expect(b.shouldContinueAsNew({ historyLength: 100, continueAsNewSuggested: true })).toBe(true);
    expect(b.shouldContinueAsNew({ historyLength: 100, continueAsNewSuggested: false })).toBe(false);
    // An operator's addSeeds in flight still holds it off.
    b.inflight = 1;
    expect(b.shouldContinueAsNew({ historyLength: 9_000, continueAsNewSuggested: true })).toBe(false);
    b.inflight = 0;
    b.seeded(read(50, true));
    expect(b.seeding).toBe(false);
    expect(b.onSnapshot(snap({}), 2)).toBe('done');
  });

  test('is read one bounded call at a time from a cursor that continue-as-new carries', () => {
    const b = new CampaignBook(listed, 'c.1', 0, undefined, { seedsPerCall: 3 });
    expect(b.seedInput()).toEqual({ campaignKey: 'c.1', from: { line: 0, byte: 0, seeds: 0 }, maxSeeds: 3 });
    b.seeded(read(3));
    expect(b.seedCallDue).toBe(true);
    // The run is about to continue as new: no further call starts in it.
    b.continuing = true;
    expect(b.seedCallDue).toBe(false);
    const next = new CampaignBook(listed, 'ignored', 0, JSON.parse(JSON.stringify(b.carry)) as typeof b.carry, { seedsPerCall: 3 });
    expect(next.seedCallDue).toBe(true);
    expect(next.seedInput()).toEqual({ campaignKey: 'c.1', from: { line: 3, byte: 60, seeds: 3 }, maxSeeds: 3 });
    expect(next.carry.seeds?.read).toBe(10);
    // Without test limits the activity decides the batch.
    expect(new CampaignBook(listed, 'c.1', 0).seedInput()).toEqual({ campaignKey: 'c.1', from: { line: 0, byte: 0, seeds: 0 } });
    // A stopping campaign starts no call either.
    next.requestStop('cancelled');
    expect(next.seedCallDue).toBe(false);
  });

  test("test limits lower the history threshold; without them it is Temporal's suggestion or MAX_HISTORY_EVENTS", () => {
    const small = new CampaignBook(listed, 'c.1', 0, undefined, { maxHistoryEvents: 50 });
    expect(small.shouldContinueAsNew({ historyLength: 51, continueAsNewSuggested: false })).toBe(true);
    expect(small.shouldContinueAsNew({ historyLength: 50, continueAsNewSuggested: false })).toBe(false);
    const plain = new CampaignBook(listed, 'c.1', 0);
    expect(plain.shouldContinueAsNew({ historyLength: MAX_HISTORY_EVENTS, continueAsNewSuggested: false })).toBe(false);
    expect(plain.shouldContinueAsNew({ historyLength: MAX_HISTORY_EVENTS + 1, continueAsNewSuggested: false })).toBe(true);
  });

  test('a list of millions leaves the carry the same size', () => {
    const b = new CampaignBook(listed, 'c.1', 0);
    b.seeded(read(10));
    const first = JSON.stringify(b.carry).length;
    for (let i = 2; i <= 500_000; i++) b.seeded(read(i * 10));
    expect(b.carry.seeds).toMatchObject({ read: 5_000_000, done: false });
    // Only the cursor's digits grow.
    expect(JSON.stringify(b.carry).length - first).toBeLessThan(40);
  });

  test('an unreadable list ends the reading with the reason; the campaign may then be done', () => {
    const b = new CampaignBook(listed, 'c.1', 0);
    b.seedListFailed('SEEDS_NOT_FOUND: gone');
    expect(b.seeding).toBe(false);
    expect(b.seedCallDue).toBe(false);
    b.nudged = false;
    expect(b.onSnapshot(snap({}), 1)).toBe('done');
  });
});

test('a drained campaign writing to a bucket looks for lost pages first, at most MAX_LOST_CHECKS times across runs; a folder, a revisit or a stopped campaign never', () => {
  const bucket = resolveCampaignSettings({ seeds: ['http://a.test/'], output: { dir: 's3://crawl/runs/{campaign}/' } }, 'c');
  const b = new CampaignBook(bucket, 'c.1', 0);
  expect(b.lostCheckDue).toBe(true);
  b.nudged = false;
  b.lostChecked(3);
  // Pages went back: a dispatch round at once.
  expect(b.nudged).toBe(true);
  for (let i = 1; i < MAX_LOST_CHECKS; i++) b.lostChecked(0);
  expect(b.lostCheckDue).toBe(false);
  // The count travels with the carry: a new run does not start over.
  expect(new CampaignBook(bucket, 'c.1', 0, { ...b.carry }).lostCheckDue).toBe(false);
  expect(new CampaignBook(bucket, 'c.1', 0, { ...b.carry, lostChecks: 1 }).lostCheckDue).toBe(true);

  expect(new CampaignBook(settings, 'c.1', 0).lostCheckDue).toBe(false);
  const revisit = resolveCampaignSettings({ seeds: ['http://a.test/'], output: { dir: 's3://crawl/r/' }, revisit: { minMs: 1_000, maxMs: 8_000 } }, 'c');
  expect(new CampaignBook(revisit, 'c.1', 0).lostCheckDue).toBe(false);
  const stopped = new CampaignBook(bucket, 'c.1', 0);
  stopped.requestStop('budget');
  expect(stopped.lostCheckDue).toBe(false);
});
