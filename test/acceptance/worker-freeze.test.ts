// A worker frozen with SIGSTOP for 40 s while it runs host sessions, then woken with SIGCONT
// (a paused VM, a process stopped by hand, a long stall): its lease in Redis runs out, a live
// worker tells its hosts' runs that their sessions are lost, and they go on on the live worker,
// even though the frozen worker's open polls still take tasks from the server (its next session
// handed to one is reported lost in turn; a workflow task handed to one waits for its 10 s timeout).
// When it wakes, the frozen worker learns from its beat that it was presumed dead and joins again
// under a new id, and it commits nothing for the hosts it lost: no index line (raw or sealed) of a
// page fetched after the freeze comes from its WARC files, each page is sealed once, and every
// host stays polite throughout. (Fencing, docs/guarantees.md, is what refuses its writes.)
import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import type { SessionRecord } from '../../src/redis/worker-registry';
import { readIndex } from '../../src/storage/index-writer';
import type { WorkerProcess } from '../../src/worker/worker-pool';
import { generateSites } from '../web/test-web';
import { sessionsOf } from '../support/worker-sessions';
import { createHarness, launch, minGapsByHost, pageRequests, sleep, type Harness } from '../support/harness';

jest.setTimeout(10 * 60_000);
const EventType = temporal.api.enums.v1.EventType;
const FROZEN_MS = 40_000;
const DELAY_MS = 500;

const hostOf = (r: SessionRecord) => r.workflowId.slice(r.workflowId.lastIndexOf('/') + 1).replace(/:\d+$/, '');

let h: Harness;
const logs: string[] = [];
beforeAll(async () => {
  h = await createHarness('freeze', { workers: 2, onLog: (l) => logs.push(l) });
  for (const spec of generateSites({ count: 6, pages: 60, fanOut: 3, hostPattern: (i) => `f${i}.freeze.test`, seed: 11 })) h.web.addSite(spec);
});
afterAll(() => h?.close());

test('SIGSTOP for 40 s: its hosts move on; woken, it joins again and commits nothing for them; politeness holds', async () => {
  const seed = h.web.url('f0.freeze.test', '/');
  const handle = await launch(h, { seeds: [seed], scope: { mode: 'any' }, politeness: { minDelayMs: DELAY_MS }, session: { firstLocalMs: 1_000 } });
  let victim: WorkerProcess | undefined;
  let frozen: { ids: string[]; records: SessionRecord[] } = { ids: [], records: [] };
  while (!victim) {
    for (const w of h.pool.alive()) {
      const s = await sessionsOf(h.redis, w);
      if (s.records.length > 0) [victim, frozen] = [w, s];
    }
    if (!victim) await sleep(100);
  }
  victim.child.kill('SIGSTOP');
  const stoppedAt = performance.timeOrigin + performance.now();
  await sleep(FROZEN_MS);
  // Told before it wakes: each of its hosts' runs heard that its session was lost.
  for (const r of frozen.records) {
    const events = (await h.client.workflow.getHandle(r.workflowId, r.runId).fetchHistory()).events ?? [];
    const told = events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'sessionLost');
    const closed = events.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
    expect({ host: hostOf(r), told }).toEqual({ host: hostOf(r), told: true });
    // Its host went on while the worker was frozen: crawled on, or done.
    const after = pageRequests(h.web.requests()).filter((q) => q.host === hostOf(r) && q.t > stoppedAt);
    expect({ host: hostOf(r), movedOn: after.length > 0 || closed }).toEqual({ host: hostOf(r), movedOn: true });
    process.stderr.write(`freeze: ${hostOf(r)} crawled again ${after.length ? ((after[0].t - stoppedAt) / 1000).toFixed(1) : '-'} s after SIGSTOP\n`);
  }
  victim.child.kill('SIGCONT');
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(victim.child.exitCode).toBeNull();

  // Woken, it found out from its beat and joined again under a new id; the old one is gone from Redis.
  await sleep(2_000);
  expect(logs.some((l) => l.includes('presumed dead') && l.includes(frozen.ids[0]))).toBe(true);
  const now = await sessionsOf(h.redis, victim);
  expect(now.ids.length).toBe(1);
  expect(now.ids).not.toContain(frozen.ids[0]);

  // Nothing of a page fetched after the freeze was written by the frozen worker for the hosts it lost.
  const lostHosts = new Set(frozen.records.map(hostOf));
  const outDir = path.join(h.outDir, result.campaignId);
  const byVictim = (e: { warc?: { file: string } }) => e.warc !== undefined && e.warc.file.includes(`-${victim!.child.pid}-`);
  const late = (e: { fetchedAt: string }) => Date.parse(e.fetchedAt) >= stoppedAt;
  const raw = await readIndex(path.join(outDir, 'index'));
  expect(raw.filter((e) => lostHosts.has(e.host.replace(/:\d+$/, '')) && byVictim(e) && late(e)).map((e) => e.url)).toEqual([]);
  const sealedDir = path.join(outDir, 'sealed');
  expect(fs.existsSync(sealedDir)).toBe(true);
  const sealed = await readIndex(sealedDir, (f) => f.endsWith('.index.jsonl'));
  expect(sealed.filter((e) => lostHosts.has(e.host.replace(/:\d+$/, '')) && byVictim(e) && late(e)).map((e) => e.url)).toEqual([]);
  // Each page sealed exactly once, every one of them.
  const expected = h.web.expectedPages([seed]);
  const sealedUrls = sealed.map((e) => e.url).filter((u) => expected.has(u));
  expect(sealedUrls.length).toBe(new Set(sealedUrls).size);
  expect(new Set(sealedUrls)).toEqual(expected);
  for (const [host, gap] of minGapsByHost(h.web.requests())) expect({ host, polite: gap >= DELAY_MS }).toEqual({ host, polite: true });
});
