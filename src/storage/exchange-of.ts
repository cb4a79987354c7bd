// A fetched response as the WARC writer takes it: the request (its method,
// its body, the header names whose values are secrets) and the response as
// received. The login's requests and a rendered page's requests are stored
// this way; a page's own exchange adds payload digests and revisits
// (activities/pipeline/store-stage.ts).
import type { FetchResult } from '../http/http-types';
import type { WarcExchange } from './warc-writer';

export function exchangeOf(
  res: FetchResult,
  o: { url: string; metadata: Record<string, string | string[]>; keepSecrets: boolean; secretHeaders?: readonly string[] },
): WarcExchange {
  const u = new URL(o.url);
  return {
    url: o.url,
    fetchedAt: new Date(res.startedAt),
    ip: res.remoteAddress ?? undefined,
    request: {
      method: res.method ?? 'GET',
      headers: res.requestHeaders,
      path: `${u.pathname}${u.search}`,
      secretHeaders: [...(res.secretHeaders ?? []), ...(o.secretHeaders ?? [])],
      ...(res.requestBody ? { body: res.requestBody } : {}),
    },
    response: { status: res.status, statusText: res.statusText, headers: res.headers, body: res.body, truncated: res.truncated },
    metadata: { fetchTimeMs: String(res.endedAt - res.startedAt), ...o.metadata },
    keepSecrets: o.keepSecrets,
  };
}
