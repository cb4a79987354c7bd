// The chaos driver's verdict (test/chaos/report.ts), from a made-up request log: how long the
// slowest host waited after a worker fault, and the host fetched again most often.
import { buildReport, type ReportInput } from '../chaos/report';
import type { RequestRecord, TestWeb } from '../web/test-web';

const web = { url: (host: string, path: string) => `http://${host}${path}` } as unknown as TestWeb;
const req = (host: string, path: string, t: number): RequestRecord => ({ host, port: 80, method: 'GET', path, userAgent: 'x', t });

function input(requests: RequestRecord[], faults: ReportInput['faults']): ReportInput {
  const expected = new Set(requests.map((r) => web.url(r.host, r.path)));
  return {
    opts: { hosts: 2, pages: 3, seed: 1, workers: 2, delayMs: 1_000 },
    campaignId: 'c',
    campaignStatus: 'completed',
    dataDir: '/tmp/x',
    durationMs: 10_000,
    t0: 0,
    faults,
    expected,
    index: [],
    sealed: null,
    requests,
    served: requests.map((r) => ({ host: r.host, path: r.path, t: r.t })),
    resets: [],
    unexpectedExits: [],
    ackedWritesLost: 0,
    web,
  };
}

test("a worker fault's slowest host is the crawling host that waited longest for its next request; the most refetched host is named", () => {
  const requests = [
    req('a.test', '/1', 0),
    req('a.test', '/2', 1_000),
    // a.test's session died with the worker: its page in flight fetched again 3.15 s after the kill.
    req('a.test', '/2', 4_200),
    req('a.test', '/3', 5_200),
    req('b.test', '/1', 500),
    req('b.test', '/2', 1_600),
    req('b.test', '/3', 2_600),
  ];
  const rep = buildReport(input(requests, [{ kind: 'kill-busiest-worker', at: 1_050, restoredAt: 1_100, detail: 'killed' }]));
  expect(rep.faults[0].slowestHostResumeMs).toBe(3_150);
  expect(rep.totals.recovery).toEqual([expect.objectContaining({ kind: 'kill-busiest-worker', count: 1, slowestHostMaxMs: 3_150 })]);
  expect(rep.fetches.mostRefetchedHost).toEqual({ host: 'a.test', refetches: 1 });
  expect(rep.totals.byKind).toEqual({ 'kill-worker': 0, 'kill-redis': 0, 'restart-temporal': 0, 'reset-connections': 0, 'kill-busiest-worker': 1 });
  expect(rep.totals.kills).toBe(1);
  expect(rep.faults[0].refetches).toBe(1);
});

test('no refetch: no host named', () => {
  const rep = buildReport(input([req('a.test', '/1', 0), req('a.test', '/2', 1_000)], []));
  expect(rep.fetches.mostRefetchedHost).toBeNull();
  expect(rep.totals.recovery).toEqual([]);
});
