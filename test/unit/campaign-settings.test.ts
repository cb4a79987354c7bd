// Start-time settings take the same concurrency range as set-concurrency does while running.
import { CampaignInputError, resolveCampaignSettings } from '../../src/config/campaign';
import { MAX_ACTIVE_HOSTS, validateSetConcurrency } from '../../src/config/steering';

const settingsWith = (maxActiveHosts: number | null) =>
  resolveCampaignSettings({ seeds: ['http://a.test/'], politeness: { maxActiveHosts }, output: { dir: '/tmp/x' } }, 'c1');

test.each([0, MAX_ACTIVE_HOSTS + 1])('maxActiveHosts %p is refused at start as it is by set-concurrency', (n) => {
  expect(() => settingsWith(n)).toThrow(CampaignInputError);
  expect(() => settingsWith(n)).toThrow(/maxActiveHosts must be a whole number from 1 to/);
  expect(() => validateSetConcurrency({ maxActiveHosts: n })).toThrow(/from 1 to/);
});

test.each([1, MAX_ACTIVE_HOSTS, null])('maxActiveHosts %p is taken at start as by set-concurrency', (n) => {
  expect(settingsWith(n).politeness.maxActiveHosts).toBe(n);
  expect(validateSetConcurrency({ maxActiveHosts: n })).toEqual({ maxActiveHosts: n });
});
