/** Raised when the embedded stack cannot find, install or start a server. */
export class StackError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StackError';
    this.code = code;
  }
}
