// Replays recorded histories of real campaigns (test/fixtures/histories,
// made by make-fixture.ts) through today's workflow code. A change that would
// break crawls already running fails here: then version the change with
// patched() instead (docs/operations.md, "Upgrading workflow code").
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { DefaultLogger, Runtime, Worker, type ReplayResult } from '@temporalio/worker';
import {
  acceptedUpdates,
  activityResults,
  completionResult,
  coverageOf,
  definedMessages,
  endedAs,
  loadHistories,
  seedListCarried,
  signalsOf,
  updatesOf,
  type RecordedHistory,
} from '../fixtures/histories/coverage';
import type { CampaignSnapshot, LoadSeedsResult, SessionResult } from '../../activities/types';
import type { SetPolitenessRequest } from '../../src/config/steering';
import type { CrawlCampaignInput } from '../../workflows/crawl-campaign';
import { DOMAIN_WORKFLOWS } from '../../src/temporal/workflow-types';
import { ensureWorkflowBundle } from '../../src/worker/workflow-bundle';
import type { CampaignResult } from '../../workflows/messages';

jest.setTimeout(300_000);
// The broken replays below make the SDK's core log a warning per history; failures are asserted instead.
Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } } });

const histories = loadHistories();
const ofType = (type: string) => histories.filter((h) => h.type === type);
const campaigns = ofType('crawlCampaign');
// Host runs of both types: hostCrawl's, recorded by make-fixture.ts today, and the legacy
// domainCrawl's of the release before (in domainCrawl/), which its runs still open replay on.
const domains = DOMAIN_WORKFLOWS.flatMap(ofType);
const coverage = coverageOf(histories);

/** Replays through the workflows at a path (bundled by the SDK), or `{ bundle }`: a bundle file as the workers load it. */
async function replay(code: string | { bundle: string }, hs: RecordedHistory[] = histories): Promise<Map<string, ReplayResult>> {
  const results = new Map<string, ReplayResult>();
  const input = hs.map((h) => ({ workflowId: h.workflowId, history: h.history }));
  const from = typeof code === 'string' ? { workflowsPath: code } : { workflowBundle: { codePath: code.bundle } };
  for await (const r of Worker.runReplayHistories({ ...from, replayName: 'replay-test' }, input)) results.set(r.workflowId, r);
  expect([...results.keys()].sort()).toEqual(hs.map((h) => h.workflowId).sort());
  return results;
}

const fixturesDir = path.join(__dirname, '..', 'fixtures');

describe('the fixtures cover', () => {
  test('every workflow type, each with a run that continued as new', () => {
    expect(campaigns.length).toBeGreaterThan(0);
    for (const type of DOMAIN_WORKFLOWS)
      expect({ type, continued: ofType(type).filter((h) => endedAs(h.history) === 'CONTINUED_AS_NEW').length > 0 }).toEqual({ type, continued: true });
    expect(histories.length).toBe(campaigns.length + domains.length);
    // The next run of a chain starts from the carry: both sides of continue-as-new replay.
    expect(campaigns.filter((h) => endedAs(h.history) === 'CONTINUED_AS_NEW').length).toBeGreaterThan(0);
    expect(domains.filter((h) => endedAs(h.history) === 'CONTINUED_AS_NEW').length).toBeGreaterThan(0);
    const continued = (hs: RecordedHistory[]) => hs.filter((h) => h.history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId);
    expect(continued(campaigns).length).toBeGreaterThan(0);
    expect(continued(domains).length).toBeGreaterThan(0);
  });

  test('every update of workflows/messages.ts, accepted by a campaign', () => {
    const { updates } = definedMessages();
    // Found by looking at the module's exports: a sanity check that the lookup works.
    expect(updates).toEqual(expect.arrayContaining(['addSeeds', 'pauseCampaign', 'pauseHost', 'resumeCampaign', 'resumeHost', 'setBudgets', 'setConcurrency', 'setPoliteness']));
    expect(uniq(campaigns.flatMap((h) => updatesOf(h.history)))).toEqual(expect.arrayContaining(updates));
    // setPoliteness both campaign-wide and for one host.
    const politeness = campaigns
      .flatMap((h) => acceptedUpdates(h.history))
      .filter((u) => u.name === 'setPoliteness')
      .map((u) => u.arg as SetPolitenessRequest);
    expect(politeness.filter((r) => r.host === undefined).length).toBeGreaterThan(0);
    expect(politeness.filter((r) => typeof r.host === 'string').length).toBeGreaterThan(0);
  });

  test('the pause, resume and cancel signals on a campaign; wake, finish and steer on domains; every signal defined', () => {
    const onCampaigns = uniq(campaigns.flatMap((h) => signalsOf(h.history)));
    const onDomains = uniq(domains.flatMap((h) => signalsOf(h.history)));
    expect(onCampaigns).toEqual(expect.arrayContaining(['pause', 'resume', 'cancel', 'nudge']));
    expect(onDomains).toEqual(expect.arrayContaining(['wake', 'finish', 'steer']));
    expect(uniq([...onCampaigns, ...onDomains])).toEqual(expect.arrayContaining(definedMessages().signals));
  });

  test('a campaign that completed, one that ran out of budget and one that was cancelled', () => {
    const statuses = campaigns.map((h) => completionResult<CampaignResult>(h.history)?.status).filter(Boolean);
    expect(statuses).toEqual(expect.arrayContaining(['completed', 'budget-exhausted', 'cancelled']));
  });

  test('host sessions that ended paused, in a durable back-off (Retry-After) and in a durable sleep (Crawl-delay)', () => {
    const sessions = domains.flatMap((h) => activityResults<SessionResult>(h.history, 'crawlSession'));
    expect(domains.filter((h) => activityResults<SessionResult>(h.history, 'crawlSession').some((s) => s.end === 'paused')).length).toBeGreaterThan(0);
    // session.durableSleepMs is 5 s by default.
    expect(sessions.filter((s) => s.end === 'wait' && s.backingOff && s.waitMs >= 5_000).length).toBeGreaterThan(0);
    expect(sessions.filter((s) => s.end === 'wait' && !s.backingOff && s.waitMs >= 5_000).length).toBeGreaterThan(0);
    expect(coverage.sessionEnds).toEqual(expect.arrayContaining(['drained', 'wait', 'paused', 'stopped']));
  });

  test('a campaign that read its seeds from a seed list', () => {
    expect(campaigns.flatMap((h) => activityResults<LoadSeedsResult>(h.history, 'loadSeeds')).filter((r) => r.seeds > 0).length).toBeGreaterThan(0);
  });

  test('a campaign run that continued as new while reading its seed list, and the run that read on from its cursor', () => {
    const carried = campaigns.filter((h) => seedListCarried(h.history));
    expect(carried.length).toBeGreaterThan(0);
    expect(coverage.seedListCarried).toBe(carried.length);
    // The next run started from that cursor and read more of the list.
    const resumed = campaigns.filter((h) => {
      const seeds = startInput(h)?.carry?.seeds;
      return seeds && !seeds.done && seeds.next.seeds > 0 && activityResults<LoadSeedsResult>(h.history, 'loadSeeds').some((r) => r.seeds > 0);
    });
    expect(resumed.length).toBeGreaterThan(0);
  });

  test("a revisit host's sleep for its next due URL ended early by a wake (new URLs for it)", () => {
    expect(domains.flatMap((h) => activityResults<SessionResult>(h.history, 'crawlSession')).some((s) => s.wakeable)).toBe(true);
    expect(coverage.revisitSleepsWoken).toBeGreaterThan(0);
  });

  test('the domain watch giving up a host whose workflow was terminated by hand', () => {
    const rounds = campaigns.flatMap((h) => activityResults<CampaignSnapshot>(h.history, 'dispatchHosts'));
    expect(rounds.filter((s) => s.givenUp >= 1).length).toBeGreaterThan(0);
    expect(domains.filter((h) => endedAs(h.history) === 'TERMINATED').length).toBeGreaterThan(0);
  });
});

