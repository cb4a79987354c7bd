// One per worker process: moves the finished files of every spooled output
// (src/storage/spool.ts) into their object stores, a few at a time, and
// deletes each local copy once its object exists. A store that is down
// delays uploads, retried with a capped back-off; the files wait in the
// spool, and the crawl, which only writes locally, goes on. On start (and
// now and then after) it sweeps the spool: a file whose writer died
// unfinished is cut back to its last whole record, marked finished and
// uploaded with the rest.
//
// Nothing is uploaded twice with different content: a ready file never
// changes (its writer has closed it), a file is cut back only once its
// writer is gone, and a store keeps the first object under a key (a second
// put of the same size is taken as the same file, any other is refused).
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log/logger';
import { cutBackToWholeRecords } from './cut-back';
import { createdByThisProcess, processExists, thisHost, writerOfFile } from './files';
import type { ObjectStore } from './object-store';
import { markFinished, objectKeyOf, prepareSpoolDir, refusedPathOf, spoolContents, spoolDirOf, spoolLocationOf, targetKeyOf, type OutputTarget } from './spool';
import { isStorageError } from './storage-error';

/**
 * The hook that says which output locations are object stores: the store of
 * an `output.dir` (reached with its campaign's output.s3), or null when it is
 * a folder (written as it always was). The worker passes in
 * src/storage/output-location.ts's objectStoreFor here; the tests a
 * FolderObjectStore.
 */
export type ObjectStoreFactory = (target: OutputTarget) => ObjectStore | null;

export interface SpoolUploaderOptions {
  /** The spool root (CRAWLER_SPOOL_DIR): one folder per output location under it. */
  root: string;
  openStore: ObjectStoreFactory;
  /** Uploads at once, over every location (default 3). */
  concurrency?: number;
  /** Wait after a location's first failed upload (default 1 s), doubled after each further one up to maxRetryMs. */
  firstRetryMs?: number;
  /** Longest wait between attempts at a failing store (default 60 s). */
  maxRetryMs?: number;
  /**
   * Called (and awaited) before the first file of a location this process writes: the worker records
   * itself as one of the location's spoolers, whom a seal's flush waits for (src/redis/output-flush.ts).
   */
  onLocation?: (dir: string) => Promise<void>;
  /** How often the spool is swept again for files of writers that died since (default 60 s; 0: at start only). */
  sweepEveryMs?: number;
  log?: Logger;
}

/** The wait before the next attempt after `failures` failed ones in a row: doubling from `first`, capped at `max`. */
export function retryDelayMs(failures: number, first: number, max: number): number {
  if (failures <= 0) return 0;
  return Math.min(max, first * 2 ** Math.min(failures - 1, 30));
}

/** A spooled output location as the registry sees it. */
export interface SpoolLocation {
  /** The output location (`output.dir`). */
  dir: string;
  /** The location and the settings that reach it. */
  target: OutputTarget;
  spoolDir: string;
  store: ObjectStore;
}

interface Location extends SpoolLocation {
  /** Ready files to upload (paths). */
  pending: Set<string>;
  /** Of those, the ones uploading now. */
  active: Set<string>;
  /** Failed attempts in a row; no upload starts before retryAt. */
  failures: number;
  retryAt: number;
  /** Files the store refused (its key holds other content): kept in refused/, never uploaded. */
  refused: number;
  /** Finishes the files being written for this location (the registry's writers), for a flush. */
  finishOpen: (() => Promise<void>) | null;
  /** Flushes waiting for pending to empty. */
  waiters: Set<() => void>;
}

/**
 * Whether the process that named a spool file still writes it. The spool is
 * one machine's own: a file naming another host name was left by this
 * machine under an earlier name (a container restarted with a new one), and
 * a file naming this process's pid that it did not create, by an earlier
 * process with the same pid.
 */
function writerAlive(name: string): boolean {
  const w = writerOfFile(name);
  if (!w) return true; // not a writer's file: not ours to touch
  if (w.host !== thisHost()) return false;
  if (w.pid === process.pid) return createdByThisProcess(name);
  return processExists(w.pid);
}

/** Whether a ready file is another live process's to upload (it will; a dead one's or ours, this uploader's). */
function ownedByAnotherLiveProcess(name: string): boolean {
  const w = writerOfFile(name);
  return w !== null && w.host === thisHost() && w.pid !== process.pid && processExists(w.pid);
}

