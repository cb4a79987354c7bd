// The coarse state operators filter on in the Web UI (CrawlState) and see in
// `crawler status`: it must say sleeping / backing-off when that is what a
// host does, without flapping on every page of a normal crawl.
import { LONG_SLEEP_MS, operatorState, type OperatorState } from '../../workflows/host-state';
import type { DomainState } from '../../workflows/messages';

/** The published states over a sequence of (internal state, sleep) steps, starting from `starting`. */
function published(steps: [DomainState, number][]): OperatorState[] {
  let shown: OperatorState | null = 'starting';
  const out: OperatorState[] = [];
  for (const [next, ms] of steps) {
    const s = operatorState(next, ms, shown);
    if (s !== shown) out.push(s);
    shown = s;
  }
  return out;
}

test('a crawl with a short delay is crawling throughout: one change, not two per page', () => {
  const page: [DomainState, number][] = [['crawling', 0], ['sleeping', 1_000]];
  expect(published([['robots', 0], ...page, ...page, ...page])).toEqual(['crawling']);
});

test('a long crawl-delay shows as sleeping, and the brief step between two sleeps does not flap', () => {
  const page: [DomainState, number][] = [['crawling', 0], ['sleeping', 60_000]];
  expect(published([['robots', 0], ...page, ...page, ...page])).toEqual(['crawling', 'sleeping']);
});

test('the threshold: a sleep of exactly LONG_SLEEP_MS is sleeping, one ms less is crawling', () => {
  expect(operatorState('sleeping', LONG_SLEEP_MS, 'crawling')).toBe('sleeping');
  expect(operatorState('sleeping', LONG_SLEEP_MS - 1, 'crawling')).toBe('crawling');
});

test('back-off, pause, idle and done are shown as themselves and end a sleeping spell', () => {
  expect(published([['crawling', 0], ['backing-off', 2_000], ['crawling', 0], ['sleeping', 500]])).toEqual(['crawling', 'backing-off', 'crawling']);
  expect(published([['sleeping', 30_000], ['paused', 0], ['crawling', 0], ['idle', 0], ['done', 0]])).toEqual([
    'sleeping',
    'paused',
    'crawling',
    'idle',
    'done',
  ]);
});
