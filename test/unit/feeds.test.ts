import { isFeedContentType, looksLikeFeed, parseFeed } from '../../src/parse/feeds';

const FEED = 'https://news.example.com/feeds/all.xml';
const bytes = (s: string) => new TextEncoder().encode(s);
const parse = (body: string, opts: Partial<Parameters<typeof parseFeed>[1]> = {}) => parseFeed(bytes(body), { url: FEED, contentType: null, ...opts });

describe('parseFeed: RSS 2.0', () => {
  const rss = `<?xml version="1.0" encoding="UTF-8"?>
    <?xml-stylesheet href="/style.xsl" type="text/xsl"?>
    <rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">
      <channel>
        <title>News</title>
        <link>https://news.example.com/</link>
        <atom:link href="https://news.example.com/feeds/all.xml" rel="self"/>
        <item><title>One</title><link>https://news.example.com/2024/one?utm_source=rss&amp;b=2&amp;a=1</link><guid>https://news.example.com/?p=1</guid></item>
        <item><title>Two</title><link><![CDATA[ /2024/two ]]></link></item>
        <item><title>Three</title><guid isPermaLink="true">https://news.example.com/2024/three</guid></item>
        <item><title>Four</title><guid>https://news.example.com/2024/four</guid></item>
        <item><title>Not a permalink</title><guid isPermaLink="false">https://news.example.com/?p=5</guid></item>
        <item><title>Opaque guid</title><guid>tag:news.example.com,2024:6</guid></item>
        <item><title>Repeat</title><link>https://news.example.com/2024/one?a=1&amp;b=2</link></item>
        <item><title>Unusable</title><link>mailto:editor@example.com</link></item>
      </channel>
    </rss>`;

  it('yields item links (guid permalinks when there is no link), resolved, normalised, distinct', () => {
    const out = parse(rss);
    expect(out.kind).toBe('rss');
    expect(out.links).toEqual([
      'https://news.example.com/2024/one?a=1&b=2',
      'https://news.example.com/2024/two',
      'https://news.example.com/2024/three',
      'https://news.example.com/2024/four',
    ]);
    expect(out.truncated).toBe(false);
    // The channel's own link and atom:link are not items.
    expect(out.links).not.toContain('https://news.example.com/');
    expect(out.errors).toEqual([expect.stringMatching(/1 item link\(s\) are not crawlable/)]);
  });

  it('caps the links at maxLinks and says so', () => {
    const out = parse(rss, { maxLinks: 2 });
    expect(out.links).toEqual(['https://news.example.com/2024/one?a=1&b=2', 'https://news.example.com/2024/two']);
    expect(out.truncated).toBe(true);
    expect(parse(rss, { maxLinks: 4 }).truncated).toBe(false);
  });

  it('keeps only the items completed before the byte limit', () => {
    const body = `<rss><channel>${Array.from({ length: 20 }, (_, i) => `<item><link>/a/${i}</link></item>`).join('')}</channel></rss>`;
    const cut = body.indexOf('/a/5<') + 2; // in the middle of item 5's link
    const out = parse(body, { maxBytes: cut });
    expect(out.kind).toBe('rss');
    expect(out.truncated).toBe(true);
    expect(out.links).toEqual([0, 1, 2, 3, 4].map((i) => `https://news.example.com/a/${i}`));
  });

  it('reads the encoding the XML declaration names', () => {
    const head = '<?xml version="1.0" encoding="ISO-8859-1"?><rss><channel><item><link>/caf';
    const body = Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from([0xe9]), Buffer.from('</link></item></channel></rss>', 'latin1')]);
    expect(parseFeed(body, { url: FEED, contentType: 'text/xml' }).links).toEqual(['https://news.example.com/caf%C3%A9']);
  });
});

describe('parseFeed: RSS 1.0 (RDF)', () => {
  it('yields item links, falling back to rdf:about', () => {
    const rdf = `<?xml version="1.0"?>
      <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
        <channel rdf:about="https://news.example.com/"><link>https://news.example.com/</link></channel>
        <item rdf:about="https://news.example.com/r/1"><link>https://news.example.com/r/1-link</link></item>
        <item rdf:about="https://news.example.com/r/2"><title>no link</title></item>
      </rdf:RDF>`;
    const out = parse(rdf);
    expect(out.kind).toBe('rss');
    expect(out.links).toEqual(['https://news.example.com/r/1-link', 'https://news.example.com/r/2']);
  });
});

