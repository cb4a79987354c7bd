// Sessions tell the campaign that something changed for it (hosts became
// ready, a slot was freed, a budget was reached) with one small signal, at
// most once a second per session: the campaign then looks at Redis, where
// the news is. The signal carries nothing, so nudges cannot be lost or
// stale, only early.
import { signalIfRunning } from '../src/temporal/signal';
import { campaignNudgeSignal } from '../workflows/messages';
import type { WorkerRuntime } from './runtime';

const NUDGE_EVERY_MS = 1_000;

export class CampaignNudger {
  private pending = false;
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly rt: WorkerRuntime,
    private readonly campaignWorkflowId: string,
  ) {}

  nudge(): void {
    this.pending = true;
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.sending = this.send();
    }, NUDGE_EVERY_MS);
  }

  /** Sends a pending nudge now (the session is ending). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.sending;
    await this.send();
  }

  private async send(): Promise<void> {
    if (!this.pending) return;
    this.pending = false;
    // A campaign that is over has nobody to tell (signalIfRunning ignores that).
    await signalIfRunning(this.rt.deps.temporal, this.campaignWorkflowId, campaignNudgeSignal).catch((err: unknown) =>
      this.rt.log.warn('could not nudge the campaign', { campaign: this.campaignWorkflowId, error: String(err) }),
    );
  }
}
