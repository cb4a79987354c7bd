// Hostile pages for link extraction (issue 23): nesting that makes a tree
// builder quadratic, link bombs, and pages whose parsing outlasts its time
// limit. Jest's timeout bounds a hang; nothing here asserts a speed.
import { capCandidates } from '../../activities/discovery';
import { extractLinks } from '../../src/parse/links';

const PAGE = 'https://example.com/dir/page.html';
/** The fetch's body cap (fetch.maxBodyBytes' default), which bounds what a page can throw at the parser. */
const TEN_MIB = 10 * 1024 * 1024;

function deeplyNested(depth: number, inner: string): string {
  return `<html><head><title>Deep</title></head><body>${'<div>'.repeat(depth)}${inner}${'</div>'.repeat(depth)}<a href="/after">after</a></body></html>`;
}

describe('extractLinks on hostile nesting', () => {
  it('parses 400,000 nested <div>s and finds the links inside and after them', () => {
    const page = extractLinks(deeplyNested(400_000, '<a href="/deep">deep</a>'), PAGE, { withText: true });
    expect(page.links.map((l) => l.url)).toEqual(['https://example.com/deep', 'https://example.com/after']);
    expect(page.title).toBe('Deep');
    // Text nodes are joined as they come, as the DOM's textContent does.
    expect(page.text).toBe('deepafter');
    expect(page.timeout).toBeUndefined();
  }, 60_000);

  it('parses a 10 MiB page of nothing but nesting', () => {
    const depth = Math.floor((TEN_MIB - 100) / '<div></div>'.length);
    const html = deeplyNested(depth, '<a href="/deep">deep</a>');
    expect(html.length).toBeGreaterThan(TEN_MIB * 0.99);
    expect(extractLinks(html, PAGE).links.map((l) => l.url)).toEqual(['https://example.com/deep', 'https://example.com/after']);
  }, 60_000);

  it('parses 10 MiB of opened elements closed by end tags that match none of them', () => {
    // Each stray end tag makes a parser that keeps a stack search all of it.
    const n = Math.floor(TEN_MIB / '<b></i>'.length / 2);
    const html = `<a href="/first">1</a>${'<b>'.repeat(n)}${'</i>'.repeat(n)}<a href="/last">2</a>`;
    expect(extractLinks(html, PAGE).links.map((l) => l.url)).toEqual(['https://example.com/first', 'https://example.com/last']);
  }, 60_000);
});

describe('extractLinks with maxLinks', () => {
  const bomb = (n: number) => Array.from({ length: n }, (_, i) => `<a href="/l/${i}">x</a><a href="/l/${i}#again">again</a>`).join('') + '<link rel="canonical" href="/canon">';

  it('keeps the first maxLinks distinct links in document order and counts the rest', () => {
    const page = extractLinks(bomb(10), PAGE, { maxLinks: 4 });
    expect(page.links.map((l) => l.url)).toEqual([0, 1, 2, 3].map((i) => `https://example.com/l/${i}`));
    expect(page.linksDropped).toBe(6);
    // The page's signals do not depend on the cap.
    expect(page.canonical).toBe('https://example.com/canon');
  });

  it('drops nothing under the cap', () => {
    const page = extractLinks(bomb(10), PAGE, { maxLinks: 10 });
    expect(page.links).toHaveLength(10);
    expect(page.linksDropped).toBe(0);
  });

  it('bounds a 600,000-link page to the cap', () => {
    const html = Array.from({ length: 600_000 }, (_, i) => `<a href=${i}>`).join('');
    expect(html.length).toBeLessThan(TEN_MIB);
    const page = extractLinks(html, PAGE, { maxLinks: 3000 });
    expect(page.links).toHaveLength(3000);
    expect(page.links[2999].url).toBe('https://example.com/dir/2999');
    expect(page.linksDropped).toBe(597_000);
  }, 60_000);
});

describe('extractLinks with maxParseMs', () => {
  /** A clock that moves 1 ms each time it is read: parsing "takes" as long as it looks at it. */
  const ticking = () => {
    let t = 0;
    return () => t++;
  };
  const html = `<title>T</title><a href="/first">1</a>${'<p>filler</p>'.repeat(100_000)}<a href="/last">2</a>`;

  it('ends a page past the limit with a typed result and the links found so far', () => {
    const page = extractLinks(html, PAGE, { maxParseMs: 1, now: ticking() });
    expect(page.timeout).toEqual({ code: 'PARSE_TIMEOUT', message: expect.stringMatching(/1 ms/) });
    expect(page.links.map((l) => l.url)).toEqual(['https://example.com/first']);
    expect(page.title).toBe('T');
  });

  it('parses the whole page within the limit', () => {
    const page = extractLinks(html, PAGE, { maxParseMs: 1_000_000, now: ticking() });
    expect(page.timeout).toBeUndefined();
    expect(page.links.map((l) => l.url)).toEqual(['https://example.com/first', 'https://example.com/last']);
  });

  it('also bounds the normalisation of a link bomb', () => {
    const bomb = Array.from({ length: 2500 }, (_, i) => `<a href="/l/${i}">x</a>`).join('');
    // Under one chunk: the tokenizer's part ends before the clock is read, the links' does not.
    expect(bomb.length).toBeLessThan(64 * 1024);
    const page = extractLinks(bomb, PAGE, { maxParseMs: 1, now: ticking() });
    expect(page.timeout?.code).toBe('PARSE_TIMEOUT');
    expect(page.links.length).toBeGreaterThan(0);
    expect(page.links.length).toBeLessThan(2500);
  });
});

describe('extractLinks: what the page text leaves out', () => {
  it('skips scripts, styles, noscript, templates and the title, and keeps the rest in order', () => {
    const html =
      '<head><title>Title</title><style>p{}</style></head><body><p>one</p><script>var x = "<p>no</p>";</script>' +
      '<noscript>hidden</noscript><template><p>tpl</p></template><svg><title>tip</title></svg><p>two &amp; three</p><iframe><a href="/in-frame">x</a></iframe></body>';
    const page = extractLinks(html, PAGE, { withText: true });
    expect(page.text).toBe('onetwo & three');
    // An iframe's content is text to a browser, never markup.
    expect(page.links).toEqual([]);
  });
});

describe('capCandidates (routeCandidates with maxLinks: a page and its handler together)', () => {
  it('keeps the first max distinct URLs in order, with their repeats, and counts the distinct rest', () => {
    const c = (url: string, label?: string) => ({ url, ...(label ? { label } : {}) });
    const { kept, dropped } = capCandidates([c('a', 'hook'), c('b'), c('a'), c('c'), c('d'), c('c'), c('b')], 2);
    expect(kept).toEqual([c('a', 'hook'), c('b'), c('a'), c('b')]);
    expect(dropped).toBe(2);
    expect(capCandidates([c('a'), c('b')], undefined)).toEqual({ kept: [c('a'), c('b')], dropped: 0 });
  });
});

describe('extractLinks: foreign content', () => {
  it('reads a self-closed SVG title as no title, and the text after it', () => {
    const page = extractLinks('<svg><title/><a href="/in-svg"/></svg><p>text</p><title>Doc</title>', PAGE, { withText: true });
    expect(page.title).toBe('Doc');
    expect(page.text).toBe('text');
    expect(page.links.map((l) => l.url)).toEqual(['https://example.com/in-svg']);
  });
});
