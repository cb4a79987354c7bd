// Continuous crawling, a host with an empty frontier (activities/revisit-parking.ts):
// what is due comes in; nothing due, it sleeps in the session when the next
// revisit is near, else its session ends until then, its slot given up
// (parked) when hosts wait for slots or it holds none.
import type { SlotDeps } from '../../activities/host-slot';
import { parkUntilRevisit, revisitTurn, slotCap, untilRevisitEnd } from '../../activities/revisit-parking';
import { resolveCampaignSettings } from '../../src/config/campaign';
import type { CampaignHosts } from '../../src/redis/campaign-hosts';
import type { Frontier } from '../../src/redis/frontier';

const queue = { scheduled: 4, dueHour: 1, dueDay: 4 };

test('after the due-move: claim what came in, end drained with nothing scheduled, sleep here when the next is near, else end until it', () => {
  expect(revisitTurn({ ...queue, moved: 2, nextInMs: 0 }, 5_000)).toEqual({ kind: 'claim' });
  expect(revisitTurn({ ...queue, scheduled: 0, moved: 0, nextInMs: null }, 5_000)).toEqual({ kind: 'drained' });
  expect(revisitTurn({ ...queue, moved: 0, nextInMs: 4_999 }, 5_000)).toEqual({ kind: 'sleep', ms: 4_999 });
  expect(revisitTurn({ ...queue, moved: 0, nextInMs: 90_500 }, 5_000)).toEqual({ kind: 'until', ms: 90_500, reason: 'revisits: 4 URL(s) scheduled, the next due in 91 s' });
});

test("the slot cap parking goes by: the operator's as the last dispatch saw it, else the settings'", () => {
  const s = resolveCampaignSettings({ seeds: ['https://a.test/'], output: { dir: '/tmp/x' }, politeness: { maxActiveHosts: 10 } }, 'c');
  expect(slotCap({ maxActiveHosts: 3 }, s)).toBe(3);
  expect(slotCap({ maxActiveHosts: null }, s)).toBeNull();
  expect(slotCap({}, s)).toBe(10);
});

test('parked, the session ends drained with its slot released; not parked, it sleeps in its workflow, and new URLs may wake it', () => {
  expect(untilRevisitEnd(true, 60_000, 'r')).toEqual({
    how: 'drained',
    more: { released: true, waitMs: 60_000, reason: 'parked until a revisit is due, its slot free for a host waiting for one: r' },
  });
  expect(untilRevisitEnd(false, 60_000, 'r')).toEqual({ how: 'wait', more: { waitMs: 60_000, reason: 'r', wakeable: true } });
});

describe('parking', () => {
  function deps(parked: 'released' | 'slotless' | null, frontierSize: number) {
    const calls: string[] = [];
    const hosts = {
      park: async (host: string, gen: number, dueInMs: number, capped: boolean) => (calls.push(`park ${host} ${gen} ${dueInMs} ${capped}`), { parked, active: 0, ready: 0 }),
      markReady: async (hs: string[]) => (calls.push(`ready ${hs.join()}`), 1),
    } as unknown as CampaignHosts;
    const frontier = { size: async () => frontierSize } as unknown as Frontier;
    const d: SlotDeps = { hosts, frontier, host: 'a.test', gen: 7, nudge: () => void calls.push('nudge') };
    return { d, calls };
  }

  test('a host that gives its slot up tells the campaign; URLs enqueued meanwhile put it in line for one', async () => {
    const { d, calls } = deps('released', 2);
    expect((await parkUntilRevisit(d, 5, 60_000, 'r')).how).toBe('drained');
    expect(calls).toEqual(['park a.test 7 60000 true', 'ready a.test', 'nudge']);
  });

  test('a host that held no slot parks without news for the campaign; one not parked (no cap) sleeps', async () => {
    const slotless = deps('slotless', 0);
    expect((await parkUntilRevisit(slotless.d, 5, 60_000, 'r')).how).toBe('drained');
    expect(slotless.calls).toEqual(['park a.test 7 60000 true']);
    const kept = deps(null, 3);
    expect(await parkUntilRevisit(kept.d, null, 60_000, 'r')).toEqual({ how: 'wait', more: { waitMs: 60_000, reason: 'r', wakeable: true } });
    expect(kept.calls).toEqual(['park a.test 7 60000 false']);
  });
});
