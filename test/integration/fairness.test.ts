// Campaigns that share workers share them fairly: a small campaign started
// while a large one keeps every session slot of the only worker busy gets
// its sessions in early (each campaign's tasks carry its own fairness key),
// instead of waiting behind the large one's whole backlog.
import { generateSites } from '../web/test-web';
import { createHarness, launch, pageRequests, sleep, type Harness } from '../support/harness';

jest.setTimeout(300_000);

const BIG_HOSTS = 32;
const BIG_PAGES = 8;
let h: Harness;
beforeAll(async () => {
  // Four session slots: the large campaign alone has eight times as many hosts waiting.
  h = await createHarness('fairness', { workers: 1, env: { CRAWLER_ACTIVITY_SLOTS: '4' } });
  for (const spec of generateSites({ count: BIG_HOSTS, pages: BIG_PAGES, fanOut: 2, crossPerPage: 0, hostPattern: (i) => `b${i}.big.test`, seed: 1 })) h.web.addSite(spec);
  for (const spec of generateSites({ count: 1, pages: 3, fanOut: 2, crossPerPage: 0, hostPattern: () => 'small.test', seed: 1 })) h.web.addSite(spec);
});
afterAll(() => h?.close());

test('a small campaign started behind a large one finishes while the large one is still far from done', async () => {
  const big = await launch(h, {
    seeds: Array.from({ length: BIG_HOSTS }, (_, i) => h.web.url(`b${i}.big.test`, '/')),
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 200 },
    sitemaps: 'off',
  });
  const bigPages = () => pageRequests(h.web.requests()).filter((r) => r.host.endsWith('.big.test')).length;
  // The large campaign's backlog is there: its slots are busy and most of its hosts wait.
  while (bigPages() < 8) await sleep(100);
  const small = await launch(h, { seeds: [h.web.url('small.test', '/')], scope: { mode: 'same-host' }, politeness: { minDelayMs: 200 }, sitemaps: 'off' });
  const smallResult = await small.result();
  const bigAtSmallDone = bigPages();
  if (process.env.FAIR_DEBUG) {
    const { temporal } = await import('@temporalio/proto');
    for (const id of [small.workflowId, `${small.workflowId}/small.test:${h.web.port}`]) {
      const ev = (await h.client.workflow.getHandle(id).fetchHistory()).events ?? [];
      const t0 = Number(ev[0].eventTime!.seconds);
      process.stderr.write(`${id}\n` + ev.map((e) => `  ${Number(e.eventTime!.seconds) - t0}s ${temporal.api.enums.v1.EventType[e.eventType!]}`).join('\n') + '\n');
    }
  }
  expect(smallResult.status).toBe('completed');
  expect(smallResult.pages).toBe(3);
  // First come, first served would have run the small campaign's session after
  // the large one's 28 waiting hosts: it would finish with nearly all of them done.
  expect(bigAtSmallDone).toBeLessThan((BIG_HOSTS * BIG_PAGES) / 2);
  expect((await big.result()).pages).toBe(BIG_HOSTS * BIG_PAGES);
});
