import { gzipSync } from 'node:zlib';
import {
  DEFAULT_MAX_SITEMAP_BYTES,
  DEFAULT_MAX_SITEMAP_URLS,
  MAX_SITEMAP_ERRORS,
  parseSitemap,
  sitemapMayList,
  type ParseSitemapOptions,
  type SitemapParseResult,
} from '../../src/sitemap/sitemap';
import { sitemapCandidatesOf, sitemapSeeds } from '../../activities/discovery';
import { resolveCampaignSettings, type SitemapMode } from '../../src/config/campaign';
import { pseudoRandomBytes } from '../support/pseudo-random';

const SM_URL = 'https://example.com/sitemap.xml';
const NS = 'http://www.sitemaps.org/schemas/sitemap/0.9';

function parse(body: string | Uint8Array, opts: Partial<ParseSitemapOptions> = {}): SitemapParseResult {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return parseSitemap(bytes, { url: SM_URL, ...opts });
}

function urlset(entries: string[], attrs = ` xmlns="${NS}"`): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset${attrs}>\n${entries.join('\n')}\n</urlset>\n`;
}

function urlEntry(loc: string): string {
  return `<url><loc>${loc}</loc></url>`;
}

function manyUrls(n: number): string {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(urlEntry(`https://example.com/p/${i}`));
  return urlset(parts);
}

function locs(r: SitemapParseResult): string[] {
  return r.urls.map((u) => u.loc);
}

describe('constants', () => {
  it('match the sitemaps.org limits', () => {
    expect(DEFAULT_MAX_SITEMAP_BYTES).toBe(52_428_800);
    expect(DEFAULT_MAX_SITEMAP_URLS).toBe(50_000);
    expect(MAX_SITEMAP_ERRORS).toBeGreaterThan(0);
  });
});

