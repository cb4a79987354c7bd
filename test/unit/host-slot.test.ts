// A session giving its host's slot up (activities/host-slot.ts): when the
// frontier ran dry, URLs that came in meanwhile put the host back in line,
// and the campaign hears of it when a host waits for the slot or when it
// may be done; when the campaign is ending, it hears of the last one.
import { drainedNudges, giveUpDrained, giveUpStopped, type SlotDeps } from '../../activities/host-slot';
import type { CampaignHosts } from '../../src/redis/campaign-hosts';
import type { Frontier } from '../../src/redis/frontier';

function deps(release: { released: boolean; active: number; ready: number }, size: number, becameReady = 1) {
  const calls: string[] = [];
  const hosts = {
    release: async (host: string, gen: number) => (calls.push(`release ${host} ${gen}`), release),
    markReady: async (hs: string[]) => (calls.push(`ready ${hs.join()}`), becameReady),
    control: async () => ({ stop: 'cancelled' }),
  } as unknown as CampaignHosts;
  const frontier = { statsAndSize: async () => (calls.push('counts'), { stats: { fetched: 3 }, size }) } as unknown as Frontier;
  const d: SlotDeps = { hosts, frontier, host: 'a.test', gen: 2, nudge: () => void calls.push('nudge') };
  return { d, calls };
}

test('the campaign is nudged after a release when a host waits, it may be done, or this one is back in line', () => {
  expect(drainedNudges({ released: true, active: 3, ready: 1 }, false)).toBe(true);
  expect(drainedNudges({ released: true, active: 0, ready: 0 }, false)).toBe(true);
  expect(drainedNudges({ released: true, active: 3, ready: 0 }, true)).toBe(true);
  expect(drainedNudges({ released: true, active: 3, ready: 0 }, false)).toBe(false);
  expect(drainedNudges({ released: false, active: 0, ready: 5 }, true)).toBe(false);
});

test('drained: the counts are read once after the release; URLs enqueued meanwhile mark the host ready again', async () => {
  const late = deps({ released: true, active: 2, ready: 0 }, 4);
  expect(await giveUpDrained(late.d)).toEqual({ released: true, counted: { stats: { fetched: 3 }, size: 4 } });
  expect(late.calls).toEqual(['release a.test 2', 'counts', 'ready a.test', 'nudge']);
  const empty = deps({ released: true, active: 2, ready: 0 }, 0);
  await giveUpDrained(empty.d);
  expect(empty.calls).toEqual(['release a.test 2', 'counts']);
});

test('drained while a newer dispatch holds the slot: nothing is read nor marked', async () => {
  const held = deps({ released: false, active: 2, ready: 3 }, 4);
  expect(await giveUpDrained(held.d)).toEqual({ released: false, counted: null });
  expect(held.calls).toEqual(['release a.test 2']);
});

test("stopped: the last host's release tells the campaign, and the stop is read after it", async () => {
  const last = deps({ released: true, active: 0, ready: 0 }, 0);
  expect(await giveUpStopped(last.d)).toEqual({ released: true, stop: 'cancelled' });
  expect(last.calls).toEqual(['release a.test 2', 'nudge']);
  const more = deps({ released: true, active: 4, ready: 0 }, 0);
  await giveUpStopped(more.d);
  expect(more.calls).toEqual(['release a.test 2']);
});
