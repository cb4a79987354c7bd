// A host's delay between two requests, from what sets it: the operator's
// (for the host, then for the campaign), the settings', and robots.txt's
// Crawl-delay when it asks for more. Its own session and the rendered pages
// of other hosts' sessions that reach it (activities/render-hosts.ts) pace
// it alike.
import { crawlDelayMs, type CampaignSettings } from '../src/config/campaign';
import { operatorDelayReason } from '../src/config/steering';

/** The pause between two requests to the host now, and why: the operator's delay (host, then campaign), the settings', robots.txt's if longer. */
export function delayFor(
  s: CampaignSettings,
  control: { minDelayMs: number | null; hostDelayMs: number | null },
  robotsCrawlDelaySec: number | null,
): { ms: number; reason: string } {
  const operator = control.hostDelayMs ?? control.minDelayMs;
  const base = operator ?? s.politeness.minDelayMs;
  const ms = crawlDelayMs({ ...s.politeness, minDelayMs: base }, robotsCrawlDelaySec);
  // robots.txt wins when it asks for more than the minimum (operators only make it stricter).
  if (robotsCrawlDelaySec && ms > base) return { ms, reason: `robots.txt Crawl-delay ${robotsCrawlDelaySec} s` };
  if (operator !== null) return { ms, reason: operatorDelayReason(operator, control.hostDelayMs !== null) };
  return { ms, reason: `minimum delay ${base} ms` };
}
