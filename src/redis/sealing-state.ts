// Sealing state in its compact form: what a commit records for the seal
// (crawlCommit's `committed` and `unsealed` hashes, src/redis/scripts.ts).
// A URL fingerprint (16 base64url characters, 96 bits) is kept as its 12
// bytes and an attempt id (8 characters, 48 bits: newAttemptId) as its 6:
// the same bits, a third smaller, and nothing is lost, so no collision comes
// with it. Read both ways: a hash written by an older release holds the text
// forms, and a campaign running across the upgrade has both; lookups try the
// binary form first and the text form for what it did not find. Anything
// not in those shapes (tests' ids) is kept as text, as before.

const FP_TEXT = /^[A-Za-z0-9_-]{16}$/;
const ID_TEXT = /^[A-Za-z0-9_-]{8}$/;
const FP_BYTES = 12;
/** An id kept in binary is exactly this long, which is how a reader tells it from an id kept as text. */
export const ID_BYTES = 6;

/** The hash field a commit writes for a URL fingerprint. */
export function fpField(fp: string): Buffer | string {
  return FP_TEXT.test(fp) ? Buffer.from(fp, 'base64url') : fp;
}

/** The fingerprint a field of `committed` or `unsealed` stands for (either form). */
export function fpOfField(field: Buffer): string {
  return field.length === FP_BYTES ? field.toString('base64url') : field.toString('utf8');
}

/** The value a commit writes for an attempt id. */
export function idValue(id: string): Buffer | string {
  if (ID_TEXT.test(id)) return Buffer.from(id, 'base64url');
  // A text id as long as a binary one would read back as binary.
  if (Buffer.byteLength(id) === ID_BYTES) throw new RangeError(`an attempt id of ${ID_BYTES} bytes must be 8 base64url characters: ${JSON.stringify(id)}`);
  return id;
}

/** The attempt id a value of `committed` stands for (either form). */
export function idOfValue(v: Buffer | null): string | null {
  if (v === null) return null;
  return v.length === ID_BYTES ? v.toString('base64url') : v.toString('utf8');
}
