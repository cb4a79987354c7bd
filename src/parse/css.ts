// URLs a stylesheet makes the browser load: every url() and every @import
// target, so that an archived page replays with its fonts, backgrounds and
// imported sheets (issue 24).
//
// A hand-written scanner that follows the tokenizer of CSS Syntax Level 3
// (https://www.w3.org/TR/css-syntax-3/#tokenization) only as far as finding
// URLs needs: comments, strings, names (so `myurl(` is not `url(`), numbers
// (so `1url(` is a dimension, not a function), url tokens and escapes. No
// regular expression runs over the stylesheet: each character is looked at a
// bounded number of times, so a hostile sheet (unclosed comments and strings,
// millions of `url(`) costs time linear in its length. Nothing is parsed into
// rules; a url() is a URL wherever it stands, as browsers fetch it wherever it
// applies and a crawler cannot tell which rules apply.
//
// The same scanner reads <style> blocks and style= attributes (links.ts via
// scanCss), so there is one CSS reading in the crawler.
import { normalizeUrl, type NormalizeOptions } from '../url/normalize';
import { UrlError } from '../url/url-error';

export interface CssUrls {
  /** Every URL the sheet loads, @import targets included: resolved, distinct, in document order; at most `maxUrls`. */
  urls: string[];
  /** The subset of `urls` that @import targets (each a stylesheet in its turn). */
  imports: string[];
  /** Distinct spellings past `maxUrls` that do not spell a kept URL (they are not resolved). */
  dropped: number;
  /** References that cannot be fetched: unparsable, too long, or a scheme other than http(s) (data: and the like excepted, see requisiteUrl). */
  invalid: number;
}

export interface CssUrlOptions {
  /** Distinct URLs kept, the first in document order (default: all). */
  maxUrls?: number;
  /** Longest URL kept, in characters (normalizeUrl's maxLength; default its own). */
  maxLength?: number;
}

/**
 * How requisite URLs are spelt: resolved and without fragment, but the query
 * exactly as written. Replay tools look a resource up by the URL the browser
 * requests, and `style.css?v=123&a=1` is requested as written; sorting or
 * stripping it would archive a URL no browser asks for.
 */
export const REQUISITE_URL_OPTIONS: NormalizeOptions = Object.freeze({ sortQuery: false, stripTracking: false });

/**
 * Schemes of references that are not fetched and are not errors either: the
 * resource is inline (data:), local to the browser (blob:, about:) or not a
 * resource (javascript:).
 */
const INLINE_SCHEMES = ['data:', 'blob:', 'about:', 'javascript:'];

/**
 * The URL to fetch for a requisite reference: a string (resolved against
 * `base`, spelt per REQUISITE_URL_OPTIONS), `undefined` when the reference
 * names nothing to fetch (empty, fragment-only such as SVG's `url(#clip)`, or
 * an inline scheme such as data:), or `null` when it cannot be fetched
 * (unparsable, too long, another scheme).
 */
export function requisiteUrl(raw: string, base: string, maxLength?: number): string | null | undefined {
  const ref = trimUrlSpace(raw);
  if (ref === '' || ref.charCodeAt(0) === 0x23 /* # */) return undefined;
  const head = ref.length > 16 ? ref.slice(0, 16).toLowerCase() : ref.toLowerCase();
  if (INLINE_SCHEMES.some((s) => head.startsWith(s))) return undefined;
  try {
    return normalizeUrl(ref, base, maxLength === undefined ? REQUISITE_URL_OPTIONS : { ...REQUISITE_URL_OPTIONS, maxLength });
  } catch (err) {
    if (!(err instanceof UrlError)) throw err;
    return null;
  }
}

/**
 * URLs of a stylesheet (`baseUrl`: the sheet's own URL; for CSS inside a
 * page, the page's base). Never throws on any CSS; an unusable base makes
 * relative references invalid.
 */
