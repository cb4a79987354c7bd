// A campaign's dataset: the items its handler returned, one JSON line per
// item, in raw per-process files like the index (<out>/datasets/default/
// <unique>.jsonl). Each line carries the identity of the attempt that made
// it (URL fingerprint, fetch time, WARC record), the same fields its index
// line has, so the sealed dataset keeps exactly the items of the attempt
// whose index line survives sealing, however often workers died.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { IndexWriter, forEachIndexEntry, readIndex, type IndexEntry, type IndexWriterOptions, type JsonlReadOptions } from './index-writer';

export const DEFAULT_DATASET = 'default';

export interface DatasetLine {
  url: string;
  /** URL fingerprint, as in the index line. */
  fp: string;
  /** The attempt's id, as in its index line: sealing keeps the items of the committed attempt (src/storage/seal-dataset.ts). */
  attemptId?: string;
  campaignId: string;
  /** The label the page was routed by, or null. */
  label: string | null;
  /** ISO 8601, equal to the index line's fetchedAt of the same attempt. */
  fetchedAt: string;
  /** The WARC response record the item was extracted from. */
  warc: { file: string; offset: number };
  item: Record<string, unknown>;
}

/** Where a campaign's raw dataset files are. */
export function datasetDir(outputDir: string, name = DEFAULT_DATASET): string {
  return path.join(path.resolve(outputDir), 'datasets', name);
}

/** A raw dataset file of this process: the index's JSONL writer under another name. */
export class DatasetWriter {
  private constructor(private readonly w: IndexWriter) {}

  /** `opts`: size and age bounds of an output in object storage (see IndexWriterOptions). */
  static async open(dir: string, opts: Pick<IndexWriterOptions, 'maxFileBytes' | 'rollover'> = {}): Promise<DatasetWriter> {
    return new DatasetWriter(await IndexWriter.open({ dir, prefix: 'dataset', ...opts }));
  }

  get path(): string {
    return this.w.path;
  }

  /** A page's lines in one write: a crash leaves at most a partial last line, which readers skip. */
  appendAll(lines: DatasetLine[]): Promise<void> {
    return this.w.appendAll(lines, 'dataset items');
  }

  /** Finishes the current file (the next append starts a new one). */
  finishFile(): Promise<void> {
    return this.w.finishFile();
  }

  close(): Promise<void> {
    return this.w.close();
  }
}

/** The identity of one attempt at a URL, from an index line or a dataset line. */
export function attemptKey(x: { fp: string; fetchedAt: string; warc?: { file: string; offset: number } }): string {
  return `${x.fp}|${x.fetchedAt}|${x.warc?.file ?? ''}|${x.warc?.offset ?? ''}`;
}

/** Every raw line (all processes' files); same tolerance of a killed writer's last line as the index. */
export async function readRawDataset(dir: string): Promise<DatasetLine[]> {
  // Same file layout and line rules as the index (a JSON object with a url per line).
  return (await readIndex(dir)) as unknown as DatasetLine[];
}

/** The lines of the attempts `committed` accepts, in file order. */
export function reduceDataset(lines: DatasetLine[], committed: (line: DatasetLine) => boolean): DatasetLine[] {
  return lines.filter(committed);
}

/** sealDataset for the sealing step: the raw lines of `rawDir` reduced to the committed attempts. */
export async function sealDataset(rawDir: string, committed: (line: DatasetLine) => boolean): Promise<DatasetLine[]> {
  return reduceDataset(await readRawDataset(rawDir), committed);
}

/**
 * The committed attempt of every URL in a raw index, until sealing says
 * otherwise: per fingerprint, the last line (by fetch time, then WARC
 * location) among those that stored a response. Any one attempt's items are
 * a complete answer for the page; what matters is that only one counts.
 */
export function committedAttempts(index: Iterable<IndexEntry>): Set<string> {
  const picker = attemptPicker();
  for (const e of index) picker.add(e);
  return picker.keys();
}

type Attempt = { fp: string; fetchedAt: string; warc: { file: string; offset: number } };

/** committedAttempts one entry at a time, holding only what an attempt's key needs. */
function attemptPicker(): { add(e: IndexEntry): void; keys(): Set<string> } {
  const best = new Map<string, Attempt>();
  return {
    add(e) {
      if (!e.warc || e.kind) return;
      const cur = best.get(e.fp);
      if (!cur || attemptOrder(e as Attempt, cur) > 0) best.set(e.fp, { fp: e.fp, fetchedAt: e.fetchedAt, warc: { file: e.warc.file, offset: e.warc.offset } });
    },
    keys: () => new Set([...best.values()].map(attemptKey)),
  };
}

