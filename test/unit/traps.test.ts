import { DEFAULT_TRAP_LIMITS, trapReason, type TrapCode } from '../../src/url/traps';

const BASE = 'https://example.com';

function code(url: string, limits?: Parameters<typeof trapReason>[1]): TrapCode | null {
  return trapReason(url, limits)?.code ?? null;
}

function pathOf(segments: string[]): string {
  return `${BASE}/${segments.join('/')}`;
}

function seq(n: number, prefix = 's'): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${i}`);
}

function query(n: number): string {
  return Array.from({ length: n }, (_, i) => `k${i}=${i}`).join('&');
}

describe('DEFAULT_TRAP_LIMITS', () => {
  it('has the documented defaults and is frozen', () => {
    expect(DEFAULT_TRAP_LIMITS).toEqual({ maxUrlLength: 2048, maxQueryParams: 20, maxRepeatedSegment: 3, maxPathDepth: 32 });
    expect(Object.isFrozen(DEFAULT_TRAP_LIMITS)).toBe(true);
  });
});

describe('trapReason', () => {
  it('passes ordinary URLs', () => {
    for (const url of [
      'https://example.com/',
      'https://example.com',
      'https://example.com/blog/2024/05/01/hello-world',
      'https://example.com/search?q=crawler&page=2',
      'http://example.com:8080/a/b/c/',
      'https://example.com/api/v1/users/1/posts/1/comments/1',
      'https://example.com/a/b/c/a/b/c/a/b/c',
    ]) {
      expect(trapReason(url)).toBeNull();
    }
  });

  describe('URL_TOO_LONG', () => {
    it('allows exactly maxUrlLength characters and rejects one more', () => {
      const at = `${BASE}/${'x'.repeat(2048 - BASE.length - 1)}`;
      expect(at).toHaveLength(2048);
      expect(trapReason(at)).toBeNull();
      expect(trapReason(`${at}y`)).toEqual({ code: 'URL_TOO_LONG', detail: 'URL is 2049 characters, limit is 2048' });
    });

    it('honours a custom limit', () => {
      expect(code(`${BASE}/abc`, { maxUrlLength: 23 })).toBeNull();
      expect(code(`${BASE}/abcd`, { maxUrlLength: 23 })).toBe('URL_TOO_LONG');
    });

    it('rejects a 100 KB URL by its length alone, whatever it contains', () => {
      // Strings no URL parser accepts ('%' runs, no scheme) get the same
      // verdict: the length is checked before anything looks inside.
      // (How fast this is belongs in a benchmark, not a test.)
      const huge = [`${BASE}/${'a/'.repeat(50_000)}`, `${BASE}/?${'a=1&'.repeat(25_000)}`, `${BASE}/${'%'.repeat(100_000)}`, 'x'.repeat(100_000)];
      for (const url of huge) {
        expect(url.length).toBeGreaterThanOrEqual(100_000);
        expect(trapReason(url)?.code).toBe('URL_TOO_LONG');
      }
    });

    it('takes precedence over every other rule', () => {
      const url = `${pathOf(Array(40).fill('a'))}?${query(30)}`.padEnd(3000, 'z');
      expect(code(url)).toBe('URL_TOO_LONG');
    });
  });

  describe('TOO_MANY_QUERY_PARAMS', () => {
    it('allows exactly maxQueryParams and rejects one more', () => {
      expect(trapReason(`${BASE}/p?${query(20)}`)).toBeNull();
      expect(trapReason(`${BASE}/p?${query(21)}`)).toEqual({
        code: 'TOO_MANY_QUERY_PARAMS',
        detail: 'query has 21 parameters, limit is 20',
      });
    });

    it('counts repeated keys and valueless parameters but not empty ones', () => {
      expect(code(`${BASE}/?${Array(21).fill('a=1').join('&')}`)).toBe('TOO_MANY_QUERY_PARAMS');
      expect(code(`${BASE}/?${Array(21).fill('flag').join('&')}`)).toBe('TOO_MANY_QUERY_PARAMS');
      expect(code(`${BASE}/?${query(20)}&&&&&&&&`)).toBeNull();
      expect(code(`${BASE}/?&&&&&&&&&&&&&&&&&&&&&&&&&&&&&`)).toBeNull();
    });

    it('ignores the fragment', () => {
      expect(code(`${BASE}/?${query(20)}#${query(5)}`)).toBeNull();
    });

    it('honours a custom limit', () => {
      expect(code(`${BASE}/?a=1&b=2`, { maxQueryParams: 2 })).toBeNull();
      expect(code(`${BASE}/?a=1&b=2&c=3`, { maxQueryParams: 2 })).toBe('TOO_MANY_QUERY_PARAMS');
      expect(code(`${BASE}/?a=1`, { maxQueryParams: 0 })).toBe('TOO_MANY_QUERY_PARAMS');
    });

    it('comes before the path rules', () => {
      expect(code(`${pathOf(Array(40).fill('a'))}?${query(21)}`)).toBe('TOO_MANY_QUERY_PARAMS');
    });
  });

  describe('PATH_TOO_DEEP', () => {
    it('allows exactly maxPathDepth segments and rejects one more', () => {
      expect(trapReason(pathOf(seq(32)))).toBeNull();
      expect(trapReason(pathOf(seq(33)))).toEqual({ code: 'PATH_TOO_DEEP', detail: 'path has 33 segments, limit is 32' });
    });

    it('does not count a trailing slash as a segment', () => {
      expect(code(`${pathOf(seq(32))}/`)).toBeNull();
      expect(code(`${pathOf(seq(32))}/?q=1`)).toBeNull();
    });

    it('counts interior empty segments', () => {
      expect(code(`${BASE}${'/'.repeat(33)}x`)).toBe('PATH_TOO_DEEP');
      expect(code(`${BASE}${'/'.repeat(32)}x`)).toBeNull();
    });

    it('does not count slashes in the query or fragment', () => {
      expect(code(`${BASE}/a?next=${seq(40).join('/')}`)).toBeNull();
      expect(code(`${BASE}/a#${seq(40).join('/')}`)).toBeNull();
      expect(code(`${BASE}?next=/${seq(40).join('/')}`)).toBeNull();
    });

    it('honours a custom limit', () => {
      expect(code(`${BASE}/a/b`, { maxPathDepth: 2 })).toBeNull();
      expect(code(`${BASE}/a/b/c`, { maxPathDepth: 2 })).toBe('PATH_TOO_DEEP');
    });

    it('comes before the repeated-segment rule', () => {
      expect(code(pathOf(Array(33).fill('a')))).toBe('PATH_TOO_DEEP');
    });
  });

  describe('REPEATED_PATH_SEGMENTS', () => {
    it('allows a segment maxRepeatedSegment times and rejects one more', () => {
      expect(trapReason(pathOf(['a', 'x', 'a', 'y', 'a', 'z']))).toBeNull();
      expect(trapReason(pathOf(['a', 'x', 'a', 'y', 'a', 'z', 'a']))).toEqual({
        code: 'REPEATED_PATH_SEGMENTS',
        detail: 'path segment "a" appears 4 times, limit is 3',
      });
    });

    it('flags /a/b/a/b/a/b/a/b', () => {
      const v = trapReason(`${BASE}/a/b/a/b/a/b/a/b`);
      expect(v?.code).toBe('REPEATED_PATH_SEGMENTS');
    });

    it('counts a segment that repeats back-to-back', () => {
      expect(code(`${BASE}/a/a/a`)).toBeNull();
      expect(code(`${BASE}/a/a/a/a`)).toBe('REPEATED_PATH_SEGMENTS');
    });

    it('ignores empty segments', () => {
      expect(code(`${BASE}/a//b//c//d//e//`)).toBeNull();
    });

    it('compares segments exactly (case and encoding matter)', () => {
      expect(code(`${BASE}/a/A/a/A/x/a%20`)).toBeNull();
      expect(code(`${BASE}/p/P/p/P/p/P/p/P`)).toBe('REPEATED_PATH_SEGMENTS');
    });

    it('ignores repeats in the query', () => {
      expect(code(`${BASE}/a?x=/a/a/a/a/a`)).toBeNull();
    });

    it('honours a custom limit', () => {
      expect(code(`${BASE}/a/x/a`, { maxRepeatedSegment: 2 })).toBeNull();
      expect(code(`${BASE}/a/x/a/y/a`, { maxRepeatedSegment: 2 })).toBe('REPEATED_PATH_SEGMENTS');
      expect(code(`${BASE}/a/a/a/a/a/a`, { maxRepeatedSegment: 10 })).toBeNull();
    });

    describe('consecutive pairs', () => {
      it('flags a two-segment block repeated back-to-back maxRepeatedSegment times', () => {
        expect(code(`${BASE}/x/a/b/a/b`)).toBeNull();
        expect(trapReason(`${BASE}/x/a/b/a/b/a/b`)).toEqual({
          code: 'REPEATED_PATH_SEGMENTS',
          detail: 'path segments "a/b" repeat back-to-back 3 times, limit is 2',
        });
        expect(code(`${BASE}/a/b/a/b/a/b/end`)).toBe('REPEATED_PATH_SEGMENTS');
        expect(code(`${BASE}/tag/news/tag/news/tag/news/`)).toBe('REPEATED_PATH_SEGMENTS');
      });

      it('needs the laps to be back-to-back', () => {
        expect(code(`${BASE}/a/b/x/a/b/y/a/b`)).toBeNull();
        expect(code(`${BASE}/a/b/a/b/x/a/b`)).toBeNull();
      });

      it('leaves longer blocks to the per-segment count', () => {
        expect(code(`${BASE}/a/b/c/a/b/c/a/b/c`)).toBeNull();
        expect(code(`${BASE}/a/b/c/a/b/c/a/b/c/a/b/c`)).toBe('REPEATED_PATH_SEGMENTS');
      });

      it('scales with maxRepeatedSegment but never flags a single lap', () => {
        expect(code(`${BASE}/a/b/a/b/a/b`, { maxRepeatedSegment: 4 })).toBeNull();
        expect(code(`${BASE}/a/b/a/b/a/b/a/b`, { maxRepeatedSegment: 4 })).toBe('REPEATED_PATH_SEGMENTS');
        expect(code(`${BASE}/a/b/c/d`, { maxRepeatedSegment: 1 })).toBeNull();
        expect(code(`${BASE}/a/b/a/b`, { maxRepeatedSegment: 5 })).toBeNull();
      });
    });

    it('quotes at most 100 characters of a long segment in the detail', () => {
      const seg = 'q'.repeat(300);
      const v = trapReason(pathOf([seg, seg, seg, seg]));
      expect(v?.code).toBe('REPEATED_PATH_SEGMENTS');
      expect(v!.detail.length).toBeLessThan(200);
    });
  });

  describe('limits', () => {
    it('ignores undefined and NaN overrides', () => {
      const loose = { maxUrlLength: undefined, maxQueryParams: Number.NaN };
      expect(code(`${BASE}/?${query(21)}`, loose)).toBe('TOO_MANY_QUERY_PARAMS');
      expect(code(`${BASE}/${'x'.repeat(3000)}`, loose)).toBe('URL_TOO_LONG');
    });

    it('does not modify the defaults', () => {
      trapReason(BASE, { maxPathDepth: 1 });
      expect(DEFAULT_TRAP_LIMITS.maxPathDepth).toBe(32);
    });
  });

  describe('weird input', () => {
    it('never throws', () => {
      const weird = [
        '',
        '/',
        '?',
        '#',
        '://',
        'http://',
        'http:///',
        'not a url',
        '::::////????####',
        'mailto:someone@example.com',
        'http://[::1',
        '\u0000\uffff\ud800',
        '/a/a/a/a/a',
        'a/b/a/b/a/b',
        `${BASE}/%%%/%zz/\u00e9`,
        'http://example.com?a=1/b/b/b/b/b',
      ];
      for (const url of weird) expect(() => trapReason(url)).not.toThrow();
      expect(trapReason('')).toBeNull();
      expect(trapReason('http://example.com?a=1/b/b/b/b/b')).toBeNull();
    });

    it('treats a schemeless string as a path', () => {
      expect(code('/a/a/a/a')).toBe('REPEATED_PATH_SEGMENTS');
      expect(code('/a/b?x=1')).toBeNull();
    });

    it('returns null for non-string input', () => {
      expect(trapReason(undefined as unknown as string)).toBeNull();
      expect(trapReason(42 as unknown as string)).toBeNull();
    });
  });
});
