// What a host's robots.txt says for a session, in a module of its own: the
// worker runtime keeps warm-ups' verdicts and activities/robots.ts computes
// them; with the type in either of those, the two would import each other.

export type RobotsVerdict =
  /** `allows` is null when robots.txt is not respected; `refused` when the host's address is refused. */
  | { kind: 'ok'; allows: ((url: string) => boolean) | null; crawlDelaySec: number | null; refused?: string }
  /** Not now: the clock is busy for longer than a session waits, or a failed fetch is retried after `waitMs`. */
  | { kind: 'wait'; waitMs: number; why: string; backingOff: boolean }
  /** Failed ROBOTS_ATTEMPTS times: every URL of the host is recorded, none fetched. */
  | { kind: 'unavailable'; code: string; detail: string };