export class SpoolUploader {
  readonly root: string;
  private readonly openStore: ObjectStoreFactory;
  private readonly onLocation: ((dir: string) => Promise<void>) | null;
  /** Locations whose onLocation has run. */
  private readonly announced = new Map<string, Promise<void>>();
  private readonly concurrency: number;
  private readonly firstRetryMs: number;
  private readonly maxRetryMs: number;
  private readonly sweepEveryMs: number;
  private readonly log: Logger | null;
  /** By spool folder; `byTarget` by output target (targetKeyOf). */
  private readonly locations = new Map<string, Location>();
  private readonly byTarget = new Map<string, Location | null>();
  private readonly uploads = new Set<Promise<void>>();
  private retryTimer: { at: number; timer: NodeJS.Timeout } | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;
  /** Spool folders of locations no store is known for, said once each. */
  private readonly unknown = new Set<string>();
  private closed = false;

  constructor(opts: SpoolUploaderOptions) {
    this.root = path.resolve(opts.root);
    this.openStore = opts.openStore;
    this.onLocation = opts.onLocation ?? null;
    this.concurrency = Math.max(1, opts.concurrency ?? 3);
    this.firstRetryMs = opts.firstRetryMs ?? 1_000;
    this.maxRetryMs = Math.max(this.firstRetryMs, opts.maxRetryMs ?? 60_000);
    this.sweepEveryMs = opts.sweepEveryMs ?? 60_000;
    this.log = opts.log ?? null;
  }

  /** Sweeps the spool (what earlier processes left is cut back where needed and queued), then sweeps again every sweepEveryMs. */
  async start(): Promise<void> {
    await this.sweep();
    if (this.sweepEveryMs > 0 && !this.closed) {
      this.sweepTimer = setInterval(() => void this.sweep(), this.sweepEveryMs);
      this.sweepTimer.unref();
    }
  }

  /**
   * Where the registry writes the outputs of `target`: its spool folder and
   * store, or null when its `dir` is a folder. `finishOpen` finishes the files
   * being written for it (a flush calls it).
   */
  locate(target: OutputTarget, finishOpen?: () => Promise<void>): SpoolLocation | null {
    const key = targetKeyOf(target);
    let loc = this.byTarget.get(key);
    if (loc === undefined) {
      const store = this.storeOf(target);
      loc = store ? this.adopt(target, spoolDirOf(this.root, target), store) : null;
      this.byTarget.set(key, loc);
    }
    if (loc && finishOpen) loc.finishOpen = finishOpen;
    return loc;
  }

  /** Makes the spool folder of a location before its first file (a sweep after a restart reads where it goes from it). */
  async prepare(loc: SpoolLocation): Promise<void> {
    await prepareSpoolDir(loc.spoolDir, loc.target);
    if (!this.onLocation) return;
    let announced = this.announced.get(loc.spoolDir);
    if (!announced) {
      announced = this.onLocation(loc.dir);
      this.announced.set(loc.spoolDir, announced);
      // Failed (Redis away): the next writer opened for it tries again.
      announced.catch(() => this.announced.delete(loc.spoolDir));
    }
    await announced;
  }

  /**
   * A writer's file is finished (flushed and closed): marks it (into ready/)
   * and queues its upload. A failure is logged, not thrown: the file stays
   * where it is, and the sweep after this process picks it up.
   */
  async finished(file: string): Promise<void> {
    let ready: string;
    try {
      ready = await markFinished(file);
    } catch (err) {
      this.log?.error('spool: cannot mark a finished file; it is uploaded after this process', { file, err });
      return;
    }
    const loc = this.locations.get(this.spoolDirOfFile(ready) ?? '');
    if (!loc) return;
    loc.pending.add(ready);
    this.pump();
  }

  /**
   * Finishes the files being written for `dir` and waits until every
   * finished file of it is in the store (the campaign's end, a worker's
   * drain). Resolves true when all are; false when `signal` aborted first
   * (what is left is uploaded later, or by the sweep after a restart) or
   * when the store refused a file (its key holds other content).
   */
  async flush(dir: string, signal?: AbortSignal): Promise<boolean> {
    const locs = [...this.locations.values()].filter((l) => l.dir === dir);
    await Promise.all(locs.map((l) => l.finishOpen?.()));
    return (await Promise.all(locs.map((l) => this.drain(l, signal)))).every(Boolean);
  }

