// The URLs of a srcset attribute (img, source, link imagesrcset), by the
// HTML standard's "parse a srcset attribute" splitting loop
// (https://html.spec.whatwg.org/multipage/images.html#parse-a-srcset-attribute).
// A URL is a run of non-whitespace, so it may contain commas (data: URIs,
// Cloudinary-style `w_400,h_300` paths); a comma ends a candidate only when it
// trails the URL or follows the descriptors. Every candidate's URL is kept:
// which one a browser picks depends on its screen, and replay must have the
// one the replaying browser picks. Descriptors are skipped, not validated: a
// candidate a browser would drop for a bad descriptor costs one spare fetch,
// while a wrongly dropped one breaks replay.

const COMMA = 0x2c;
const LPAREN = 0x28;
const RPAREN = 0x29;

function isAsciiWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
}

/** Candidate URLs of `value`, raw (unresolved), in order. Linear in its length. */
export function srcsetUrls(value: string): string[] {
  const out: string[] = [];
  const n = value.length;
  let i = 0;
  for (;;) {
    while (i < n && (isAsciiWhitespace(value.charCodeAt(i)) || value.charCodeAt(i) === COMMA)) i++;
    if (i >= n) return out;
    const start = i;
    while (i < n && !isAsciiWhitespace(value.charCodeAt(i))) i++;
    let end = i;
    if (value.charCodeAt(end - 1) === COMMA) {
      // "a.png," : the URL ends the candidate, with no descriptors.
      while (end > start && value.charCodeAt(end - 1) === COMMA) end--;
      out.push(value.slice(start, end));
      continue;
    }
    out.push(value.slice(start, end));
    // The descriptors: up to a comma that is not inside parentheses.
    let inParens = false;
    while (i < n) {
      const c = value.charCodeAt(i++);
      if (inParens) {
        if (c === RPAREN) inParens = false;
      } else if (c === COMMA) {
        break;
      } else if (c === LPAREN) {
        inParens = true;
      }
    }
  }
}
