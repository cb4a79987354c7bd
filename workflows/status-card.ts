// What the Temporal Web UI shows about a workflow beside its history:
// Temporal's user metadata. A static summary and details set when the
// workflow starts (who it is), current details the workflow keeps up to
// date (where it stands and why), and a summary on every durable timer (why
// it sleeps). Pure text builders, so the workflows stay thin and the
// wording is unit-tested; the UI renders the details as markdown.
import type { CampaignInput } from '../src/config/campaign';
import { embedCounts, type HostStats } from '../src/stats/counters';
import type { CampaignStatus, DomainStatus } from './messages';

/** "850 ms", "30 s", "2 min 5 s", "3 h 4 min", "2 d 3 h": the two largest units, enough to read at a glance. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = Math.round(ms / 1_000);
  if (s < 60) return `${s} s`;
  const units: [number, string][] = [
    [86_400, 'd'],
    [3_600, 'h'],
    [60, 'min'],
    [1, 's'],
  ];
  const i = units.findIndex(([size]) => s >= size);
  const [size, name] = units[i];
  const parts = [`${Math.floor(s / size)} ${name}`];
  // Only the next unit down: "2 d 5 s" would read as noise.
  const next = units[i + 1];
  if (next && Math.floor((s % size) / next[0]) > 0) parts.push(`${Math.floor((s % size) / next[0])} ${next[1]}`);
  return parts.join(' ');
}

/** The summary a host workflow's durable timer carries: why it sleeps, and for how long. */
export function sleepSummary(reason: string, ms: number): string {
  const why = reason.trim() || 'waiting';
  return `${why} — sleeping ${formatDuration(ms)}`.slice(0, 400);
}

/** One line naming a campaign in workflow lists: its first seed and scope. */
export function campaignStaticSummary(input: CampaignInput & { campaignId: string }): string {
  const seeds = input.seeds ?? [];
  const first = seeds[0] ?? input.seedsFile ?? 'no seed';
  const more = seeds.length > 1 ? ` (+${seeds.length - 1} seeds)` : input.seedsFile && seeds.length > 0 ? ' (+ seed list)' : '';
  return `Crawl campaign ${input.campaignId}: ${first}${more}, scope ${input.scope?.mode ?? 'same-host'}`.slice(0, 400);
}

/** The campaign's settings as the operator gave them (a markdown list). */
export function campaignStaticDetails(input: CampaignInput): string {
  const seeds = input.seeds ?? [];
  const lines = [
    `**Seeds:** ${seeds.length}${seeds.length ? ` (first: ${seeds.slice(0, 3).join(', ')})` : ''}${input.seedsFile ? `, list \`${input.seedsFile}\`` : ''}`,
    `**Scope:** ${input.scope?.mode ?? 'same-host'}${input.scope?.domains?.length ? ` (${input.scope.domains.slice(0, 5).join(', ')})` : ''}`,
    `**Budgets:** pages ${input.budgets?.maxPages ?? 'unlimited'}, depth ${input.budgets?.maxDepth ?? 'unlimited'}, per host ${input.budgets?.maxPagesPerHost ?? 'unlimited'}`,
    `**Politeness:** delay ≥ ${input.politeness?.minDelayMs ?? 'default'} ms, robots.txt ${input.politeness?.respectRobots === false ? 'ignored' : 'obeyed'}, key ${input.politeness?.key ?? 'host'}`,
  ];
  return lines.map((l) => `- ${l}`).join('\n');
}

export function hostStaticSummary(host: string, campaignId: string): string {
  return `Host ${host} — campaign ${campaignId}`.slice(0, 400);
}

export function hostStaticDetails(host: string, campaignId: string): string {
  return (
    `Crawls **${host}** for campaign **${campaignId}**: host sessions fetch its URLs one at a time under the host's politeness clock; ` +
    `waits of several seconds or more (Crawl-delay, Retry-After, back-off) are durable timers named after their reason.`
  );
}

/** A host's status card: state and why, pages, errors, frontier, next wake-up. */
export function hostCard(s: DomainStatus): string {
  const state = s.paused && s.state !== 'done' ? 'paused' : s.state;
  const why =
    state === 'sleeping' || state === 'backing-off'
      ? ` — ${s.delayReason || 'waiting'}`
      : state === 'crawling' && s.delayMs > 0
        ? ` — one request every ${formatDuration(s.delayMs)} (${s.delayReason || 'minimum delay'})`
        : '';
  return [
    `**State:** ${state}${why}`,
    `**Pages:** ${s.stats.fetched} fetched, ${s.stats.failed} errors, ${s.stats.skipped} skipped`,
    ...embedLine(s.stats),
    `**Frontier:** ${s.frontier ?? 'unknown'} URLs waiting`,
    `**Next wake-up:** ${s.nextWakeAt ?? '—'}`,
    `**Last:** ${s.lastUrl ? `${s.lastUrl} (${s.lastStatus ?? 'no response'})` : '—'}`,
    `**Sessions:** ${s.sessions} this run, ${s.pages} URLs`,
  ].join('\n\n');
}

/** The campaign's status card, as of its last look at Redis. */
export function campaignCard(s: CampaignStatus, problems: number): string {
  const t = s.totals;
  return [
    `**Status:** ${s.status}${s.paused ? ' (paused)' : ''}`,
    `**Pages:** ${t.fetched} fetched, ${t.failed} errors, ${t.skipped} skipped`,
    ...embedLine(t),
    `**Hosts:** ${t.hosts} seen, ${t.activeHosts} active, ${t.readyHosts} waiting for a slot${s.steering.pausedHosts ? `, ${s.steering.pausedHosts} paused` : ''}`,
    `**Frontier:** ${t.frontier} URLs waiting`,
    // A Bloom filter seen set (frontier.seen bloom): what it is expected to have skipped, as the summary says it.
    ...(t.seenFilter ? [`**Seen set:** Bloom filter, expected URLs skipped ${t.seenFilter.expectedSkipped.toFixed(1)} (rate ${t.seenFilter.rate})`] : []),
    `**Problems:** ${problems}`,
    `**As of:** ${s.updatedAt}`,
    ...(s.dispatchError ? [`**Dispatch failing** (${s.dispatchError.failures}×, since ${s.dispatchError.at}, retried every 10 s): ${s.dispatchError.message}`] : []),
  ].join('\n\n');
}

/** Page requisites, apart from pages; only once there are any, so page-only campaigns keep their card. */
function embedLine(t: HostStats): string[] {
  const e = embedCounts(t);
  return e ? [`**Embeds:** ${e.fetched} fetched, ${e.failed} errors, ${e.skipped} skipped`] : [];
}
