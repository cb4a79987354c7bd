// Replays recorded histories of real campaigns through today's workflow
// code. A change that would break crawls already running fails here: then
// version the change with patched() instead (see docs/operations.md).
import fs from 'node:fs';
import path from 'node:path';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { DOMAIN_WATCH_PATCH, LIVE_TOTALS_PATCH } from '../../workflows/crawl-campaign';
import { LOCAL_STEP_PATCH, STATE_REPORTS_PATCH } from '../../workflows/domain-crawl';

jest.setTimeout(180_000);
Runtime.install({ logger: new DefaultLogger('WARN') });

const dir = path.join(__dirname, '..', 'fixtures', 'histories');
const histories = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.history.pb'))
  .map((f) => ({
    workflowId: f.replace(/\.history\.pb$/, ''),
    history: temporal.api.history.v1.History.decode(fs.readFileSync(path.join(dir, f))),
  }));

async function replay(workflowsPath: string) {
  const results = [];
  for await (const r of Worker.runReplayHistories({ workflowsPath, replayName: 'replay-test' }, histories)) results.push(r);
  return results;
}

test('the fixtures cover both workflow types', () => {
  expect(histories.some((h) => h.workflowId.startsWith('campaign-'))).toBe(true);
  expect(histories.filter((h) => h.workflowId.startsWith('domain-')).length).toBeGreaterThanOrEqual(2);
});

test('the fixtures cover histories from before and after the versioned changes', () => {
  const EventType = temporal.api.enums.v1.EventType;
  const patchesOf = (h: (typeof histories)[number]) =>
    new Set(
      (h.history.events ?? [])
        .filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED && e.markerRecordedEventAttributes?.markerName === 'core_patch')
        .map((e) => (JSON.parse(Buffer.from(e.markerRecordedEventAttributes!.details!['patch-data'].payloads![0].data!).toString()) as { id: string }).id),
    );
  const domains = histories.filter((h) => h.workflowId.startsWith('domain-'));
  // Remote-activity page steps (recorded before the patch) …
  expect(domains.some((h) => patchesOf(h).size === 0)).toBe(true);
  // … local-activity steps, without and with state reports …
  expect(domains.some((h) => patchesOf(h).has(LOCAL_STEP_PATCH) && !patchesOf(h).has(STATE_REPORTS_PATCH))).toBe(true);
  expect(domains.some((h) => patchesOf(h).has(STATE_REPORTS_PATCH))).toBe(true);
  // … and campaigns from before and after live totals (and the steering that comes with them).
  const campaigns = histories.filter((h) => h.workflowId.startsWith('campaign-'));
  expect(campaigns.some((h) => !patchesOf(h).has(LIVE_TOTALS_PATCH))).toBe(true);
  expect(campaigns.some((h) => patchesOf(h).has(LIVE_TOTALS_PATCH))).toBe(true);
  // … with live totals but before the watch for domains that ended unreported, and after it.
  expect(campaigns.some((h) => patchesOf(h).has(LIVE_TOTALS_PATCH) && !patchesOf(h).has(DOMAIN_WATCH_PATCH))).toBe(true);
  expect(campaigns.some((h) => patchesOf(h).has(DOMAIN_WATCH_PATCH))).toBe(true);
  const updates = (h: (typeof histories)[number]) =>
    (h.history.events ?? []).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED).map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name);
  expect(campaigns.flatMap(updates)).toEqual(expect.arrayContaining(['setConcurrency', 'setPoliteness']));
});

test('recorded campaign and domain histories replay without nondeterminism', async () => {
  const results = await replay(path.join(__dirname, '..', '..', 'workflows', 'index.ts'));
  expect(results.length).toBe(histories.length);
  for (const r of results) expect({ id: r.workflowId, error: r.error?.message }).toEqual({ id: r.workflowId, error: undefined });
});

test('an incompatible workflow change is caught as a determinism error', async () => {
  const results = await replay(path.join(__dirname, '..', 'fixtures', 'broken-workflows', 'index.ts'));
  const domainResults = results.filter((r) => r.workflowId.startsWith('domain-'));
  expect(domainResults.length).toBeGreaterThan(0);
  for (const r of domainResults) expect(r.error?.name).toBe('DeterminismViolationError');
});