export function extractCssUrls(css: string, baseUrl: string, opts: CssUrlOptions = {}): CssUrls {
  const maxUrls = opts.maxUrls ?? Infinity;
  const urls: string[] = [];
  const imports: string[] = [];
  const kept = new Set<string>();
  const importSet = new Set<string>();
  // One resolution per distinct spelling; past the cap, spellings are only counted.
  const cache = new Map<string, string | null | undefined>();
  const dropped = new Set<string>();
  let invalid = 0;
  scanCss(css, (raw, isImport) => {
    let url = cache.get(raw);
    if (url === undefined && !cache.has(raw)) {
      if (urls.length >= maxUrls) {
        dropped.add(raw);
        return;
      }
      url = requisiteUrl(raw, baseUrl, opts.maxLength);
      cache.set(raw, url);
    }
    if (url === undefined) return;
    if (url === null) {
      invalid++;
      return;
    }
    if (!kept.has(url)) {
      if (urls.length >= maxUrls) {
        dropped.add(raw);
        return;
      }
      kept.add(url);
      urls.push(url);
    }
    if (isImport && !importSet.has(url)) {
      importSet.add(url);
      imports.push(url);
    }
  });
  return { urls, imports, dropped: dropped.size, invalid };
}

/**
 * Calls `visit` with the raw value (escapes resolved, not trimmed of inner
 * spaces, not resolved) of every url() and @import target in `css`, in
 * document order. Strings inside image-set() are URLs too. Linear time.
 */
export function scanCss(css: string, visit: (raw: string, isImport: boolean) => void): void {
  new CssScanner(css, visit).run();
}

// ---------------------------------------------------------------------------

const LF = 0x0a;
const CR = 0x0d;
const FF = 0x0c;
const TAB = 0x09;
const SPACE = 0x20;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const HASH = 0x23;
const LPAREN = 0x28;
const RPAREN = 0x29;
const STAR = 0x2a;
const PLUS = 0x2b;
const MINUS = 0x2d;
const DOT = 0x2e;
const SLASH = 0x2f;
const SEMICOLON = 0x3b;
const AT = 0x40;
const BACKSLASH = 0x5c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const GT = 0x3e;

function isNewline(c: number): boolean {
  return c === LF || c === CR || c === FF;
}
function isWhitespace(c: number): boolean {
  return c === SPACE || c === TAB || isNewline(c);
}
function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}
function isNameStart(c: number): boolean {
  // NUL is read as U+FFFD by the spec's preprocessing: a name code point too.
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c >= 0x80 || c === 0;
}
function isNameChar(c: number): boolean {
  return isNameStart(c) || isDigit(c) || c === MINUS;
}
/** Code points that end a url token as a bad url (besides quotes and "("). */
function isNonPrintable(c: number): boolean {
  return (c >= 1 && c <= 8) || c === 0x0b || (c >= 0x0e && c <= 0x1f) || c === 0x7f;
}

/** CSS and the URL parser both drop leading and trailing whitespace of a url(). */
function trimUrlSpace(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && s.charCodeAt(a) <= SPACE) a++;
  while (b > a && s.charCodeAt(b - 1) <= SPACE) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

class CssScanner {
  private i = 0;
  private readonly n: number;
  /** After `@import`, until the next token that is not whitespace or a comment. */
  private importPending = false;
  /** Open parentheses and functions, for knowing when image-set() ends. */
  private depth = 0;
  /** The depth inside the outermost open image-set(), or -1. */
  private imageSetDepth = -1;

  constructor(
    private readonly css: string,
    private readonly visit: (raw: string, isImport: boolean) => void,
  ) {
    this.n = css.length;
  }

