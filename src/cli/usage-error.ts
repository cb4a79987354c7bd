/** Bad input from the user: printed without a stack trace, exit code 2, nothing started. */
export class UsageError extends Error {
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
