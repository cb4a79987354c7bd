// One WARC writer and one index writer per output folder per process:
// activities of many campaigns share a worker, each campaign its own folder.
// The two open separately, so a folder whose WARC side cannot be written
// still gets index lines saying so. Writers idle for a while are closed
// (a long-lived worker sees many campaigns come and go).
import path from 'node:path';
import { DatasetWriter, datasetDir } from './dataset-writer';
import { IndexWriter } from './index-writer';
import { WarcWriter, warcPrefixOf } from './warc-writer';

/** The WARC folder of an output folder: where every worker of a campaign writes its files. */
export function warcDirOf(dir: string): string {
  return path.join(path.resolve(dir), 'warc');
}

/** Writers not used for this long are closed at the next lookup. */
export const IDLE_CLOSE_MS = 10 * 60_000;

interface Entry<T> {
  writer: Promise<T>;
  usedAt: number;
}

export class OutputRegistry {
  private readonly warcs = new Map<string, Entry<WarcWriter>>();
  private readonly indexes = new Map<string, Entry<IndexWriter>>();
  private readonly datasets = new Map<string, Entry<DatasetWriter>>();

  constructor(private readonly idleCloseMs = IDLE_CLOSE_MS) {}

  /**
   * One per folder and campaign: campaigns started without `--out` share a
   * folder, and a WARC file's name says whose records it holds (the seal's
   * replay index and WACZ pick a campaign's files by it).
   */
  warc(dir: string, campaignId: string): Promise<WarcWriter> {
    const prefix = warcPrefixOf(campaignId);
    const warcDir = warcDirOf(dir);
    return this.lookup(this.warcs, `${warcDir}\0${prefix}`, () => WarcWriter.open({ dir: warcDir, prefix, isPartOf: campaignId }));
  }

  index(dir: string): Promise<IndexWriter> {
    const indexDir = path.join(path.resolve(dir), 'index');
    return this.lookup(this.indexes, indexDir, () => IndexWriter.open({ dir: indexDir }));
  }

  /** The default dataset's raw file of this process (items a handler returned). */
  dataset(dir: string): Promise<DatasetWriter> {
    const d = datasetDir(dir);
    return this.lookup(this.datasets, d, () => DatasetWriter.open(d));
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
