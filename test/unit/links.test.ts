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