function attemptOrder(a: Attempt, b: Attempt): number {
  return a.fetchedAt.localeCompare(b.fetchedAt) || a.warc.file.localeCompare(b.warc.file) || a.warc.offset - b.warc.offset;
}

/**
 * Where a campaign's dataset is read from, decided once (so reading it
 * twice, as the CSV export does, reads the same lines): the sealed copy
 * once the campaign has been sealed, else (while it runs) the raw lines of
 * the raw index's latest attempts, as they were when this was opened.
 */
export interface DatasetSource {
  sealed: boolean;
  /** Every line, in file order, streamed; a promise returned by `fn` is awaited before the next line. */
  forEach(fn: (line: DatasetLine) => void | Promise<void>): Promise<void>;
}

/** The campaign's dataset (see DatasetSource), ready to be read once or more. */
export async function openDataset(outputDir: string, name = DEFAULT_DATASET, opts: JsonlReadOptions = {}): Promise<DatasetSource> {
  const sealedDir = path.join(path.resolve(outputDir), 'sealed');
  const sealed = (await fsp.readdir(sealedDir).catch(() => [] as string[])).filter((f) => f.endsWith(`.dataset-${name}.jsonl`));
  if (sealed.length === 1) {
    return { sealed: true, forEach: (fn) => forEachIndexEntry(sealedDir, fn as unknown as (e: IndexEntry) => void | Promise<void>, (f) => f === sealed[0], opts) };
  }
  const picker = attemptPicker();
  await forEachIndexEntry(path.join(path.resolve(outputDir), 'index'), (e) => picker.add(e), undefined, opts);
  const keys = picker.keys();
  const raw = datasetDir(outputDir, name);
  return {
    sealed: false,
    forEach: (fn) =>
      forEachIndexEntry(
        raw,
        (e) => {
          const l = e as unknown as DatasetLine;
          if (keys.has(attemptKey(l))) return fn(l);
        },
        undefined,
        opts,
      ),
  };
}

/**
 * The campaign's dataset: its sealed copy once the campaign has been sealed,
 * else (while it runs) the raw lines reduced by the raw index's latest
 * attempts. All in memory; openDataset streams it.
 */
export async function readDataset(outputDir: string, name = DEFAULT_DATASET): Promise<DatasetLine[]> {
  const out: DatasetLine[] = [];
  await (await openDataset(outputDir, name)).forEach((l) => void out.push(l));
  return out;
}

/** The item fields of dataset CSV columns, in the order first seen: `add` every line, then read `fields`. */
export function datasetCsvFields(): { add(line: DatasetLine): void; readonly fields: string[] } {
  const fields: string[] = [];
  const known = new Set<string>();
  return {
    add(l) {
      for (const k of Object.keys(l.item))
        if (!known.has(k)) {
          known.add(k);
          fields.push(k);
        }
    },
    fields,
  };
}

const CSV_TAGS = ['url', 'fetchedAt', 'warcFile', 'warcOffset', 'label'];

function csvCell(v: unknown): string {
  const s = v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The header line of dataset CSV with these item fields, CRLF included. */
export function datasetCsvHeader(fields: string[]): string {
  return `${[...CSV_TAGS, ...fields.map((f) => (CSV_TAGS.includes(f) ? `item.${f}` : f))].map(csvCell).join(',')}\r\n`;
}

/** One line's row of dataset CSV, CRLF included. */
export function datasetCsvRow(l: DatasetLine, fields: string[]): string {
  return `${[l.url, l.fetchedAt, l.warc.file, l.warc.offset, l.label, ...fields.map((f) => l.item[f])].map(csvCell).join(',')}\r\n`;
}

/** CSV (RFC 4180) of dataset lines: url, fetchedAt, warcFile, warcOffset, label, then every item field seen (objects as JSON). */
export function datasetCsv(lines: DatasetLine[]): string {
  const cols = datasetCsvFields();
  for (const l of lines) cols.add(l);
  return datasetCsvHeader(cols.fields) + lines.map((l) => datasetCsvRow(l, cols.fields)).join('');
}

/** Whether a folder holds a campaign's output (an index folder). */
export async function isOutputDir(dir: string): Promise<boolean> {
  return fsp
    .stat(path.join(dir, 'index'))
    .then((s) => s.isDirectory())
    .catch(() => false);
}
