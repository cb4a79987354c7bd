/**
 * Runs async jobs one after another, in call order, so each file write is
 * one complete write; a failed job does not wedge the jobs queued behind it.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(job: () => Promise<T>): Promise<T> {
    const result = this.tail.then(job);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
