import type { CampaignStatus } from '../../workflows/messages';

/**
 * Live progress on stderr: one rewritten line on a TTY, a plain line every
 * few seconds otherwise (CI logs, pipes).
 */
export class ProgressReporter {
  private timer: NodeJS.Timeout | null = null;
  private last = { at: Date.now(), pages: 0 };
  private readonly tty: boolean;

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly poll: () => Promise<CampaignStatus>,
    private readonly maxPages: number | null,
  ) {
    this.tty = Boolean(out.isTTY);
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.tty ? 1_000 : 5_000);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.tty) this.out.write('\n');
  }

  private async tick(): Promise<void> {
    let s: CampaignStatus;
    try {
      s = await this.poll();
    } catch {
      return; // the campaign may be between runs (continue-as-new); try again next tick
    }
    const now = Date.now();
    const rate = ((s.totals.fetched - this.last.pages) * 1000) / Math.max(1, now - this.last.at);
    this.last = { at: now, pages: s.totals.fetched };
    const byState = new Map<string, number>();
    for (const h of s.hosts) byState.set(h.domainState, (byState.get(h.domainState) ?? 0) + 1);
    const states = [...byState].map(([k, v]) => `${k} ${v}`).join(', ');
    const eta = this.maxPages && rate > 0 ? `, ETA ${Math.ceil((this.maxPages - s.totals.fetched) / rate)} s` : '';
    const frontier = s.totals.frontier !== undefined ? `, frontier ${s.totals.frontier}` : '';
    const line = `${s.status}${s.paused ? ' (paused)' : ''}: ${s.totals.fetched} pages (${rate.toFixed(1)}/s), ${s.totals.failed} failed, hosts ${s.totals.hosts} [${states}]${frontier}${eta}`;
    this.out.write(this.tty ? `\r\x1b[2K${line}` : `${line}\n`);
  }
}
