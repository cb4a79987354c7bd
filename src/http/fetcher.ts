// How the page pipeline gets a response: a Fetcher takes one request and
// gives back the response or a typed failure, never throwing for what the
// web did (only for a cancellation or a bug). The HTTP fetcher is the first;
// a browser fetcher plugs in beside it, and everything after the fetch stays
// one code path.
import { isFetchError, type FetchError } from './fetch-error';
import type { FetchResult, HttpClient, HttpMethod } from './http-types';

export interface FetchRequest {
  url: string;
  /** Extra request headers (a revisit's If-None-Match / If-Modified-Since). */
  headers?: Record<string, string>;
  /** Default GET; POST is a handler's login form (activities/login.ts) or a rendered page's script (src/browser/page-routes.ts), never a page. */
  method?: HttpMethod;
  body?: Buffer;
  /** What the request is for: the frontier entry's kind (`page`, `embed`, `sitemap`…); the browser fetcher renders pages only. */
  kind?: string;
  /** The frontier entry's label and depth: the browser fetcher picks and calls the handler's render hook with them. */
  label?: string | null;
  depth?: number;
}

export interface FetchContext {
  /** Cancels the request (the worker is going away). */
  signal: AbortSignal;
}

/** A response, or the typed failure of a request that got none (its `code` is stable, `retryable` its verdict). */
export type FetchOutcome = { ok: true; response: FetchResult } | { ok: false; failure: FetchError };

export interface Fetcher {
  fetch(request: FetchRequest, ctx: FetchContext): Promise<FetchOutcome>;
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
        });
        return { ok: true, response };
      } catch (err) {
        if (!isFetchError(err) || ctx.signal.aborted) throw err;
        return { ok: false, failure: err };
      }
    },
  };
}