describe('parseSitemap: urlset', () => {
  it('parses loc, lastmod, priority and changefreq', () => {
    const r = parse(
      urlset([
        '<url><loc>https://example.com/</loc><lastmod>2024-05-01</lastmod><changefreq>daily</changefreq><priority>0.8</priority></url>',
        '<url><loc>https://example.com/about</loc></url>',
      ]),
    );
    expect(r).toEqual({
      kind: 'urlset',
      urls: [{ loc: 'https://example.com/', lastmod: '2024-05-01', priority: 0.8, changefreq: 'daily' }, { loc: 'https://example.com/about' }],
      sitemaps: [],
      truncated: false,
      errors: [],
    });
  });

  it('accepts a urlset without namespace or XML declaration', () => {
    const r = parse('<urlset><url><loc>http://example.com/a</loc></url></urlset>');
    expect(r.kind).toBe('urlset');
    expect(locs(r)).toEqual(['http://example.com/a']);
    expect(r.errors).toEqual([]);
  });

  it('returns an empty urlset without errors', () => {
    const r = parse(urlset([]));
    expect(r).toMatchObject({ kind: 'urlset', urls: [], truncated: false, errors: [] });
  });

  it('matches local names whatever the namespace prefix', () => {
    const body =
      `<?xml version="1.0"?><sm:urlset xmlns:sm="${NS}">` +
      '<sm:url><sm:loc>https://example.com/ns</sm:loc><sm:lastmod>2024-01-02T03:04:05+00:00</sm:lastmod></sm:url>' +
      '</sm:urlset>';
    const r = parse(body);
    expect(r.kind).toBe('urlset');
    expect(r.urls).toEqual([{ loc: 'https://example.com/ns', lastmod: '2024-01-02T03:04:05+00:00' }]);
    expect(r.errors).toEqual([]);
  });

  it('tolerates an unbound namespace prefix', () => {
    const r = parse('<x:urlset><x:url><x:loc>https://example.com/u</x:loc></x:url></x:urlset>');
    expect(r.kind).toBe('urlset');
    expect(locs(r)).toEqual(['https://example.com/u']);
    expect(r.errors).toEqual([]);
  });

  it('ignores extension elements such as image:loc and xhtml:link', () => {
    const body = urlset(
      [
        '<url>',
        '  <loc>https://example.com/page</loc>',
        '  <image:image><image:loc>https://cdn.example.com/img.jpg</image:loc></image:image>',
        '  <xhtml:link rel="alternate" hreflang="de" href="https://example.com/de/page"/>',
        '  <video:video><video:content_loc>https://cdn.example.com/v.mp4</video:content_loc></video:video>',
        '</url>',
        '<url><image:image><image:loc>https://cdn.example.com/only-image.jpg</image:loc></image:image></url>',
      ],
      ` xmlns="${NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"` +
        ' xmlns:xhtml="http://www.w3.org/1999/xhtml" xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"',
    );
    const r = parse(body);
    expect(locs(r)).toEqual(['https://example.com/page']);
    expect(r.errors).toEqual(['<url> without <loc>']);
  });

  it('reads CDATA locs and trims surrounding whitespace', () => {
    const r = parse(
      urlset([
        '<url><loc><![CDATA[https://example.com/c?a=1&b=2]]></loc></url>',
        '<url><loc>\n   <![CDATA[ https://example.com/spaced ]]>\n </loc></url>',
        '<url><loc>\n\t https://example.com/tabbed \r\n</loc></url>',
        '<url><loc>https://example.com/mixed?<![CDATA[x=1&y=2]]>&amp;z=3</loc></url>',
      ]),
    );
    expect(locs(r)).toEqual(['https://example.com/c?a=1&b=2', 'https://example.com/spaced', 'https://example.com/tabbed', 'https://example.com/mixed?x=1&y=2&z=3']);
    expect(r.errors).toEqual([]);
  });

  it('decodes entities in loc', () => {
    const r = parse(urlset([urlEntry('https://example.com/q?a=1&amp;b=&#50;&amp;c=&quot;')]));
    expect(locs(r)).toEqual(['https://example.com/q?a=1&b=2&c="']);
  });

  it('keeps a loc with an unescaped & (a common sitemap bug) and records the error', () => {
    const r = parse(urlset([urlEntry('https://example.com/q?a=1&b=2'), urlEntry('https://example.com/next')]));
    expect(locs(r)).toEqual(['https://example.com/q?a=1&b=2', 'https://example.com/next']);
    expect(r.errors.length).toBeGreaterThan(0);
    expect(r.errors).toEqual(['XML: 1 unescaped "&" read as "&amp;"']);
  });

  it('escapes only bare ampersands, leaving references and CDATA alone', () => {
    const r = parse(urlset([urlEntry('https://example.com/q?a=1&b=2&amp;c=3&#38;d=4&e'), '<url><loc><![CDATA[https://example.com/cdata?x=1&amp;y=2]]></loc></url>']));
    expect(locs(r)).toEqual(['https://example.com/q?a=1&b=2&c=3&d=4&e', 'https://example.com/cdata?x=1&amp;y=2']);
    expect(r.errors).toEqual(['XML: 2 unescaped "&" read as "&amp;"']);
  });

  it('skips relative and non-http(s) locs with an error each', () => {
    const r = parse(
      urlset([
        urlEntry('/relative/path'),
        urlEntry('page.html'),
        urlEntry('ftp://example.com/file'),
        urlEntry('mailto:someone@example.com'),
        urlEntry('http:no-slashes.example.com'),
        urlEntry('//example.com/protocol-relative'),
        urlEntry('   '),
        urlEntry('https://'),
        urlEntry('HTTPS://EXAMPLE.COM/Upper'),
      ]),
    );
    expect(locs(r)).toEqual(['HTTPS://EXAMPLE.COM/Upper']);
    expect(r.errors).toHaveLength(8);
    for (const e of r.errors) expect(e).toMatch(/^<loc> is not an absolute http\(s\) URL/);
    expect(r.errors[0]).toContain('/relative/path');
  });

  it('returns locs as written, without normalising', () => {
    const r = parse(urlset([urlEntry('https://Example.com:443/a/../b?utm_source=x#frag')]));
    expect(locs(r)).toEqual(['https://Example.com:443/a/../b?utm_source=x#frag']);
  });

  it('records <url> without <loc> and keeps going', () => {
    const r = parse(urlset(['<url><lastmod>2024-01-01</lastmod></url>', urlEntry('https://example.com/ok')]));
    expect(locs(r)).toEqual(['https://example.com/ok']);
    expect(r.errors).toEqual(['<url> without <loc>']);
  });

  it('uses the first <loc> when an entry has several', () => {
    const r = parse(urlset(['<url><loc>https://example.com/1</loc><loc>https://example.com/2</loc></url>']));
    expect(locs(r)).toEqual(['https://example.com/1']);
  });

  it('ignores a <loc> that is not inside <url>', () => {
    const r = parse(urlset(['<loc>https://example.com/stray</loc>', urlEntry('https://example.com/ok')]));
    expect(locs(r)).toEqual(['https://example.com/ok']);
  });

  it('ignores <sitemap> entries inside a urlset', () => {
    const r = parse(urlset(['<sitemap><loc>https://example.com/s.xml</loc></sitemap>']));
    expect(r).toMatchObject({ kind: 'urlset', urls: [], sitemaps: [] });
  });

  it('accepts W3C datetime lastmod forms and drops others with an error', () => {
    const ok = ['2024', '2024-05', '2024-05-01', '2024-05-01T10:20Z', '2024-05-01T10:20:30+02:00', '2024-05-01T10:20:30.123Z', '2024-05-01 10:20:30', '2024-05-01T10:20:30'];
    const bad = ['yesterday', '05/01/2024', '', '2024-5-1'];
    const entries = [...ok, ...bad].map((d, i) => `<url><loc>https://example.com/${i}</loc><lastmod> ${d} </lastmod></url>`);
    const r = parse(urlset(entries));
    expect(r.urls.map((u) => u.lastmod)).toEqual([...ok, ...bad.map(() => undefined)]);
    expect(r.errors).toHaveLength(bad.length);
    expect(r.errors[0]).toMatch(/lastmod.*yesterday/);
  });

  it('keeps priorities from 0.0 to 1.0 and drops others with an error', () => {
    const values = ['0.0', '0.5', '1.0', '1', ' .3 ', '1.1', '-0.1', 'high', ''];
    const entries = values.map((p, i) => `<url><loc>https://example.com/${i}</loc><priority>${p}</priority></url>`);
    const r = parse(urlset(entries));
    expect(r.urls.map((u) => u.priority)).toEqual([0, 0.5, 1, 1, 0.3, undefined, undefined, undefined, undefined]);
    expect(r.errors).toHaveLength(4);
  });

  it('ignores anything after the root element', () => {
    const r = parse(urlset([urlEntry('https://example.com/a')]) + '<urlset><url><loc>https://evil.example/</loc></url></urlset>');
    expect(locs(r)).toEqual(['https://example.com/a']);
    expect(r.errors).toEqual([]);
  });
});

