// How loaded this worker process is, for deciding whether a host session
// should start here or on another worker of the pool (issue 38). A host
// session crawling a fast site without a delay is bound by this process's one
// JavaScript thread: a worker whose thread is saturated gets no faster with
// more sessions, while another worker may idle. The figure is the CPU time
// the main thread used over the last second, read from /proc for that thread
// alone: the process's own (a machine-wide figure would read the same for two
// workers on one machine), and CPU rather than the event loop's busy share,
// which also counts the time a loaded machine kept the thread waiting for a
// core, and would call every worker full when other programs take the CPU.
// Without /proc (not Linux), the event loop's busy share stands in.
//
// A worker that renders (issue 41) does most of its work outside its thread:
// in its Chromium, a browser process with a renderer, GPU and utility helper
// each, all its child processes. Its thread reads nearly idle while its
// browser is saturated, so the thread alone called it never full, and it
// started every rendering session while the pool's other browsers sat idle.
// Its child processes' CPU is read from /proc as well, and a worker whose
// children keep a core busy is full as one whose thread does.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { processTree } from '../browser/process-memory';

/** Cumulative busy time and elapsed time of the thread, in ms: the utilisation is their ratio over a window. */
export interface ThreadTime {
  busy: number;
  total: number;
}

/** Clock ticks a second in /proc's CPU times (USER_HZ: 100 on every Linux the crawler runs on). */
const USER_HZ = 100;

/** The main thread's CPU time from /proc (its task ID is the process's), or the event loop's busy time without /proc. */
export function mainThreadTime(): () => ThreadTime {
  const stat = `/proc/self/task/${process.pid}/stat`;
  const fromProc = (): ThreadTime | null => {
    const ticks = statTicks(stat);
    return ticks === null ? null : { busy: (ticks * 1000) / USER_HZ, total: performance.now() };
  };
  if (fromProc()) return () => fromProc() ?? { busy: 0, total: performance.now() };
  return () => {
    const elu = performance.eventLoopUtilization();
    return { busy: elu.active, total: elu.active + elu.idle };
  };
}

/**
 * CPU time (ms, cumulative) of this process's child processes and theirs:
 * its Chromium's tree. Null without /proc's children lists (not Linux), where
 * the thread alone tells the load. The processes are found anew every
 * TREE_REFRESH_MS (a walk of /proc, asynchronous); between two walks only
 * their own stat files are read. A process that exits takes its time with it:
 * the figure adds up each process's growth between two readings, so it never
 * goes back, and a process first seen adds what it used since it started
 * (at most a refresh ago: the walk finds new ones that often).
 */
export function childProcessesTime(): (() => number) | null {
  const children = `/proc/self/task/${process.pid}/children`;
  const direct = (): number[] | null => {
    try {
      const t = fs.readFileSync(children, 'utf8').trim();
      return t ? t.split(/\s+/).map(Number) : [];
    } catch {
      return null;
    }
  };
  if (direct() === null) return null;
  let pids: number[] = [];
  let walking = false;
  let walkedAt = -Infinity;
  const last = new Map<number, number>();
  let busy = 0;
  let first = true;
  const refresh = () => {
    if (walking || performance.now() - walkedAt < TREE_REFRESH_MS) return;
    walkedAt = performance.now();
    const roots = direct() ?? [];
    // No child: nothing to walk (a worker that renders nothing never reads /proc past its own files).
    if (roots.length === 0) {
      pids = [];
      return;
    }
    walking = true;
    Promise.all(roots.map((r) => processTree(r)))
      .then((trees) => (pids = trees.flat()))
      .catch(() => undefined)
      .finally(() => (walking = false));
  };
  return () => {
    refresh();
    const seen = new Map<number, number>();
    for (const pid of pids) {
      const ticks = statTicks(`/proc/${pid}/stat`);
      if (ticks === null) continue;
      seen.set(pid, ticks);
      // The first reading is the baseline: what the tree used before the worker looked is no load now.
      if (!first) busy += Math.max(0, ticks - (last.get(pid) ?? 0));
    }
    last.clear();
    for (const [pid, t] of seen) last.set(pid, t);
    if (pids.length > 0) first = false;
    return (busy * 1000) / USER_HZ;
  };
}

