// The Temporal Web UI as the crawl console, checked in a real browser: an
// operator filters by campaign and sees every host by its readable workflow
// ID, filters by CrawlState to find the host that is stuck, reads its search
// attributes and runs the domainStatus query from the Queries tab.
// Screenshots land in <test data>/screenshots and docs/img (docs/operators.md).
import { spawnSync } from 'node:child_process';
import type { Browser, Locator, Page } from 'playwright-core';
import { localTemporalPath } from '../../src/stack/tools';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { CampaignHosts } from '../../src/redis/campaign-hosts';
import { campaignStatusQuery, domainStatusQuery, cancelSignal, type DomainStatus } from '../../workflows/messages';
import { domainWorkflowId } from '../../workflows/ids';
import { generateSites } from '../web/test-web';
import { launchBrowser, screenshot } from '../support/browser';
import { formatDuration, hostStaticSummary } from '../../workflows/status-card';
import { createHarness, launch, sleep, type CampaignHandle, type Harness } from '../support/harness';

jest.setTimeout(600_000);

// Two plain hosts that finish (their workflows close as their frontier runs dry), one whose pages answer 503 with a long Retry-After (it
// stays backing-off for as long as the test looks), and one whose robots.txt
// asks for a Crawl-delay long enough that it is still crawling at the end.
const HOSTS = ['ui0.webui.test', 'ui1.webui.test', 'ui2.webui.test', 'ui3.webui.test'];
const [IDLE, , BUSY, SLOW] = HOSTS as [string, string, string, string];
const RETRY_AFTER_SEC = 600;
const SLOW_CRAWL_DELAY_SEC = 30;
/** The UI is a JS app on a shared 2-core machine: wait for things, generously. */
const UI_TIMEOUT_MS = 60_000;
const VISIBILITY_DEADLINE_MS = 180_000;

let h: Harness;
let browser: Browser;
let page: Page;
let campaign: CampaignHandle | undefined;

beforeAll(async () => {
  const ui = process.env.CRAWLER_TEST_UI_URL;
  if (!ui) throw new Error('CRAWLER_TEST_UI_URL is empty: the global setup must start Temporal with its Web UI');
  h = await createHarness('webui', { workers: 2 });
  for (const spec of generateSites({ count: HOSTS.length, pages: 8, fanOut: 3, crossPerPage: 0, hostPattern: (i) => HOSTS[i]!, seed: 5 })) {
    if (spec.host === BUSY) {
      h.web.addSite({
        ...spec,
        handler: (ctx) => {
          if (ctx.path === '/' || ctx.path === '/robots.txt' || ctx.path === '/sitemap.xml') return false;
          ctx.send(503, 'text/plain; charset=utf-8', 'busy\n', { 'retry-after': String(RETRY_AFTER_SEC) });
          return true;
        },
      });
    } else if (spec.host === SLOW) h.web.addSite({ ...spec, robots: { crawlDelaySec: SLOW_CRAWL_DELAY_SEC } });
    else h.web.addSite(spec);
  }
  browser = await launchBrowser((m) => process.stderr.write(`[browser] ${m}\n`));
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.setDefaultTimeout(UI_TIMEOUT_MS);
});

afterAll(async () => {
  // A failed test must not leave a campaign waiting for ten minutes of back-off.
  await campaign?.signal(cancelSignal, { reason: 'web-ui test over' }).catch(() => {});
  await browser?.close();
  await h?.close();
});

/** host[:port] as the crawler names hosts (and workflow IDs). */
const hostKey = (host: string) => new URL(h.web.url(host)).host;

async function domainStatus(campaignId: string, host: string): Promise<DomainStatus | null> {
  return h.client.workflow
    .getHandle(domainWorkflowId(campaignId, hostKey(host)))
    .query(domainStatusQuery)
    .catch(() => null);
}

/** Polls until `ok` holds; the crawl is real, so this is a wait for a state, never a fixed sleep. */
async function until<T>(what: string, get: () => Promise<T>, ok: (v: T) => boolean, deadlineMs = VISIBILITY_DEADLINE_MS): Promise<T> {
  const end = Date.now() + deadlineMs;
  let last: T = await get();
  while (!ok(last)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await sleep(500);
    last = await get();
  }
  return last;
}

const listUrl = (query: string) => `${process.env.CRAWLER_TEST_UI_URL}/namespaces/default/workflows?query=${encodeURIComponent(query)}`;
const rowLink = (id: string): Locator => page.getByRole('link', { name: id, exact: true });

/**
 * Opens the workflow list with a visibility query and waits until every
 * expected workflow ID is listed. Search attributes reach the visibility
 * store a little after the workflow sets them, and the list does not poll,
 * so a missing row means reload and look again.
 */
async function openList(query: string, expected: string[]): Promise<void> {
  const end = Date.now() + VISIBILITY_DEADLINE_MS;
  await page.goto(listUrl(query));
  for (;;) {
    // The UI echoes the query as a filter chip: proof it read the query parameter.
    await page.getByText('Workflow ID', { exact: true }).first().waitFor();
    try {
      for (const id of expected) await rowLink(id).waitFor({ timeout: 10_000 });
      return;
    } catch (err) {
      if (Date.now() > end) throw err;
      await page.reload();
    }
  }
}

