/** Cap on a server's Retry-After, so one header cannot park a host for days. */
export const MAX_RETRY_AFTER_MS = 60 * 60_000;

// RFC 9110 §5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms a
// recipient must still accept. Matched before Date.parse, which reads almost
// anything ("-5" and "1.5" are dates in 2001 to V8), so garbage stays garbage
// instead of becoming "retry now".
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '\\d{2}:\\d{2}:\\d{2}';
const IMF_FIXDATE = new RegExp(`^${DAY}, \\d{1,2} ${MONTH} \\d{4} ${TIME} GMT$`, 'i');
const RFC850_DATE = new RegExp(`^${LONG_DAY}, \\d{1,2}-${MONTH}-\\d{2} ${TIME} GMT$`, 'i');
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} \\d{1,2} ${TIME} \\d{4}$`, 'i');

/**
 * Retry-After as milliseconds from `now`: delta-seconds or an HTTP-date
 * (RFC 9110 §10.2.3), at most MAX_RETRY_AFTER_MS; a date in the past is 0.
 * Null when absent or not one of those forms (negative or fractional
 * numbers included).
 */
export function parseRetryAfter(value: string | undefined | null, now = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim().replace(/\s+/g, ' ');
  if (/^\d+$/.test(v)) return Math.min(Number(v) * 1000, MAX_RETRY_AFTER_MS);
  let at: number;
  if (IMF_FIXDATE.test(v) || RFC850_DATE.test(v)) at = Date.parse(v);
  // asctime carries no zone but means GMT; Date.parse alone would read it as local time.
  else if (ASCTIME_DATE.test(v)) at = Date.parse(`${v} GMT`);
  else return null;
  if (Number.isNaN(at)) return null;
  return Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}
