// The Bloom filter seen set's sizing and rates (src/redis/seen-bloom.ts): what
// the Lua computes the same way, and what the docs and the summary promise.
import {
  BLOOM_FIRST_CAPACITY,
  BLOOM_HEADER_BYTES,
  BLOOM_ONES_BYTES,
  BLOOM_TIGHTENING,
  bloomBytes,
  bloomExpectedSkipped,
  bloomFalsePositive,
  bloomLevel,
  bloomLevelsFor,
  levelFalsePositive,
  seenFilterLine,
} from '../../src/redis/seen-bloom';
import { bloomMarker, bloomRateOf } from '../../src/redis/frontier-layout';
import { DEFAULT_BLOOM_RATE, resolveCampaignSettings } from '../../src/config/campaign';

describe('levels', () => {
  test('each level holds twice the one before at a tighter rate, and starts where the one before ends', () => {
    const a = bloomLevel(0.01, 1);
    const b = bloomLevel(0.01, 2);
    const c = bloomLevel(0.01, 3);
    expect([a.capacity, b.capacity, c.capacity]).toEqual([BLOOM_FIRST_CAPACITY, 2 * BLOOM_FIRST_CAPACITY, 4 * BLOOM_FIRST_CAPACITY]);
    expect(b.rate / a.rate).toBeCloseTo(BLOOM_TIGHTENING, 12);
    expect([a.before, b.before, c.before]).toEqual([0, a.capacity, a.capacity + b.capacity]);
    // k = log2(1/p) bit positions, bits = n·ln(1/p)/ln²2: the optimal filter of its capacity and rate.
    expect(a.k).toBe(Math.round(Math.log2(1 / a.rate)));
    expect(a.bytes * 8).toBeGreaterThanOrEqual((a.capacity * Math.log(1 / a.rate)) / Math.LN2 ** 2);
    expect(a.bytes * 8 - 8).toBeLessThan((a.capacity * Math.log(1 / a.rate)) / Math.LN2 ** 2);
  });

  test('a full level is at its design rate (within the rounding of k and the bits)', () => {
    for (const rate of [0.1, 0.01, 0.001, 1e-6]) {
      for (const i of [1, 4, 10]) {
        const lv = bloomLevel(rate, i);
        const p = levelFalsePositive(lv, lv.capacity);
        expect(p / lv.rate).toBeGreaterThan(0.9);
        expect(p / lv.rate).toBeLessThan(1.1);
      }
    }
  });

  test('the levels a host has: one for its first URL, another each time the ones it has are full', () => {
    expect(bloomLevelsFor(0)).toBe(0);
    expect(bloomLevelsFor(1)).toBe(1);
    expect(bloomLevelsFor(BLOOM_FIRST_CAPACITY)).toBe(1);
    expect(bloomLevelsFor(BLOOM_FIRST_CAPACITY + 1)).toBe(2);
    expect(bloomLevelsFor(3 * BLOOM_FIRST_CAPACITY)).toBe(2);
    expect(bloomLevelsFor(3 * BLOOM_FIRST_CAPACITY + 1)).toBe(3);
  });
});

describe('compound rate', () => {
  test('stays below the setting however large the host grows: the levels’ rates sum to it at most', () => {
    for (const rate of [0.05, 0.01, 0.001]) {
      let worst = 0;
      for (const n of [1, 100, 128, 129, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]) worst = Math.max(worst, bloomFalsePositive(rate, n));
      expect(worst).toBeLessThanOrEqual(rate);
      // Not far below either: a filter much tighter than asked would waste memory.
      expect(worst).toBeGreaterThan(rate * 0.5);
    }
  });

  test('grows with the URLs held: none before the first, most when the newest level is full', () => {
    expect(bloomFalsePositive(0.01, 0)).toBe(0);
    const full = 127 * BLOOM_FIRST_CAPACITY;
    expect(bloomFalsePositive(0.01, 10)).toBeLessThan(bloomFalsePositive(0.01, 100));
    expect(bloomFalsePositive(0.01, full - 1000)).toBeLessThan(bloomFalsePositive(0.01, full));
  });

  test('the expected skips sum p/(1−p) over adds: about rate/2 a URL over a host grown to a full level, never more than rate', () => {
    const n = 63 * BLOOM_FIRST_CAPACITY;
    const e = bloomExpectedSkipped(0.01, n);
    expect(e / n).toBeLessThan(0.01);
    expect(e / n).toBeGreaterThan(0.001);
    expect(bloomExpectedSkipped(0.01, 1)).toBe(0);
  });
});

