// What an operator sees of a host: the coarse state published as the
// CrawlState search attribute and reported to the campaign. Pure, so the
// domain workflow can use it and tests can pin it down.
import type { DomainState } from './messages';

/**
 * A sleep at least this long shows as `sleeping`: a long robots.txt
 * Crawl-delay, or another campaign holding the shared host clock. Shorter
 * sleeps between pages are part of `crawling`; publishing them would change
 * the attribute (and signal the campaign) twice per page.
 */
export const LONG_SLEEP_MS = 10_000;

export type OperatorState = 'starting' | 'crawling' | 'sleeping' | 'backing-off' | 'paused' | 'idle' | 'done';

/**
 * The operator state for the domain's next internal state. `sleepMs` is the
 * length of the sleep being entered (for `sleeping` / `backing-off`);
 * `shown` is what is published now. The brief step between two long sleeps
 * keeps showing `sleeping`, so a host with a one-minute Crawl-delay does not
 * flap between states on every page.
 */
export function operatorState(next: DomainState, sleepMs: number, shown: OperatorState | null): OperatorState {
  switch (next) {
    case 'sleeping':
      return sleepMs >= LONG_SLEEP_MS ? 'sleeping' : 'crawling';
    case 'crawling':
    case 'robots':
      return shown === 'sleeping' ? 'sleeping' : 'crawling';
    default:
      return next;
  }
}
