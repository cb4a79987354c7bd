import { TextDecoder } from 'node:util';
// Turns a response body into text for parsing: a BOM wins (as in the
// WHATWG encoding sniffing order), else the Content-Type charset, else a
// <meta charset> in the first kilobytes, else UTF-8. Node's TextDecoder (full ICU) knows the WHATWG
// encodings (Shift_JIS, windows-1251, …).

function charsetFromContentType(ct: string | null | undefined): string | null {
  const m = ct ? /charset\s*=\s*["']?([\w.:-]+)/i.exec(ct) : null;
  return m ? m[1].toLowerCase() : null;
}

function charsetFromBom(body: Uint8Array): string | null {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  return null;
}

function charsetFromMeta(body: Uint8Array): string | null {
  const head = Buffer.from(body.subarray(0, 4096)).toString('latin1');
  const m = /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head);
  return m ? m[1].toLowerCase() : null;
}

function decoderFor(label: string | null): TextDecoder | null {
  if (!label) return null;
  try {
    return new TextDecoder(label);
  } catch {
    return null;
  }
}

export function decodeBody(body: Uint8Array, contentType: string | null | undefined): { text: string; charset: string } {
  const bom = charsetFromBom(body);
  const candidates = [bom, charsetFromContentType(contentType), charsetFromMeta(body), 'utf-8'];
  for (const label of candidates) {
    const dec = decoderFor(label);
    if (dec) return { text: dec.decode(body), charset: dec.encoding };
  }
  return { text: new TextDecoder().decode(body), charset: 'utf-8' };
}

export function isHtml(contentType: string | null | undefined): boolean {
  if (!contentType) return false;
  const t = contentType.split(';')[0].trim().toLowerCase();
  return t === 'text/html' || t === 'application/xhtml+xml';
}