describe('parseSitemap: sitemapindex', () => {
  it('lists child sitemaps', () => {
    const body =
      `<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="${NS}">` +
      '<sitemap><loc>https://example.com/sitemap-1.xml.gz</loc><lastmod>2024-01-01</lastmod></sitemap>' +
      '<sitemap><loc> https://example.com/sitemap-2.xml </loc></sitemap>' +
      '<sitemap><loc>/relative.xml</loc></sitemap>' +
      '<url><loc>https://example.com/not-a-sitemap</loc></url>' +
      '</sitemapindex>';
    const r = parse(body);
    expect(r.kind).toBe('sitemapindex');
    expect(r.sitemaps).toEqual(['https://example.com/sitemap-1.xml.gz', 'https://example.com/sitemap-2.xml']);
    expect(r.urls).toEqual([]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toContain('/relative.xml');
  });

  it('matches a prefixed sitemapindex', () => {
    const r = parse(`<s:sitemapindex xmlns:s="${NS}"><s:sitemap><s:loc>http://example.com/s1.xml</s:loc></s:sitemap></s:sitemapindex>`);
    expect(r).toMatchObject({ kind: 'sitemapindex', sitemaps: ['http://example.com/s1.xml'], errors: [] });
  });

  it('applies maxUrls to child sitemaps', () => {
    const entries = [1, 2, 3].map((i) => `<sitemap><loc>https://example.com/s${i}.xml</loc></sitemap>`);
    const r = parse(`<sitemapindex>${entries.join('')}</sitemapindex>`, { maxUrls: 2 });
    expect(r.sitemaps).toEqual(['https://example.com/s1.xml', 'https://example.com/s2.xml']);
    expect(r.truncated).toBe('count');
  });
});

describe('an XML declaration that says UTF-16 on a sitemap readable as ASCII', () => {
  it('is read as UTF-8, since its own bytes show it is not UTF-16', () => {
    const r = parse('<?xml version="1.0" encoding="UTF-16"?><urlset><url><loc>https://e.com/a</loc></url></urlset>');
    expect(r.urls.map((u) => u.loc)).toEqual(['https://e.com/a']);
  });
});

describe('a sitemap the fetch cut short (its size or time limit)', () => {
  it('drops the last text line, which may be cut mid-URL, and says truncated', () => {
    const r = parse('https://e.com/a\nhttps://e.com/products/12345', { incomplete: true });
    expect(r.urls.map((u) => u.loc)).toEqual(['https://e.com/a']);
    expect(r.truncated).toBe('bytes');
  });

  it('keeps the complete XML entries and says truncated instead of reporting a broken file', () => {
    const r = parse('<urlset><url><loc>https://e.com/a</loc></url><url><loc>https://e.com/prod', { incomplete: true });
    expect(r.urls.map((u) => u.loc)).toEqual(['https://e.com/a']);
    expect(r.truncated).toBe('bytes');
  });

  it('reaches the sitemap summary of the page that fetched it', () => {
    const cut = sitemapCandidatesOf(Buffer.from('https://e.com/a\nhttps://e.com/products/12345'), 'https://e.com/sitemap.txt', 'text/plain', 'sitemap', 0, true);
    expect(cut.candidates.map((c) => c.url)).toEqual(['https://e.com/a']);
    expect(cut.summary).toMatchObject({ truncated: 'bytes' });
  });
});

describe('parseSitemap: count limit', () => {
  it('stops at 50,000 URLs by default and reports truncated "count"', () => {
    const r = parse(manyUrls(50_001));
    expect(r.kind).toBe('urlset');
    expect(r.urls).toHaveLength(50_000);
    // Also proves that entries split across the parser's input chunks survive.
    expect(r.urls.every((u, i) => u.loc === `https://example.com/p/${i}`)).toBe(true);
    expect(r.truncated).toBe('count');
    expect(r.errors).toEqual([]);
  });

  it('does not report truncation for exactly 50,000 URLs', () => {
    const r = parse(manyUrls(50_000));
    expect(r.urls).toHaveLength(50_000);
    expect(r.truncated).toBe(false);
    expect(r.errors).toEqual([]);
  });

  it('honours a custom maxUrls, exactly at the limit allowed', () => {
    expect(parse(manyUrls(3), { maxUrls: 3 })).toMatchObject({ truncated: false });
    const r = parse(manyUrls(4), { maxUrls: 3 });
    expect(locs(r)).toEqual(['https://example.com/p/0', 'https://example.com/p/1', 'https://example.com/p/2']);
    expect(r.truncated).toBe('count');
  });

  it('does not count skipped entries against the limit', () => {
    const r = parse(urlset([urlEntry('/bad'), urlEntry('https://example.com/1'), urlEntry('https://example.com/2')]), {
      maxUrls: 2,
    });
    expect(locs(r)).toEqual(['https://example.com/1', 'https://example.com/2']);
    expect(r.truncated).toBe(false);
  });

  it('collects nothing with maxUrls 0', () => {
    const r = parse(manyUrls(1), { maxUrls: 0 });
    expect(r).toMatchObject({ kind: 'urlset', urls: [], truncated: 'count' });
  });
});

describe('parseSitemap: malformed XML', () => {
  it('keeps URLs parsed before the document breaks off', () => {
    const body = `<urlset xmlns="${NS}">${urlEntry('https://example.com/1')}${urlEntry('https://example.com/2')}<url><loc>https://example.com/3</lo`;
    const r = parse(body);
    expect(r.kind).toBe('urlset');
    expect(locs(r)).toEqual(['https://example.com/1', 'https://example.com/2']);
    expect(r.truncated).toBe(false);
    expect(r.errors.length).toBeGreaterThan(0);
    expect(r.errors.every((e) => e.startsWith('XML: '))).toBe(true);
  });

  it('keeps URLs around garbage in the middle of the document', () => {
    const body = `<urlset>${urlEntry('https://example.com/1')}<url><loc>https://example.com/2</loc><<<>>&&&</url junk>${urlEntry('https://example.com/3')}</urlset>`;
    const r = parse(body);
    expect(locs(r)).toContain('https://example.com/1');
    expect(locs(r)).toContain('https://example.com/3');
    expect(r.errors.length).toBeGreaterThan(0);
  });

  it('recovers from a mismatched close tag', () => {
    const body = `<urlset><url><loc>https://example.com/1</loc><foo></url>${urlEntry('https://example.com/2')}</urlset>`;
    const r = parse(body);
    expect(locs(r)).toEqual(['https://example.com/1', 'https://example.com/2']);
    expect(r.errors.length).toBeGreaterThan(0);
  });

  it('does not expand DTD entities (no entity bombs, no XXE)', () => {
    const lol = '<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY x SYSTEM "file:///etc/passwd">';
    const body = `<?xml version="1.0"?><!DOCTYPE urlset [${lol}]><urlset><url><loc>https://example.com/&b;&x;</loc></url>${urlEntry('https://example.com/ok')}</urlset>`;
    const r = parse(body);
    expect(locs(r)).toContain('https://example.com/ok');
    expect(locs(r).join('')).not.toContain('aaaaaaaaaa');
    expect(locs(r).join('')).not.toContain('root:');
  });

  it('reports a document whose root is not a sitemap as invalid', () => {
    const html = parse('<!DOCTYPE html><html><head><title>404</title></head><body><a href="https://example.com/x">x</a></body></html>');
    expect(html.kind).toBe('invalid');
    expect(html.urls).toEqual([]);
    expect(html.errors).toEqual(['root element is <html>, not <urlset> or <sitemapindex>']);

    const rss = parse('<?xml version="1.0"?><rss version="2.0"><channel><item><link>https://example.com/p</link></item></channel></rss>');
    expect(rss.kind).toBe('invalid');
    expect(rss.errors[0]).toContain('<rss>');
  });

  it('reports XML without any element as invalid', () => {
    const r = parse('<?xml version="1.0"?><!-- nothing here -->');
    expect(r.kind).toBe('invalid');
    expect(r.errors).toContain('no root element');
  });

  it('caps the number of recorded errors', () => {
    const entries: string[] = [];
    for (let i = 0; i < 500; i++) entries.push(urlEntry(`/relative/${i}`));
    entries.push(urlEntry('https://example.com/last'));
    const r = parse(urlset(entries));
    expect(locs(r)).toEqual(['https://example.com/last']);
    expect(r.errors).toHaveLength(MAX_SITEMAP_ERRORS + 1);
    expect(r.errors[MAX_SITEMAP_ERRORS]).toBe(`… ${500 - MAX_SITEMAP_ERRORS} more errors not shown`);
  });
});

describe('parseSitemap: encodings', () => {
  it('skips a UTF-8 BOM in XML', () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(urlset([urlEntry('https://example.com/bom')]))]);
    const r = parse(body);
    expect(r).toMatchObject({ kind: 'urlset', errors: [] });
    expect(locs(r)).toEqual(['https://example.com/bom']);
  });

  it('skips a UTF-8 BOM in a text sitemap', () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('https://example.com/a\nhttps://example.com/b\n')]);
    const r = parse(body);
    expect(r).toMatchObject({ kind: 'text', errors: [] });
    expect(locs(r)).toEqual(['https://example.com/a', 'https://example.com/b']);
  });

  it('decodes UTF-16LE with a BOM', () => {
    const text = urlset([urlEntry('https://example.com/utf16')]).replace('UTF-8', 'UTF-16');
    const body = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const r = parse(body);
    expect(locs(r)).toEqual(['https://example.com/utf16']);
  });

  it('keeps non-ASCII characters in UTF-8 locs', () => {
    const r = parse(urlset([urlEntry('https://example.com/straße/日本')]));
    expect(locs(r)).toEqual(['https://example.com/straße/日本']);
  });

  it('honours the XML declaration encoding when the Content-Type has no charset', () => {
    const xml = `<?xml version="1.0" encoding="ISO-8859-1"?><urlset>${urlEntry('https://example.com/caf\u00e9')}</urlset>`;
    const r = parse(Buffer.from(xml, 'latin1'), { contentType: 'application/xml' });
    expect(locs(r)).toEqual(['https://example.com/café']);
  });

  it('lets a Content-Type charset override the XML declaration', () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?><urlset>${urlEntry('https://example.com/caf\u00e9')}</urlset>`;
    const r = parse(Buffer.from(xml, 'latin1'), { contentType: 'text/xml; charset=iso-8859-1' });
    expect(locs(r)).toEqual(['https://example.com/café']);
  });
});

describe('parseSitemap: gzip', () => {
  const xml = urlset([urlEntry('https://example.com/gz1'), urlEntry('https://example.com/gz2')]);

  it('detects gzip by magic bytes, whatever the Content-Type says', () => {
    for (const contentType of [undefined, null, 'text/xml', 'application/gzip', 'text/plain; charset=utf-8']) {
      const r = parse(gzipSync(Buffer.from(xml)), { contentType });
      expect(r).toMatchObject({ kind: 'urlset', truncated: false, errors: [] });
      expect(locs(r)).toEqual(['https://example.com/gz1', 'https://example.com/gz2']);
    }
  });

  it('does not try to gunzip a plain body served as application/gzip', () => {
    const r = parse(xml, { contentType: 'application/x-gzip' });
    expect(locs(r)).toEqual(['https://example.com/gz1', 'https://example.com/gz2']);
  });

  it('reads a gzipped text sitemap', () => {
    const r = parse(gzipSync(Buffer.from('https://example.com/t1\nhttps://example.com/t2\n')));
    expect(r.kind).toBe('text');
    expect(locs(r)).toEqual(['https://example.com/t1', 'https://example.com/t2']);
  });

  it('reads concatenated gzip members', () => {
    const half = Math.floor(xml.length / 2);
    const body = Buffer.concat([gzipSync(Buffer.from(xml.slice(0, half))), gzipSync(Buffer.from(xml.slice(half)))]);
    expect(locs(parse(body))).toEqual(['https://example.com/gz1', 'https://example.com/gz2']);
  });

  it('stops a gzip bomb at the default limit without throwing', () => {
    const bomb = gzipSync(Buffer.alloc(DEFAULT_MAX_SITEMAP_BYTES + 10 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(200 * 1024);
    const r = parse(bomb);
    expect(r.truncated).toBe('bytes');
    expect(r.kind).toBe('invalid');
    expect(r.urls).toEqual([]);
    expect(r.errors.join('\n')).toMatch(/binary/);
  });

  it('stops a gzip bomb at a custom limit', () => {
    const bomb = gzipSync(Buffer.alloc(16 * 1024 * 1024));
    const r = parse(bomb, { maxUncompressedBytes: 64 * 1024 });
    expect(r).toMatchObject({ kind: 'invalid', truncated: 'bytes', urls: [] });
  });

  it('keeps the URLs of an oversized gzipped sitemap up to the limit', () => {
    const full = manyUrls(20_000);
    const limit = Math.floor(full.length / 3);
    const r = parse(gzipSync(Buffer.from(full)), { maxUncompressedBytes: limit });
    expect(r.kind).toBe('urlset');
    expect(r.truncated).toBe('bytes');
    expect(r.urls.length).toBeGreaterThan(1000);
    expect(r.urls.length).toBeLessThan(20_000);
    // A strict prefix, and every entry complete (the cut one is dropped).
    r.urls.forEach((u, i) => expect(u.loc).toBe(`https://example.com/p/${i}`));
    expect(r.errors).toEqual([]);
  });

  it('accepts a gzip body that inflates to exactly the limit', () => {
    const raw = Buffer.from(xml);
    const r = parse(gzipSync(raw), { maxUncompressedBytes: raw.length });
    expect(r).toMatchObject({ kind: 'urlset', truncated: false });
    expect(r.urls).toHaveLength(2);
    expect(parse(gzipSync(raw), { maxUncompressedBytes: raw.length - 1 }).truncated).toBe('bytes');
  });

  it('keeps the complete entries of a truncated gzip stream', () => {
    const full = manyUrls(2000);
    const gz = gzipSync(Buffer.from(full));
    const r = parse(gz.subarray(0, Math.floor(gz.length / 2)));
    expect(r.kind).toBe('urlset');
    expect(r.truncated).toBe(false);
    expect(r.urls.length).toBeGreaterThan(100);
    expect(r.urls.length).toBeLessThan(2000);
    r.urls.forEach((u, i) => expect(u.loc).toBe(`https://example.com/p/${i}`));
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatch(/gzip stream is truncated/);
  });

  it('drops the cut-off last line of a truncated gzipped text sitemap', () => {
    const lines: string[] = [];
    for (let i = 0; i < 3000; i++) lines.push(`https://example.com/line/${i}`);
    const gz = gzipSync(Buffer.from(lines.join('\n') + '\n'));
    const r = parse(gz.subarray(0, Math.floor(gz.length / 2)));
    expect(r.kind).toBe('text');
    r.urls.forEach((u, i) => expect(u.loc).toBe(`https://example.com/line/${i}`));
  });

  it('reports corrupt gzip data as invalid', () => {
    const gz = Buffer.from(gzipSync(Buffer.from(manyUrls(50))));
    for (let i = 20; i < 40; i++) gz[i] ^= 0x5a;
    const r = parse(gz);
    expect(r.kind).toBe('invalid');
    expect(r.errors.join('\n')).toMatch(/gunzip|gzip/);
  });

  it('reports the bare gzip magic as invalid', () => {
    const r = parse(new Uint8Array([0x1f, 0x8b]));
    expect(r.kind).toBe('invalid');
    expect(r.urls).toEqual([]);
    expect(r.errors.length).toBeGreaterThan(0);
  });

  it('reports a gzipped empty body as invalid', () => {
    const r = parse(gzipSync(Buffer.alloc(0)));
    expect(r.kind).toBe('invalid');
    expect(r.errors[0]).toMatch(/empty/);
  });
});

