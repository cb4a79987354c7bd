import { campaignCard, campaignStaticDetails, campaignStaticSummary, formatDuration, hostCard, sleepSummary } from '../../workflows/status-card';
import type { CampaignStatus, DomainStatus } from '../../workflows/messages';

const host = (over: Partial<DomainStatus> = {}): DomainStatus => ({
  campaignId: 'c1',
  host: 'a.test',
  state: 'crawling',
  paused: false,
  stats: { fetched: 12, failed: 2, skipped: 1, bytes: 9_000 },
  delayMs: 1_000,
  delayReason: 'minimum delay 1000 ms',
  lastUrl: 'http://a.test/x',
  lastStatus: 200,
  nextWakeAt: null,
  frontier: 7,
  configVersion: 1,
  sessions: 2,
  pages: 15,
  ...over,
});

test.each([
  [0, '0 ms'],
  [850, '850 ms'],
  [1_000, '1 s'],
  [30_000, '30 s'],
  [125_000, '2 min 5 s'],
  [3 * 3_600_000 + 4 * 60_000 + 9_000, '3 h 4 min'],
  [2 * 86_400_000 + 5_000, '2 d'],
  [2 * 86_400_000 + 3 * 3_600_000, '2 d 3 h'],
])('formatDuration(%d) = %s', (ms, text) => {
  expect(formatDuration(ms)).toBe(text);
});

test('a timer is named after the reason of its wait', () => {
  expect(sleepSummary('robots.txt Crawl-delay 30 s', 30_000)).toBe('robots.txt Crawl-delay 30 s — sleeping 30 s');
  expect(sleepSummary('Retry-After 120 s', 120_000)).toBe('Retry-After 120 s — sleeping 2 min');
  expect(sleepSummary('', 5_000)).toBe('waiting — sleeping 5 s');
  expect(sleepSummary('x'.repeat(1_000), 5_000).length).toBeLessThanOrEqual(400);
});

test("a host's card says its state and why, pages, errors, frontier and next wake-up", () => {
  const crawling = hostCard(host());
  expect(crawling).toContain('**State:** crawling — one request every 1 s (minimum delay 1000 ms)');
  expect(crawling).toContain('12 fetched, 2 errors, 1 skipped');
  expect(crawling).toContain('**Frontier:** 7 URLs waiting');
  expect(crawling).toContain('http://a.test/x (200)');
  const asleep = hostCard(host({ state: 'sleeping', delayReason: 'robots.txt Crawl-delay 30 s', nextWakeAt: '2026-11-24T05:00:00.000Z' }));
  expect(asleep).toContain('**State:** sleeping — robots.txt Crawl-delay 30 s');
  expect(asleep).toContain('**Next wake-up:** 2026-11-24T05:00:00.000Z');
  expect(hostCard(host({ paused: true }))).toContain('**State:** paused');
  expect(hostCard(host({ paused: true, state: 'done' }))).toContain('**State:** done');
});

test("the campaign's card and static metadata", () => {
  const status: CampaignStatus = {
    campaignId: 'c1',
    campaignKey: 'c1.abc',
    status: 'running',
    paused: true,
    startedAt: '2026-11-24T04:00:00.000Z',
    totals: { fetched: 100, failed: 3, skipped: 4, bytes: 1, hosts: 9, activeHosts: 5, readyHosts: 2, frontier: 40 },
    updatedAt: '2026-11-24T04:01:00.000Z',
    problems: 1,
    steering: { configVersion: 2, minDelayMs: 500, budgets: { maxPages: null, maxDepth: null }, maxActiveHosts: null, pausedHosts: 1 },
  };
  const card = campaignCard(status, 1);
  expect(card).toContain('**Status:** running (paused)');
  expect(card).toContain('**Hosts:** 9 seen, 5 active, 2 waiting for a slot, 1 paused');
  expect(card).toContain('**Frontier:** 40 URLs waiting');
  // An exact seen set says nothing of it; a Bloom filter says what it is expected to have skipped.
  expect(card).not.toContain('Seen set');
  expect(campaignCard({ ...status, totals: { ...status.totals, seenFilter: { rate: 0.01, expectedSkipped: 4.26 } } }, 1)).toContain(
    '**Seen set:** Bloom filter, expected URLs skipped 4.3 (rate 0.01)',
  );
  expect(campaignStaticSummary({ campaignId: 'c1', seeds: ['http://a.test/', 'http://b.test/'], scope: { mode: 'same-domain' } })).toBe(
    'Crawl campaign c1: http://a.test/ (+1 seeds), scope same-domain',
  );
  expect(campaignStaticSummary({ campaignId: 'c2', seedsFile: '/data/seeds.txt.gz' })).toBe('Crawl campaign c2: /data/seeds.txt.gz, scope same-host');
  const details = campaignStaticDetails({ seeds: ['http://a.test/'], budgets: { maxPages: 50 }, politeness: { minDelayMs: 250 } });
  expect(details).toContain('pages 50');
  expect(details).toContain('delay ≥ 250 ms');
});
