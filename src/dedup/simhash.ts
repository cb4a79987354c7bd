// Charikar SimHash: a 64-bit fingerprint whose Hamming distance tracks how
// much two texts differ, so near-duplicate pages (same article, different
// ad slot or date line) can be found without comparing the texts.
// Pure and deterministic: every worker must derive the same bits from the same text.

const TOKEN = /[\p{L}\p{N}]+/gu;
const ASCII_TOKEN = /[a-z0-9]+/g;
/** A character above U+007F: a string without one is ASCII, its UTF-16 code units its UTF-8 bytes. */
const NON_ASCII = /[\u0080-\uffff]/;
const SHINGLE = 3;
const encoder = new TextEncoder();

/**
 * Lower-cased word tokens. NFKC first, so composed and decomposed accents
 * and full-width forms tokenise alike (a combining mark is not \p{L} and
 * would otherwise split a word in two).
 */
export function tokens(text: string): string[] {
  // ASCII text is its own NFKC form, and its letters and digits are [a-z0-9]: the plain expression is several times faster.
  if (!NON_ASCII.test(text)) return text.toLowerCase().match(ASCII_TOKEN) ?? [];
  return text.normalize('NFKC').toLowerCase().match(TOKEN) ?? [];
}

/**
 * 64-bit FNV-1a of the UTF-8 bytes, as [hi, lo] unsigned 32-bit halves.
 * Split into halves because BigInt arithmetic per byte is an order of
 * magnitude slower, and a page has thousands of shingles.
 */
export function fnv1a64(s: string): [number, number] {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (const b of encoder.encode(s)) {
    lo = (lo ^ b) >>> 0;
    // x * (2^40 + 0x1b3) mod 2^64. Every intermediate stays below 2^53, so doubles are exact.
    const l = lo * 0x1b3;
    const carry = Math.floor(l / 0x1_0000_0000);
    hi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) >>> 0;
    lo = l >>> 0;
  }
  return [hi, lo];
}

/**
 * MurmurHash3's fmix64 finaliser. FNV-1a alone barely spreads a key's last
 * bytes into its high bits, so shingles that differ only at the end share
 * many bits, and unrelated pages came out ~10 bits apart instead of ~32.
 */
export function fmix64([hi, lo]: [number, number]): [number, number] {
  fh = hi;
  fl = lo;
  fmixState();
  return [fh, fl];
}

/** The 64-bit hash of one feature (shingle). */
export function featureHash(s: string): [number, number] {
  return fmix64(fnv1a64(s));
}

/**
 * SimHash over word 3-shingles (single words when the text has fewer than
 * three), each occurrence weighted 1. Shingles rather than words, so that
 * reordering paragraphs or swapping one word moves only a few features.
 * An empty text hashes to 0n; callers should treat very short texts as
 * having no meaningful simhash (pass null to ContentIndex) since they
 * collide easily.
 *
 * The same bits as hashing each joined shingle with featureHash, computed
 * without building any string: the words are found by char code in the
 * text (lower-cased NFKC, or ASCII as it is), FNV-1a runs over the three
 * words' UTF-8 bytes, encoded as it reads them, and the spaces between, and
 * the 64 bit counts are kept bit-sliced. It was a tenth of a worker's CPU
 * on real pages (docs/benchmarks-history.md), where most texts have a non-ASCII
 * character (a dash, a no-break space).
 */
export function simhash64(text: string): bigint {
  // The classify stage (a revisit's simhash) and the near-duplicate check ask for the same page's text in turn.
  if (text === last.text) return last.hash;
  const hash = simhashOf(text);
  last.text = text;
  last.hash = hash;
  return hash;
}

const last = { text: null as string | null, hash: 0n };

function simhashOf(text: string): bigint {
  // ASCII text is its own NFKC form and needs no lower-casing first: its A–Z are folded while hashing.
  const folded = NON_ASCII.test(text) ? text.normalize('NFKC').toLowerCase() : text;
  const n = wordBounds(folded);
  if (n === 0) return 0n;
  resetCounts();
  if (n < SHINGLE) {
    for (let w = 0; w < n; w++) featureOf(folded, w, 1);
    return vote(n);
  }
  for (let w = 0; w + SHINGLE <= n; w++) featureOf(folded, w, SHINGLE);
  return vote(n - SHINGLE + 1);
}

/** Word bounds of the last text, [start, end) pairs of UTF-16 indexes, reused from page to page (grown when a page has more words). */
let bounds = new Int32Array(2 * 4096);

/**
 * Whether a code point above U+007F is a letter or a number (\p{L}, \p{N}),
 * for the Basic Multilingual Plane: 0 not looked up yet, 1 yes, 2 no. A page
 * uses few distinct such characters; one regex test each, once per process.
 */
