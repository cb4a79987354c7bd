import { CrawlerError } from '../errors';
/** Raised when the embedded stack cannot find, install or start a server. */
export class StackError extends CrawlerError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'StackError';
  }
}
