// A page's exchange as the WARC writer takes it, for tests of the writers and the spool: page `i` of
// site.test, fetched at a second of its own, with a body of `bodyBytes` bytes.
import type { WarcExchange } from '../../src/storage/warc-writer';

export function pageExchange(i: number, bodyBytes = 200): WarcExchange {
  return {
    url: `http://site.test/p${i}`,
    fetchedAt: new Date(Date.UTC(2025, 0, 1, 0, 0, i)),
    request: { method: 'GET', headers: { Accept: '*/*' } },
    response: { status: 200, headers: { 'Content-Type': 'text/html' }, body: Buffer.alloc(bodyBytes, `page ${i} `) },
  };
}
