// The commit stage: one place for the revisit plan, the index line, the
// frontier commit and the metrics of every URL taken from a frontier. The
// index, frontier, schedule and metrics are fakes recording the order of
// what they were asked (the commit script itself runs against a real Redis
// in the integration tests).
import { commitPage, type CommitDeps, type CommitTarget, type PageRecord } from '../../activities/pipeline/commit-stage';
import type { RevisitSettings } from '../../src/config/campaign';
import type { RevisitMeta, RevisitPlan } from '../../src/revisit/adapt';
import type { IndexEntry } from '../../src/storage/index-writer';
import { SessionSupersededError } from '../../src/redis/frontier';

const target: CommitTarget = {
  campaignId: 'c',
  host: 'a.test',
  member: 'm1',
  entry: { url: 'https://a.test/p', depth: 2, referrer: 'https://a.test/', label: 'detail' },
  fp: 'fp1',
  attemptId: 'att1',
};
const revisit: RevisitSettings = { enabled: true, minMs: 60_000, maxMs: 86_400_000, factor: 2, minChangeDistance: 3, goneAfter: 2 };

function setup(opts: { revisit?: RevisitMeta | null; failIndex?: boolean; target?: CommitTarget; superseded?: boolean } = {}) {
  const steps: string[] = [];
  const lines: IndexEntry[] = [];
  const plans: RevisitPlan[] = [];
  const commits: unknown[][] = [];
  const metrics: unknown[] = [];
  const deps: CommitDeps = {
    index: {
      append: async (e) => {
        if (opts.failIndex) throw new Error('index unwritable');
        steps.push('index');
        lines.push(e);
      },
    },
    frontier: {
      assertOwner: async () => {
        steps.push('owner');
        if (opts.superseded) throw new SessionSupersededError(target.host);
      },
      commit: async (...args) => {
        steps.push('commit');
        commits.push(args);
        return { remaining: 4 };
      },
    },
    revisit:
      opts.revisit === undefined
        ? null
        : {
            settings: revisit,
            previous: opts.revisit,
            set: async (_m, _fp, plan) => {
              steps.push('schedule');
              plans.push(plan);
            },
          },
    metrics: {
      recordFetch: (o) => void metrics.push(['fetch', o]),
      recordError: (code) => void metrics.push(['error', code]),
      setFrontierSize: (host, n) => void metrics.push(['size', host, n]),
    },
    log: { info: () => undefined, error: () => void steps.push('logged') },
  };
  return { deps, steps, lines, plans, commits, metrics, commit: (rec: PageRecord) => commitPage(deps, opts.target ?? target, rec) };
}

test('a page fetched: its index line (claim fields, then its own), then one commit with its links and attempt id, then the metrics', async () => {
  const s = setup();
  const link = { url: 'https://a.test/q', fp: 'fp2', depth: 3, referrer: 'https://a.test/p' };
  const c = await s.commit({ outcome: 'fetched', counted: 'fetched', requested: true, fields: { status: 200, bytes: 120, fetchMs: 25 }, links: [link] });
  expect(c).toEqual({ outcome: 'fetched', counted: 'fetched', status: 200, bytes: 120 });
  expect(s.steps).toEqual(['owner', 'index', 'commit']);
  expect(s.lines).toEqual([
    expect.objectContaining({
      url: 'https://a.test/p',
      fp: 'fp1',
      attemptId: 'att1',
      host: 'a.test',
      campaignId: 'c',
      outcome: 'fetched',
      status: 200,
      bytes: 120,
      depth: 2,
      referrer: 'https://a.test/',
      // Written before hop paths were kept: the path its depth implies.
      hops: 'LL',
      label: 'detail',
    }),
  ]);
  expect(s.commits).toEqual([['m1', 'fetched', 120, [link], { fp: 'fp1', id: 'att1' }]]);
  expect(s.metrics).toEqual([
    ['size', 'a.test', 4],
    ['fetch', { outcome: 'fetched', status: 200, bytes: 120, durationMs: 25 }],
  ]);
});

