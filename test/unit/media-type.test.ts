// One reading of a Content-Type for every place that looks at one: each
// case below is [value, what it reads as].
import { charsetOf, isHtml, mediaTypeOf } from '../../src/http/media-type';

type Value = string | null | undefined;
const readsAs = <T>(fn: (v: Value) => T, cases: [Value, T][]) => expect(cases.map(([v]) => [v, fn(v)])).toEqual(cases);

test('the media type: type/subtype, lower-cased, without parameters or the white space around it', () => {
  readsAs(mediaTypeOf, [
    ['text/html', 'text/html'],
    [' Text/HTML ; charset=UTF-8', 'text/html'],
    ['application/ATOM+xml;type=feed;charset="utf-8"', 'application/atom+xml'],
    ['\tapplication/json\t', 'application/json'],
  ]);
});

test('no media type: a missing or empty value, or parameters without a type', () => {
  readsAs(mediaTypeOf, [
    [null, ''],
    [undefined, ''],
    ['', ''],
    ['   ', ''],
    ['; charset=utf-8', ''],
  ]);
});

test('the charset parameter, its case kept, quotes and white space aside; it ends where an encoding label cannot go on', () => {
  readsAs(charsetOf, [
    ['text/html; charset=UTF-8', 'UTF-8'],
    ['text/html;charset="iso-8859-1"', 'iso-8859-1'],
    ["text/xml; charset='Shift_JIS'", 'Shift_JIS'],
    ['text/html; CHARSET = windows-1251', 'windows-1251'],
    ['application/xml; type=feed; charset=x-mac-cyrillic', 'x-mac-cyrillic'],
    ['text/html; charset=utf-8, text/plain', 'utf-8'],
    ['text/html; charset=utf-8 ; q=1', 'utf-8'],
  ]);
});

test('no charset: none given, or an empty one', () => {
  readsAs(charsetOf, [
    [null, undefined],
    [undefined, undefined],
    ['text/html', undefined],
    ['text/html; charset=', undefined],
    ['text/html; charset=""', undefined],
  ]);
});

test('HTML: the HTML and XHTML media types only, whatever their case and parameters', () => {
  readsAs(isHtml, [
    ['text/html; charset=utf-8', true],
    ['Application/XHTML+XML', true],
    [' TEXT/HTML ', true],
    ['text/xml', false],
    ['text/html-sandboxed', false],
    ['text/plain; x=text/html', false],
    ['', false],
    [null, false],
    [undefined, false],
  ]);
});
