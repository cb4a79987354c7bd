import { CrawlerError } from '../errors';
export type UrlErrorCode = 'INVALID_URL' | 'UNSUPPORTED_SCHEME' | 'URL_TOO_LONG' | 'EMPTY';

// Errors end up in logs and in Temporal failure payloads; a multi-megabyte
// `data:` href must not be copied into them verbatim.
const MAX_REPORTED_URL = 2000;

/** Raised when a string cannot become a crawlable, normalised URL. */
export class UrlError extends CrawlerError<UrlErrorCode> {
  /** The offending input (truncated to 2000 characters, see MAX_REPORTED_URL). */
  readonly url: string;
  constructor(code: UrlErrorCode, url: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'UrlError';
    this.url = url.length > MAX_REPORTED_URL ? `${url.slice(0, MAX_REPORTED_URL)}…` : url;
  }
}

export function isUrlError(err: unknown): err is UrlError {
  return err instanceof UrlError;
}
