import { CrawlerError } from '../errors';
/** Bad input from the user: printed without a stack trace, exit code 2, nothing started. */
export class UsageError extends CrawlerError {
  readonly exitCode = 2;
  constructor(message: string, code = 'USAGE') {
    super(code, message);
    this.name = 'UsageError';
  }
}
