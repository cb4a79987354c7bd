// Frontier members in the compact form (layout 2, issue 40 part 4): what the
// frontier's host says is left out, a same-origin referrer keeps its path, and
// every field comes back as it went in; layout 1 writes what older releases
// wrote, and those members still decode.
import { decodeEntry, encodeEntry, type FrontierEntry } from '../../src/redis/frontier';
import { impliedHops } from '../../src/url/hop-path';

const HOST = 'www.example.test';
const page = `https://${HOST}/articles/2026/11/section-4/page-17-of-the-bench-seed-list.html?x=1`;
const path = page.slice(`https://${HOST}`.length);

test('a seed costs its path and 2 bytes, a link its path, its referrer path and 3 or 4 more', () => {
  const seed = encodeEntry({ url: page, depth: 0, referrer: null }, HOST, 2);
  expect(seed.length).toBe(path.length + 2);
  expect(decodeEntry(seed, HOST)).toEqual({ url: page, depth: 0, referrer: null });
  const referrer = `https://${HOST}/articles/2026/11/`;
  const link: FrontierEntry = { url: page, depth: 3, referrer, hops: impliedHops(3) };
  const member = encodeEntry(link, HOST, 2);
  expect(member.length).toBe(path.length + '/articles/2026/11/'.length + 3);
  // The implied hop path is left out and read back as absent (readers take impliedHops); the referrer comes back whole.
  expect(decodeEntry(member, HOST)).toEqual({ url: page, depth: 3, referrer });
  // Read back and written again, the entry is the same member.
  expect(encodeEntry(decodeEntry(member, HOST), HOST, 2)).toBe(member);
  // The same entry in layout 1 is the older form, the host and referrer URL spelled out.
  expect(encodeEntry(link, HOST, 1)).toBe(`3\t${page}\t${referrer}\t\t\t\tLLL`);
});

test('scheme, port, kind, depth, redirects, label, hop path and referrer of any origin come back', () => {
  const host = 'a.test:8080';
  const entries: FrontierEntry[] = [
    { url: `http://${host}/`, depth: 0, referrer: null },
    { url: `http://${host}/sitemap.xml`, depth: 0, referrer: `http://${host}/robots.txt`, kind: 'sitemap', hops: 'P' },
    { url: `https://${host}/s-1.xml`, depth: 0, referrer: `https://${host}/robots.txt`, kind: 'sitemap-child', hops: 'PL' },
    { url: `http://${host}/feed`, depth: 12, referrer: null, kind: 'feed', label: 'news', hops: '3+LLLL' },
    { url: `https://${host}/x.css`, depth: 1234, referrer: `https://other.test/page?a=1`, kind: 'embed', redirects: 2, hops: 'LRRE' },
    { url: `http://${host}/p?q=%09&r`, depth: 7, referrer: `https://${host}/same-host-other-scheme`, label: 'detail' },
    { url: `http://${host}/q`, depth: 1, referrer: `http://a.test:80801/not-the-same-port` },
  ];
  for (const e of entries) {
    const m = encodeEntry(e, host, 2);
    expect(m.startsWith(`http://${host}`) || m.includes(`\thttp://${host}/`)).toBe(false);
    expect(decodeEntry(m, host)).toEqual(e);
    expect(decodeEntry(encodeEntry(e, host, 1), host)).toEqual(e);
  }
});

test('a URL of another host than the frontier keeps the older form, and older members decode', () => {
  const e: FrontierEntry = { url: 'http://b.test/p', depth: 1, referrer: 'http://c.test/', label: 'l' };
  const m = encodeEntry(e, 'a.test', 2);
  expect(m).toBe('1\thttp://b.test/p\thttp://c.test/\t\t\tl');
  expect(decodeEntry(m, 'a.test')).toEqual(e);
  expect(decodeEntry('0\thttp://a.test/', 'a.test')).toEqual({ url: 'http://a.test/', depth: 0, referrer: null });
  // The same host with another port is another host.
  expect(encodeEntry({ url: 'http://a.test:81/', depth: 0, referrer: null }, 'a.test', 2)).toBe('0\thttp://a.test:81/\t');
});
