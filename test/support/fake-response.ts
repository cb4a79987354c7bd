// A response as the HTTP client hands it out (with the DOM a browser
// rendered, when a test gives one), for the page pipeline's unit tests: the
// stages take plain data, so a fetch is a value, not a server.
import type { PageResponse } from '../../src/browser/page-fetcher';

export function fakeResponse(url: string, over: Partial<PageResponse> & { html?: string } = {}): PageResponse {
  const { html, ...rest } = over;
  const body = Buffer.from(html ?? '');
  return {
    url,
    finalUrl: url,
    status: 200,
    statusText: 'OK',
    headers: html !== undefined ? { 'content-type': 'text/html; charset=utf-8' } : {},
    body,
    rawBytes: body.length,
    truncated: null,
    contentEncoding: null,
    redirects: [],
    remoteAddress: '127.0.0.1',
    requestHeaders: { 'user-agent': 'test' },
    httpVersion: '1.1',
    startedAt: Date.UTC(2026, 0, 1),
    endedAt: Date.UTC(2026, 0, 1) + 25,
    ...rest,
  };
}