  run(): void {
    const { css, n } = this;
    while (this.i < n) {
      const c = css.charCodeAt(this.i);
      if (c === SLASH && css.charCodeAt(this.i + 1) === STAR) {
        const end = css.indexOf('*/', this.i + 2);
        this.i = end === -1 ? n : end + 2;
        continue;
      }
      if (isWhitespace(c)) {
        this.i++;
        continue;
      }
      const importPending = this.importPending;
      this.importPending = false;
      if (c === DQUOTE || c === SQUOTE) {
        const value = this.readString();
        if (value !== null && (importPending || this.imageSetDepth !== -1)) this.visit(value, importPending);
      } else if (c === AT && this.startsIdent(this.i + 1)) {
        this.i++;
        this.importPending = this.readName().toLowerCase() === 'import';
      } else if (c === HASH && this.i + 1 < n && (isNameChar(css.charCodeAt(this.i + 1)) || this.validEscape(this.i + 1))) {
        this.i++;
        this.readName();
      } else if (c === MINUS && css.charCodeAt(this.i + 1) === MINUS && css.charCodeAt(this.i + 2) === GT) {
        this.i += 3; // CDC (-->)
      } else if (this.startsNumber(this.i)) {
        this.readNumeric();
      } else if (this.startsIdent(this.i)) {
        this.readIdentLike(importPending);
      } else {
        this.i++;
        if (c === LPAREN) this.depth++;
        else if (c === RPAREN) this.closeParen();
        else if (c === LBRACE || c === RBRACE || c === SEMICOLON) {
          // A block or statement boundary: nothing still open inside it matters.
          this.depth = 0;
          this.imageSetDepth = -1;
        }
      }
    }
  }

  private closeParen(): void {
    if (this.depth > 0) this.depth--;
    if (this.imageSetDepth !== -1 && this.depth < this.imageSetDepth) this.imageSetDepth = -1;
  }

  /** An ident, function or url token starts at `this.i` (startsIdent was true). */
  private readIdentLike(importPending: boolean): void {
    const { css, n } = this;
    const name = this.readName();
    if (css.charCodeAt(this.i) !== LPAREN) return;
    this.i++;
    const lower = name.length <= 20 ? name.toLowerCase() : '';
    if (lower === 'url') {
      let j = this.i;
      while (j < n && isWhitespace(css.charCodeAt(j))) j++;
      const q = css.charCodeAt(j);
      if (q !== DQUOTE && q !== SQUOTE) {
        this.i = j;
        const value = this.readUrlToken();
        if (value !== null) this.visit(value, importPending);
        return;
      }
      // url("…"): a function whose string argument is the URL.
      this.i = j;
      this.depth++;
      const value = this.readString();
      if (value !== null) this.visit(value, importPending);
      return;
    }
    this.depth++;
    if ((lower === 'image-set' || lower === '-webkit-image-set') && this.imageSetDepth === -1) this.imageSetDepth = this.depth;
  }

  /** The spec's "consume a url token", from just after `url(` and its whitespace. Null for a bad url. */
  private readUrlToken(): string | null {
    const { css, n } = this;
    let out = '';
    let from = this.i;
    while (this.i < n) {
      const c = css.charCodeAt(this.i);
      if (c === RPAREN) {
        out += css.slice(from, this.i);
        this.i++;
        return out;
      }
      if (isWhitespace(c)) {
        out += css.slice(from, this.i);
        while (this.i < n && isWhitespace(css.charCodeAt(this.i))) this.i++;
        if (this.i >= n) return out;
        if (css.charCodeAt(this.i) === RPAREN) {
          this.i++;
          return out;
        }
        this.skipBadUrl();
        return null;
      }
      if (c === DQUOTE || c === SQUOTE || c === LPAREN || isNonPrintable(c)) {
        this.skipBadUrl();
        return null;
      }
      if (c === BACKSLASH) {
        if (!this.validEscape(this.i)) {
          this.skipBadUrl();
          return null;
        }
        out += css.slice(from, this.i);
        out += this.readEscape();
        from = this.i;
        continue;
      }
      this.i++;
    }
    return out + css.slice(from, n);
  }

  /** The remnants of a bad url: up to and including the next ")" that is not escaped. */
  private skipBadUrl(): void {
    const { css, n } = this;
    while (this.i < n) {
      const c = css.charCodeAt(this.i);
      if (c === RPAREN) {
        this.i++;
        return;
      }
      this.i += c === BACKSLASH && this.validEscape(this.i) ? 2 : 1;
    }
  }

