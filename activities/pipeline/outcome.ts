// What became of a URL, as constants: call sites name an outcome or an
// error code through these, never as a bare string, so a typo is a compile
// error. The written strings are the index's (tests, reports and seals read
// them) and never change.
import type { IndexOutcome } from '../../src/storage/index-writer';
import type { CountedAs } from '../../src/stats/counters';

export type { IndexOutcome } from '../../src/storage/index-writer';

export const OUTCOME = {
  fetched: 'fetched',
  duplicate: 'duplicate',
  redirect: 'redirect',
  sitemap: 'sitemap',
  httpError: 'http-error',
  error: 'error',
  refused: 'refused',
  robotsDisallowed: 'robots-disallowed',
  robotsUnavailable: 'robots-unavailable',
  hostBudgetExhausted: 'host-budget-exhausted',
  budgetExhausted: 'budget-exhausted',
  skippedContentType: 'skipped-content-type',
  notModified: 'not-modified',
  gone: 'gone',
  parseTimeout: 'parse-timeout',
  feed: 'feed',
  embedBudgetExhausted: 'embed-budget-exhausted',
} as const satisfies Record<string, IndexOutcome>;

// Every outcome of the union has its constant (this line fails to compile otherwise).
const everyOutcome: Exclude<IndexOutcome, (typeof OUTCOME)[keyof typeof OUTCOME]> extends never ? true : never = true;
void everyOutcome;

/**
 * How a URL counts in its host's stats (Frontier.commit's stat field): a
 * page fetched, a URL failed, or neither; an embed in the embed classes, so
 * page budgets never count it.
 */
export type Counted = CountedAs;

/** The error codes the page pipeline writes itself (the HTTP layer's are FetchErrorCode, robots.txt's its own). */
export const PAGE_CODE = {
  /** Processing kept failing (or killing its worker) for a reason other than the network. */
  internalError: 'INTERNAL_ERROR',
  hostBudget: 'HOST_BUDGET',
  pageBudget: 'PAGE_BUDGET',
  embedBudget: 'EMBED_BUDGET',
  tooManyRedirects: 'TOO_MANY_REDIRECTS',
  handlerError: 'HANDLER_ERROR',
  addressRefused: 'ADDRESS_REFUSED',
} as const;

/** The code of a final HTTP error response. */
export function httpCode(status: number): `HTTP_${number}` {
  return `HTTP_${status}`;
}