describe('parseFeed: Atom', () => {
  it('yields alternate links of entries, respecting xml:base', () => {
    const atom = `<?xml version="1.0" encoding="utf-8"?>
      <feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://blog.example.org/base/">
        <link href="https://blog.example.org/" rel="alternate"/>
        <link href="/feed.atom" rel="self"/>
        <entry><id>urn:1</id><link href="posts/1"/><link rel="edit" href="/edit/1"/></entry>
        <entry xml:base="/other/"><link rel="alternate" type="text/html" href="2"/><link rel="enclosure" href="/audio.mp3"/></entry>
        <entry><link rel="related" href="/related"/><link rel="ALTERNATE" href="https://elsewhere.example/3"></link></entry>
        <entry><link xml:base="https://cdn.example.net/x/" href="4"/></entry>
        <entry><id>no link</id></entry>
      </feed>`;
    const out = parse(atom);
    expect(out.kind).toBe('atom');
    expect(out.links).toEqual(['https://blog.example.org/base/posts/1', 'https://blog.example.org/other/2', 'https://elsewhere.example/3', 'https://cdn.example.net/x/4']);
  });

  it('reads a prefixed Atom document', () => {
    const out = parse('<a:feed xmlns:a="http://www.w3.org/2005/Atom"><a:entry><a:link href="/p"/></a:entry></a:feed>');
    expect(out).toEqual({ kind: 'atom', links: ['https://news.example.com/p'], errors: [], truncated: false });
  });
});

describe('parseFeed: JSON Feed', () => {
  it('yields items[].url, falling back to external_url', () => {
    const json = JSON.stringify({
      version: 'https://jsonfeed.org/version/1.1',
      title: 'News',
      home_page_url: 'https://news.example.com/',
      items: [
        { id: '1', url: 'https://news.example.com/j/1', content_text: 'x "quoted" \\ \u00e9', tags: ['a', { nested: [1, 2, null, true] }] },
        { id: '2', external_url: 'https://elsewhere.example/j/2' },
        { id: '3', url: '/j/3', external_url: 'https://elsewhere.example/ignored' },
        { id: '4' },
        { id: '5', url: 'https://news.example.com/j/5' },
      ],
    });
    const out = parse(json.replace('/j/3', '\\/j\\/3').replace('https://news.example.com/j/5', 'https:\\/\\/news.example.com\\/j\\/5'), { contentType: 'application/feed+json' });
    expect(out.kind).toBe('json');
    expect(out.links).toEqual(['https://news.example.com/j/1', 'https://elsewhere.example/j/2', 'https://news.example.com/j/3', 'https://news.example.com/j/5']);
    expect(out.errors).toEqual([]);
  });

  it('takes version 1.0 wherever it stands, and no url outside items', () => {
    const json = '{"items":[{"url":"/a"}],"author":{"url":"/me"},"version":"https://jsonfeed.org/version/1"}';
    expect(parse(json).links).toEqual(['https://news.example.com/a']);
  });

  it('is invalid JSON that is not a JSON Feed', () => {
    const out = parse('{"items":[{"url":"/a"}],"version":"1.0"}');
    expect(out.kind).toBe('invalid');
    expect(out.links).toEqual([]);
    expect(out.errors[0]).toMatch(/not a JSON Feed/);
  });

  it('keeps the items completed before a syntax error or a cut, with the error', () => {
    const out = parse('{"version":"https://jsonfeed.org/version/1.1","items":[{"url":"/a"},{"url":"/b"},{"url":"/c" "x":1}]}');
    expect(out.kind).toBe('json');
    expect(out.links).toEqual(['https://news.example.com/a', 'https://news.example.com/b']);
    expect(out.errors).toEqual([expect.stringMatching(/expected "," or "}"/)]);
    const cut = parse('{"version":"https://jsonfeed.org/version/1.1","items":[{"url":"/a"},{"url":"/b');
    expect(cut.links).toEqual(['https://news.example.com/a']);
    expect(cut.errors).toEqual([expect.stringMatching(/unterminated string/)]);
  });

  it('reads a deeply nested JSON document without recursion and rejects it', () => {
    const json = `{"version":"https://jsonfeed.org/version/1.1","items":[{"url":"/a"}],"x":${'['.repeat(1_000_000)}`;
    const out = parse(json);
    expect(out.kind).toBe('json');
    expect(out.links).toEqual(['https://news.example.com/a']);
    expect(out.errors[0]).toMatch(/nesting deeper than/);
  });
});

