// Turns a response body into text for parsing, in the WHATWG encoding
// sniffing order: a BOM wins, else the Content-Type charset, else a <meta>
// found by the HTML prescan, else the default. The prescan (comments and
// other tags' attributes skipped, `content` read only with
// http-equiv="content-type", a meta-declared UTF-16 meaning UTF-8) is
// encoding-sniffer's, the parser's own (cheerio uses it); decoding is
// iconv-lite's, which knows every WHATWG encoding and, unlike Node 20's
// TextDecoder since 20.18.3, maps windows-1252's 0x80–0x9F to € “ ” ™.
import { isUtf8 } from 'node:buffer';
import { ResultType, Sniffer, type SnifferOptions } from 'encoding-sniffer/sniffer';
import iconv from 'iconv-lite';
import { TextDecoder } from 'node:util';
import { charsetOf, isHtml } from '../http/media-type';

/**
 * How much of the body the <meta> prescan reads. The spec prescans 1024
 * bytes; browsers still honour a later <meta> in the head (Firefox reloads),
 * so a crawler reads a little further.
 */
const PRESCAN_BYTES = 4096;

function hasBom(b: Uint8Array): boolean {
  return (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) || (b[0] === 0xfe && b[1] === 0xff) || (b[0] === 0xff && b[1] === 0xfe);
}

function nodeDecoder(label: string): TextDecoder | null {
  try {
    return new TextDecoder(label);
  } catch {
    return null;
  }
}

/** Valid UTF-8, allowing one character cut off at the end (a body truncated at the size cap). */
function isUtf8Body(body: Uint8Array): boolean {
  let end = body.length;
  for (let i = end - 1; i >= 0 && i >= end - 3; i--) {
    const c = body[i];
    if (c < 0x80) break;
    if (c >= 0xc0) {
      if (end - i < (c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2)) end = i;
      break;
    }
  }
  return isUtf8(body.subarray(0, end));
}

/**
 * `charset` is the encoding used, lower-cased (`utf-8`, `shift_jis`,
 * `windows-1252`). With nothing declared, an HTML body that is not valid
 * UTF-8 is read as windows-1252, as browsers do for a Western locale; any
 * other body as UTF-8.
 */
export function decodeBody(body: Uint8Array, contentType: string | null | undefined): { text: string; charset: string } {
  const buf = Buffer.from(body.buffer, body.byteOffset, body.length);
  const transport = charsetOf(contentType);
  // A WHATWG encoding iconv-lite lacks (ISO-8859-8-I, ISO-2022-JP,
  // x-mac-cyrillic) would be dropped by the sniffer as unknown: Node's own
  // decoder has it. (A BOM still wins.) Declared only in a <meta>, such an
  // encoding is not seen: the page falls back as undeclared.
  if (transport && !iconv.encodingExists(transport) && !hasBom(buf)) {
    const decoder = nodeDecoder(transport);
    if (decoder) return { text: decoder.decode(buf), charset: decoder.encoding };
  }
  const fallback = isHtml(contentType) && !isUtf8Body(body) ? 'windows-1252' : 'UTF-8';
  const encoding = sniff(buf, { maxBytes: PRESCAN_BYTES, defaultEncoding: fallback, ...(transport ? { transportLayerEncodingLabel: transport } : {}) });
  if (iconv.encodingExists(encoding)) return { text: iconv.decode(buf, encoding), charset: encoding.toLowerCase() };
  const decoder = nodeDecoder(encoding);
  if (decoder) return { text: decoder.decode(buf), charset: decoder.encoding };
  return { text: iconv.decode(buf, fallback), charset: fallback.toLowerCase() };
}

/**
 * encoding-sniffer's getEncoding, without reading past the BOM when the
 * Content-Type named a charset the sniffer knows: then only a BOM (in the
 * first three bytes) can still win, and the prescan of 4 KB for a <meta>,
 * which could not change the answer, is skipped.
 */
function sniff(buf: Buffer, opts: SnifferOptions): string {
  const sniffer = new Sniffer(opts);
  sniffer.write(buf.subarray(0, 3));
  if (sniffer.resultType === ResultType.BOM || sniffer.resultType === ResultType.PASSED) return sniffer.encoding;
  sniffer.write(buf.subarray(3));
  return sniffer.encoding;
}
