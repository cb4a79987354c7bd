// The campaign's control as a host session reads it between pages (pause,
// stop, the settings version, the host's pause, delay and render mode, and
// whether the host was given up: src/redis/campaign-hosts.ts
// `sessionControl`, one Redis command). Steering reaches a running session
// within CONTROL_EVERY_MS. So does the end of its host's workflow by an
// operator's hand (terminated, cancelled): the campaign's watch finds it
// (activities/domain-watch.ts) and gives the host up in Redis, and the
// session stops, where it used to learn it only from a heartbeat's answer,
// which sessions now send once every few minutes (SESSION_HEARTBEAT).
import type { CampaignHosts } from '../src/redis/campaign-hosts';
import type { SessionEnd } from './types';

/** How often a session reads the campaign's control: steering reaches it within this. */
export const CONTROL_EVERY_MS = 250;

export type SessionControl = Awaited<ReturnType<CampaignHosts['sessionControl']>>;

/** Why the session must end under this control, if it must: a stop (or its host given up), a pause (the campaign's or the host's), newer settings than it runs with. */
export function stopFor(control: SessionControl, settingsVersion: number): SessionEnd | null {
  if (control.stop || control.hostGivenUp) return 'stopped';
  if (control.paused || control.hostPaused) return 'paused';
  return control.version > settingsVersion ? 'config' : null;
}

/** The control as one session last read it. */
export class ControlReads {
  private lastAt = Date.now();

  constructor(
    private readonly hosts: CampaignHosts,
    private readonly host: string,
    /** The control as last read. */
    public current: SessionControl,
    private readonly settingsVersion: number,
  ) {}

  /** Why the session must end under the control as last read, if it must. */
  stop(): SessionEnd | null {
    return stopFor(this.current, this.settingsVersion);
  }

  /** The control, read again when CONTROL_EVERY_MS have passed: why the session must end, if it must. */
  async read(): Promise<SessionEnd | null> {
    if (Date.now() - this.lastAt < CONTROL_EVERY_MS) return null;
    this.current = await this.hosts.sessionControl(this.host);
    this.lastAt = Date.now();
    return this.stop();
  }
}