const BMP_WORD = new Uint8Array(0x10000);
const WORD_CHAR = /^[\p{L}\p{N}]$/u;

function isWordCodePoint(cp: number): boolean {
  if (cp < 0x10000) {
    let known = BMP_WORD[cp]!;
    if (known === 0) BMP_WORD[cp] = known = WORD_CHAR.test(String.fromCharCode(cp)) ? 1 : 2;
    return known === 1;
  }
  return WORD_CHAR.test(String.fromCodePoint(cp));
}

/**
 * Finds the words of `text` (lower-cased NFKC, or ASCII) into `bounds`: the
 * maximal runs of letters and numbers, what `tokens` matches with
 * [\p{L}\p{N}]+ (or [a-z0-9]+ after lower-casing ASCII), read by char code
 * without building the word strings. Returns how many.
 */
function wordBounds(text: string): number {
  let n = 0;
  let start = -1;
  const len = text.length;
  for (let i = 0; i <= len; i++) {
    let word = false;
    let units = 1;
    if (i < len) {
      const c = text.charCodeAt(i);
      if (c < 0x80) word = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a);
      else if (c >= 0xd800 && c <= 0xdbff && i + 1 < len) {
        const d = text.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          word = isWordCodePoint(((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000);
          units = 2;
        }
      } else word = isWordCodePoint(c);
    }
    if (word) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      if (2 * n + 2 > bounds.length) {
        const grown = new Int32Array(bounds.length * 2);
        grown.set(bounds);
        bounds = grown;
      }
      bounds[2 * n] = start;
      bounds[2 * n + 1] = i;
      n++;
      start = -1;
    }
    i += units - 1;
  }
  return n;
}

/**
 * Adds the feature of `count` words from word `first` (joined by single
 * spaces) to the bit counts: FNV-1a 64 over their UTF-8 bytes, encoded from
 * the code points as they are read (ASCII A–Z folded to a–z), then fmix64.
 * One function with its state in locals: this runs for every word of every page.
 */
function featureOf(text: string, first: number, count: number): void {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let w = first; w < first + count; w++) {
    if (w > first) {
      // The space between two words.
      const x = (lo ^ 0x20) >>> 0;
      const p0 = (x & 0xffff) * 0x1b3;
      const p1 = (x >>> 16) * 0x1b3 + (p0 >>> 16);
      lo = (((p1 & 0xffff) << 16) | (p0 & 0xffff)) >>> 0;
      hi = (Math.imul(hi, 0x1b3) + (p1 >>> 16) + (x << 8)) >>> 0;
    }
    const end = bounds[2 * w + 1]!;
    for (let i = bounds[2 * w]!; i < end; i++) {
      let cp = text.charCodeAt(i);
      if (cp < 0x80) {
        // x * (2^40 + 0x1b3) mod 2^64 in 16-bit partial products: integer operations only, every step exact.
        const x = (lo ^ (cp <= 0x5a && cp >= 0x41 ? cp | 0x20 : cp)) >>> 0;
        const p0 = (x & 0xffff) * 0x1b3;
        const p1 = (x >>> 16) * 0x1b3 + (p0 >>> 16);
        lo = (((p1 & 0xffff) << 16) | (p0 & 0xffff)) >>> 0;
        hi = (Math.imul(hi, 0x1b3) + (p1 >>> 16) + (x << 8)) >>> 0;
        continue;
      }
      // The code point's two to four UTF-8 bytes, the first in the lowest byte.
      let bytes: number;
      let nbytes: number;
      if (cp < 0x800) {
        bytes = 0xc0 | (cp >>> 6) | ((0x80 | (cp & 0x3f)) << 8);
        nbytes = 2;
      } else if (cp >= 0xd800 && cp <= 0xdbff) {
        // A word's surrogates are always paired (a lone one is no letter).
        cp = ((cp - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00) + 0x10000;
        bytes = 0xf0 | (cp >>> 18) | ((0x80 | ((cp >>> 12) & 0x3f)) << 8) | ((0x80 | ((cp >>> 6) & 0x3f)) << 16) | ((0x80 | (cp & 0x3f)) << 24);
        nbytes = 4;
      } else {
        bytes = 0xe0 | (cp >>> 12) | ((0x80 | ((cp >>> 6) & 0x3f)) << 8) | ((0x80 | (cp & 0x3f)) << 16);
        nbytes = 3;
      }
      for (let k = 0; k < nbytes; k++) {
        const x = (lo ^ ((bytes >>> (8 * k)) & 0xff)) >>> 0;
        const p0 = (x & 0xffff) * 0x1b3;
        const p1 = (x >>> 16) * 0x1b3 + (p0 >>> 16);
        lo = (((p1 & 0xffff) << 16) | (p0 & 0xffff)) >>> 0;
        hi = (Math.imul(hi, 0x1b3) + (p1 >>> 16) + (x << 8)) >>> 0;
      }
    }
  }
  fh = hi;
  fl = lo;
  fmixState();
  addToCounts(fh, fl);
}

