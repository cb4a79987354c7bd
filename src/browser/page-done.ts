// When a rendered page is done (docs/rendering.md, "How it works"): at
// `load`, then once none of its requests has been in flight for
// browser.quietMs, and at browser.pageTimeoutMs at the latest.

/**
 * Requests of a page in flight, and when it went quiet: `settled` resolves
 * `quiet` once none has been in flight for `quietMs`, or `deadline` at
 * `deadlineAt` (epoch ms), whichever comes first.
 */
export class InFlight {
  #count = 0;
  #quietSince = Date.now();
  #changed: (() => void) | null = null;

  begin(): void {
    this.#count++;
    this.#changed?.();
  }

  end(): void {
    this.#count--;
    if (this.#count === 0) this.#quietSince = Date.now();
    this.#changed?.();
  }

  get count(): number {
    return this.#count;
  }

  async settled(quietMs: number, deadlineAt: number): Promise<'quiet' | 'deadline'> {
    // The quiet period starts at `load` at the earliest: a request the page made before it may reach its
    // route only just after (Playwright calls route handlers a little later), and must not find the page done.
    if (this.#count === 0) this.#quietSince = Math.max(this.#quietSince, Date.now());
    for (;;) {
      const t = Date.now();
      if (this.#count === 0 && t - this.#quietSince >= quietMs) return 'quiet';
      if (t >= deadlineAt) return 'deadline';
      const until = this.#count === 0 ? Math.min(this.#quietSince + quietMs, deadlineAt) : deadlineAt;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.max(1, until - t));
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#changed = done;
      });
      this.#changed = null;
    }
  }
}
