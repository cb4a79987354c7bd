// A dispatch round starts hosts CONCURRENCY at a time and stops taking new
// ones at its deadline: the hosts it did not reach are left to the next round
// (they stay ready in Redis), so a round under load ends in seconds and the
// campaign's workflow task with it (activities/campaign-hosts.ts).
import { DefaultLogger } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { inBatches, startsEagerly } from '../../activities/campaign-hosts';

const env = () => new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
const hosts = Array.from({ length: 120 }, (_, i) => `h${i}`);

test('without a deadline every item is started once', async () => {
  const started: string[] = [];
  await env().run(() => inBatches(hosts, async (h) => void started.push(h)));
  expect(started.sort()).toEqual([...hosts].sort());
});

test('no item starts once the deadline has passed; those started before it are the first ones, each once', async () => {
  let clock = 1_000;
  const now = jest.spyOn(Date, 'now').mockImplementation(() => clock);
  try {
    const started: string[] = [];
    // The clock passes the deadline (1,500) while the 70th call runs: calls already started finish, none more starts.
    await env().run(() =>
      inBatches(
        hosts,
        async (h) => {
          started.push(h);
          if (started.length === 70) clock = 1_500;
          await new Promise((r) => setImmediate(r));
        },
        1_500,
      ),
    );
    expect(started).toEqual(hosts.slice(0, 70));
  } finally {
    now.mockRestore();
  }
});

test('a deadline already past starts nothing', async () => {
  const started: string[] = [];
  await env().run(() => inBatches(hosts, async (h) => void started.push(h), Date.now() - 1));
  expect(started).toEqual([]);
});

test("new hosts start eagerly on the dispatching worker unless the campaign renders: a rendering campaign's first sessions spread over the pool", () => {
  expect(startsEagerly(true, 'off')).toBe(true);
  expect(startsEagerly(true, null)).toBe(true);
  expect(startsEagerly(true, 'browser')).toBe(false);
  expect(startsEagerly(true, 'auto')).toBe(false);
  expect(startsEagerly(false, 'off')).toBe(false);
});
