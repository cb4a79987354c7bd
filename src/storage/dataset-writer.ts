// A campaign's dataset: the items its handler returned, one JSON line per
// item, in raw per-process files like the index (<out>/datasets/default/
// <unique>.jsonl). Each line carries the identity of the attempt that made
// it (URL fingerprint, fetch time, WARC record), the same fields its index
// line has, so the sealed dataset keeps exactly the items of the attempt
// whose index line survives sealing, however often workers died.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { IndexWriter, readIndex, type IndexEntry } from './index-writer';

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

  static async open(dir: string): Promise<DatasetWriter> {
    return new DatasetWriter(await IndexWriter.open({ dir, prefix: 'dataset' }));
  }

  get path(): string {
    return this.w.path;
  }

  /** A page's lines in one write: a crash leaves at most a partial last line, which readers skip. */
  appendAll(lines: DatasetLine[]): Promise<void> {
    return this.w.appendAll(lines, 'dataset items');
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
export function committedAttempts(index: IndexEntry[]): Set<string> {
  const best = new Map<string, IndexEntry>();
  for (const e of index) {
    if (!e.warc || e.kind) continue;
    const cur = best.get(e.fp);
    if (!cur || attemptOrder(e, cur) > 0) best.set(e.fp, e);
  }
  return new Set([...best.values()].map(attemptKey));
}

function attemptOrder(a: IndexEntry, b: IndexEntry): number {
  return a.fetchedAt.localeCompare(b.fetchedAt) || a.warc!.file.localeCompare(b.warc!.file) || a.warc!.offset - b.warc!.offset;
}

/**
 * The campaign's dataset: its sealed copy once the campaign has been sealed,
 * else (while it runs) the raw lines reduced by the raw index's latest attempts.
 */
export async function readDataset(outputDir: string, name = DEFAULT_DATASET): Promise<DatasetLine[]> {
  const sealed = (await fsp.readdir(path.join(path.resolve(outputDir), 'sealed')).catch(() => [] as string[])).filter((f) => f.endsWith(`.dataset-${name}.jsonl`));
  if (sealed.length === 1) return (await readIndex(path.join(path.resolve(outputDir), 'sealed'), (f) => f === sealed[0])) as unknown as DatasetLine[];
  const keys = committedAttempts(await readIndex(path.join(path.resolve(outputDir), 'index')));
  return sealDataset(datasetDir(outputDir, name), (l) => keys.has(attemptKey(l)));
}

/** CSV (RFC 4180) of dataset lines: url, fetchedAt, warcFile, warcOffset, label, then every item field seen (objects as JSON). */
export function datasetCsv(lines: DatasetLine[]): string {
  const fields: string[] = [];
  const known = new Set<string>();
  for (const l of lines)
    for (const k of Object.keys(l.item))
      if (!known.has(k)) {
        known.add(k);
        fields.push(k);
      }
  const cell = (v: unknown): string => {
    const s = v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const head = [
    'url',
    'fetchedAt',
    'warcFile',
    'warcOffset',
    'label',
    ...fields.map((f) => (['url', 'fetchedAt', 'warcFile', 'warcOffset', 'label'].includes(f) ? `item.${f}` : f)),
  ];
  const rows = lines.map((l) => [l.url, l.fetchedAt, l.warc.file, l.warc.offset, l.label, ...fields.map((f) => l.item[f])].map(cell).join(','));
  return [head.map(cell).join(','), ...rows].join('\r\n') + '\r\n';
}

/** Whether a folder holds a campaign's output (an index folder). */
export async function isOutputDir(dir: string): Promise<boolean> {
  return fsp
    .stat(path.join(dir, 'index'))
    .then((s) => s.isDirectory())
    .catch(() => false);
}
