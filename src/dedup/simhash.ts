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
 * without building the shingle strings or encoding them again: each word is
 * UTF-8 encoded once (an ASCII word not at all) and FNV-1a, which reads
 * bytes in order, runs over the three words and the spaces between them.
 * It was a tenth of a worker's CPU on real pages (docs/benchmarks.md).
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
  const words = tokens(text);
  if (words.length === 0) return 0n;
  const bytes = words.map(wordBytes);
  const counts = new Int32Array(64);
  let features: number;
  if (words.length < SHINGLE) {
    for (const b of bytes) countFeature(counts, b, null, null);
    features = bytes.length;
  } else {
    for (let i = 0; i + SHINGLE <= bytes.length; i++) countFeature(counts, bytes[i]!, bytes[i + 1]!, bytes[i + 2]!);
    features = bytes.length - SHINGLE + 1;
  }
  // A bit is set when more features have it than not: ones > features − ones.
  let hi = 0;
  let lo = 0;
  for (let bit = 0; bit < 32; bit++) {
    if (2 * counts[bit]! > features) lo |= 1 << bit;
    if (2 * counts[bit + 32]! > features) hi |= 1 << bit;
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

/** A word's UTF-8 bytes: the string itself when it is ASCII (its code units are its bytes). */
function wordBytes(w: string): string | Uint8Array {
  return !NON_ASCII.test(w) ? w : encoder.encode(w);
}

/** One running FNV-1a 64 state, as unsigned 32-bit halves (no array per byte or feature). */
let fh = 0;
let fl = 0;

function fnvByte(b: number): void {
  const x = (fl ^ b) >>> 0;
  // x * (2^40 + 0x1b3) mod 2^64 in 16-bit partial products: integer operations only (no division for the carry).
  const p0 = (x & 0xffff) * 0x1b3;
  const p1 = (x >>> 16) * 0x1b3 + (p0 >>> 16);
  fl = (((p1 & 0xffff) << 16) | (p0 & 0xffff)) >>> 0;
  fh = (Math.imul(fh, 0x1b3) + (p1 >>> 16) + (x << 8)) >>> 0;
}

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

function fnvWord(w: string | Uint8Array): void {
  if (typeof w === 'string') for (let i = 0; i < w.length; i++) fnvByte(w.charCodeAt(i));
  else for (let i = 0; i < w.length; i++) fnvByte(w[i]!);
}

/** Adds one feature (a word, or three words joined by spaces) to the bit counts. */
function countFeature(counts: Int32Array, a: string | Uint8Array, b: string | Uint8Array | null, c: string | Uint8Array | null): void {
  fh = 0xcbf29ce4;
  fl = 0x84222325;
  fnvWord(a);
  if (b !== null && c !== null) {
    fnvByte(0x20);
    fnvWord(b);
    fnvByte(0x20);
    fnvWord(c);
  }
  fmixState();
  const hi = fh;
  const lo = fl;
  // Ones per bit, without a branch; a bit's vote is 2·ones − features (simhash64).
  for (let bit = 0; bit < 32; bit++) {
    counts[bit]! += (lo >>> bit) & 1;
    counts[bit + 32]! += (hi >>> bit) & 1;
  }
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