test('an operator finds the campaign, the stuck host and its status in the Temporal Web UI', async () => {
  const seeds = HOSTS.map((host) => h.web.url(host, '/'));
  const startedAt = Date.now();
  campaign = await launch(h, {
    seeds,
    scope: { mode: 'any' },
    politeness: { minDelayMs: 100 },
  });
  const id = campaign.workflowId;
  const domainIds = HOSTS.map((host) => domainWorkflowId(id, hostKey(host)));

  // The crawl reaches the states the UI should show: finished hosts, a host
  // backing off after a 503 with Retry-After, a host paced by robots.txt.
  await until(
    `${BUSY} backing off`,
    () => domainStatus(id, BUSY),
    (s) => s?.state === 'backing-off' && s.lastStatus === 503,
  );
  await until(
    `${SLOW} paced by robots.txt`,
    () => domainStatus(id, SLOW),
    (s) => !!s?.delayReason.startsWith('robots.txt Crawl-delay'),
  );

  // Each host's record (what `crawler status` reads) follows its sessions, so
  // the stuck host shows first and the long sleeper next.
  const records = new CampaignHosts(h.redis, (await campaign.query(campaignStatusQuery)).campaignKey);
  const states = await until(
    'the records to show backing-off, sleeping and finished hosts',
    async () => Object.fromEntries((await records.page(0, 50)).map((x) => [x.host, x.state])),
    (m) => m[hostKey(BUSY)] === 'backing-off' && m[hostKey(SLOW)] === 'sleeping' && m[hostKey(IDLE)] === 'done',
  );
  expect(states[hostKey(BUSY)]).toBe('backing-off');
  const statusCmd = crawlerCommand(['status', id]);
  const statusOut = spawnSync(statusCmd.command, statusCmd.args, { encoding: 'utf8', env: process.env });
  expect(statusOut.status).toBe(0);
  const tableHosts = statusOut.stdout
    .trim()
    .split('\n')
    .slice(4)
    .map((l) => l.split('\t')[0]);
  expect(tableHosts.slice(0, 2)).toEqual([hostKey(BUSY), hostKey(SLOW)]);
  expect(new Set(tableHosts)).toEqual(new Set(HOSTS.map(hostKey)));

  // The Web UI's CrawlState filter finds the long sleeper too, and the stuck
  // host already publishes its page count.
  const sleepingIds = await until(
    'CrawlState = "sleeping" to list the slow host',
    async () => {
      const ids: string[] = [];
      for await (const wf of h.client.workflow.list({ query: `CrawlCampaign = "${id}" AND CrawlState = "sleeping"` })) ids.push(wf.workflowId);
      return ids;
    },
    (ids) => ids.length > 0,
  );
  expect(sleepingIds).toEqual([domainWorkflowId(id, hostKey(SLOW))]);
  // The same filter in the UI: the host a long robots.txt Crawl-delay keeps asleep.
  await openList(`CrawlCampaign = "${id}" AND CrawlState = "sleeping"`, [domainWorkflowId(id, hostKey(SLOW))]);
  for (const other of domainIds.filter((d) => d !== domainWorkflowId(id, hostKey(SLOW)))) expect(await rowLink(other).count()).toBe(0);
  await screenshot(page, 'web-ui-filter-sleeping', { docsName: 'web-ui-filter-sleeping.png' });
  const busyAttrs = (await h.client.workflow.getHandle(domainWorkflowId(id, hostKey(BUSY))).describe()).searchAttributes;
  expect((busyAttrs.CrawlPages as number[] | undefined)?.[0]).toBeGreaterThanOrEqual(1);

  // 1. Every host of the campaign, by its readable ID, with one query.
  const campaignQuery = `CrawlCampaign = "${id}"`;
  await openList(campaignQuery, [id, ...domainIds]);
  await page.getByText(campaignQuery).first().waitFor();
  for (const d of domainIds) expect(await rowLink(d).count()).toBe(1);
  await screenshot(page, 'web-ui-list', { docsName: 'web-ui-list.png' });

  // 2. The stuck host: filter on CrawlState.
  const stuckQuery = `${campaignQuery} AND CrawlState = "backing-off"`;
  const busyId = domainWorkflowId(id, hostKey(BUSY));
  await openList(stuckQuery, [busyId]);
  for (const other of domainIds.filter((d) => d !== busyId)) expect(await rowLink(other).count()).toBe(0);
  await screenshot(page, 'web-ui-filter-state', { docsName: 'web-ui-filter-state.png' });

  // 3. Its workflow page: host and state in the search attributes.
  await rowLink(busyId).click();
  await page
    .getByRole('heading', { name: busyId })
    .or(page.getByText(busyId, { exact: true }))
    .first()
    .waitFor();
  // Its status card (Temporal's user metadata): who it is, where it stands and why, read by the SDK and shown by the UI.
  const busy = h.client.workflow.getHandle(busyId);
  expect(await (await busy.describe()).staticSummary()).toBe(hostStaticSummary(hostKey(BUSY), id));
  const metadata = await busy.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  expect(metadata.currentDetails).toContain(`**State:** backing-off — HTTP 503 with Retry-After ${RETRY_AFTER_SEC} s`);
  expect(metadata.currentDetails).toMatch(/\*\*Frontier:\*\* [1-9]\d* URLs waiting/);
  // The UI renders each part as markdown in a frame of its own.
  await page.getByTestId('user-metadata-tab').click();
  await page
    .frameLocator('#user-metadata-summary')
    .getByText(hostStaticSummary(hostKey(BUSY), id))
    .waitFor();
  await page
    .frameLocator('#user-metadata-current-details')
    .getByText(new RegExp(`backing-off — HTTP 503 with Retry-After ${RETRY_AFTER_SEC} s`))
    .waitFor();
  await screenshot(page, 'web-ui-status-card', { docsName: 'web-ui-status-card.png' });
  // Its durable timer says why it sleeps, in the history the UI lists.
  const timers: string[] = [];
  for (const e of (await busy.fetchHistory()).events ?? []) {
    const summary = e.userMetadata?.summary;
    if (e.timerStartedEventAttributes && summary) timers.push(String(h.client.options.loadedDataConverter.payloadConverter.fromPayload(summary)));
  }
  const retryTimer = new RegExp(`^HTTP 503 with Retry-After ${RETRY_AFTER_SEC} s .* — sleeping ${formatDuration(RETRY_AFTER_SEC * 1_000)}$`);
  expect(timers.some((t) => retryTimer.test(t))).toBe(true);
  await page.getByTestId('history-tab').click();
  const timerRow = page.locator('tr[data-testid="event-summary-row"]', { hasText: new RegExp(retryTimer.source.slice(1, -1)) }).first();
  await timerRow.click();
  await page
    .getByText(/retry 1\/3 — sleeping 10 min/)
    .last()
    .waitFor();
  await screenshot(page, 'web-ui-timer-summary', { docsName: 'web-ui-timer-summary.png' });

  await page.getByRole('tab', { name: 'Search Attributes' }).click();
  const attributesBlock = page.locator('.cm-content').filter({ hasText: 'CrawlState' });
  await attributesBlock.waitFor();
  const attributes = JSON.parse(await attributesBlock.innerText()) as Record<string, unknown>;
  expect(attributes).toMatchObject({ CrawlCampaign: id, CrawlHost: hostKey(BUSY), CrawlState: 'backing-off' });
  await screenshot(page, 'web-ui-domain', { docsName: 'web-ui-domain.png' });

  // 4. The domainStatus query from the Queries tab: why it waits, and until when.
  await page.getByRole('tab', { name: 'Queries' }).click();
  const querySelect = page.getByTestId('query-select');
  await page.getByTestId('query-select-button').waitFor();
  if ((await querySelect.inputValue()) !== 'domainStatus') {
    await page.getByTestId('query-select-button').click();
    await page.getByRole('option', { name: 'domainStatus' }).click();
  }
  await page.getByRole('button', { name: /Run Query|Refresh Query/ }).click();
  const result = page.getByRole('textbox', { name: 'Query Result' });
  await result.filter({ hasText: '"frontier"' }).waitFor();
  const shown = JSON.parse(await result.innerText()) as DomainStatus;
  expect(shown).toMatchObject({ campaignId: id, host: hostKey(BUSY), state: 'backing-off', paused: false, lastStatus: 503 });
  expect(shown.delayReason).toContain(`HTTP 503 with Retry-After ${RETRY_AFTER_SEC} s`);
  expect(new URL(shown.lastUrl!).host).toBe(hostKey(BUSY));
  expect(Date.parse(shown.nextWakeAt!)).toBeGreaterThan(startedAt);
  expect(shown.frontier).toBeGreaterThan(0);
  // The page shows what the workflow answers (the host is parked, so nothing moves meanwhile).
  const direct = await domainStatus(id, BUSY);
  expect(shown.stats).toEqual(direct!.stats);
  expect(shown.nextWakeAt).toBe(direct!.nextWakeAt);
  await screenshot(page, 'web-ui-query', { docsName: 'web-ui-query.png' });
  // The same query from a shell, as docs/operators.md shows it.
  const cli = spawnSync(localTemporalPath(), ['workflow', 'query', '--address', process.env.TEMPORAL_ADDRESS!, '--workflow-id', busyId, '--type', 'domainStatus'], {
    encoding: 'utf8',
  });
  expect(cli.status).toBe(0);
  expect(cli.stdout).toContain('backing-off');
  expect(cli.stdout).toContain(hostKey(BUSY));

  // Done looking: the operator cancels, and the campaign closes with a summary.
  await campaign.signal(cancelSignal, { reason: 'web-ui test over' });
  const summary = await campaign.result();
  expect(summary.status).toBe('cancelled');
  campaign = undefined;
});
