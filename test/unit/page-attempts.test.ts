// The page-attempt policy (activities/page-attempts.ts): a URL whose
// processing keeps failing, or keeps killing its worker, is recorded as
// INTERNAL_ERROR after MAX_PAGE_ATTEMPTS processing attempts, so it cannot
// hold its host forever; claims that ended in a retry do not count, and a
// cancellation is never recorded as the URL's failure.
import { claimedTooOften, failedForGood, MAX_PAGE_ATTEMPTS, underAttemptPolicy } from '../../activities/page-attempts';
import { ReplyError } from 'ioredis';
import { SessionSupersededError } from '../../src/redis/frontier';

const live = new AbortController().signal;

test('claims that ended in a retry are not processing attempts', () => {
  expect(claimedTooOften({ attempts: MAX_PAGE_ATTEMPTS + 5, retried: 5 })).toBeNull();
  expect(claimedTooOften({ attempts: MAX_PAGE_ATTEMPTS + 6, retried: 5 })).toContain(
    `claimed ${MAX_PAGE_ATTEMPTS + 6} times without finishing: ${MAX_PAGE_ATTEMPTS} processing attempts`,
  );
});

test('an error goes up while the URL has attempts left, and is recorded on its last one; a cancellation always goes up', () => {
  const err = new Error('parser blew up');
  expect(failedForGood({ attempts: MAX_PAGE_ATTEMPTS - 1, retried: 0 }, err, false)).toBeNull();
  expect(failedForGood({ attempts: MAX_PAGE_ATTEMPTS, retried: 0 }, err, false)).toBe(`processing failed ${MAX_PAGE_ATTEMPTS} times: parser blew up`);
  expect(failedForGood({ attempts: MAX_PAGE_ATTEMPTS, retried: 0 }, err, true)).toBeNull();
  // A session superseded by a newer attempt records nothing, on the last attempt too: the URL is the newer attempt's.
  expect(failedForGood({ attempts: MAX_PAGE_ATTEMPTS, retried: 0 }, new SessionSupersededError('a.test'), false)).toBeNull();
  // Redis failing over under the page is not the URL's failure: it goes up, for the session to ride out.
  expect(failedForGood({ attempts: MAX_PAGE_ATTEMPTS, retried: 0 }, new ReplyError('CLUSTERDOWN The cluster is down'), false)).toBeNull();
  expect(failedForGood({ attempts: MAX_PAGE_ATTEMPTS, retried: 0 }, new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value'), false)).toContain(
    'WRONGTYPE',
  );
});

describe('a claimed URL under the policy', () => {
  const calls: string[] = [];
  const policy = (claim: { attempts: number; retried: number }, run: () => Promise<string>, signal = live) =>
    underAttemptPolicy(claim, signal, {
      run,
      unrequested: async () => void calls.push('lease given back'),
      recordFailed: async (message) => `recorded: ${message}`,
    });
  beforeEach(() => calls.splice(0));

  test('runs it, and hands on its result', async () => {
    expect(await policy({ attempts: 1, retried: 0 }, async () => 'committed')).toBe('committed');
    expect(calls).toEqual([]);
  });

  test('claimed too often: not run, the clock lease given back, recorded for good', async () => {
    const run = jest.fn(async () => 'committed');
    expect(await policy({ attempts: MAX_PAGE_ATTEMPTS + 1, retried: 0 }, run)).toMatch(/^recorded: claimed/);
    expect(run).not.toHaveBeenCalled();
    expect(calls).toEqual(['lease given back']);
  });

  test('a throw on the last attempt is recorded; before it, and when cancelled, it goes up', async () => {
    const boom = async (): Promise<string> => Promise.reject(new Error('boom'));
    expect(await policy({ attempts: MAX_PAGE_ATTEMPTS, retried: 0 }, boom)).toBe(`recorded: processing failed ${MAX_PAGE_ATTEMPTS} times: boom`);
    await expect(policy({ attempts: 1, retried: 0 }, boom)).rejects.toThrow('boom');
    const cancelled = new AbortController();
    cancelled.abort();
    await expect(policy({ attempts: MAX_PAGE_ATTEMPTS, retried: 0 }, boom, cancelled.signal)).rejects.toThrow('boom');
  });
});
