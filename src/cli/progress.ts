import type { CampaignStatus } from '../../workflows/messages';

/** Weight of the newest interval in the smoothed rate the ETA uses. */
const RATE_SMOOTHING = 0.3;

/**
 * Live progress on stderr: one rewritten line when both stderr and stdout
 * are terminals, a plain line every few seconds otherwise (CI logs, pipes,
 * `--json` read by a script).
 */
export class ProgressReporter {
  private timer: NodeJS.Timeout | null = null;
  /** The tick under way: stop() waits for it, so nobody closes the connection under a query. */
  private ticking: Promise<void> = Promise.resolve();
  private last = { at: Date.now(), pages: 0 };
  private smoothedRate: number | null = null;
  private readonly tty: boolean;
  /** The status line on screen now (a terminal only): redrawn under a line printed above it. */
  private shown = '';

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly poll: () => Promise<CampaignStatus>,
    /** The page budget at the start; a budget an operator sets later (status.steering) wins. */
    private readonly maxPages: number | null,
  ) {
    this.tty = Boolean(out.isTTY) && Boolean(process.stdout.isTTY);
  }

  start(): void {
    this.timer = setInterval(
      () => {
        this.ticking = this.ticking.then(() => this.tick());
      },
      this.tty ? 1_000 : 5_000,
    );
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking;
    if (this.tty && this.shown) this.out.write('\n');
    this.shown = '';
  }

  /**
   * A line for the same stream (a worker's log line, a notice): on a terminal it goes above the
   * status line, which is redrawn under it. Written straight to the stream, it landed after the
   * status line on the same row, and the next tick drew a second status line below.
   */
  print(line: string): void {
    if (!this.tty || !this.shown) {
      this.out.write(`${line}\n`);
      return;
    }
    this.out.write(`\r\x1b[2K${line}\n${this.shown}`);
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
    // The ETA follows a smoothed rate, so one slow tick does not make it jump.
    this.smoothedRate = this.smoothedRate === null ? rate : RATE_SMOOTHING * rate + (1 - RATE_SMOOTHING) * this.smoothedRate;
    const maxPages = s.steering.budgets.maxPages ?? this.maxPages;
    const states = `${s.totals.activeHosts} active, ${s.totals.readyHosts} waiting`;
    const eta = maxPages && this.smoothedRate > 0 ? `, ETA ${Math.max(0, Math.ceil((maxPages - s.totals.fetched) / this.smoothedRate))} s` : '';
    const frontier = `, frontier ${s.totals.frontier}`;
    const line = `${s.status}${s.paused ? ' (paused)' : ''}: ${s.totals.fetched} pages (${rate.toFixed(1)}/s), ${s.totals.failed} failed, hosts ${s.totals.hosts} [${states}]${frontier}${eta}`;
    if (this.tty) this.shown = line;
    this.out.write(this.tty ? `\r\x1b[2K${line}` : `${line}\n`);
  }
}
