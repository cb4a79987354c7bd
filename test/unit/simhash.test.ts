import { featureHash, fmix64, fnv1a64, hammingDistance, hasWords, simhash64, simhashFromHex, simhashToHex, tokens } from '../../src/dedup/simhash';

// A deterministic "article": words from a 400-word vocabulary picked by mulberry32.
// (An LCG won't do: two seeds walk the same orbit, so "unrelated" articles share long runs.)
function article(words: number, seed: number): string[] {
  const vocab = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}`);
  let s = seed | 0;
  const next = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
  return Array.from({ length: words }, () => vocab[next() % vocab.length]);
}

const fnvReference = (s: string): bigint => {
  let h = 0xcbf29ce484222325n;
  for (const b of Buffer.from(s, 'utf8')) h = ((h ^ BigInt(b)) * 0x100000001b3n) & ((1n << 64n) - 1n);
  return h;
};

describe('fnv1a64', () => {
  it.each([
    ['', 0xcbf29ce484222325n],
    ['a', 0xaf63dc4c8601ec8cn],
    ['foobar', 0x85944171f73967e8n],
  ])('matches the published vector for %j', (s, want) => {
    const [hi, lo] = fnv1a64(s);
    expect((BigInt(hi) << 32n) | BigInt(lo)).toBe(want);
  });

  it('matches a BigInt reference on multi-byte text', () => {
    for (const s of ['héllo wörld', '東京 タワー 夜景', 'x'.repeat(300), '🙂 emoji shingle']) {
      const [hi, lo] = fnv1a64(s);
      expect((BigInt(hi) << 32n) | BigInt(lo)).toBe(fnvReference(s));
    }
  });
});

describe('fmix64', () => {
  it('matches a BigInt reference of MurmurHash3 fmix64', () => {
    const M = (1n << 64n) - 1n;
    const ref = (k: bigint) => {
      k ^= k >> 33n;
      k = (k * 0xff51afd7ed558ccdn) & M;
      k ^= k >> 33n;
      k = (k * 0xc4ceb9fe1a85ec53n) & M;
      return k ^ (k >> 33n);
    };
    for (const k of [0n, 1n, 0xffffffffn, 0x100000000n, M, 0x0123456789abcdefn, 0xfedcba9876543210n]) {
      const [hi, lo] = fmix64([Number(k >> 32n), Number(k & 0xffffffffn)]);
      expect((BigInt(hi) << 32n) | BigInt(lo)).toBe(ref(k));
    }
  });
});

describe('tokens', () => {
  it('lower-cases, splits on non-letters, keeps any script, and folds decomposed accents', () => {
    expect(tokens('Hello, WORLD! Café 東京 42')).toEqual(['hello', 'world', 'café', '東京', '42']);
    expect(tokens('Cafe\u0301')).toEqual(['café']);
  });
});

describe('simhash64', () => {
  const long = article(3000, 7);

  it('gives identical texts distance 0, whatever the case and punctuation', () => {
    const text = long.join(' ');
    expect(hammingDistance(simhash64(text), simhash64(text))).toBe(0);
    expect(simhash64(text.toUpperCase().replace(/ /g, ' ... '))).toBe(simhash64(text));
  });

  it('moves a long article only a little when one word changes', () => {
    const base = simhash64(long.join(' '));
    for (const at of [0, 1500, 2999]) {
      const edited = [...long];
      edited[at] = 'zeppelin';
      expect(hammingDistance(base, simhash64(edited.join(' ')))).toBeLessThanOrEqual(3);
    }
  });

  it('keeps unrelated texts far apart', () => {
    const a = simhash64(long.join(' '));
    const b = simhash64(article(3000, 99).join(' '));
    const c = simhash64('Temporal workflows are durable functions; Redis keeps the crawl frontier in sorted sets.');
    expect(hammingDistance(a, b)).toBeGreaterThan(10);
    expect(hammingDistance(a, c)).toBeGreaterThan(10);
  });

  it('uses single words when there are fewer than three', () => {
    expect(simhash64('hello')).not.toBe(0n);
    expect(simhash64('hello world')).not.toBe(simhash64('hello'));
    expect(simhash64('Hello')).toBe(simhash64('hello'));
  });

  it('hashes empty or token-free text to 0', () => {
    expect(simhash64('')).toBe(0n);
    expect(simhash64('  ... !!! ')).toBe(0n);
  });

  it('is stable across runs (guards against accidental algorithm changes)', () => {
    // If this changes, every stored index stops matching new pages.
    expect(simhashToHex(simhash64('the quick brown fox jumps over the lazy dog'))).toBe('599980df21d6e8cd');
  });
});

describe('hammingDistance', () => {
  it('counts differing bits over all 64', () => {
    expect(hammingDistance(0n, 0n)).toBe(0);
    expect(hammingDistance(0n, (1n << 64n) - 1n)).toBe(64);
    expect(hammingDistance(1n << 63n, 1n)).toBe(2);
  });
});

describe('hex form', () => {
  it('round-trips with 16 zero-padded digits', () => {
    for (const h of [0n, 1n, 0xdeadbeefn, (1n << 64n) - 1n, simhash64(article(200, 3).join(' '))]) {
      const hex = simhashToHex(h);
      expect(hex).toMatch(/^[0-9a-f]{16}$/);
      expect(simhashFromHex(hex)).toBe(h);
    }
    expect(simhashToHex(1n)).toBe('0000000000000001');
    expect(simhashFromHex('FFFFFFFFFFFFFFFF')).toBe((1n << 64n) - 1n);
  });

  it('rejects what is not a 64-bit simhash', () => {
    expect(() => simhashToHex(-1n)).toThrow(RangeError);
    expect(() => simhashToHex(1n << 64n)).toThrow(RangeError);
    expect(() => simhashFromHex('abc')).toThrow(RangeError);
    expect(() => simhashFromHex('0x00000000000000')).toThrow(RangeError);
  });
});

describe('simhash64 against the plain definition', () => {
  // featureHash of each joined shingle, counted bit by bit: what simhash64 computes without building the strings.
  const plain = (text: string): bigint => {
    const words = tokens(text);
    if (words.length === 0) return 0n;
    const features = words.length < 3 ? words : words.slice(0, -2).map((_, i) => words.slice(i, i + 3).join(' '));
    const counts = new Array<number>(64).fill(0);
    for (const f of features) {
      const [hi, lo] = featureHash(f);
      const h = (BigInt(hi) << 32n) | BigInt(lo);
      for (let bit = 0; bit < 64; bit++) counts[bit] += (h >> BigInt(bit)) & 1n ? 1 : -1;
    }
    return counts.reduce((acc, c, bit) => (c > 0 ? acc | (1n << BigInt(bit)) : acc), 0n);
  };

  it('gives the same bits on ASCII, accented, CJK, emoji and mixed texts', () => {
    const texts = [
      article(500, 3).join(' '),
      'Hello, WORLD! Café 東京 42 and Cafe\u0301 again',
      '東京 タワー 夜景 東京 タワー',
      'one',
      'two words',
      '🙂 emoji shingle ünïcödé ＦＵＬＬ-width ｗｏｒｄｓ',
      article(200, 9).join(' ') + ' Straße München Ωmega ' + article(50, 4).join(', '),
      // Final sigma (lower-cased by its context), a lone surrogate (no letter), astral letters, a no-break space (NFKC: a space).
      'ΟΔΟΣ ΟΔΟΣ end \ud800 lone 𝐀𝐁 math\u00a0bold 🙂x 東京',
      // More words than the word buffer starts with, in ASCII and with one non-ASCII word.
      article(9000, 5).join(' '),
      article(9000, 6).join(' ') + ' naïve',
    ];
    for (const text of texts) expect(simhash64(text)).toBe(plain(text));
  });
});

describe('hasWords', () => {
  it('counts space-separated words as text.split(" ").length does', () => {
    for (const text of ['', 'a', 'a b', 'a  b', ' a b ', article(60, 1).join(' ')])
      for (const n of [0, 1, 2, 3, 50, 60, 61]) expect(hasWords(text, n)).toBe(text.split(' ').length >= n);
  });
});