/**
 * How many features have each of the 64 bits set, kept bit-sliced: plane k
 * holds bit k of all 32 counters of a half, so adding a feature is a
 * ripple-carry add of its two 32-bit halves (about two steps each on
 * average) instead of 64 counter updates. 31 planes count up to 2^31 − 1 features, more than a string has characters.
 */
const PLANES = 31;
const loPlanes = new Int32Array(PLANES);
const hiPlanes = new Int32Array(PLANES);

function resetCounts(): void {
  loPlanes.fill(0);
  hiPlanes.fill(0);
}

function addToCounts(hi: number, lo: number): void {
  let carry = lo | 0;
  for (let k = 0; carry !== 0; k++) {
    const t = loPlanes[k]! & carry;
    loPlanes[k] = loPlanes[k]! ^ carry;
    carry = t;
  }
  carry = hi | 0;
  for (let k = 0; carry !== 0; k++) {
    const t = hiPlanes[k]! & carry;
    hiPlanes[k] = hiPlanes[k]! ^ carry;
    carry = t;
  }
}

/** A bit is set when more features have it than not: ones > features − ones. */
function vote(features: number): bigint {
  // Planes past the feature count's own bits are all zero.
  const planes = Math.min(PLANES, 32 - Math.clz32(features));
  let hi = 0;
  let lo = 0;
  for (let bit = 0; bit < 32; bit++) {
    let loOnes = 0;
    let hiOnes = 0;
    for (let k = 0; k < planes; k++) {
      loOnes += ((loPlanes[k]! >>> bit) & 1) << k;
      hiOnes += ((hiPlanes[k]! >>> bit) & 1) << k;
    }
    if (2 * loOnes > features) lo |= 1 << bit;
    if (2 * hiOnes > features) hi |= 1 << bit;
  }
  return (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
}

/** Whether `text` has at least `n` words (space-separated), counted without splitting it. */
export function hasWords(text: string, n: number): boolean {
  if (n <= 1) return true; // as ''.split(' ') is one (empty) word
  let words = 1;
  for (let i = text.indexOf(' '); i !== -1; i = text.indexOf(' ', i + 1)) if (++words >= n) return true;
  return false;
}

/** One running FNV-1a 64 state, as unsigned 32-bit halves (no array per byte or feature). */
let fh = 0;
let fl = 0;

/** fmix64 of the running state, in place (no arrays: this runs once per feature). */
function fmixState(): void {
  fl = (fl ^ (fh >>> 1)) >>> 0;
  mulState(0xff51afd7, 0xed558ccd);
  fl = (fl ^ (fh >>> 1)) >>> 0;
  mulState(0xc4ceb9fe, 0x1a85ec53);
  fl = (fl ^ (fh >>> 1)) >>> 0;
}

/** The running state times (bh:bl) mod 2^64, on unsigned 32-bit halves; 16-bit partial products keep every step exact. */
function mulState(bh: number, bl: number): void {
  const a0 = fl & 0xffff;
  const a1 = fl >>> 16;
  const b0 = bl & 0xffff;
  const b1 = bl >>> 16;
  const p00 = a0 * b0;
  const p01 = a0 * b1;
  const p10 = a1 * b0;
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  const lo = (((mid & 0xffff) << 16) | (p00 & 0xffff)) >>> 0;
  fh = (a1 * b1 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16) + Math.imul(fh, bl) + Math.imul(fl, bh)) >>> 0;
  fl = lo;
}

const MASK64 = (1n << 64n) - 1n;

export function hammingDistance(a: bigint, b: bigint): number {
  let x = (a ^ b) & MASK64;
  let n = 0;
  while (x) {
    x &= x - 1n;
    n++;
  }
  return n;
}

/** 16 lower-case hex digits, zero-padded, so the text form sorts and compares like the number. */
export function simhashToHex(h: bigint): string {
  if (h < 0n || h > MASK64) throw new RangeError(`simhash out of 64-bit range: ${h}`);
  return h.toString(16).padStart(16, '0');
}

export function simhashFromHex(hex: string): bigint {
  if (!/^[0-9a-fA-F]{16}$/.test(hex)) throw new RangeError(`not a 16-digit hex simhash: ${JSON.stringify(hex)}`);
  return BigInt(`0x${hex}`);
}