/** utime + stime of one process (all its threads) or one thread (a task's stat), in clock ticks; null once it is gone. */
function statTicks(path: string): number | null {
  try {
    const stat = fs.readFileSync(path, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command name: state is the 1st field, utime and stime the 12th and 13th.
    return Number(f[11]) + Number(f[12]);
  } catch {
    return null;
  }
}

/** The worker's child processes are looked for anew this often (a walk of /proc costs a few ms). */
const TREE_REFRESH_MS = 2_000;

/** At or above this share of the last second busy, the thread is saturated. */
export const SATURATED_UTILIZATION = 0.85;
/**
 * At or above this much CPU over the last second (in cores: 1 is one core kept
 * busy), the worker's browser is saturated: its pages wait on Chromium, and
 * another worker's browser would render a new session's pages sooner.
 */
export const BROWSER_SATURATED_CORES = 0.85;
/** The window the utilisation is taken over, and how often it is sampled. */
const WINDOW_MS = 1000;
const SAMPLE_MS = 250;
/**
 * Sessions a worker takes whatever its load reads. The figure lags the work
 * (a session just taken shows only once it runs), and it stays high for up
 * to a second after sessions end: without a floor, a worker whose first
 * sessions had just ended would refuse the next ones and another would take
 * them all.
 */
export const SESSION_FLOOR = 4;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class WorkerLoad {
  private running = 0;
  /** When `running` last reached the floor from below; null while under it. */
  private floorSince: number | null = null;
  private readonly samples: (ThreadTime & { children: number })[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly thread: () => ThreadTime = mainThreadTime(),
    private readonly now: () => number = Date.now,
    /** The child processes' cumulative CPU ms (childProcessesTime: the worker's Chromium); null: the thread alone. */
    private readonly children: (() => number) | null = null,
  ) {}

  /** Starts sampling (the timer does not keep the process alive). */
  start(): this {
    if (this.timer) return this;
    this.sample();
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Takes one sample; start() does it every SAMPLE_MS. */
  sample(): void {
    this.samples.push({ ...this.thread(), children: this.children?.() ?? 0 });
    if (this.samples.length > WINDOW_MS / SAMPLE_MS + 1) this.samples.shift();
  }

  /**
   * Work started on this worker: an activity task taken from the queue
   * (counted as its slot is used, before the activity runs) or a host's first
   * session run locally.
   */
  started(): void {
    if (++this.running === SESSION_FLOOR) this.floorSince = this.now();
  }

  ended(): void {
    this.running = Math.max(0, this.running - 1);
    if (this.running < SESSION_FLOOR) this.floorSince = null;
  }

  /** Sessions (and other activities) running on this worker now. */
  get sessions(): number {
    return this.running;
  }

  /**
   * The thread's utilisation over the sampled window (0 before two samples). From the samples alone:
   * it is asked for between a first session's pages and by each waiting slot reservation, and a read
   * of /proc each time would put a system call on that path for a figure a quarter second fresher.
   */
  utilization(): number {
    if (this.samples.length < 2) return 0;
    const now = this.samples[this.samples.length - 1];
    const then = this.samples[0];
    return now.total > then.total ? (now.busy - then.busy) / (now.total - then.total) : 0;
  }

  /**
   * The CPU the worker's child processes (its browser) used over the sampled
   * window, in cores (0 before two samples, or without children). Over the
   * thread's elapsed time: the samples are taken together.
   */
  childCores(): number {
    if (this.samples.length < 2) return 0;
    const now = this.samples[this.samples.length - 1];
    const then = this.samples[0];
    return now.total > then.total ? (now.children - then.children) / (now.total - then.total) : 0;
  }

  /**
   * Whether a new session should go to another worker: this one runs its
   * floor of sessions and its thread, or its browser, is saturated. A worker
   * alone in its pool gets the session back from the task queue once its
   * load falls, so nothing waits for long.
   */
  full(): boolean {
    return this.running >= SESSION_FLOOR && (this.utilization() >= SATURATED_UTILIZATION || this.childCores() >= BROWSER_SATURATED_CORES);
  }

  /**
   * Whether a host's first session may run here. Past the floor, the answer
   * waits until the figure covers the floor's sessions (at most one window,
   * once per ramp: a worker that keeps more than its floor busy answers at
   * once): a dispatch starts all its hosts' first sessions on this worker in
   * the same instant, when the figure still reads idle, and would keep every
   * one of a few busy hosts here for their first sessions.
   */
  async admitFirstSession(): Promise<boolean> {
    if (this.running < SESSION_FLOOR || this.floorSince === null) return true;
    const wait = this.floorSince + WINDOW_MS - this.now();
    if (wait > 0) await sleep(wait);
    return !this.full();
  }
}
