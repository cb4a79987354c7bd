import { extractCssUrls, requisiteUrl, scanCss } from '../../src/parse/css';

const SHEET = 'https://cdn.example.net/static/css/site.css';

function urls(css: string, base = SHEET): string[] {
  return extractCssUrls(css, base).urls;
}

describe('extractCssUrls', () => {
  describe('url()', () => {
    it('reads unquoted, single- and double-quoted forms, relative to the stylesheet', () => {
      const css = `
        body { background: url(img/bg.png) }
        .a { background-image: url('../img/a.png') }
        .b { background-image: url("/root/b.png") }
        .c { background: URL(//other.example/c.png) }`;
      expect(urls(css)).toEqual([
        'https://cdn.example.net/static/css/img/bg.png',
        'https://cdn.example.net/static/img/a.png',
        'https://cdn.example.net/root/b.png',
        'https://other.example/c.png',
      ]);
    });

    it('trims whitespace inside url( ) and around its string', () => {
      expect(urls('.a{background:url(  a.png  )} .b{background:url(\n"b c.png"\t)}')).toEqual([
        'https://cdn.example.net/static/css/a.png',
        'https://cdn.example.net/static/css/b%20c.png',
      ]);
    });

    it('keeps a quoted URL that contains ")" or the other quote', () => {
      expect(urls(`.a{background:url('x)y.png')} .b{background:url("it's.png")}`)).toEqual([
        'https://cdn.example.net/static/css/x)y.png',
        "https://cdn.example.net/static/css/it's.png",
      ]);
    });

    it('keeps the query of a cache-buster exactly as written and drops the fragment', () => {
      expect(urls('.a{background:url(sprite.png?v=123&a=1&utm_source=x#icon)}')).toEqual(['https://cdn.example.net/static/css/sprite.png?v=123&a=1&utm_source=x']);
    });

    it('reads every url() of a @font-face src list', () => {
      const css = `@font-face { font-family: F; src: url(f.woff2)format("woff2"), url('f.woff') format('woff'), local("F") }`;
      expect(urls(css)).toEqual(['https://cdn.example.net/static/css/f.woff2', 'https://cdn.example.net/static/css/f.woff']);
    });

    it('reads the strings and url()s of image-set(), and no other strings', () => {
      const css = `.a{background-image:-webkit-image-set("one.png" 1x, url(two.png) 2x)} .b{content:"not-a-url.png"} .c{font-family:"x.woff"}`;
      expect(urls(css)).toEqual(['https://cdn.example.net/static/css/one.png', 'https://cdn.example.net/static/css/two.png']);
    });

    it('is distinct in document order', () => {
      expect(urls('.a{background:url(a.png)} .b{background:url("a.png")} .c{background:url(b.png)} .d{background:url(./a.png)}')).toEqual([
        'https://cdn.example.net/static/css/a.png',
        'https://cdn.example.net/static/css/b.png',
      ]);
    });

    it('does not take other functions or dimensions for url()', () => {
      expect(urls('.a{x:myurl(no.png); y:1url(no2.png); z:#url(no3.png)} .b{background:url(yes.png)}')).toEqual(['https://cdn.example.net/static/css/yes.png']);
    });
  });

  describe('@import', () => {
    it('reads every form and reports imports apart', () => {
      const css = `@import "a.css"; @import url(b.css) screen; @import 'c.css' print; @import url("d.css") layer(x); @IMPORT /* c */ "e.css";
        body { background: url(bg.png) }`;
      const out = extractCssUrls(css, SHEET);
      const abs = (p: string) => `https://cdn.example.net/static/css/${p}`;
      expect(out.imports).toEqual(['a.css', 'b.css', 'c.css', 'd.css', 'e.css'].map(abs));
      expect(out.urls).toEqual(['a.css', 'b.css', 'c.css', 'd.css', 'e.css', 'bg.png'].map(abs));
    });

    it('does not take a later string for the import target', () => {
      const out = extractCssUrls('@import; .a{content:"x.css"} @media print { .b { content: "y.css" } }', SHEET);
      expect(out.urls).toEqual([]);
      expect(out.imports).toEqual([]);
    });
  });

  describe('comments', () => {
    it('ignores url() and @import inside comments', () => {
      expect(urls('/* url(no.png) @import "no.css"; */ .a{background:url(yes.png)}')).toEqual(['https://cdn.example.net/static/css/yes.png']);
      expect(urls('.a{background:url(a.png)} /* unterminated url(b.png)')).toEqual(['https://cdn.example.net/static/css/a.png']);
    });

    it('keeps a comment opener inside a url or a string as text', () => {
      expect(urls('.a{background:url(/*x*/y.png)}')).toEqual(['https://cdn.example.net/*x*/y.png']);
      expect(urls('.a{background:url("/*x.png")} .b{background:url(y.png)}')).toEqual(['https://cdn.example.net/*x.png', 'https://cdn.example.net/static/css/y.png']);
    });
  });

  describe('escapes (CSS Syntax Level 3)', () => {
    it('resolves hex escapes, with their optional trailing whitespace', () => {
      expect(urls('.a{background:url(\\31 23.png)} .b{background:url(\\66oo.png)} .c{background:url(x\\2e png)}')).toEqual([
        'https://cdn.example.net/static/css/123.png',
        'https://cdn.example.net/static/css/foo.png',
        'https://cdn.example.net/static/css/x.png',
      ]);
    });

    it('resolves escaped quotes, escaped characters and escaped newlines in strings', () => {
      expect(urls('.a{background:url("a\\"b.png")} .b{background:url(\'c\\\'d.png\')} .c{background:url("long\\\nname.png")} .d{background:url(e\\(f\\).png)}')).toEqual([
        'https://cdn.example.net/static/css/a%22b.png',
        "https://cdn.example.net/static/css/c'd.png",
        'https://cdn.example.net/static/css/longname.png',
        'https://cdn.example.net/static/css/e(f).png',
      ]);
    });

    it('reads an escaped function name as url()', () => {
      expect(urls('.a{background:u\\72l(esc.png)} .b{background:\\75 rl(esc2.png)}')).toEqual([
        'https://cdn.example.net/static/css/esc.png',
        'https://cdn.example.net/static/css/esc2.png',
      ]);
    });

    it('turns NUL, surrogate and out-of-range escapes into U+FFFD', () => {
      expect(urls('.a{background:url(\\0 a.png)} .b{background:url(\\d800 b.png)} .c{background:url(\\110000 c.png)}')).toEqual([
        'https://cdn.example.net/static/css/%EF%BF%BDa.png',
        'https://cdn.example.net/static/css/%EF%BF%BDb.png',
        'https://cdn.example.net/static/css/%EF%BF%BDc.png',
      ]);
    });
  });

  describe('what is not fetched', () => {
    it('skips data: URIs and fragment-only references without counting them invalid', () => {
      const out = extractCssUrls('.a{filter:url(#clip)} .b{background:url(data:image/png;base64,AAA=)} .c{mask:url("#m")} .d{background:url()}', SHEET);
      expect(out).toEqual({ urls: [], imports: [], dropped: 0, invalid: 0 });
    });

    it('counts other schemes and unparsable references invalid, each occurrence', () => {
      const out = extractCssUrls('.a{background:url(ftp://x/y)} .b{background:url(ftp://x/y)} .c{background:url("http://[bad")} .d{background:url(ok.png)}', SHEET);
      expect(out.urls).toEqual(['https://cdn.example.net/static/css/ok.png']);
      expect(out.invalid).toBe(3);
    });

    it('drops bad url tokens and bad strings as a browser does, and goes on', () => {
      const css = '.a{background:url(a b.png)} .b{background:url(c"d.png)} .c{background:url("bad\nstring.png")}\n.d{background:url(ok.png)}';
      expect(urls(css)).toEqual(['https://cdn.example.net/static/css/ok.png']);
    });

    it('counts URLs longer than maxLength invalid', () => {
      const out = extractCssUrls(`.a{background:url(/${'x'.repeat(100)})}`, SHEET, { maxLength: 50 });
      expect(out).toEqual({ urls: [], imports: [], dropped: 0, invalid: 1 });
    });
  });

  describe('limits', () => {
    it('keeps the first maxUrls distinct URLs and counts the other spellings', () => {
      const css = Array.from({ length: 10 }, (_, i) => `.i${i}{background:url(/i/${i}.png)} .j${i}{background:url(/i/0.png)}`).join('\n');
      const out = extractCssUrls(css, SHEET, { maxUrls: 3 });
      expect(out.urls).toEqual(['https://cdn.example.net/i/0.png', 'https://cdn.example.net/i/1.png', 'https://cdn.example.net/i/2.png']);
      expect(out.dropped).toBe(7);
    });

    it('reads a 5 MB pathological sheet to the end and finds the URL after it', () => {
      // Each piece starts a construct that a backtracking matcher would
      // retry from every position: url( without ")", comment openers,
      // strings that a newline ends, escapes.
      const pieces = ['url(', '/*/', '"\n', "'\\", '\\31 ', 'image-set(', '@import ', 'url("', '-->', '1e+'];
      const parts: string[] = [];
      let size = 0;
      for (let i = 0; size < 5_000_000; i++) {
        const p = pieces[i % pieces.length];
        parts.push(p);
        size += p.length;
      }
      // The tail closes whichever of them is still open (a comment, a bad url,
      // a string) the way the tokenizer would.
      const css = `${parts.join('')}*/)"\n)\n;}\n.z{background:url(found.png)}`;
      expect(css.length).toBeGreaterThan(5_000_000);
      expect(urls(css)).toContain('https://cdn.example.net/static/css/found.png');
    });

    it('reads a 5 MB sheet of url() occurrences', () => {
      const css = 'a{background:url(a.png)}'.repeat(220_000);
      expect(css.length).toBeGreaterThan(5_000_000);
      expect(urls(css)).toEqual(['https://cdn.example.net/static/css/a.png']);
    });

    it('never throws on malformed CSS', () => {
      for (const css of ['', 'url(', '@import', '"unterminated', '/* open', '\\', 'url(\\', '-', '+.', '#', '@', ')))(((', '\u0000url(\u0000)']) {
        expect(() => extractCssUrls(css, SHEET)).not.toThrow();
      }
    });
  });
});

describe('scanCss', () => {
  it('gives raw values, unresolved, with the import flag', () => {
    const seen: [string, boolean][] = [];
    scanCss('@import "a.css"; .b{background:url( b.png?x=2&y=1 )}', (raw, isImport) => seen.push([raw, isImport]));
    expect(seen).toEqual([
      ['a.css', true],
      ['b.png?x=2&y=1', false],
    ]);
  });
});

describe('requisiteUrl', () => {
  it('resolves without sorting or stripping the query', () => {
    expect(requisiteUrl(' style.css?v=123&a=1&utm_medium=x#f ', 'https://example.com/dir/page')).toBe('https://example.com/dir/style.css?v=123&a=1&utm_medium=x');
  });

  it('is undefined for what names nothing to fetch and null for what cannot be fetched', () => {
    for (const raw of ['', '  ', '#x', 'data:,x', 'DATA:image/png,x', 'blob:https://example.com/1', 'about:blank', 'javascript:void(0)']) {
      expect(requisiteUrl(raw, 'https://example.com/')).toBeUndefined();
    }
    for (const raw of ['mailto:a@example.com', 'http://[bad', 'file:///etc/passwd']) {
      expect(requisiteUrl(raw, 'https://example.com/')).toBeNull();
    }
  });
});
