import { decodeBody } from '../../src/parse/decode';
import { extractLinks } from '../../src/parse/links';

const latin1 = (s: string): Buffer => Buffer.from(s, 'latin1');
const page = (head: string, body = '<a href="/caf\u00e9.html">caf\u00e9</a>'): string => `<!doctype html><html><head>${head}</head><body>${body}</body></html>`;
const links = (text: string): string[] => extractLinks(text, 'https://example.com/').links.map((l) => l.url);

describe('decodeBody', () => {
  describe('precedence', () => {
    it('lets a BOM win over the Content-Type charset and a <meta>', () => {
      const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(page('<meta charset="windows-1251">'))]);
      const r = decodeBody(body, 'text/html; charset=shift_jis');
      expect(r.charset).toBe('utf-8');
      expect(r.text).toContain('caf\u00e9');
    });

    it('lets the Content-Type charset win over a <meta>', () => {
      const r = decodeBody(latin1(page('<meta charset="utf-8">')), 'text/html; charset=ISO-8859-1');
      expect(r.charset).toBe('windows-1252');
      expect(r.text).toContain('caf\u00e9');
    });

    it('reads the <meta> when the Content-Type names a charset nobody knows', () => {
      const body = Buffer.concat([Buffer.from(page('<meta charset="windows-1251">', '')), Buffer.from([0xf1, 0xeb, 0xee, 0xe2, 0xee])]);
      const r = decodeBody(body, 'text/html; charset=no-such-charset');
      expect(r.charset).toBe('windows-1251');
      expect(r.text).toContain('слово');
    });

    it('reads bytes 0x80-0x9F as windows-1252 for every label of it (Node’s TextDecoder gives C1 controls)', () => {
      for (const label of ['windows-1252', 'ISO-8859-1', 'latin1', 'us-ascii']) {
        const r = decodeBody(latin1('<p>\u0080 \u0093q\u0094 \u0099 \u009f</p>'), `text/html; charset=${label}`);
        expect({ label, charset: r.charset, text: r.text }).toEqual({ label, charset: 'windows-1252', text: '<p>\u20ac \u201cq\u201d \u2122 \u0178</p>' });
      }
    });

    it('reads a <meta charset> when the Content-Type has none', () => {
      const body = Buffer.concat([Buffer.from(page('<meta charset="windows-1251">', '')), Buffer.from([0xf1, 0xeb, 0xee, 0xe2, 0xee])]);
      const r = decodeBody(body, 'text/html');
      expect(r.charset).toBe('windows-1251');
      expect(r.text).toContain('слово');
    });

    it('honours UTF-16 from the Content-Type (the transport may select it)', () => {
      const r = decodeBody(Buffer.from(page(''), 'utf16le'), 'text/html; charset=utf-16le');
      expect(r.charset).toBe('utf-16le');
      expect(links(r.text)).toEqual(['https://example.com/caf%C3%A9.html']);
    });
  });

  describe('a <meta> that declares UTF-16 or x-user-defined', () => {
    it.each(['utf-16', 'UTF-16LE', 'utf-16be', 'unicode'])('reads <meta charset="%s"> on an ASCII-compatible page as UTF-8', (label) => {
      const r = decodeBody(Buffer.from(page(`<meta charset="${label}">`)), 'text/html');
      expect(r.charset).toBe('utf-8');
      expect(r.text).toContain('<a href="/caf\u00e9.html">');
      expect(links(r.text)).toEqual(['https://example.com/caf%C3%A9.html']);
    });

    it('reads a UTF-16 http-equiv Content-Type pragma as UTF-8 too', () => {
      const r = decodeBody(Buffer.from(page('<meta http-equiv="Content-Type" content="text/html; charset=utf-16">')), 'text/html');
      expect(r.charset).toBe('utf-8');
      expect(links(r.text)).toEqual(['https://example.com/caf%C3%A9.html']);
    });

    it('reads <meta charset="x-user-defined"> as windows-1252', () => {
      const r = decodeBody(latin1(page('<meta charset="x-user-defined">', '<a href="/caf\u00e9.html">\u0080</a>')), 'text/html');
      expect(r.charset).toBe('windows-1252');
      expect(r.text).toContain('\u20ac');
      expect(links(r.text)).toEqual(['https://example.com/caf%C3%A9.html']);
    });
  });

  describe('the <meta> prescan', () => {
    it('ignores charset= in a content attribute without http-equiv="content-type"', () => {
      const head = '<meta name="description" content="set charset=shift_jis here"><meta charset="utf-8">';
      const r = decodeBody(Buffer.from(page(head, '<p>\u65e5\u672c\u8a9e</p>')), 'text/html');
      expect(r.charset).toBe('utf-8');
      expect(r.text).toContain('\u65e5\u672c\u8a9e');
    });

    it('takes the content charset when the same <meta> has http-equiv="content-type", in any case and order', () => {
      for (const head of [
        '<meta http-equiv="content-type" content="text/html; charset=windows-1251">',
        '<META CONTENT="text/html;charset=WINDOWS-1251" HTTP-EQUIV="Content-Type">',
        '<meta content=\'text/html; charset="windows-1251"\' http-equiv=CONTENT-TYPE />',
      ]) {
        const body = Buffer.concat([Buffer.from(page(head, '')), Buffer.from([0xf1, 0xeb, 0xee, 0xe2, 0xee])]);
        const r = decodeBody(body, 'text/html');
        expect({ head, charset: r.charset }).toEqual({ head, charset: 'windows-1251' });
      }
    });

    it('ignores a pragma on another <meta> element', () => {
      const head = '<meta http-equiv="content-type"><meta content="text/html; charset=shift_jis">';
      expect(decodeBody(Buffer.from(page(head)), 'text/html').charset).toBe('utf-8');
    });

    it('lets the first usable declaration win', () => {
      const head = '<meta charset="utf-8"><meta http-equiv="content-type" content="text/html; charset=shift_jis"><meta charset="windows-1251">';
      expect(decodeBody(Buffer.from(page(head)), 'text/html').charset).toBe('utf-8');
    });

    it('skips a <meta> with an unknown label and goes on to the next', () => {
      const head = '<meta charset="no-such-charset"><meta charset="windows-1251">';
      expect(decodeBody(Buffer.from(page(head, '')), 'text/html').charset).toBe('windows-1251');
    });

    it('ignores a <meta> inside a comment or another tag’s attribute value', () => {
      for (const head of ['<!-- <meta charset="shift_jis"> --><meta charset="utf-8">', '<link title="<meta charset=shift_jis>" href="/x.css"><meta charset="utf-8">']) {
        expect({ head, charset: decodeBody(Buffer.from(page(head)), 'text/html').charset }).toEqual({ head, charset: 'utf-8' });
      }
    });

    it('reads a <meta> up to 4 KiB into the body (past the spec’s 1024 bytes, as browsers still honour it), not beyond', () => {
      const at = (offset: number): string => decodeBody(Buffer.from(`<html><head><!--${'x'.repeat(offset)}--><meta charset="windows-1251"></head></html>`), 'text/html').charset;
      expect(at(2000)).toBe('windows-1251');
      expect(at(5000)).toBe('utf-8');
    });

    it('finds nothing in a <meta> cut off at the end of the scanned bytes', () => {
      expect(decodeBody(Buffer.from('<html><head><meta charset="shift_jis'), 'text/html').charset).toBe('utf-8');
    });
  });

  describe('no declaration at all', () => {
    it('reads an HTML body that is not valid UTF-8 as windows-1252', () => {
      const r = decodeBody(latin1(page('<title>caf\u00e9 \u0093quoted\u0094</title>')), 'text/html');
      expect(r.charset).toBe('windows-1252');
      expect(r.text).toContain('caf\u00e9 \u201cquoted\u201d');
      expect(links(r.text)).toEqual(['https://example.com/caf%C3%A9.html']);
    });

    it('applies the fallback to XHTML as well', () => {
      expect(decodeBody(latin1(page('')), 'application/xhtml+xml; q=1').charset).toBe('windows-1252');
    });

    it('keeps UTF-8 for a valid UTF-8 body', () => {
      const r = decodeBody(Buffer.from(page('', '<a href="/caf\u00e9.html">\u65e5\u672c</a>')), 'text/html');
      expect(r.charset).toBe('utf-8');
      expect(links(r.text)).toEqual(['https://example.com/caf%C3%A9.html']);
    });

    it('keeps UTF-8 for a UTF-8 body cut off in the middle of a character', () => {
      const full = Buffer.from(page('', '<a href="/caf\u00e9.html">\u65e5\u672c</a>'));
      const cut = full.subarray(0, full.indexOf(Buffer.from('\u672c')) + 2);
      const r = decodeBody(cut, 'text/html');
      expect(r.charset).toBe('utf-8');
      expect(r.text).toContain('\u65e5');
    });

    it('keeps UTF-8 (with U+FFFD) for content that is not HTML, such as a sitemap', () => {
      for (const contentType of [null, undefined, 'application/xml', 'text/xml', 'text/plain', 'application/json']) {
        const r = decodeBody(latin1('<urlset><url><loc>https://example.com/caf\u00e9</loc></url></urlset>'), contentType);
        expect({ contentType, charset: r.charset }).toEqual({ contentType, charset: 'utf-8' });
        expect(r.text).toContain('caf\ufffd');
      }
    });
  });
});

describe('encodings iconv-lite lacks', () => {
  it('named by the Content-Type are decoded by Node: ISO-8859-8-I (Hebrew), ISO-2022-JP', () => {
    const hebrew = decodeBody(Buffer.concat([Buffer.from('<p>'), Buffer.from([0xf9, 0xec, 0xe5, 0xed]), Buffer.from('</p>')]), 'text/html; charset=iso-8859-8-i');
    expect(hebrew).toEqual({ text: '<p>\u05e9\u05dc\u05d5\u05dd</p>', charset: 'iso-8859-8-i' });
    const jis = decodeBody(Buffer.from('<p>\x1b$B$3$s\x1b(B</p>', 'latin1'), 'text/html; charset=iso-2022-jp');
    expect(jis).toEqual({ text: '<p>\u3053\u3093</p>', charset: 'iso-2022-jp' });
  });
});
