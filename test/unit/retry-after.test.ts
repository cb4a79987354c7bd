import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../src/http/retry-after';

const ROOT = path.resolve(__dirname, '../..');

const NOW = Date.parse('2015-10-21T07:28:00.000Z');

describe('parseRetryAfter', () => {
  test('delta-seconds', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter('120', NOW)).toBe(120_000);
    expect(parseRetryAfter('  7 ', NOW)).toBe(7_000);
    expect(parseRetryAfter('007', NOW)).toBe(7_000);
  });

  test('HTTP-date in the future: the time until then', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:30 GMT', NOW)).toBe(30_000);
    // The obsolete forms RFC 9110 still asks recipients to read.
    expect(parseRetryAfter('Wednesday, 21-Oct-15 07:29:00 GMT', NOW)).toBe(60_000);
    expect(parseRetryAfter('Wed Oct 21 07:28:45 2015', NOW)).toBe(45_000);
    expect(parseRetryAfter('Wed Oct  1 07:28:00 2015', Date.parse('2015-10-01T07:27:50Z'))).toBe(10_000);
  });

  test('asctime has no zone and means GMT, whatever the local time zone', () => {
    // Jest's sandbox ignores a changed TZ, so the parse runs in a process five hours west of GMT,
    // where reading asctime as local time would be off by five hours (and hit the cap).
    const script =
      `import { parseRetryAfter } from ${JSON.stringify(path.join(ROOT, 'src/http/retry-after'))};` +
      `console.log(JSON.stringify([new Date(2015, 9, 21).getTimezoneOffset(), parseRetryAfter('Wed Oct 21 07:28:45 2015', ${NOW})]));`;
    const res = spawnSync(path.join(ROOT, 'node_modules/.bin/tsx'), ['-e', script], { env: { ...process.env, TZ: 'Etc/GMT+5' }, encoding: 'utf8' });
    expect(res.stderr).toBe('');
    expect(JSON.parse(res.stdout)).toEqual([300, 45_000]);
  });

  test('HTTP-date in the past or now: 0, not negative', () => {
    expect(parseRetryAfter('Tue, 20 Oct 2015 07:28:00 GMT', NOW)).toBe(0);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', NOW)).toBe(0);
  });

  test('absent, garbage, negative and fractional values are null, not "retry now"', () => {
    for (const v of [undefined, null, '', '   ', 'soon', '5s', '1e3', '0x10', '-5', '+5', '1.5', '1 2', '2015-10-21', '12:00', 'Wed, 21 Oct 2015']) {
      expect({ v, ms: parseRetryAfter(v, NOW) }).toEqual({ v, ms: null });
    }
  });

  test('huge values are capped, so one header cannot park a host for days', () => {
    expect(MAX_RETRY_AFTER_MS).toBe(3_600_000);
    expect(parseRetryAfter('3600', NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('3601', NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('86400', NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('9'.repeat(400), NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Fri, 01 Jan 2100 00:00:00 GMT', NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('3599', NOW)).toBe(3_599_000);
  });
});
