// How a response is got: a Fetcher takes one request and gives back the
// response or a typed failure, never throwing for what the web did (only
// for a cancellation or a bug). The HTTP fetcher is the first; the cookie
// jar wraps it, and the page pipeline's browser fetchers wrap those
// (src/browser/page-fetcher.ts), so everything after the fetch stays one
// code path. A layer above may send more with a request and get more back
// (the page pipeline: the frontier entry, a rendered DOM): `Q` and `R`.
import { isFetchError, type FetchError } from './fetch-error';
import type { FetchResult, HttpClient, HttpMethod } from './http-types';

export interface FetchRequest {
  url: string;
  /** Extra request headers (a revisit's If-None-Match / If-Modified-Since). */
  headers?: Record<string, string>;
  /** Default GET; POST is a handler's login form (activities/login.ts) or a rendered page's script (src/browser/page-routes.ts), never a page. */
  method?: HttpMethod;
  body?: Buffer;
}

export interface FetchContext {
  /** Cancels the request (the worker is going away). */
  signal: AbortSignal;
  /** Called just before the request is sent (FetchOptions.beforeSend): what it throws, the fetch throws, nothing sent. */
  beforeSend?: () => Promise<void>;
  /** The longest the request may wait for its address's slot (FetchOptions.maxSlotWaitMs). */
  maxSlotWaitMs?: number;
}

/** A response, or the typed failure of a request that got none (its `code` is stable, `retryable` its verdict). */
export type FetchOutcome<R extends FetchResult = FetchResult> = { ok: true; response: R } | { ok: false; failure: FetchError };

export interface Fetcher<Q extends FetchRequest = FetchRequest, R extends FetchResult = FetchResult> {
  fetch(request: Q, ctx: FetchContext): Promise<FetchOutcome<R>>;
}

/**
 * The campaign's HTTP client as a Fetcher. Redirects are never followed
 * inside a fetch: each hop is its own frontier entry, fetched under its
 * host's clock and archived under its own URL (docs/crawling-rules.md).
 * A cancelled request rethrows: nothing happened to the URL.
 */
export function httpFetcher(client: HttpClient): Fetcher {
  return {
    async fetch(request, ctx) {
      try {
        const response = await client.fetch(request.url, {
          followRedirect: () => false,
          signal: ctx.signal,
          headers: request.headers,
          ...(request.method ? { method: request.method } : {}),
          ...(request.body ? { body: request.body } : {}),
          ...(ctx.beforeSend ? { beforeSend: ctx.beforeSend } : {}),
          ...(ctx.maxSlotWaitMs !== undefined ? { maxSlotWaitMs: ctx.maxSlotWaitMs } : {}),
        });
        return { ok: true, response };
      } catch (err) {
        if (!isFetchError(err) || ctx.signal.aborted) throw err;
        return { ok: false, failure: err };
      }
    },
  };
}
