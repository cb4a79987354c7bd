// A login run between the hook and the session that sends its requests
// (activities/login-run.ts): the session gets the hook's requests one at a
// time, in the order the hook made them, then the run's end; nothing the
// hook asks for once the run is closed reaches the session.
import { LoginRequests, type LoginStep } from '../../activities/login-run';
import type { FetchOutcome } from '../../src/http/fetcher';
import { fakeResponse } from '../support/fake-response';

const signal = new AbortController().signal;
const ok = (url: string): FetchOutcome => ({ ok: true, response: fakeResponse(url) });
const over = () => new Error('the login is over');

test("the hook's requests reach the session in order, each answered before the session asks for the next, then the run's end", async () => {
  const run = new LoginRequests();
  let resolveDone!: (ok: boolean) => void;
  run.endWith(new Promise<boolean>((r) => (resolveDone = r)), over);
  // Fired without awaiting the first: both wait for the session, the second behind the first.
  const a = run.send({ url: 'https://a.test/a' }, signal);
  const b = run.send({ url: 'https://a.test/b' }, signal);
  const seen: string[] = [];
  for (;;) {
    const step: LoginStep = await run.next();
    if (step.kind === 'done') {
      expect(step.loggedIn).toBe(true);
      break;
    }
    seen.push(step.request.url);
    await step.settle(Promise.resolve(ok(step.request.url)));
    if (seen.length === 2) resolveDone(true);
  }
  expect(seen).toEqual(['https://a.test/a', 'https://a.test/b']);
  expect([(await a).ok, (await b).ok]).toEqual([true, true]);
});

test('a request the session waits for is handed over as soon as the hook makes it', async () => {
  const run = new LoginRequests();
  run.endWith(new Promise<boolean>(() => undefined), over);
  const next = run.next();
  const sent = run.send({ url: 'https://a.test/late' }, signal);
  const step = await next;
  expect(step.kind === 'request' && step.request.url).toBe('https://a.test/late');
  if (step.kind === 'request') step.answer({ outcome: ok('https://a.test/late') });
  expect((await sent).ok).toBe(true);
});

test('what the sending threw is what the hook sees', async () => {
  const run = new LoginRequests();
  run.endWith(new Promise<boolean>(() => undefined), over);
  const sent = run.send({ url: 'https://a.test/x' }, signal);
  const step = await run.next();
  if (step.kind !== 'request') throw new Error('expected a request');
  await step.settle(Promise.reject(new Error('cancelled while waiting for the clock')));
  await expect(sent).rejects.toThrow('cancelled while waiting for the clock');
});

test('closed: requests not yet sent and later ones fail with the reason, and never reach the session', async () => {
  const run = new LoginRequests();
  let resolveDone!: (ok: boolean) => void;
  run.endWith(new Promise<boolean>((r) => (resolveDone = r)), over);
  const queued = run.send({ url: 'https://a.test/queued' }, signal);
  run.close(new Error('time limit passed'));
  await expect(queued).rejects.toThrow('time limit passed');
  await expect(run.send({ url: 'https://a.test/after' }, signal)).rejects.toThrow('time limit passed');
  resolveDone(false);
  expect(await run.next()).toEqual({ kind: 'done', loggedIn: false });
});

test('a run that fails (a cancellation, Redis) fails the session waiting for its next step', async () => {
  const run = new LoginRequests();
  const waiting = run.next();
  run.endWith(Promise.reject(new Error('cancelled')), over);
  await expect(waiting).rejects.toThrow('cancelled');
  await expect(run.next()).rejects.toThrow('cancelled');
  // A request the hook makes afterwards is refused, with the run's end as the reason.
  await expect(run.send({ url: 'https://a.test/x' }, signal)).rejects.toThrow('the login is over');
});
