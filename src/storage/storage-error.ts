import { CrawlerError } from '../errors';

// The storage layer's one error type, in a module of its own: the WARC
// writer and reader, the indexes, the dataset and the seal all raise it, and
// none of them should have to load the WARC writer to do so.

/** MISSING_ORIGINALS: a package's revisit records refer to captures in none of its WARC files (it would not replay them). */
export type StorageErrorCode = 'OPEN_FAILED' | 'WRITE_FAILED' | 'CLOSE_FAILED' | 'CLOSED' | 'INVALID_INPUT' | 'READ_FAILED' | 'CORRUPT' | 'LOCKED' | 'MISSING_ORIGINALS';

/** Raised by the WARC writer/reader and the JSONL index; `file` is the path involved, if any. */
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
