// One host whose frontier grows past 100,000 URLs: the domain workflow keeps
// its history bounded by continuing as new, and the crawl completes at its
// page budget. Frontier order (priority, then depth, then discovery) is not
// checked here but in test/integration/frontier.test.ts.
import { hostKeys } from '../../src/redis/keys';
import { hostKey } from '../../src/url/normalize';
import { domainWorkflowId } from '../../workflows/ids';
import { createHarness, launch, pageRequests, sleep, type Harness } from '../support/harness';

const HOST = 'big.large.test';
// Fan-out 30 on a site of a million pages: every page brings some 30 new
// URLs, so 4,000 pages leave about 115,000 in the frontier, and 4,000 steps
// (one to two history events each at zero delay: they run back to back as
// local activities) make the workflow continue as new at least once. Fewer,
// fatter pages would get there sooner but cost far more per page.
const MAX_PAGES = 4_000;
/** domainCrawl continues as new at 4,000 events; a workflow task in flight may add a few hundred more. */
const HISTORY_BOUND = 5_000;

let h: Harness;

beforeAll(async () => {
  h = await createHarness('large-domain', { workers: 1 });
  h.web.addSite({ host: HOST, pages: 1_000_000, fanOut: 30 });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

test('a 100k-URL frontier completes at its budget with every history run bounded', async () => {
  const seed = h.web.url(HOST, '/');
  const handle = await launch(h, {
    seeds: [seed],
    politeness: { minDelayMs: 0 },
    budgets: { maxPages: MAX_PAGES },
    // Generated pages are link lists that differ only in numbers: SimHash calls them near-duplicates and would not expand them.
    content: { dedup: 'exact' },
    idleCloseMs: 1_000,
  });
  const frontierKey = hostKeys(`${handle.workflowId}.${handle.firstExecutionRunId.slice(0, 8)}`, hostKey(seed)).frontier;
  let peakFrontier = 0;
  let done = false;
  const result = handle.result().finally(() => (done = true));
  while (!done) {
    peakFrontier = Math.max(peakFrontier, await h.redis.zcard(frontierKey));
    await sleep(500);
  }
  const r = await result;
  expect(r.status).toBe('budget-exhausted');
  expect(r.pages).toBe(MAX_PAGES);
  expect(peakFrontier).toBeGreaterThanOrEqual(100_000);
  // Each page requested once.
  const pages = pageRequests(h.web.requests()).map((q) => q.path);
  expect(pages.length).toBe(new Set(pages).size);

  // Every run of the host's workflow stayed bounded, and there were several.
  const runs: number[] = [];
  for await (const wf of h.client.workflow.list({ query: `WorkflowId = '${domainWorkflowId(r.campaignId, hostKey(seed))}'` })) {
    runs.push((await h.client.workflow.getHandle(wf.workflowId, wf.runId).describe()).historyLength);
  }
  expect(runs.length).toBeGreaterThanOrEqual(2);
  expect(Math.max(...runs)).toBeLessThanOrEqual(HISTORY_BOUND);
}, 600_000);
