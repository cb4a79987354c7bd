// The spilled frontier's segment objects (src/redis/frontier-spill.ts): what
// goes out comes back byte for byte, a damaged segment is refused rather than
// read short, and every campaign key and host names a key the stores take.
import { gzipSync } from 'node:zlib';
import { decodeSegment, encodeSegment, segmentKey } from '../../src/redis/frontier-spill';
import { objectKeyProblem } from '../../src/storage/folder-object-store';

describe('frontier segments', () => {
  test('give back every member at its score, whatever it holds', () => {
    const pairs: [string, string][] = [
      ['-8999999999999999', '0\thttp://a.test/x\thttp://a.test/\tembed'],
      ['1000000000001', '@3/path?q=1\tabcdef0123456789'],
      ['2', 'ünïcode \u0000 nul, "quotes", \\ backslash, \n newline'],
    ];
    expect(decodeSegment(encodeSegment(pairs))).toEqual(pairs);
    expect(decodeSegment(encodeSegment([]))).toEqual([]);
  });

  test('refuse a segment cut short, of another count or version, or not gzip', () => {
    const body = encodeSegment([
      ['1', 'a'],
      ['2', 'b'],
    ]);
    expect(() => decodeSegment(body.subarray(0, body.length - 4))).toThrow();
    expect(() => decodeSegment(gzipSync('{"v":1,"n":3}\n["1","a"]\n["2","b"]'))).toThrow(/3 entries/);
    expect(() => decodeSegment(gzipSync('{"v":2,"n":0}'))).toThrow(/version/);
    expect(() => decodeSegment(Buffer.from('not a segment'))).toThrow();
  });

  test.each([
    ['c.1a2b3c4d', 'example.com'],
    ['a.b|c', '[::1]:8443'],
    ['..', '..'],
    ['x/y', 'xn--80ak6aa92e.com:65535'],
  ])('name an object key a store takes, under frontier/<campaign>/<host>/ (campaign %j, host %j)', (campaign, host) => {
    const key = segmentKey(campaign, host, 'lz1-0123456789abcdef');
    expect(objectKeyProblem(key)).toBeNull();
    expect(key.split('/')).toHaveLength(4);
    expect(key.startsWith('frontier/')).toBe(true);
    expect(key.endsWith('/lz1-0123456789abcdef.seg')).toBe(true);
  });
});