describe('parseSitemap: byte limit (uncompressed)', () => {
  it('cuts an oversized body and drops the entry that was cut', () => {
    const full = manyUrls(100);
    // Cut in the middle of the 51st <loc>.
    const cutAt = full.indexOf('https://example.com/p/50') + 'https://example.com/p/'.length + 1;
    const r = parse(full, { maxUncompressedBytes: cutAt });
    expect(r.truncated).toBe('bytes');
    expect(r.kind).toBe('urlset');
    expect(r.urls).toHaveLength(50);
    expect(r.urls[49].loc).toBe('https://example.com/p/49');
    expect(r.errors).toEqual([]);
  });

  it('accepts a body exactly at the limit', () => {
    const full = manyUrls(10);
    const r = parse(full, { maxUncompressedBytes: Buffer.byteLength(full) });
    expect(r).toMatchObject({ truncated: false, errors: [] });
    expect(r.urls).toHaveLength(10);
  });

  it('drops the cut-off last line of an oversized text sitemap', () => {
    const text = 'https://example.com/one\nhttps://example.com/two\nhttps://example.com/three-is-long\n';
    const r = parse(text, { maxUncompressedBytes: text.indexOf('three') + 3 });
    expect(r).toMatchObject({ kind: 'text', truncated: 'bytes', errors: [] });
    expect(locs(r)).toEqual(['https://example.com/one', 'https://example.com/two']);
  });
});

