// Where a campaign's archive lives when it is not a folder every worker
// mounts: an S3-compatible bucket (docs/architecture.md, "Archives on object
// storage"). Workers write WARCs, index lines and dataset items into a local
// spool folder as they always did, and upload each file once it is finished
// (src/storage/spool-uploader.ts); sealing, CDXJ, WACZ, report, dataset and
// replay read the campaign's objects back. This module is the seam both sides
// share: what an object store can do, named once.
import type { Readable } from 'node:stream';

/** One object as a listing shows it. */
export interface StoredObject {
  /** The key relative to the store's prefix (`warc/<file>`, `index/<file>`). */
  key: string;
  size: number;
}

/**
 * A prefix of a bucket (or a folder) holding one campaign's objects. Keys are
 * relative to that prefix and use `/`. Objects are written once: a put never
 * replaces an object with different content (file names are unique per worker
 * process, src/storage/files.ts), so a retried upload is harmless and a
 * reader never sees an object change.
 */
export interface ObjectStore {
  /** How the store is named to the operator (`s3://bucket/prefix`, a folder): never with credentials. */
  readonly location: string;
  /**
   * Stores the local file `file` under `key`, whole or not at all (a large file goes up in
   * parts and appears only when complete). An object already there with the same size is
   * taken as this file uploaded before (a retry after a crash); one with another size is an
   * error (`OBJECT_EXISTS`), never overwritten.
   */
  putFile(key: string, file: string): Promise<void>;
  /** Stores `body` under `key` (small objects: a sealed index, a report), with the same rule. */
  putBytes(key: string, body: Uint8Array): Promise<void>;
  /** The object's bytes from `start` (default 0) for `length` bytes (default: to the end); `OBJECT_MISSING` if none. */
  read(key: string, range?: { start: number; length?: number }): Promise<Readable>;
  /** The object's size, or null when there is none. */
  size(key: string): Promise<number | null>;
  /** Every object under `prefix` (relative to the store's), in key order. */
  list(prefix: string): AsyncIterable<StoredObject>;
  /**
   * Deletes the object under `key` (none there: nothing to do). Only superseded seal publications
   * (src/storage/mirror-layout.ts, stalePublications) and frontier segments read back or never
   * registered (src/redis/frontier-spill.ts) are deleted, and their keys are never written again.
   */
  remove(key: string): Promise<void>;
}
