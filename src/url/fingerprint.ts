// Fingerprints are the compact identity of a URL in Redis sets and in
// idempotency keys. Uses node:crypto, so it belongs in activities and
// clients, not in workflow code.
import { hash } from 'node:crypto';

/** Length of a fingerprint: 16 base64url characters = 96 bits. */
export const FINGERPRINT_LENGTH = 16;

/**
 * 16-character base64url prefix of SHA-256 over the URL string. 96 bits keep
 * the chance of any collision below 1e-10 even at a billion URLs, at a
 * fraction of the memory of storing URLs themselves. The input is hashed
 * verbatim: pass the output of normalizeUrl, or variants of one page will
 * get different fingerprints.
 */
export function urlFingerprint(normalizedUrl: string): string {
  // One-shot crypto.hash: no Hash object per URL (a page fingerprints each of its links), about half the time.
  return hash('sha256', normalizedUrl, 'base64url').slice(0, FINGERPRINT_LENGTH);
}