describe('parseFeed: what is not a feed', () => {
  it.each([
    ['an HTML page', '<!DOCTYPE html><html><head><link rel="alternate" href="/x"></head><body><item><link>/x</link></item></body></html>', /root element <html>/],
    ['a sitemap', '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://x/</loc></url></urlset>', /root element <urlset>/],
    ['plain text', 'hello world', /starts with neither/],
    ['an empty body', '  \n ', /empty body/],
    ['a JSON array', '[{"url":"/a"}]', /starts with neither/],
    ['malformed JSON', '{"version": https://jsonfeed.org/version/1}', /unexpected|not a JSON Feed/],
    ['an unclosed comment', '<!-- <rss><channel><item><link>/a</link></item></channel></rss>', /no root element/],
  ])('is invalid for %s, with why', (_what, body, why) => {
    const out = parse(body);
    expect(out.kind).toBe('invalid');
    expect(out.links).toEqual([]);
    expect(out.errors.join('\n')).toMatch(why);
  });

  it.each([
    '<rss><channel><item><link>/a',
    '<rss><<<>>><item>',
    '<feed><entry><link href="',
    '{"version":"https://jsonfeed.org/version/1","items":[{"url":',
    '\u0000\u0001\u0002',
    '<rss></channel></item></link></rss>',
  ])('never throws on %j', (body) => {
    expect(() => parse(body)).not.toThrow();
  });

  it('skips stray end tags instead of trusting them', () => {
    const out = parse('<rss><channel><item></foo><link>/a</link></item></channel></rss>');
    expect(out.links).toEqual(['https://news.example.com/a']);
    expect(out.errors).toEqual([expect.stringMatching(/unexpected <\/foo>/)]);
  });
});

describe('parseFeed: size', () => {
  it('reads a feed of 200,000 items nested inside 100,000 elements, capped by maxLinks', () => {
    const items = Array.from({ length: 200_000 }, (_, i) => `<item><link>/n/${i}</link></item>`).join('');
    const deep = `${'<x>'.repeat(100_000)}${'</x>'.repeat(100_000)}`;
    const out = parse(`<rss><channel>${deep}${items}</channel></rss>`, { maxLinks: 50_000 });
    expect(out.kind).toBe('rss');
    expect(out.links).toHaveLength(50_000);
    expect(out.links[49_999]).toBe('https://news.example.com/n/49999');
    expect(out.truncated).toBe(true);
  }, 60_000);
});

describe('isFeedContentType', () => {
  it('knows the feed types, in any case and with parameters, and nothing else', () => {
    for (const t of ['application/rss+xml', 'Application/Atom+XML; charset=utf-8', 'application/feed+json']) expect(isFeedContentType(t)).toBe(true);
    for (const t of ['application/json', 'text/xml', 'application/xml', 'text/html', '', null, undefined]) expect(isFeedContentType(t)).toBe(false);
  });
});

describe('looksLikeFeed', () => {
  const rss = '<?xml version="1.0"?>\n<!-- generator: x -->\n<?xml-stylesheet href="/s.xsl"?><rss version="2.0"><channel></channel></rss>';

  it('trusts a feed type whatever the body', () => {
    expect(looksLikeFeed(bytes('garbage'), 'application/atom+xml')).toBe(true);
  });

  it('sniffs the root element of XML and text responses', () => {
    expect(looksLikeFeed(bytes(rss), 'text/xml')).toBe(true);
    expect(looksLikeFeed(bytes('\ufeff<feed xmlns="http://www.w3.org/2005/Atom">'), 'application/xml; charset=utf-8')).toBe(true);
    expect(looksLikeFeed(bytes('<!DOCTYPE rdf:RDF><rdf:RDF xmlns:rdf="x">'), 'text/plain')).toBe(true);
    expect(looksLikeFeed(bytes(rss), null)).toBe(true);
    expect(looksLikeFeed(bytes('<?xml version="1.0"?><urlset>'), 'text/xml')).toBe(false);
    expect(looksLikeFeed(bytes('<feeds>'), 'text/xml')).toBe(false);
    expect(looksLikeFeed(bytes('<RDF>'), 'text/xml')).toBe(false);
  });

  it('sniffs UTF-16 XML by its BOM', () => {
    const body = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<rss version="2.0">', 'utf16le')]);
    expect(looksLikeFeed(body, 'text/xml')).toBe(true);
  });

  it('sniffs JSON Feed by its version, escaped slashes included', () => {
    expect(looksLikeFeed(bytes('{ "version": "https://jsonfeed.org/version/1.1", "items": [] }'), 'application/json')).toBe(true);
    expect(looksLikeFeed(bytes('{"version":"https:\\/\\/jsonfeed.org\\/version\\/1"}'), 'application/json')).toBe(true);
    expect(looksLikeFeed(bytes('{"version":"2.0","items":[]}'), 'application/json')).toBe(false);
  });

  it('does not look inside HTML, images or other types', () => {
    expect(looksLikeFeed(bytes(rss), 'text/html')).toBe(false);
    expect(looksLikeFeed(bytes(rss), 'image/png')).toBe(false);
  });
});