describe('parseSitemap: text sitemaps', () => {
  it('reads one URL per line, skipping blank lines and trimming', () => {
    const body = '\n\nhttps://example.com/a\r\n   \r\n  http://example.com/b  \n\thttps://example.com/c?x=1&y=2\n\n';
    const r = parse(body);
    expect(r).toEqual({
      kind: 'text',
      urls: [{ loc: 'https://example.com/a' }, { loc: 'http://example.com/b' }, { loc: 'https://example.com/c?x=1&y=2' }],
      sitemaps: [],
      truncated: false,
      errors: [],
    });
  });

  it('accepts a last line without a line break', () => {
    expect(locs(parse('https://example.com/a\nhttps://example.com/b'))).toEqual(['https://example.com/a', 'https://example.com/b']);
  });

  it('accepts old-Mac CR line endings', () => {
    expect(locs(parse('https://example.com/a\rhttps://example.com/b\r'))).toEqual(['https://example.com/a', 'https://example.com/b']);
  });

  it('skips lines that are not absolute http(s) URLs, naming the line', () => {
    const r = parse('https://example.com/a\n/relative\nnot a url\r\nftp://example.com/f\nhttps://example.com/b\n');
    expect(locs(r)).toEqual(['https://example.com/a', 'https://example.com/b']);
    expect(r.errors).toEqual([
      'line 2: not an absolute http(s) URL: /relative',
      'line 3: not an absolute http(s) URL: not a url',
      'line 4: not an absolute http(s) URL: ftp://example.com/f',
    ]);
  });

  it('applies maxUrls', () => {
    const r = parse('https://example.com/1\nhttps://example.com/2\nhttps://example.com/3\n', { maxUrls: 2 });
    expect(locs(r)).toEqual(['https://example.com/1', 'https://example.com/2']);
    expect(r.truncated).toBe('count');
    expect(parse('https://example.com/1\nhttps://example.com/2\n', { maxUrls: 2 }).truncated).toBe(false);
  });

  it('handles 50,001 lines', () => {
    const lines: string[] = [];
    for (let i = 0; i <= 50_000; i++) lines.push(`https://example.com/t/${i}`);
    const r = parse(lines.join('\n'));
    expect(r.urls).toHaveLength(50_000);
    expect(r.truncated).toBe('count');
  });

  it('reports text without any URL as invalid', () => {
    const r = parse('{"urls": ["https://example.com/"]}');
    expect(r.kind).toBe('invalid');
    expect(r.urls).toEqual([]);
    expect(r.errors[r.errors.length - 1]).toMatch(/neither XML nor a text sitemap/);
  });
});

