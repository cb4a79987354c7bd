// The crawlSession activity: a host session (activities/crawl-session.ts),
// unless it is a host's first session, run locally on the worker that runs
// the host's first workflow task, past its campaign's share of this worker's
// local sessions (activities/local-share.ts): that one ends at once without a
// page, and the host goes on through the task queue.
import { hostStatsOf } from '../src/stats/counters';
import { HostSession } from './crawl-session';
import type { WorkerRuntime } from './runtime';
import type { SessionInput, SessionResult } from './types';

export function crawlSessionActivity(rt: WorkerRuntime) {
  return async function crawlSession(input: SessionInput): Promise<SessionResult> {
    if (!input.local) {
      rt.localShare.touch(input.campaignKey);
      return runSession(rt, input);
    }
    if (!rt.localShare.tryEnter(input.campaignKey)) return deferredSession(input);
    try {
      return await runSession(rt, input);
    } finally {
      rt.localShare.leave(input.campaignKey);
    }
  };
}

async function runSession(rt: WorkerRuntime, input: SessionInput): Promise<SessionResult> {
  // Counted from before it opens: the session that waits on its host's robots.txt warm-up is
  // what keeps the warm-up's connection open for it (activities/robots.ts).
  rt.sessionOpened(input.campaignKey, input.host);
  try {
    const session = await HostSession.open(rt, input);
    try {
      return await session.run();
    } finally {
      session.close();
    }
  } finally {
    rt.sessionClosed(input.campaignKey, input.host);
  }
}

/** A first session that fetched nothing and hands the host to a regular session at once ('cap'). */
export function deferredSession(input: SessionInput): SessionResult {
  return {
    end: 'cap',
    waitMs: 0,
    backingOff: false,
    released: false,
    stop: null,
    configVersion: input.configVersion,
    pages: 0,
    stats: hostStatsOf(),
    frontier: 0,
    delayMs: 0,
    reason: 'first session deferred: campaigns share this worker, and this one holds its share of local sessions',
    lastUrl: null,
    lastStatus: null,
  };
}
