import { extractLinks } from '../../src/parse/links';
import { UrlError } from '../../src/url/url-error';

const PAGE = 'https://example.com/dir/page.html?x=1';

function urls(html: string, pageUrl = PAGE): string[] {
  return extractLinks(html, pageUrl).links.map((l) => l.url);
}

describe('extractLinks', () => {
  describe('relative forms', () => {
    it('resolves every relative form against the page URL and normalises', () => {
      const html = `
        <a href="other.html">1</a>
        <a href="./sub/">2</a>
        <a href="../up">3</a>
        <a href="/abs?b=2&a=1">4</a>
        <a href="?q=1">5</a>
        <a href="//cdn.example.net/x">6</a>
        <a href="HTTP://Other.Example:80/a/./b#frag">7</a>
        <a href="  spaced.html  ">8</a>
        <a href="#top">9</a>
        <a href="/p?utm_source=mail&id=3">10</a>`;
      expect(urls(html)).toEqual([
        'https://example.com/dir/other.html',
        'https://example.com/dir/sub/',
        'https://example.com/up',
        'https://example.com/abs?a=1&b=2',
        'https://example.com/dir/page.html?q=1',
        'https://cdn.example.net/x',
        'http://other.example/a/b',
        'https://example.com/dir/spaced.html',
        'https://example.com/dir/page.html?x=1',
        'https://example.com/p?id=3',
      ]);
    });

    it('passes normalisation options through', () => {
      const page = extractLinks('<a href="/p?utm_source=x&b=1&a=2">x</a>', PAGE, { stripTracking: false, sortQuery: false });
      expect(page.links[0].url).toBe('https://example.com/p?utm_source=x&b=1&a=2');
    });

    it('decodes entities in attribute values', () => {
      expect(urls('<a href="/s?a=1&amp;b=2">x</a>')).toEqual(['https://example.com/s?a=1&b=2']);
    });
  });

  describe('<base href>', () => {
    it('resolves links against the base, itself resolved against the page URL', () => {
      const page = extractLinks('<head><base href="/root/"></head><a href="x">x</a><a href="/y">y</a>', PAGE);
      expect(page.baseHref).toBe('https://example.com/root/');
      expect(page.links.map((l) => l.url)).toEqual(['https://example.com/root/x', 'https://example.com/y']);
    });

    it('applies to links that appear before it and uses only the first base with href', () => {
      const html = '<a href="a">a</a><base target="_top"><base href="https://cdn.example.org/b/"><base href="/ignored/">';
      const page = extractLinks(html, PAGE);
      expect(page.baseHref).toBe('https://cdn.example.org/b/');
      expect(page.links.map((l) => l.url)).toEqual(['https://cdn.example.org/b/a']);
    });

    it('ignores an unusable base', () => {
      for (const href of ['javascript:void(0)', 'http://[bad', 'data:text/html,x']) {
        const page = extractLinks(`<base href="${href}"><a href="a">a</a>`, PAGE);
        expect(page.baseHref).toBeNull();
        expect(page.links[0].url).toBe('https://example.com/dir/a');
      }
    });

    it('is null when absent', () => {
      expect(extractLinks('<a href="a">a</a>', PAGE).baseHref).toBeNull();
    });
  });

  describe('nofollow', () => {
    it('honours rel nofollow, ugc and sponsored, in any case and combination', () => {
      const html = `
        <a href="/1" rel="nofollow">1</a>
        <a href="/2" rel="UGC">2</a>
        <a href="/3" rel="noopener sponsored">3</a>
        <a href="/4" rel="noopener noreferrer">4</a>
        <a href="/5">5</a>
        <area href="/6" rel="nofollow">`;
      const page = extractLinks(html, PAGE);
      expect(page.links.map((l) => [l.url.slice(-2), l.nofollow])).toEqual([
        ['/1', true],
        ['/2', true],
        ['/3', true],
        ['/4', false],
        ['/5', false],
        ['/6', true],
      ]);
    });

    it('follows a URL if any occurrence is followable', () => {
      const page = extractLinks('<a href="/a" rel="nofollow">1</a><a href="/a">2</a><a href="/a" rel="nofollow">3</a>', PAGE);
      expect(page.links).toEqual([{ url: 'https://example.com/a', nofollow: false, tag: 'a' }]);
    });
  });

  describe('meta robots', () => {
    it.each([
      ['noindex,nofollow', { noindex: true, nofollow: true }],
      ['NOINDEX', { noindex: true, nofollow: false }],
      ['index, nofollow', { noindex: false, nofollow: true }],
      ['none', { noindex: true, nofollow: true }],
      ['all', { noindex: false, nofollow: false }],
    ])('reads content="%s"', (content, expected) => {
      const page = extractLinks(`<head><meta name="Robots" content="${content}"></head>`, PAGE);
      expect(page.metaRobots).toEqual(expected);
    });

    it('combines several robots metas and ignores other names', () => {
      const html = '<meta name="robots" content="noindex"><meta name="robots" content="nofollow"><meta name="description" content="nofollow">';
      expect(extractLinks(html, PAGE).metaRobots).toEqual({ noindex: true, nofollow: true });
      expect(extractLinks('<meta name="googlebot" content="none">', PAGE).metaRobots).toEqual({
        noindex: false,
        nofollow: false,
      });
    });

    it('marks every link nofollow when the page says nofollow', () => {
      const page = extractLinks('<meta name="robots" content="nofollow"><a href="/a">a</a><iframe src="/f"></iframe>', PAGE);
      expect(page.links.every((l) => l.nofollow)).toBe(true);
    });
  });

  describe('canonical', () => {
    it('reads link rel=canonical, normalised, without adding it to links', () => {
      const page = extractLinks('<link rel="canonical" href="/Canonical?utm_medium=x#f"><a href="/a">a</a>', PAGE);
      expect(page.canonical).toBe('https://example.com/Canonical');
      expect(page.links.map((l) => l.url)).toEqual(['https://example.com/a']);
    });

    it('matches rel as a token list and resolves against <base>', () => {
      const page = extractLinks('<base href="https://example.org/b/"><link rel="stylesheet" href="s.css"><link rel="Canonical alternate" href="c">', PAGE);
      expect(page.canonical).toBe('https://example.org/b/c');
    });

    it('is null when absent or unusable', () => {
      expect(extractLinks('<a href="/a">a</a>', PAGE).canonical).toBeNull();
      expect(extractLinks('<link rel="canonical" href="javascript:x">', PAGE).canonical).toBeNull();
    });
  });

  describe('invalid hrefs', () => {
    it('counts unsupported schemes and unparsable hrefs without throwing', () => {
      const html = `
        <a href="mailto:a@example.com">m</a>
        <a href="javascript:void(0)">j</a>
        <a href="tel:+441234">t</a>
        <a href="data:text/html,hi">d</a>
        <a href="http://[::1">bad</a>
        <a href="">empty</a>
        <a href="/ok">ok</a>
        <a>no href</a>`;
      const page = extractLinks(html, PAGE);
      expect(page.invalid).toBe(6);
      expect(page.links.map((l) => l.url)).toEqual(['https://example.com/ok']);
    });

    it('counts every invalid occurrence, even repeated', () => {
      expect(extractLinks('<a href="mailto:x">1</a><a href="mailto:x">2</a>', PAGE).invalid).toBe(2);
    });
  });

  describe('tags', () => {
    it('collects a, area, iframe and frame in document order, de-duplicated', () => {
      const html = `
        <map><area href="/area"></map>
        <a href="/a">a</a>
        <iframe src="/frame"></iframe>
        <a href="/a#again">a</a>
        <img src="/img.png"><script src="/s.js"></script><link rel="stylesheet" href="/c.css">`;
      const page = extractLinks(html, PAGE);
      expect(page.links).toEqual([
        { url: 'https://example.com/area', nofollow: false, tag: 'area' },
        { url: 'https://example.com/a', nofollow: false, tag: 'a' },
        { url: 'https://example.com/frame', nofollow: false, tag: 'iframe' },
      ]);
    });

    it('collects frame[src] in framesets', () => {
      const page = extractLinks('<frameset><frame src="left.html"><frame src="right.html"></frameset>', PAGE);
      expect(page.links.map((l) => [l.url, l.tag])).toEqual([
        ['https://example.com/dir/left.html', 'frame'],
        ['https://example.com/dir/right.html', 'frame'],
      ]);
    });

    it('can leave frames out', () => {
      const page = extractLinks('<iframe src="/f"></iframe><a href="/a">a</a>', PAGE, { includeFrames: false });
      expect(page.links.map((l) => l.tag)).toEqual(['a']);
    });

    it('finds links inside <noscript>, since the crawler runs no scripts', () => {
      expect(urls('<noscript><a href="/ns">x</a></noscript>')).toEqual(['https://example.com/ns']);
    });
  });

  describe('title', () => {
    it('collapses whitespace and ignores SVG titles', () => {
      const html = '<body><svg><title>icon</title></svg></body><title>  Hello\n  World </title>';
      expect(extractLinks(html, PAGE).title).toBe('Hello World');
    });

    it('is null when absent or blank', () => {
      expect(extractLinks('<p>x</p>', PAGE).title).toBeNull();
      expect(extractLinks('<title>   </title>', PAGE).title).toBeNull();
    });
  });

  describe('malformed HTML', () => {
    it.each([
      '',
      '<<<>>>',
      '<a href="/x"',
      '<a href="/unclosed">text <div><a href=/unquoted>u</a>',
      '<html><body></html></body><a href="/after">a</a>',
      '<a href="/a" href="/dup">dup attribute</a>',
      '\u0000<a href="/nul">\u0000</a>',
      '<table><a href="/in-table">t</a></table>',
      '<!-- <a href="/commented">c</a> --><script>document.write("<a href=/in-script>")</script>',
    ])('does not throw on %j', (html) => {
      expect(() => extractLinks(html, PAGE)).not.toThrow();
    });

    it('recovers links like a browser would', () => {
      expect(urls('<a href="/unclosed">text <div><a href=/unquoted>u</a>')).toEqual(['https://example.com/unclosed', 'https://example.com/unquoted']);
      expect(urls('<a href="/a" href="/dup">x</a>')).toEqual(['https://example.com/a']);
      expect(urls('<!-- <a href="/c">c</a> --><script>var s = "<a href=/s>";</script><a href="/real">r</a>')).toEqual(['https://example.com/real']);
    });
  });

  describe('requisites', () => {
    const withReqs = (html: string, opts: Parameters<typeof extractLinks>[2] = {}) => extractLinks(html, PAGE, { requisites: true, ...opts });
    const reqs = (html: string) => withReqs(html).requisites.map((r) => [r.url.replace('https://example.com', ''), r.tag]);

    it('reads every source element and attribute, in document order', () => {
      const html = `
        <head>
          <link rel="stylesheet" href="/s.css"><link rel="icon" href="/favicon.ico"><link rel="preload" as="font" href="/f.woff2">
          <link rel="modulepreload" href="/m.js"><link rel="manifest" href="/app.webmanifest"><link rel="apple-touch-icon" href="/touch.png">
          <script src="/app.js"></script><script>var inline = "<img src=/no.png>";</script>
        </head>
        <body background="/body-bg.gif">
          <img src="/img.png">
          <video src="/v.mp4" poster="/poster.jpg"><source src="/v.webm" type="video/webm"><track src="/subs.vtt"></video>
          <audio src="/a.mp3"><source src="/a.ogg"></audio>
          <embed src="/e.swf"><object data="/o.svg"></object>
          <input type="image" src="/button.png"><input type="text" src="/not-an-image.png">
          <table background="/t.gif"><tr><td background="/td.gif">x</td></tr></table>
          <svg><image href="/svg-image.png"/><use xlink:href="/sprite.svg#icon"/><use href="#local"/></svg>
        </body>`;
      expect(reqs(html)).toEqual([
        ['/s.css', 'link'],
        ['/favicon.ico', 'link'],
        ['/f.woff2', 'link'],
        ['/m.js', 'link'],
        ['/app.webmanifest', 'link'],
        ['/touch.png', 'link'],
        ['/app.js', 'script'],
        ['/body-bg.gif', 'body'],
        ['/img.png', 'img'],
        ['/v.mp4', 'video'],
        ['/poster.jpg', 'video'],
        ['/v.webm', 'source'],
        ['/subs.vtt', 'track'],
        ['/a.mp3', 'audio'],
        ['/a.ogg', 'source'],
        ['/e.swf', 'embed'],
        ['/o.svg', 'object'],
        ['/button.png', 'input'],
        ['/t.gif', 'table'],
        ['/td.gif', 'td'],
        ['/svg-image.png', 'image'],
        ['/sprite.svg', 'use'],
      ]);
    });

    it('matches link rel as case-insensitive tokens, and leaves other rels out', () => {
      const html = `
        <link rel="Shortcut ICON" href="/1.ico"><link rel="apple-touch-icon-precomposed" href="/2.png">
        <link rel="alternate stylesheet" href="/3.css"><link rel="mask-icon" href="/4.svg">
        <link rel="prefetch" href="/no-1"><link rel="canonical" href="/no-2"><link rel="next" href="/no-3"><link href="/no-4">
        <link rel="preload" as="image" href="/5.png" imagesrcset="/5-1x.png 1x, /5-2x.png 2x">`;
      expect(reqs(html).map(([u]) => u)).toEqual(['/1.ico', '/2.png', '/3.css', '/4.svg', '/5.png', '/5-1x.png', '/5-2x.png']);
    });

    it('takes every srcset candidate, URLs with commas included', () => {
      const html = `
        <img src="/i.png" srcset="/i-480.png 480w, /i-800.png 800w,/i-1x.png 1x , /c_fill,w_400/i.png 2x, data:image/png;base64,iVBOR,w0KG= 3x, /last.png">
        <picture><source srcset="/p.avif" type="image/avif"><source srcset="/p-1.webp 1x,/p-2.webp 2x"><img src="/p.jpg"></picture>
        <img srcset="/trailing.png,">`;
      expect(reqs(html)).toEqual([
        ['/i.png', 'img'],
        ['/i-480.png', 'img'],
        ['/i-800.png', 'img'],
        ['/i-1x.png', 'img'],
        ['/c_fill,w_400/i.png', 'img'],
        ['/last.png', 'img'],
        ['/p.avif', 'source'],
        ['/p-1.webp', 'source'],
        ['/p-2.webp', 'source'],
        ['/p.jpg', 'img'],
        ['/trailing.png', 'img'],
      ]);
    });

    it('reads lazy-loading attributes on any element', () => {
      const html = `
        <img class="lazy" src="/placeholder.gif" data-src="/real.jpg" data-srcset="/real-1x.jpg 1x, /real-2x.jpg 2x">
        <div data-original="/bg-original.jpg"></div><section data-src="/section.jpg"></section>`;
      expect(reqs(html)).toEqual([
        ['/placeholder.gif', 'img'],
        ['/real.jpg', 'img'],
        ['/real-1x.jpg', 'img'],
        ['/real-2x.jpg', 'img'],
        ['/bg-original.jpg', 'div'],
        ['/section.jpg', 'section'],
      ]);
    });

    it('reads url() in style attributes and url() and @import in <style> blocks, with CSS escapes', () => {
      const html = `
        <style>
          @import "/imported.css";
          /* url(/commented.png) */
          body { background: url('/bg.png') } .x { background-image: url(/esc\\61 ped.png) }
          .amp { background: url(/q.png?a=1&amp;b=2) }
        </style>
        <div style="background-image: url(&quot;/attr.png&quot;)">x</div>
        <p style="color: red">no url</p>
        <span style="background: url(/span.png), url(data:image/gif;base64,R0lG)">y</span>`;
      expect(reqs(html)).toEqual([
        ['/imported.css', 'style'],
        ['/bg.png', 'style'],
        ['/escaped.png', 'style'],
        // A <style> element's text is raw: no character references in it.
        ['/q.png?a=1&amp;b=2', 'style'],
        ['/attr.png', 'style'],
        ['/span.png', 'style'],
      ]);
    });

    it('reads a <style> left open at the end of the page, and no url() in scripts or comments', () => {
      expect(reqs('<script>var s = "url(/in-script.png)";</script><!-- <img src="/commented.png"> --><style>a{background:url(/open.png)}')).toEqual([['/open.png', 'style']]);
    });

    it('keeps cache-buster queries exactly as written, and drops the fragment', () => {
      const page = withReqs('<link rel="stylesheet" href="/style.css?v=123&a=1"><script src="/app.js?utm_source=x&b=2&a=1#f"></script><a href="/p?b=2&a=1">p</a>');
      expect(page.requisites.map((r) => r.url)).toEqual(['https://example.com/style.css?v=123&a=1', 'https://example.com/app.js?utm_source=x&b=2&a=1']);
      // Links keep their own normalisation.
      expect(page.links.map((l) => l.url)).toEqual(['https://example.com/p?a=1&b=2']);
    });

    it('is distinct by URL, keeping the first tag', () => {
      expect(reqs('<link rel="preload" as="image" href="/a.png"><img src="/a.png"><img src="/a.png#x" srcset="/a.png 2x">')).toEqual([['/a.png', 'link']]);
    });

    it('resolves against <base href>, even requisites that precede it, as links are', () => {
      const page = withReqs('<link rel="stylesheet" href="s.css"><base href="https://static.example.org/v2/"><img src="i.png"><div style="background:url(d.png)"></div>');
      expect(page.requisites.map((r) => r.url)).toEqual(['https://static.example.org/v2/s.css', 'https://static.example.org/v2/i.png', 'https://static.example.org/v2/d.png']);
    });

    it('leaves out what names nothing to fetch or cannot be fetched, without counting it invalid', () => {
      const page = withReqs(`
        <img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><img src="javascript:void(0)"><img src="blob:https://example.com/1">
        <iframe src="about:blank"></iframe><img src="#"><img src=""><img src="http://[bad"><img src="ftp://example.com/x.png"><img src="/ok.png">`);
      expect(page.requisites.map((r) => r.url)).toEqual(['https://example.com/ok.png']);
      // The iframe's about:blank is a link, and an invalid one, as before.
      expect(page.invalid).toBe(1);
    });

    it('keeps the first maxRequisites and counts the other spellings', () => {
      const html = Array.from({ length: 10 }, (_, i) => `<img src="/i/${i}.png"><img src="/i/0.png">`).join('');
      const page = withReqs(html, { maxRequisites: 3 });
      expect(page.requisites.map((r) => r.url)).toEqual(['https://example.com/i/0.png', 'https://example.com/i/1.png', 'https://example.com/i/2.png']);
      expect(page.requisitesDropped).toBe(7);
      expect(withReqs(html, { maxRequisites: 10 }).requisitesDropped).toBe(0);
    });

    it('are not collected unless asked for, and links are the same either way', () => {
      const html = '<link rel="stylesheet" href="/s.css"><img src="/i.png" style="background:url(/b.png)"><a href="/a">a</a><iframe src="/f"></iframe>';
      const off = extractLinks(html, PAGE);
      expect(off.requisites).toEqual([]);
      expect(off.requisitesDropped).toBe(0);
      const on = withReqs(html);
      expect(on.requisites).toHaveLength(3);
      expect(on.links).toEqual(off.links);
    });

    it('are bounded by maxParseMs with the links', () => {
      /** A clock that moves 1 ms each time it is read. */
      let t = 0;
      const bomb = Array.from({ length: 2500 }, (_, i) => `<img src="/i/${i}.png">`).join('');
      expect(bomb.length).toBeLessThan(64 * 1024);
      const page = withReqs(bomb, { maxParseMs: 1, now: () => t++ });
      expect(page.timeout?.code).toBe('PARSE_TIMEOUT');
      expect(page.requisites.length).toBeGreaterThan(0);
      expect(page.requisites.length).toBeLessThan(2500);
    });
  });

  describe('feeds', () => {
    it('reads <link rel=alternate> with a feed type, any case and with parameters, normalised and distinct', () => {
      const html = `
        <link rel="alternate" type="application/rss+xml" title="RSS" href="/feed.xml?b=2&a=1">
        <link rel="Alternate" type="Application/Atom+XML; charset=utf-8" href="/atom.xml">
        <link rel="alternate" type="application/feed+json" href="/feed.json">
        <link rel="alternate" type="application/json" href="/wp-json/wp/v2/pages/12">
        <link rel="alternate" type="application/json" href="/feeds/all.json">
        <link rel="alternate" type="application/rss+xml" href="/feed.xml?a=1&b=2#again">
        <link rel="alternate" type="text/html" hreflang="fr" href="/fr/">
        <link rel="alternate" href="/no-type.xml">
        <link rel="feed" type="application/rss+xml" href="/not-alternate.xml">
        <a rel="alternate" type="application/rss+xml" href="/anchor.xml">a</a>`;
      expect(extractLinks(html, PAGE).feeds).toEqual([
        'https://example.com/feed.xml?a=1&b=2',
        'https://example.com/atom.xml',
        'https://example.com/feed.json',
        // Plain JSON only when it says feed: WordPress's REST API links are not feeds.
        'https://example.com/feeds/all.json',
      ]);
    });

    it('keeps at most ten, resolved against <base>', () => {
      const html = '<base href="/b/">' + Array.from({ length: 15 }, (_, i) => `<link rel="alternate" type="application/atom+xml" href="f${i}.xml">`).join('');
      const feeds = extractLinks(html, PAGE).feeds;
      expect(feeds).toHaveLength(10);
      expect(feeds[0]).toBe('https://example.com/b/f0.xml');
    });
  });

  it('rejects a page URL that is not http(s)', () => {
    expect(() => extractLinks('<a href="/a">a</a>', 'not a url')).toThrow(UrlError);
    expect(() => extractLinks('<a href="/a">a</a>', 'file:///tmp/x.html')).toThrow(UrlError);
  });

  it('extracts every link of a 5 MB page', () => {
    const chunks: string[] = ['<html><head><title>Big</title></head><body>'];
    let size = 0;
    let i = 0;
    while (size < 5_000_000) {
      const chunk =
        `<div class="item"><p>Paragraph ${i} with some filler text to make it realistic.</p>` +
        `<a href="/item/${i}?utm_source=feed&b=2&a=1">item</a><a href="/nav/${i % 50}" rel="nofollow">nav</a>` +
        `<a href="mailto:x${i}@example.com">mail</a></div>\n`;
      chunks.push(chunk);
      size += chunk.length;
      i++;
    }
    const html = `${chunks.join('')}</body></html>`;
    const page = extractLinks(html, PAGE);
    expect(page.links).toHaveLength(i + 50);
    expect(page.invalid).toBe(i);
    expect(page.links[0].url).toBe('https://example.com/item/0?a=1&b=2');
    expect(page.title).toBe('Big');
  });
});
