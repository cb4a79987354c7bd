// The cluster slot of a key (src/redis/key-slot.ts) is the one ioredis's Cluster routes it to,
// hash tags, empty tags, braces in hosts and non-ASCII keys included.
import { keySlot } from '../../src/redis/key-slot';
import { hostKeys } from '../../src/redis/keys';

// The slot function ioredis's Cluster routes with (installed as its dependency; it ships no types).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const calculateSlot = require('cluster-key-slot') as (key: string) => number;

describe('keySlot', () => {
  test.each([
    ['the specification example', '123456789'],
    ['a plain key', 'crawl:clock'],
    ['a hash tag', 'crawl:{c.1a2b3c4d|example.com:80}:seen'],
    ['an empty tag (the whole key)', 'a{}b'],
    ['an unclosed brace', 'a{bc'],
    ['a tag ended by the first closing brace', 'crawl:{c.1|a}b.com}:seen'],
    ['a second tag ignored', '{x}{y}'],
    ['non-ASCII', 'crawl:{c|例え.テスト:80}:seq'],
    ['an empty key', ''],
  ])('%s', (_, key) => {
    expect(keySlot(key)).toBe(calculateSlot(key));
  });

  test('agrees with the cluster for many host keys, and spreads them over the slots', () => {
    const slots = new Set<number>();
    for (let i = 0; i < 5_000; i++) {
      const key = hostKeys(`camp-${i % 7}.deadbeef`, `www.seed${i}.test:80`).seen;
      expect(keySlot(key)).toBe(calculateSlot(key));
      slots.add(keySlot(key));
    }
    expect(slots.size).toBeGreaterThan(4_000);
  });
});
