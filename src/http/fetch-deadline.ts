// The total deadline of one fetch() call, redirects and body included. It
// runs on a precise timer (undici's own timeouts tick on a ~1 s wheel) and
// tells a deadline that expired from a caller that cancelled, so each
// failure gets its own code.
import { FetchError, classifyError } from './fetch-error';

/**
 * One per fetch() call: merges the caller's signal with the total deadline
 * into the single signal undici sees, and remembers which of the two fired so
 * errors can be attributed.
 */
export class FetchDeadline {
  readonly signal: AbortSignal;
  timedOut = false;
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #userSignal: AbortSignal | undefined;
  readonly #onUserAbort = (): void => this.#controller.abort(this.#userSignal?.reason);

  constructor(totalTimeoutMs: number, userSignal: AbortSignal | undefined) {
    this.signal = this.#controller.signal;
    this.#userSignal = userSignal;
    if (userSignal?.aborted) this.#controller.abort(userSignal.reason);
    else userSignal?.addEventListener('abort', this.#onUserAbort, { once: true });
    this.#timer = setTimeout(() => {
      this.timedOut = true;
      this.#controller.abort(new Error(`total timeout of ${totalTimeoutMs} ms exceeded`));
    }, totalTimeoutMs);
  }

  /** The error to throw for `err`, given which of our signals (if any) fired. */
  classify(err: unknown, url: string): FetchError {
    if (this.timedOut) return new FetchError('TOTAL_TIMEOUT', url, { cause: this.signal.reason });
    if (this.#userSignal?.aborted) return new FetchError('ABORTED', url, { cause: this.#userSignal.reason });
    return classifyError(err, url);
  }

  /** Throws if the fetch must not continue with another request. */
  check(url: string): void {
    if (this.signal.aborted) throw this.classify(this.signal.reason, url);
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#userSignal?.removeEventListener('abort', this.#onUserAbort);
  }
}
