// One WARC writer and one index writer per output folder per process:
// activities of many campaigns share a worker, each campaign its own folder.
// The two open separately, so a folder whose WARC side cannot be written
// still gets index lines saying so. Writers idle for a while are closed
// (a long-lived worker sees many campaigns come and go).
// An output in object storage is written the same way into its spool folder
// (src/storage/spool.ts), with files finished by size and age and handed to
// the worker's uploader.
import path from 'node:path';
import { CAMPAIGN_DEFAULTS, type CampaignSettings } from '../config/campaign';
import { DatasetWriter, datasetDir } from './dataset-writer';
import type { FileRollover } from './files';
import { IndexWriter } from './index-writer';
import type { SpoolLocation, SpoolUploader } from './spool-uploader';
import { WarcWriter, warcPrefixOf } from './warc-writer';

/** The WARC folder of an output folder: where every worker of a campaign writes its files. */
export function warcDirOf(dir: string): string {
  return path.join(path.resolve(dir), 'warc');
}

/** Writers not used for this long are closed at the next lookup. */
export const IDLE_CLOSE_MS = 10 * 60_000;

/** When the writers of an output in object storage finish a file (output.upload); a folder's ignore them. */
export type UploadBounds = CampaignSettings['output']['upload'];
/** What the writers of a campaign's output need of its settings besides the folder: output.upload, and output.s3 to reach a bucket. */
export type OutputOptions = Partial<Pick<CampaignSettings['output'], 'upload' | 's3'>>;

/**
 * Where the outputs of an `output.dir` are written: the folder itself, or,
 * for an output in object storage, its spool folder, whose finished files
 * the uploader takes to the store.
 */
export type OutputPlace = { kind: 'folder'; root: string } | { kind: 'spool'; root: string; location: SpoolLocation };

interface Entry<T> {
  writer: Promise<T>;
  usedAt: number;
}

export class OutputRegistry {
  private readonly warcs = new Map<string, Entry<WarcWriter>>();
  private readonly indexes = new Map<string, Entry<IndexWriter>>();
  private readonly datasets = new Map<string, Entry<DatasetWriter>>();

  /**
   * `spool`: the worker's uploader, which says which outputs are in object
   * storage (its store factory) and takes their finished files; null: every
   * output is a folder.
   */
  constructor(
    private readonly idleCloseMs = IDLE_CLOSE_MS,
    private readonly spool: SpoolUploader | null = null,
  ) {}

  /**
   * One per folder and campaign: campaigns started without `--out` share a
   * folder, and a WARC file's name says whose records it holds (the seal's
   * replay index and WACZ pick a campaign's files by it). `out`: the
   * campaign's output.upload and output.s3, for an output in object storage.
   */
  warc(dir: string, campaignId: string, out?: OutputOptions): Promise<WarcWriter> {
    const prefix = warcPrefixOf(campaignId);
    const place = this.place(dir, out);
    const warcDir = path.join(place.root, 'warc');
    return this.lookup(this.warcs, `${warcDir}\0${prefix}`, () =>
      this.opened(place, () => WarcWriter.open({ dir: warcDir, prefix, isPartOf: campaignId, ...this.rolloverOf(place, out?.upload) })),
    );
  }

  index(dir: string, out?: OutputOptions): Promise<IndexWriter> {
    const place = this.place(dir, out);
    const indexDir = path.join(place.root, 'index');
    return this.lookup(this.indexes, indexDir, () => this.opened(place, () => IndexWriter.open({ dir: indexDir, ...this.rolloverOf(place, out?.upload) })));
  }

  /** The default dataset's raw file of this process (items a handler returned). */
  dataset(dir: string, out?: OutputOptions): Promise<DatasetWriter> {
    const place = this.place(dir, out);
    const d = datasetDir(place.root);
    return this.lookup(this.datasets, d, () => this.opened(place, () => DatasetWriter.open(d, this.rolloverOf(place, out?.upload))));
  }

  /** Where the outputs of `dir` are written (see OutputPlace); `out.s3` reaches its bucket. */
  place(dir: string, out?: OutputOptions): OutputPlace {
    let root = '';
    const location = this.spool?.locate({ dir, s3: out?.s3 ?? null }, () => this.finishOpenIn(root)) ?? null;
    if (location) root = location.spoolDir;
    return location ? { kind: 'spool', root: location.spoolDir, location } : { kind: 'folder', root: path.resolve(dir) };
  }

  /**
   * Finishes the files being written for `dir` (each writer's current file;
   * the next write starts a new one), every spool of it: what the uploader's
   * flush calls, so that every record written so far goes to the store.
   */
  async finishOpen(dir: string): Promise<void> {
    await this.finishOpenIn(this.place(dir).root);
  }

  private async finishOpenIn(placeRoot: string): Promise<void> {
    const root = placeRoot + path.sep;
    const open = [...this.warcs, ...this.indexes, ...this.datasets] as [string, Entry<{ finishFile(): Promise<void> }>][];
    await Promise.all(open.filter(([key]) => key.startsWith(root)).map(async ([, e]) => (await e.writer.catch(() => null))?.finishFile()));
  }

  private async opened<T>(place: OutputPlace, open: () => Promise<T>): Promise<T> {
    if (place.kind === 'spool') await this.spool!.prepare(place.location);
    return open();
  }

  /** A spooled output's writers finish files by size and age and hand them to the uploader; a folder's keep today's behaviour. */
  private rolloverOf(place: OutputPlace, upload: UploadBounds | undefined): { maxFileBytes?: number; rollover?: FileRollover } {
    if (place.kind === 'folder') return {};
    const bounds = upload ?? CAMPAIGN_DEFAULTS.output.upload;
    const spool = this.spool!;
    return { maxFileBytes: bounds.maxFileBytes, rollover: { maxFileAgeMs: bounds.maxFileAgeMs, finished: (file) => spool.finished(file) } };
  }

  /** How many writers are open (for tests of the eviction). */
  get size(): number {
    return this.warcs.size + this.indexes.size + this.datasets.size;
  }

  private lookup<T extends { close(): Promise<void> }>(map: Map<string, Entry<T>>, key: string, open: () => Promise<T>): Promise<T> {
    const now = Date.now();
    this.sweep(now);
    let e = map.get(key);
    if (!e) {
      const writer = open();
      writer.catch(() => map.delete(key));
      e = { writer, usedAt: now };
      map.set(key, e);
    }
    e.usedAt = now;
    return e.writer;
  }

  private sweep(now: number): void {
    for (const map of [this.warcs, this.indexes, this.datasets] as Map<string, Entry<{ close(): Promise<void> }>>[]) {
      for (const [key, e] of map) {
        if (now - e.usedAt < this.idleCloseMs) continue;
        map.delete(key);
        void e.writer.then((w) => w.close()).catch(() => undefined);
      }
    }
  }

  async closeAll(): Promise<void> {
    const all = [...this.warcs.values(), ...this.indexes.values(), ...this.datasets.values()] as Entry<{ close(): Promise<void> }>[];
    this.warcs.clear();
    this.indexes.clear();
    this.datasets.clear();
    await Promise.all(all.map(async (e) => (await e.writer.catch(() => null))?.close()));
  }
}