describe('parseSitemap: garbage', () => {
  it('reports an empty body as invalid', () => {
    const r = parse(new Uint8Array(0));
    expect(r).toEqual({ kind: 'invalid', urls: [], sitemaps: [], truncated: false, errors: [expect.stringMatching(/empty/)] });
  });

  it('reports a whitespace-only body as invalid', () => {
    const r = parse(' \r\n\t\n ');
    expect(r.kind).toBe('invalid');
    expect(r.errors[0]).toMatch(/empty/);
  });

  it('reports binary data as invalid', () => {
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from(pseudoRandomBytes(4096, 7))]);
    const r = parse(png);
    expect(r.kind).toBe('invalid');
    expect(r.errors).toEqual([expect.stringMatching(/binary/)]);
  });

  it('reports XML-looking binary as invalid', () => {
    const body = Buffer.concat([Buffer.from('<urlset>\u0000\u0001\u0002'), Buffer.from(pseudoRandomBytes(2048, 3))]);
    const r = parse(body);
    expect(r.kind).toBe('invalid');
  });

  it('never throws on random bytes', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const bytes = pseudoRandomBytes(1 + ((seed * 37) % 3000), seed);
      const r = parse(bytes);
      expect(['urlset', 'sitemapindex', 'text', 'invalid']).toContain(r.kind);
    }
  });

  it('never throws on random bytes behind a gzip magic or an XML prefix', () => {
    for (let seed = 1; seed <= 100; seed++) {
      const junk = pseudoRandomBytes(500 + seed, seed);
      for (const prefix of [[0x1f, 0x8b], [...Buffer.from('<urlset><url><loc>')]]) {
        const r = parse(Buffer.concat([Buffer.from(prefix), Buffer.from(junk)]));
        expect(r.urls.length).toBeLessThanOrEqual(1);
      }
    }
  });

  it('never throws on truncations of a valid sitemap', () => {
    const full = Buffer.from(
      urlset(['<url><loc>https://example.com/a</loc><lastmod>2024-01-01</lastmod><priority>0.5</priority></url>', '<url><loc><![CDATA[https://example.com/b]]></loc></url>']),
    );
    for (let n = 0; n <= full.length; n++) {
      const r = parse(full.subarray(0, n));
      for (const u of r.urls) expect(['https://example.com/a', 'https://example.com/b']).toContain(u.loc);
    }
  });
});

