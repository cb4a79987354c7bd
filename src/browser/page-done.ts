// When a rendered page is done (docs/rendering.md, "How it works"): at
// `load`, then once none of its requests has been in flight for
// browser.quietMs and its main thread has been idle, and at
// browser.pageTimeoutMs at the latest.
//
// The quiet period alone is not enough: a script that keeps the page's
// thread busy (a long synchronous loop, a starved machine) starts its fetch
// only when it gets the thread back, which may be after the quiet period
// has run out on the crawler's side. So once quiet, the page is asked to
// run an idle callback and two animation frames, which it can only do once
// its thread is free; a request that began meanwhile means the page was not
// done, and the wait starts again.
import type { Page } from 'playwright-core';

/**
 * Requests of a page in flight, and when it went quiet: `settled` resolves
 * `quiet` once none has been in flight for `quietMs`, or `deadline` at
 * `deadlineAt` (epoch ms), whichever comes first.
 */
export class InFlight {
  #count = 0;
  #began = 0;
  #quietSince = Date.now();
  #changed: (() => void) | null = null;

  begin(): void {
    this.#count++;
    this.#began++;
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

  /** Requests begun so far: a change tells that the page started one while the crawler looked away. */
  get began(): number {
    return this.#began;
  }

  async settled(quietMs: number, deadlineAt: number): Promise<'quiet' | 'deadline'> {
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

/** Whether the page's main thread got free before `deadlineAt`: `idle`, or `deadline`. */
export type IdleProbe = (deadlineAt: number) => Promise<'idle' | 'deadline'>;

/**
 * The page is done once no request was in flight for `quietMs` and then its
 * thread was idle with no request begun meanwhile; a request that began
 * while the thread was busy starts the wait again. `deadline` when
 * `deadlineAt` comes first.
 */
export async function waitDone(inflight: InFlight, quietMs: number, deadlineAt: number, idle: IdleProbe): Promise<'quiet' | 'deadline'> {
  for (;;) {
    if ((await inflight.settled(quietMs, deadlineAt)) === 'deadline') return 'deadline';
    const began = inflight.began;
    if ((await idle(deadlineAt)) === 'deadline') return 'deadline';
    if (inflight.count === 0 && inflight.began === began) return 'quiet';
    // Past the deadline a page that keeps starting requests is taken as it is (settled returns quiet at once with quietMs 0).
    if (Date.now() >= deadlineAt) return 'deadline';
  }
}

/**
 * Run in the page: resolves after an idle callback (which waits for the
 * thread to be free, at most IDLE_CALLBACK_MS on a page never idle) and two
 * animation frames (a request a task started is on its way by then), or
 * FRAMES_FALLBACK_MS after the idle callback when frames do not come (a page
 * Chromium does not paint). A string: this package compiles without the DOM's types.
 */
const IDLE_CALLBACK_MS = 1_000;
const FRAMES_FALLBACK_MS = 100;
const IDLE_SCRIPT = `new Promise((resolve) => {
  const after = () => {
    requestAnimationFrame(() => requestAnimationFrame(() => resolve(true)));
    setTimeout(() => resolve(true), ${FRAMES_FALLBACK_MS});
  };
  if (typeof requestIdleCallback === 'function') requestIdleCallback(after, { timeout: ${IDLE_CALLBACK_MS} });
  else setTimeout(after, 0);
})`;

/** The idle probe of a real page. A page that cannot answer (closed, crashed, navigated away) is not waited for: what follows will say. */
export function pageIdle(page: Page): IdleProbe {
  return async (deadlineAt) => {
    let timer: NodeJS.Timeout | undefined;
    const answered = page.evaluate(IDLE_SCRIPT).then(
      () => 'idle' as const,
      () => 'idle' as const,
    );
    try {
      return await Promise.race([answered, new Promise<'deadline'>((resolve) => (timer = setTimeout(() => resolve('deadline'), Math.max(0, deadlineAt - Date.now()))))]);
    } finally {
      clearTimeout(timer);
    }
  };
}
