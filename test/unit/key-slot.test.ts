// The cluster slot of a key (src/redis/key-slot.ts): the specification's
// values, hash tags as the cluster reads them, and a campaign's host keys
// spread over the slots while each host's keys share one.
import { keySlot, KEY_SLOTS } from '../../src/redis/key-slot';
import { hostKeys } from '../../src/redis/keys';

test("the specification's example: CRC16 of 123456789 is 0x31C3", () => {
  expect(keySlot('123456789')).toBe(0x31c3 % KEY_SLOTS);
});

test('a hash tag decides the slot; an empty tag or an unclosed brace leaves the whole key to decide it', () => {
  expect(keySlot('crawl:{c.1a2b|example.com:80}:seen')).toBe(keySlot('{c.1a2b|example.com:80}'));
  expect(keySlot('crawl:{c.1a2b|example.com:80}:seen')).toBe(keySlot('other:{c.1a2b|example.com:80}:seq'));
  expect(keySlot('{x}{y}')).toBe(keySlot('x'));
  expect(keySlot('a{}b')).not.toBe(keySlot(''));
  expect(keySlot('a{bc')).not.toBe(keySlot('bc'));
  expect(keySlot('crawl:{c|例え.テスト:80}:seq')).toBe(keySlot('{c|例え.テスト:80}'));
});

test("a host's keys share a slot, and many hosts spread over the slots", () => {
  const slots = new Set<number>();
  for (let i = 0; i < 5_000; i++) {
    const k = hostKeys(`camp-${i % 7}.deadbeef`, `www.seed${i}.test:80`);
    expect(new Set([k.seen, k.frontier].map(keySlot)).size).toBe(1);
    slots.add(keySlot(k.seen));
  }
  expect(slots.size).toBeGreaterThan(4_000);
});