// The functions the crawler runs: load-robots queues sitemapSeeds for a host,
// crawl-step turns a fetched sitemap into frontier candidates.
describe('sitemapSeeds', () => {
  const settings = (sitemaps?: SitemapMode) => resolveCampaignSettings({ seeds: ['https://example.com/'], sitemaps }, 'c');

  it('lists robots.txt sitemaps in order, then /sitemap.xml (the default mode)', () => {
    expect(sitemapSeeds(settings(), 'https://example.com', ['https://example.com/s1.xml', 'https://example.com/s2.xml.gz'])).toEqual([
      'https://example.com/s1.xml',
      'https://example.com/s2.xml.gz',
      'https://example.com/sitemap.xml',
    ]);
  });

  it('returns just /sitemap.xml without robots.txt sitemaps', () => {
    expect(sitemapSeeds(settings('robots+root'), 'https://example.com', [])).toEqual(['https://example.com/sitemap.xml']);
  });

  it('keeps the first budgets.maxSitemapsPerHost distinct ones of a robots.txt listing 5,000', () => {
    const s = resolveCampaignSettings({ seeds: ['https://example.com/'], budgets: { maxSitemapsPerHost: 3 } }, 'c');
    const listed = [
      'https://example.com/a.xml',
      'https://example.com/a.xml',
      'https://cdn.example.net/x.xml',
      ...Array.from({ length: 5000 }, (_, i) => `https://example.com/s/${i}.xml`),
    ];
    expect(sitemapSeeds(s, 'https://example.com', listed)).toEqual(['https://example.com/a.xml', 'https://example.com/s/0.xml', 'https://example.com/s/1.xml']);
    // /sitemap.xml only when there is room left.
    expect(sitemapSeeds(s, 'https://example.com', ['https://example.com/a.xml'])).toEqual(['https://example.com/a.xml', 'https://example.com/sitemap.xml']);
  });

  it('leaves out /sitemap.xml in robots mode and everything when off', () => {
    expect(sitemapSeeds(settings('robots'), 'https://example.com', ['https://example.com/s1.xml'])).toEqual(['https://example.com/s1.xml']);
    expect(sitemapSeeds(settings('robots'), 'https://example.com', [])).toEqual([]);
    expect(sitemapSeeds(settings('off'), 'https://example.com', ['https://example.com/s1.xml'])).toEqual([]);
  });

  it('deduplicates, including spelling variants and the default location', () => {
    expect(
      sitemapSeeds(settings(), 'https://example.com', [
        'https://example.com/sitemap.xml',
        'https://example.com/a.xml',
        'HTTPS://EXAMPLE.COM:443/a.xml',
        'https://example.com/a.xml#frag',
      ]),
    ).toEqual(['https://example.com/sitemap.xml', 'https://example.com/a.xml']);
  });

  it("keeps the origin's port", () => {
    expect(sitemapSeeds(settings(), 'http://example.com:8080', ['http://example.com:8080/s.xml'])).toEqual([
      'http://example.com:8080/s.xml',
      'http://example.com:8080/sitemap.xml',
    ]);
  });

  it("drops sitemaps hosted on another host, scheme or port (they would need that host's politeness)", () => {
    expect(
      sitemapSeeds(settings(), 'https://example.com', [
        'https://cdn.example.net/s2.xml.gz',
        'https://www.example.com/s.xml',
        'http://example.com/s.xml',
        'https://example.com:8443/s.xml',
      ]),
    ).toEqual(['https://example.com/sitemap.xml']);
  });

  it('skips unusable robots.txt entries', () => {
    expect(sitemapSeeds(settings(), 'https://example.com', ['/relative.xml', 'ftp://example.com/s.xml', '', 'http://', 'not a url'])).toEqual(['https://example.com/sitemap.xml']);
  });
});