test('every recorded history replays without nondeterminism on workflows/index.ts', async () => {
  const results = await replay(path.join(__dirname, '..', '..', 'workflows', 'index.ts'));
  for (const [id, r] of results) expect({ id, error: r.error ? `${r.error.name}: ${r.error.message}` : undefined }).toEqual({ id, error: undefined });
});

// The workers' own bundle (src/worker/workflow-bundle.ts): its workflow modules are loaded once and
// shared by every workflow of the worker's context, so a module that kept state per workflow would
// carry it from one history to the next here, all of them replayed in one context.
test("every recorded history replays without nondeterminism on the workers' bundle, its modules shared", async () => {
  const results = await replay({ bundle: await ensureWorkflowBundle() });
  for (const [id, r] of results) expect({ id, error: r.error ? `${r.error.name}: ${r.error.message}` : undefined }).toEqual({ id, error: undefined });
});

test('an unversioned change to any workflow is caught: every history of every type fails with a determinism error', async () => {
  const results = await replay(path.join(fixturesDir, 'broken-workflows', 'index.ts'));
  for (const h of histories) expect({ id: h.workflowId, error: results.get(h.workflowId)?.error?.name }).toEqual({ id: h.workflowId, error: 'DeterminismViolationError' });
});

test('the same change behind patched() replays every recorded history', async () => {
  const results = await replay(path.join(fixturesDir, 'patched-workflows', 'index.ts'));
  for (const [id, r] of results) expect({ id, error: r.error ? `${r.error.name}: ${r.error.message}` : undefined }).toEqual({ id, error: undefined });
});

test("a campaign run whose addSeeds update ran its local activity beside the run's first dispatch (recorded before the campaign queued its local activities) replays", async () => {
  // Recorded by the code before workflows/campaign-activities.ts's oneAtATime: that code failed
  // to replay it (the upsert after the dispatch came before the update's completion).
  const regressions = loadHistories(path.join(fixturesDir, 'regressions'));
  expect(regressions.map((h) => h.type)).toEqual(['crawlCampaign']);
  const events = regressions[0].history.events ?? [];
  // Two local activities in the run's first workflow task: the update's and the dispatch's.
  expect(updatesOf(regressions[0].history)).toContain('addSeeds');
  expect(events.slice(0, 12).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length).toBeGreaterThanOrEqual(2);
  const results = await replay(path.join(__dirname, '..', '..', 'workflows', 'index.ts'), regressions);
  for (const [id, r] of results) expect({ id, error: r.error ? `${r.error.name}: ${r.error.message}` : undefined }).toEqual({ id, error: undefined });
});

/** A run's input, as its first event recorded it. */
function startInput(h: RecordedHistory): CrawlCampaignInput | undefined {
  const p = h.history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  return p ? defaultPayloadConverter.fromPayload<CrawlCampaignInput>(p as Parameters<typeof defaultPayloadConverter.fromPayload>[0]) : undefined;
}

function uniq(xs: string[]): string[] {
  return [...new Set(xs)].sort();
}
