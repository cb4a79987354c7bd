/**
 * Retry-After as milliseconds from `now`: delta-seconds or an HTTP-date
 * (RFC 9110 §10.2.3). Null when absent or unparseable.
 */
export function parseRetryAfter(value: string | undefined | null, now = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}

/** Cap on a server's Retry-After, so one header cannot park a host for days. */
export const MAX_RETRY_AFTER_MS = 60 * 60_000;