describe('sitemapCandidatesOf', () => {
  const SM = 'https://example.com/sitemap.xml';

  it('turns a urlset into page candidates one hop below the sitemap, normalised', () => {
    const body = Buffer.from(urlset([urlEntry('https://EXAMPLE.com/a?utm_source=x'), urlEntry('https://example.com/b#frag')]));
    const r = sitemapCandidatesOf(body, SM, 'application/xml', 'sitemap', 0);
    expect(r.candidates).toEqual([
      { url: 'https://example.com/a', depth: 1, kind: 'page' },
      { url: 'https://example.com/b', depth: 1, kind: 'page' },
    ]);
    expect(r.summary).toEqual({ kind: 'urlset', urls: 2, added: 0, sitemaps: 0, truncated: false, errors: [] });
  });

  it('ignores URLs on other hosts and counts them in the summary errors', () => {
    const body = Buffer.from(urlset([urlEntry('https://example.com/mine'), urlEntry('https://evil.test/theirs'), urlEntry('http://example.com/other-scheme')]));
    const r = sitemapCandidatesOf(body, SM, null, 'sitemap', 2);
    expect(r.candidates).toEqual([{ url: 'https://example.com/mine', depth: 3, kind: 'page' }]);
    expect(r.summary.urls).toBe(3);
    expect(r.summary.errors).toEqual(['2 URL(s) on other hosts ignored']);
  });

  it('follows an index one level: children of a robots/root sitemap are queued at the same depth, an index inside an index is not', () => {
    const index = Buffer.from(
      `<?xml version="1.0"?><sitemapindex xmlns="${NS}"><sitemap><loc>https://example.com/s1.xml.gz</loc></sitemap>` +
        `<sitemap><loc>https://other.test/s2.xml</loc></sitemap></sitemapindex>`,
    );
    const top = sitemapCandidatesOf(index, SM, null, 'sitemap', 0);
    expect(top.candidates).toEqual([{ url: 'https://example.com/s1.xml.gz', depth: 0, kind: 'sitemap-child' }]);
    expect(top.summary).toMatchObject({ kind: 'sitemapindex', urls: 0, sitemaps: 2, errors: ['1 URL(s) on other hosts ignored'] });
    const nested = sitemapCandidatesOf(index, 'https://example.com/s0.xml', null, 'sitemap-child', 0);
    expect(nested.candidates).toEqual([]);
    expect(nested.summary.sitemaps).toBe(2);
  });

  it('reports a gzip bomb as truncated and keeps the URLs before the cut', () => {
    const head = urlset([urlEntry('https://example.com/first')]).replace('</urlset>\n', '');
    const bomb = gzipSync(Buffer.concat([Buffer.from(head), Buffer.alloc(DEFAULT_MAX_SITEMAP_BYTES + 1024 * 1024, 0x20)]));
    const r = sitemapCandidatesOf(bomb, SM, 'application/x-gzip', 'sitemap', 0);
    expect(r.summary).toMatchObject({ kind: 'urlset', urls: 1, truncated: 'bytes' });
    expect(r.candidates).toEqual([{ url: 'https://example.com/first', depth: 1, kind: 'page' }]);
  });
});

describe('sitemapMayList', () => {
  it('allows any path on the same scheme, host and port', () => {
    expect(sitemapMayList('https://example.com/sitemaps/posts.xml', 'https://example.com/blog/post-1')).toBe(true);
    expect(sitemapMayList('https://example.com/sitemap.xml', 'https://example.com/')).toBe(true);
  });

  it('compares host case-insensitively and treats default ports as absent', () => {
    expect(sitemapMayList('https://Example.COM/sitemap.xml', 'https://example.com:443/a')).toBe(true);
    expect(sitemapMayList('http://example.com:80/sitemap.xml', 'http://EXAMPLE.com/a')).toBe(true);
    expect(sitemapMayList('https://example.com./sitemap.xml', 'https://example.com/a')).toBe(true);
  });

  it('rejects another scheme, host, subdomain or port', () => {
    expect(sitemapMayList('https://example.com/sitemap.xml', 'http://example.com/a')).toBe(false);
    expect(sitemapMayList('https://example.com/sitemap.xml', 'https://www.example.com/a')).toBe(false);
    expect(sitemapMayList('https://www.example.com/sitemap.xml', 'https://example.com/a')).toBe(false);
    expect(sitemapMayList('https://example.com/sitemap.xml', 'https://example.org/a')).toBe(false);
    expect(sitemapMayList('https://example.com/sitemap.xml', 'https://example.com:8443/a')).toBe(false);
  });

  it('rejects unparsable and non-http(s) URLs', () => {
    expect(sitemapMayList('https://example.com/sitemap.xml', '/relative')).toBe(false);
    expect(sitemapMayList('https://example.com/sitemap.xml', 'ftp://example.com/a')).toBe(false);
    expect(sitemapMayList('not a url', 'not a url')).toBe(false);
    expect(sitemapMayList('file:///sitemap.xml', 'file:///a')).toBe(false);
  });
});

test('a changefreq outside the seven of sitemaps.org is dropped with an error; case does not matter', () => {
  const r = parseSitemap(
    Buffer.from(
      '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://example.com/a</loc><changefreq>Hourly</changefreq></url><url><loc>https://example.com/b</loc><changefreq>often</changefreq></url></urlset>',
    ),
    { url: 'https://example.com/sitemap.xml', contentType: 'application/xml' },
  );
  expect(r.urls).toEqual([{ loc: 'https://example.com/a', changefreq: 'hourly' }, { loc: 'https://example.com/b' }]);
  expect(r.errors).toEqual(['ignored <changefreq> "often" of https://example.com/b: not one of always, hourly, daily, weekly, monthly, yearly, never']);
});
