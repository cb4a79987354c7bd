// The campaign's local activities run one at a time, in call order: two in
// flight together would resolve in finishing order live but in scheduling
// order on replay (a nondeterminism error seen in a recorded history).
import { oneAtATime, type acts } from '../../workflows/campaign-activities';

type Acts = typeof acts;

test('a call waits for the one before it, whatever their speeds, and a failure does not block the queue', async () => {
  const log: string[] = [];
  const slow =
    (name: string, ms: number, fail = false) =>
    async () => {
      log.push(`start ${name}`);
      await new Promise((r) => setTimeout(r, ms));
      log.push(`end ${name}`);
      if (fail) throw new Error(`${name} failed`);
      return name;
    };
  const fake = { dispatchHosts: slow('dispatch', 50), addCampaignSeeds: slow('seeds', 1), steerCampaign: slow('steer', 1, true) } as unknown as Acts;
  const local = oneAtATime(fake);
  const a = local.dispatchHosts({} as never);
  const b = local.steerCampaign({} as never);
  const c = local.addCampaignSeeds({} as never);
  expect(await a).toBe('dispatch');
  await expect(b).rejects.toThrow('steer failed');
  expect(await c).toBe('seeds');
  expect(log).toEqual(['start dispatch', 'end dispatch', 'start steer', 'end steer', 'start seeds', 'end seeds']);
});

test('each queue is its own: two campaigns do not wait for each other', async () => {
  let release!: () => void;
  const held = new Promise<string>((r) => (release = () => r('held')));
  const one = oneAtATime({ dispatchHosts: () => held } as unknown as Acts);
  const two = oneAtATime({ dispatchHosts: async () => 'free' } as unknown as Acts);
  const first = one.dispatchHosts({} as never);
  expect(await two.dispatchHosts({} as never)).toBe('free');
  release();
  expect(await first).toBe('held');
});