describe('sizing', () => {
  test('at the default rate a seen URL costs under 4 bytes of string for hosts of 300 to 16,000 URLs, under 6 up to 100 million', () => {
    for (const n of [300, 385, 500, 1_000, 5_000, 8_065, 16_000]) expect({ n, under4: bloomBytes(DEFAULT_BLOOM_RATE, n) / n < 4 }).toEqual({ n, under4: true });
    // Worst just after a level is added (the new one is empty); about 2 to 3 bytes once it fills.
    for (let n = 300; n < 1e8; n = Math.ceil(n * 1.1)) expect({ n, under6: bloomBytes(DEFAULT_BLOOM_RATE, n) / n < 6 }).toEqual({ n, under6: true });
    expect(bloomBytes(DEFAULT_BLOOM_RATE, 127 * BLOOM_FIRST_CAPACITY) / (127 * BLOOM_FIRST_CAPACITY)).toBeLessThan(2);
  });

  test('the string is its header and every level the host has (its bits and their count), nothing more', () => {
    expect(bloomBytes(0.01, 0)).toBe(0);
    expect(bloomBytes(0.01, 1)).toBe(BLOOM_HEADER_BYTES + bloomLevel(0.01, 1).bytes + BLOOM_ONES_BYTES);
    expect(bloomBytes(0.01, BLOOM_FIRST_CAPACITY + 1)).toBe(BLOOM_HEADER_BYTES + bloomLevel(0.01, 1).bytes + bloomLevel(0.01, 2).bytes + 2 * BLOOM_ONES_BYTES);
  });
});

describe('settings and markers', () => {
  test('exact by default; bloom at 1 % unless a rate is given; rates outside 1e-6…0.1 refused', () => {
    const base = { seeds: ['http://a.test/'] };
    expect(resolveCampaignSettings(base, 'c1').frontier).toMatchObject({ seen: 'exact', seenRate: DEFAULT_BLOOM_RATE });
    expect(resolveCampaignSettings({ ...base, frontier: { seen: 'bloom', seenRate: 0.001 } }, 'c1').frontier).toMatchObject({ seen: 'bloom', seenRate: 0.001 });
    expect(() => resolveCampaignSettings({ ...base, frontier: { seen: 'bloom', seenRate: 0.5 } }, 'c1')).toThrow(/frontier\.seenRate must be a number from 0\.000001 to 0\.1/);
    expect(() => resolveCampaignSettings({ ...base, frontier: { seen: 'maybe' as 'exact' } }, 'c1')).toThrow(/frontier\.seen must be one of "exact", "bloom"/);
  });

  test('the marker names the rate and reads back; anything else is no Bloom filter', () => {
    expect(bloomRateOf(bloomMarker(0.01))).toBe(0.01);
    expect(bloomRateOf(bloomMarker(1e-6))).toBe(1e-6);
    expect(bloomRateOf(null)).toBeNull();
    expect(bloomRateOf('bloom')).toBeNull();
    expect(bloomRateOf('bloom 2')).toBeNull();
  });

  test('the summary line', () => {
    expect(seenFilterLine({ rate: 0.01, expectedSkipped: 12.34 })).toBe('expected URLs skipped by the Bloom filter: 12.3 (rate 0.01)');
  });
});
