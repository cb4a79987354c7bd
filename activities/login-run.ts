// A handler's login as the session runs it: the hook's requests, one at a
// time, each for the session to send in a host clock turn of its own, then
// the run's end. The login (activities/login.ts) knows nothing of the clock;
// the session (activities/crawl-session.ts) knows nothing of the hook. A hook
// that fires requests without awaiting them still gets them sent one after
// the other: the session asks for the next only once the last is answered.
import type { FetchOutcome, FetchRequest } from '../src/http/fetcher';

/** What a login request came to: the fetcher's answer, or what it (or the wait for the clock) threw. */
export type LoginAnswer = { outcome: FetchOutcome } | { thrown: unknown };

/** One of the hook's requests, for the session to send. */
export interface LoginRequest {
  kind: 'request';
  request: FetchRequest;
  /** Aborted when the session is cancelled or the login's time limit passes. */
  signal: AbortSignal;
  /** Hands the hook what its request came to (its fetch resolves or throws with it). */
  answer(got: LoginAnswer): void;
  /** Waits for the sending, and hands the hook its answer, or what the sending threw. */
  settle(sending: Promise<FetchOutcome>): Promise<void>;
}

/** The hook's next request, or the run's end: `loggedIn` when the hook resolved. */
export type LoginStep = LoginRequest | { kind: 'done'; loggedIn: boolean };

export interface LoginRun {
  /** Waits for the hook's next request or its end; rejects when the run failed (a cancellation, Redis). */
  next(): Promise<LoginStep>;
}

type End = { loggedIn: boolean } | { error: unknown };

/** The requests between a running hook and the session that sends them. */
export class LoginRequests implements LoginRun {
  private readonly queued: LoginRequest[] = [];
  private waiter: { resolve: (s: LoginStep) => void; reject: (err: unknown) => void } | null = null;
  private closed: Error | null = null;
  private end: End | null = null;

  /** The hook's request: settles with the answer once the session has sent it; refused with the close's reason once closed. */
  send(request: FetchRequest, signal: AbortSignal): Promise<FetchOutcome> {
    if (this.closed) return Promise.reject(this.closed);
    return new Promise<FetchOutcome>((resolve, reject) => {
      const answer = (got: LoginAnswer) => ('outcome' in got ? resolve(got.outcome) : reject(got.thrown));
      const settle = (sending: Promise<FetchOutcome>) =>
        sending.then(
          (outcome) => answer({ outcome }),
          (thrown: unknown) => answer({ thrown }),
        );
      const step: LoginRequest = { kind: 'request', request, signal, answer, settle };
      if (this.waiter) this.take().resolve(step);
      else this.queued.push(step);
    });
  }

  /** No more requests (the hook is done, or left behind at its time limit): those not yet sent fail with `why`, as do later ones. */
  close(why: Error): void {
    this.closed ??= why;
    for (const r of this.queued.splice(0)) r.answer({ thrown: this.closed });
  }

  /** The run ends when `done` settles: its result, or its error, is the session's next step. */
  endWith(done: Promise<boolean>, why: () => Error): void {
    const settle = (end: End) => {
      this.close(why());
      this.end = end;
      if (!this.waiter) return;
      const w = this.take();
      if ('error' in end) w.reject(end.error);
      else w.resolve({ kind: 'done', loggedIn: end.loggedIn });
    };
    done.then(
      (loggedIn) => settle({ loggedIn }),
      (error: unknown) => settle({ error }),
    );
  }

  next(): Promise<LoginStep> {
    const r = this.queued.shift();
    if (r) return Promise.resolve(r);
    const end = this.end;
    if (end) return 'error' in end ? Promise.reject(end.error) : Promise.resolve({ kind: 'done', loggedIn: end.loggedIn });
    return new Promise<LoginStep>((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  private take() {
    const w = this.waiter!;
    this.waiter = null;
    return w;
  }
}