  /** A string token from its opening quote; null for a bad string (an unescaped newline), which is left unconsumed. */
  private readString(): string | null {
    const { css, n } = this;
    const quote = css.charCodeAt(this.i);
    this.i++;
    let out = '';
    let from = this.i;
    while (this.i < n) {
      const c = css.charCodeAt(this.i);
      if (c === quote) {
        out += css.slice(from, this.i);
        this.i++;
        return out;
      }
      if (isNewline(c)) return null;
      if (c === BACKSLASH) {
        out += css.slice(from, this.i);
        const next = css.charCodeAt(this.i + 1);
        if (this.i + 1 >= n) {
          this.i++;
        } else if (isNewline(next)) {
          // An escaped newline continues the string and is not part of it.
          this.i += next === CR && css.charCodeAt(this.i + 2) === LF ? 3 : 2;
        } else {
          out += this.readEscape();
        }
        from = this.i;
        continue;
      }
      this.i++;
    }
    // EOF ends a string without error worth dropping it for.
    return out + css.slice(from, n);
  }

  /** A name (ident, at-keyword or hash body) from `this.i`. */
  private readName(): string {
    const { css, n } = this;
    let out = '';
    let from = this.i;
    while (this.i < n) {
      const c = css.charCodeAt(this.i);
      if (isNameChar(c)) {
        this.i++;
      } else if (c === BACKSLASH && this.validEscape(this.i)) {
        out += css.slice(from, this.i);
        out += this.readEscape();
        from = this.i;
      } else {
        break;
      }
    }
    return out + css.slice(from, this.i);
  }

  /** A number, with its unit or %, from `this.i` (startsNumber was true). */
  private readNumeric(): void {
    const { css, n } = this;
    let c = css.charCodeAt(this.i);
    if (c === PLUS || c === MINUS) this.i++;
    while (this.i < n && isDigit(css.charCodeAt(this.i))) this.i++;
    if (css.charCodeAt(this.i) === DOT && isDigit(css.charCodeAt(this.i + 1))) {
      this.i++;
      while (this.i < n && isDigit(css.charCodeAt(this.i))) this.i++;
    }
    c = css.charCodeAt(this.i);
    if (c === 0x45 || c === 0x65) {
      const s = css.charCodeAt(this.i + 1);
      const skip = s === PLUS || s === MINUS ? 2 : 1;
      if (isDigit(css.charCodeAt(this.i + skip))) {
        this.i += skip;
        while (this.i < n && isDigit(css.charCodeAt(this.i))) this.i++;
      }
    }
    if (this.startsIdent(this.i)) this.readName();
    else if (css.charCodeAt(this.i) === 0x25) this.i++;
  }

  /** Resolves the escape at `this.i` (a valid one) and moves past it. */
  private readEscape(): string {
    const { css, n } = this;
    this.i++; // the backslash
    if (this.i >= n) return '\ufffd';
    if (!isHex(css.charCodeAt(this.i))) {
      const cp = css.codePointAt(this.i)!;
      this.i += cp > 0xffff ? 2 : 1;
      return cp === 0 ? '\ufffd' : String.fromCodePoint(cp);
    }
    const start = this.i;
    while (this.i < n && this.i - start < 6 && isHex(css.charCodeAt(this.i))) this.i++;
    const cp = parseInt(css.slice(start, this.i), 16);
    // One whitespace after a hex escape belongs to it (CR LF counts as one).
    const ws = css.charCodeAt(this.i);
    if (ws === CR && css.charCodeAt(this.i + 1) === LF) this.i += 2;
    else if (isWhitespace(ws)) this.i++;
    if (cp === 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return '\ufffd';
    return String.fromCodePoint(cp);
  }

  private validEscape(at: number): boolean {
    return this.css.charCodeAt(at) === BACKSLASH && !isNewline(this.css.charCodeAt(at + 1));
  }

  private startsIdent(at: number): boolean {
    const c = this.css.charCodeAt(at);
    if (at >= this.n) return false;
    if (c === MINUS) {
      const d = this.css.charCodeAt(at + 1);
      return (at + 1 < this.n && (isNameStart(d) || d === MINUS)) || this.validEscape(at + 1);
    }
    return isNameStart(c) || this.validEscape(at);
  }

  private startsNumber(at: number): boolean {
    const { css } = this;
    let c = css.charCodeAt(at);
    if (c === PLUS || c === MINUS) c = css.charCodeAt(++at);
    if (isDigit(c)) return true;
    return c === DOT && isDigit(css.charCodeAt(at + 1));
  }
}
