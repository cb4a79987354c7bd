import { CrawlerError } from '../errors';

// The storage layer's one error type, in a module of its own: the WARC
// writer and reader, the indexes, the dataset and the seal all raise it, and
// none of them should have to load the WARC writer to do so.

/**
 * MISSING_ORIGINALS: a package's revisit records refer to captures in none of its WARC files (it would not replay them).
 * Object stores (src/storage/object-store.ts): OBJECT_EXISTS, a put found another object (another size) under its key,
 * which is never replaced; OBJECT_MISSING, no object under the key read; STORE_UNREACHABLE, no answer from the store
 * (refused, timed out, name not found) after the client's retries; STORE_DENIED, the store refused the credentials or
 * the permission, or no credentials were found; STORE_FAILED, any other refusal or failure of the store.
 */
export type StorageErrorCode =
  | 'OPEN_FAILED'
  | 'WRITE_FAILED'
  | 'CLOSE_FAILED'
  | 'CLOSED'
  | 'INVALID_INPUT'
  | 'READ_FAILED'
  | 'CORRUPT'
  | 'LOCKED'
  | 'MISSING_ORIGINALS'
  | 'OBJECT_EXISTS'
  | 'OBJECT_MISSING'
  | 'STORE_UNREACHABLE'
  | 'STORE_DENIED'
  | 'STORE_FAILED';

/** Raised by the WARC writer/reader, the JSONL index and the object stores; `file` is the path (or the object's location and key) involved, if any. */
export class StorageError extends CrawlerError<StorageErrorCode> {
  readonly file: string | null;
  constructor(code: StorageErrorCode, file: string | null, message: string, options?: { cause?: unknown }) {
    super(code, file ? `${message} (${file})` : message, options);
    this.name = 'StorageError';
    this.file = file;
  }
}

export function isStorageError(err: unknown): err is StorageError {
  return err instanceof StorageError;
}
