// Charikar SimHash: a 64-bit fingerprint whose Hamming distance tracks how
// much two texts differ, so near-duplicate pages (same article, different
// ad slot or date line) can be found without comparing the texts.
// Pure and deterministic: every worker must derive the same bits from the same text.

const TOKEN = /[\p{L}\p{N}]+/gu;
const SHINGLE = 3;
const encoder = new TextEncoder();

/**
 * Lower-cased word tokens. NFKC first, so composed and decomposed accents
 * and full-width forms tokenise alike (a combining mark is not \p{L} and
 * would otherwise split a word in two).
 */
export function tokens(text: string): string[] {
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

/** (ah:al) * (bh:bl) mod 2^64 on unsigned 32-bit halves; 16-bit partial products keep every step exact. */
function mul64(ah: number, al: number, bh: number, bl: number): [number, number] {
  const a0 = al & 0xffff;
  const a1 = al >>> 16;
  const b0 = bl & 0xffff;
  const b1 = bl >>> 16;
  const p00 = a0 * b0;
  const p01 = a0 * b1;
  const p10 = a1 * b0;
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  const lo = (((mid & 0xffff) << 16) | (p00 & 0xffff)) >>> 0;
  const hi = (a1 * b1 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16) + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
  return [hi, lo];
}

/**
 * MurmurHash3's fmix64 finaliser. FNV-1a alone barely spreads a key's last
 * bytes into its high bits, so shingles that differ only at the end share
 * many bits, and unrelated pages came out ~10 bits apart instead of ~32.
 */
export function fmix64([hi, lo]: [number, number]): [number, number] {
  lo = (lo ^ (hi >>> 1)) >>> 0;
  [hi, lo] = mul64(hi, lo, 0xff51afd7, 0xed558ccd);
  lo = (lo ^ (hi >>> 1)) >>> 0;
  [hi, lo] = mul64(hi, lo, 0xc4ceb9fe, 0x1a85ec53);
  lo = (lo ^ (hi >>> 1)) >>> 0;
  return [hi, lo];
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
 */
export function simhash64(text: string): bigint {
  const words = tokens(text);
  if (words.length === 0) return 0n;
  const features: string[] = [];
  if (words.length < SHINGLE) features.push(...words);
  else for (let i = 0; i + SHINGLE <= words.length; i++) features.push(words.slice(i, i + SHINGLE).join(' '));

  // counts[0..31] for the low half, counts[32..63] for the high half.
  const counts = new Int32Array(64);
  for (const f of features) {
    const [hi, lo] = featureHash(f);
    for (let bit = 0; bit < 32; bit++) {
      counts[bit] += (lo >>> bit) & 1 ? 1 : -1;
      counts[bit + 32] += (hi >>> bit) & 1 ? 1 : -1;
    }
  }
  let hi = 0;
  let lo = 0;
  for (let bit = 0; bit < 32; bit++) {
    if (counts[bit] > 0) lo |= 1 << bit;
    if (counts[bit + 32] > 0) hi |= 1 << bit;
  }
  return (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
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