  /** The output locations this process spools for (the flush watch asks Redis about each). */
  spooledDirs(): string[] {
    return [...new Set([...this.locations.values()].map((l) => l.dir))];
  }

  /** flush() of every location this process knows (a worker's drain on SIGTERM). */
  async flushAll(signal?: AbortSignal): Promise<boolean> {
    const all = [...this.locations.values()];
    await Promise.all(all.map((loc) => loc.finishOpen?.().catch((err: unknown) => this.log?.warn('spool: cannot finish open files', { location: loc.store.location, err }))));
    const done = await Promise.all(all.map((loc) => this.drain(loc, signal)));
    return done.every(Boolean);
  }

  /** Files of `dir` still waiting for their upload (for reports and tests). */
  pendingOf(dir: string): number {
    return [...this.locations.values()].filter((l) => l.dir === dir).reduce((n, l) => n + l.pending.size, 0);
  }

  /** Stops the timers and waits for the uploads in flight; what is left stays in the spool for the next start. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer.timer);
    this.retryTimer = null;
    await this.sweeping;
    await Promise.all([...this.uploads]);
    for (const loc of this.locations.values()) this.wake(loc, true);
  }

  /**
   * Every spool folder under the root: files left unfinished by a writer
   * that is gone are cut back to their last whole record and marked
   * finished; ready files that are not a live process's are queued.
   * Overlapping calls share one sweep.
   */
  sweep(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.sweeping ??= this.sweepOnce()
      .catch((err: unknown) => this.log?.error('spool: sweep failed', { root: this.root, err }))
      .finally(() => {
        this.sweeping = null;
      });
    return this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    let names: string[];
    try {
      names = (await fsp.readdir(this.root, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const name of names.sort()) {
      const spoolDir = path.join(this.root, name);
      let loc: Location | null | undefined = this.locations.get(spoolDir);
      if (!loc) {
        const target = await spoolLocationOf(spoolDir);
        if (target === null) continue;
        const dir = target.dir;
        loc = this.locate(target) as Location | null;
        if (!loc) {
          if (!this.unknown.has(spoolDir)) this.log?.warn('spool: files of an output this worker knows no store for are kept', { spoolDir, dir });
          this.unknown.add(spoolDir);
          continue;
        }
      }
      await this.sweepLocation(loc);
    }
    this.pump();
  }

  private async sweepLocation(loc: Location): Promise<void> {
    const { ready, open } = await spoolContents(loc.spoolDir);
    for (const file of open) {
      if (writerAlive(path.basename(file))) continue;
      try {
        const size = await cutBackToWholeRecords(file);
        if (size === null) continue; // not a kind of file it knows: left alone
        if (size === 0) {
          await fsp.unlink(file);
          continue;
        }
        ready.push(await markFinished(file));
        this.log?.info('spool: a file its writer left unfinished is cut back to its last whole record and uploaded', { file, bytes: size });
      } catch (err) {
        this.log?.error('spool: cannot recover a file its writer left unfinished', { file, err });
      }
    }
    for (const file of ready) if (!ownedByAnotherLiveProcess(path.basename(file))) loc.pending.add(file);
  }

  private storeOf(target: OutputTarget): ObjectStore | null {
    const dir = target.dir;
    try {
      return this.openStore(target);
    } catch (err) {
      // A location its settings cannot open: its files wait (the writers for it fail, and say why).
      this.log?.error('spool: cannot open the object store of an output', { dir, err });
      return null;
    }
  }

  private adopt(target: OutputTarget, spoolDir: string, store: ObjectStore): Location {
    const known = this.locations.get(spoolDir);
    if (known) return known;
    const loc: Location = {
      dir: target.dir,
      target,
      spoolDir,
      store,
      pending: new Set(),
      active: new Set(),
      failures: 0,
      retryAt: 0,
      refused: 0,
      finishOpen: null,
      waiters: new Set(),
    };
    this.locations.set(spoolDir, loc);
    return loc;
  }

  private spoolDirOfFile(file: string): string | null {
    const rel = path.relative(this.root, file);
    if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
    return path.join(this.root, rel.split(path.sep)[0]!);
  }

  /** Waits until no file of `loc` is pending; starts its uploads at once, back-off or not. */
  private async drain(loc: Location, signal?: AbortSignal): Promise<boolean> {
    if (this.closed) return loc.pending.size === 0;
    const refusedBefore = loc.refused;
    // Ready files the queue may not hold yet (one whose marking raced a sweep), and files of writers that died since the last sweep.
    await this.sweep();
    loc.retryAt = 0;
    this.pump();
    if (loc.pending.size > 0) {
      const idle = await new Promise<boolean>((resolve) => {
        if (signal?.aborted) return resolve(false);
        const done = (ok: boolean) => {
          loc.waiters.delete(wake);
          signal?.removeEventListener('abort', onAbort);
          resolve(ok);
        };
        const wake = () => done(true);
        const onAbort = () => done(false);
        loc.waiters.add(wake);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      if (!idle || loc.pending.size > 0) return false;
    }
    return loc.refused === refusedBefore;
  }

  private wake(loc: Location, always = false): void {
    if (!always && loc.pending.size > 0) return;
    for (const w of [...loc.waiters]) w();
  }

  /** Starts uploads while there is room, and sets a timer for the earliest retry. */
  private pump(): void {
    if (this.closed) return;
    const now = Date.now();
    let nextRetry = Infinity;
    for (const loc of this.locations.values()) {
      if (loc.retryAt > now) {
        if (loc.pending.size > 0) nextRetry = Math.min(nextRetry, loc.retryAt);
        continue;
      }
      for (const file of loc.pending) {
        if (this.uploads.size >= this.concurrency) return;
        // A store that failed is tried with one file at a time until it takes one.
        if (loc.failures > 0 && loc.active.size > 0) break;
        if (loc.active.has(file)) continue;
        loc.active.add(file);
        const p: Promise<void> = this.upload(loc, file).finally(() => {
          loc.active.delete(file);
          this.uploads.delete(p);
          this.wake(loc);
          this.pump();
        });
        this.uploads.add(p);
      }
    }
    if (nextRetry === Infinity || (this.retryTimer && this.retryTimer.at <= nextRetry)) return;
    if (this.retryTimer) clearTimeout(this.retryTimer.timer);
    const timer = setTimeout(
      () => {
        this.retryTimer = null;
        this.pump();
      },
      Math.max(0, nextRetry - now),
    );
    timer.unref();
    this.retryTimer = { at: nextRetry, timer };
  }

  private async upload(loc: Location, file: string): Promise<void> {
    let size: number;
    try {
      size = (await fsp.stat(file)).size;
    } catch {
      loc.pending.delete(file); // uploaded and removed meanwhile (another process's sweep)
      return;
    }
    if (size === 0) {
      // Nothing in it to keep: no empty object.
      await fsp.unlink(file).catch(() => undefined);
      loc.pending.delete(file);
      return;
    }
    const key = objectKeyOf(loc.spoolDir, file);
    try {
      await loc.store.putFile(key, file);
    } catch (err) {
      if (isStorageError(err) && err.code === 'OBJECT_EXISTS') {
        await this.refuse(loc, file, key, err);
        return;
      }
      loc.failures += 1;
      const wait = retryDelayMs(loc.failures, this.firstRetryMs, this.maxRetryMs);
      loc.retryAt = Date.now() + wait;
      this.log?.warn('spool: upload failed; retried later, the file is kept', { location: loc.store.location, key, failures: loc.failures, retryInMs: wait, err });
      return;
    }
    loc.failures = 0;
    loc.retryAt = 0;
    try {
      await fsp.unlink(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log?.warn('spool: uploaded, but the local file cannot be removed', { file, err });
    }
    loc.pending.delete(file);
  }

  /** The store holds the key with other content: the file is set aside (kept, never uploaded over it) and said loudly. */
  private async refuse(loc: Location, file: string, key: string, err: unknown): Promise<void> {
    const to = refusedPathOf(file);
    try {
      await fsp.mkdir(path.dirname(to), { recursive: true });
      await fsp.rename(file, to);
    } catch (moveErr) {
      this.log?.error('spool: cannot set a refused file aside', { file, err: moveErr });
    }
    loc.pending.delete(file);
    loc.refused += 1;
    this.log?.error('spool: the store already holds this key with other content; the file is kept in the spool, not uploaded', {
      location: loc.store.location,
      key,
      kept: to,
      err,
    });
  }
}
