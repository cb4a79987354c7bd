// One host whose frontier grows past 100,000 URLs: the crawl completes at
// its page budget, each page requested once, Redis holds only the frontier's
// head (the rest spills to segments in the output: frontier.spillAbove), and
// the host's workflow history stays small: a host session crawls up to session.maxPages pages per
// activity, so thousands of pages cost a few dozen history events. Frontier order (priority, then depth, then discovery) is not
// checked here but in test/integration/frontier.test.ts.
import { Frontier, MAX_ENQUEUE_BATCH } from '../../src/redis/frontier';
import { hostKeys } from '../../src/redis/keys';
import { hostKey } from '../../src/url/normalize';
import { domainWorkflowId } from '../../workflows/ids';
import { createHarness, launch, pageRequests, sleep, type Harness } from '../support/harness';

const HOST = 'big.large.test';
// Fan-out 60 on a site of a million pages: every page brings some 60 new
// URLs, so 2,000 pages leave about 115,000 in the frontier.
const MAX_PAGES = 2_000;
const FAN_OUT = 60;
/** Sessions of at most 250 pages here: at least 8 sessions of about 6 history events each, plus the run's own. */
const SESSION_PAGES = 250;

let h: Harness;

beforeAll(async () => {
  h = await createHarness('large-domain', { workers: 1 });
  h.web.addSite({ host: HOST, pages: 1_000_000, fanOut: FAN_OUT });
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
    session: { maxPages: SESSION_PAGES },
  });
  const campaignKey = `${handle.workflowId}.${handle.firstExecutionRunId.slice(0, 8)}`;
  const frontierKey = hostKeys(campaignKey, hostKey(seed)).frontier;
  const frontier = new Frontier(h.redis, campaignKey, hostKey(seed));
  let peakFrontier = 0;
  let peakHeld = 0;
  let done = false;
  const result = handle.result().finally(() => (done = true));
  while (!done) {
    // The whole frontier (its spilled segments counted) and the part of it in Redis.
    peakFrontier = Math.max(peakFrontier, await frontier.size());
    peakHeld = Math.max(peakHeld, await h.redis.zcard(frontierKey));
    await sleep(500);
  }
  const r = await result;
  expect(r.status).toBe('budget-exhausted');
  expect(r.pages).toBe(MAX_PAGES);
  expect(peakFrontier).toBeGreaterThanOrEqual(100_000);
  // Past frontier.spillAbove (5,000 by default) the tail went to segments: Redis held the head only,
  // over the bound at most by what one enqueue call adds before the spill that follows it.
  expect(peakHeld).toBeLessThanOrEqual(5_000 + MAX_ENQUEUE_BATCH);
  // Each page requested once.
  const pages = pageRequests(h.web.requests()).map((q) => q.path);
  expect(pages.length).toBe(new Set(pages).size);

  // The host's workflow: several sessions (the page cap ends each one), far
  // fewer history events than pages.
  let events = 0;
  let sessions = 0;
  for await (const wf of h.client.workflow.list({ query: `WorkflowId = '${domainWorkflowId(r.campaignId, hostKey(seed))}'` })) {
    const history = await h.client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    events += history.events?.length ?? 0;
    sessions += (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'crawlSession').length;
  }
  expect(sessions).toBeGreaterThanOrEqual(MAX_PAGES / SESSION_PAGES);
  expect(events).toBeLessThan(MAX_PAGES / 20);
}, 600_000);