test('an embed counts in the embed classes whoever decided its outcome; its line names its kind and hop path', async () => {
  const embed = { ...target, entry: { url: 'https://cdn.test/x.css', depth: 1, referrer: 'https://a.test/p', kind: 'embed' as const, hops: 'LE' } };
  for (const [counted, as] of [
    ['fetched', 'embeds'],
    ['failed', 'embedsFailed'],
    ['skipped', 'embedsSkipped'],
  ] as const) {
    const s = setup({ target: embed });
    const c = await s.commit({ outcome: counted === 'skipped' ? 'robots-disallowed' : 'fetched', counted, requested: counted !== 'skipped' });
    expect(c.counted).toBe(as);
    expect(s.commits[0]![1]).toBe(as);
    expect(s.lines[0]).toMatchObject({ kind: 'embed', hops: 'LE', depth: 1 });
  }
});

test('a failure without a response counts as a fetch error by its code; an HTTP error does not', async () => {
  const net = setup();
  await net.commit({ outcome: 'error', counted: 'failed', requested: true, fields: { error: { code: 'CONNECTION_RESET', message: 'reset' } } });
  expect(net.metrics).toContainEqual(['error', 'CONNECTION_RESET']);
  const http = setup();
  await http.commit({ outcome: 'http-error', counted: 'failed', requested: true, fields: { status: 500, error: { code: 'HTTP_500', message: 'HTTP 500' } } });
  expect(http.metrics.filter((m) => (m as unknown[])[0] === 'error')).toEqual([]);
});

test('in a revisit campaign, a page that kept answering 404 leaves the schedule, recorded as gone, before its line is written', async () => {
  const s = setup({ revisit: { i: 3_600_000, g: 1, v: 3 } });
  const c = await s.commit({ outcome: 'http-error', counted: 'failed', requested: true, fields: { status: 404, error: { code: 'HTTP_404', message: 'HTTP 404' } } });
  expect(c.outcome).toBe('gone');
  expect(s.steps).toEqual(['owner', 'schedule', 'index', 'commit']);
  expect(s.plans).toEqual([{ verdict: 'gone', intervalMs: null, meta: null }]);
  expect(s.lines[0]).toMatchObject({ outcome: 'gone', change: 'gone' });
});

test('a revisit URL robots.txt or the address policy kept us from stays on its schedule; a budget skip leaves it', async () => {
  for (const outcome of ['robots-disallowed', 'refused', 'robots-unavailable'] as const) {
    const s = setup({ revisit: { i: 3_600_000, v: 2 } });
    await s.commit({ outcome, counted: 'skipped', requested: false });
    expect([outcome, s.plans]).toEqual([outcome, [expect.objectContaining({ verdict: 'not-requested', intervalMs: 7_200_000 })]]);
  }
  const budget = setup({ revisit: { i: 3_600_000, v: 2 } });
  await budget.commit({ outcome: 'budget-exhausted', counted: 'skipped', requested: false, fields: { error: { code: 'PAGE_BUDGET', message: 'spent' } } });
  expect(budget.plans).toEqual([]);
  expect(budget.steps).toEqual(['owner', 'index', 'commit']);
});

test('an index that cannot be written fails the commit, unless the failure being recorded may be the index itself', async () => {
  const strict = setup({ failIndex: true });
  await expect(strict.commit({ outcome: 'fetched', counted: 'fetched', requested: true })).rejects.toThrow('index unwritable');
  expect(strict.commits).toEqual([]);
  const lenient = setup({ failIndex: true });
  await lenient.commit({ outcome: 'error', counted: 'failed', requested: true, fields: { error: { code: 'INTERNAL_ERROR', message: 'x' } }, indexMayFail: true });
  expect(lenient.steps).toEqual(['owner', 'logged', 'commit']);
});

test('a session superseded since its claim (presumed dead, run again elsewhere) writes nothing: no revisit plan, no index line, no commit, no metrics', async () => {
  const s = setup({ revisit: { i: 3_600_000, v: 2 }, superseded: true });
  await expect(s.commit({ outcome: 'fetched', counted: 'fetched', requested: true, fields: { status: 200, bytes: 10 } })).rejects.toMatchObject({
    code: 'SESSION_SUPERSEDED',
  });
  expect([s.steps, s.lines, s.plans, s.commits, s.metrics]).toEqual([['owner'], [], [], [], []]);
});
