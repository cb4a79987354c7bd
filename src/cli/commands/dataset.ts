import { createWriteStream, promises as fsp } from 'node:fs';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { datasetCsvFields, datasetCsvHeader, datasetCsvRow, isOutputDir, openDataset } from '../../storage/dataset-writer';
import { UsageError } from '../usage-error';
import { addS3Options, checkS3Flags, isLocationUrl, withBucketOutput, writeOutputFile, type S3Flags } from '../bucket-output';
import { candidateOutputDirs } from './report';

interface DatasetOptions {
  csv?: boolean;
  file?: string;
}

/** A campaign ID (looked up where `crawl` puts it) or an output folder. */
async function outputDirOf(target: string): Promise<string> {
  if (await isOutputDir(path.resolve(target))) return path.resolve(target);
  if (/^[A-Za-z0-9._-]{1,80}$/.test(target)) {
    for (const dir of candidateOutputDirs(target, undefined)) if (await isOutputDir(dir)) return dir;
  }
  throw new UsageError(`no campaign output at ${JSON.stringify(target)} (give a campaign ID under crawl-output/, or the folder given to crawl --out)`);
}

/** Text handed to a stream in writes of about `batch` characters, waiting whenever it asks to. */
class BatchedOutput {
  private pending: string[] = [];
  private size = 0;
  private failed: Error | null = null;
  private readonly onError = (err: Error): void => {
    this.failed ??= err;
  };

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly batch: number,
  ) {
    out.on('error', this.onError);
  }

  /** A promise only when the batch was handed over: await it before writing more. */
  write(text: string): Promise<void> | undefined {
    this.pending.push(text);
    this.size += text.length;
    return this.size >= this.batch ? this.flush() : undefined;
  }

  private async flush(): Promise<void> {
    if (this.failed) throw this.failed;
    if (this.size === 0) return;
    const text = this.pending.join('');
    this.pending = [];
    this.size = 0;
    // once() rejects if the stream fails while it waits.
    if (!this.out.write(text)) await once(this.out, 'drain');
    if (this.failed) throw this.failed;
  }

  /** Hands over the rest; with `end`, also ends the stream and waits until it has closed. */
  async close(end: boolean): Promise<void> {
    try {
      await this.flush();
      if (end) {
        this.out.end();
        await finished(this.out);
      }
      if (this.failed) throw this.failed;
    } finally {
      this.out.off('error', this.onError);
    }
  }
}

export interface ExportDatasetOptions {
  csv?: boolean;
  /** Write to this file (created after the dataset was found, and ended) instead of `stdout`. */
  file?: string;
  /** Characters per write (default 1 MiB); internal, for tests. */
  batch?: number;
}

/**
 * Writes the dataset of output folder `dir` as it is read, a batch at a
 * time, never the whole text in one string (a dataset can be larger than
 * memory, and than the longest string): JSON lines, or CSV, which reads the
 * dataset twice (first for its columns). Output is the same as one string
 * of JSON.stringify lines or datasetCsv of readDataset. A read error
 * after the first batch leaves the output written so far. Returns the
 * number of items.
 */
export async function exportDataset(dir: string, o: ExportDatasetOptions = {}, stdout: NodeJS.WritableStream = process.stdout): Promise<number> {
  const source = await openDataset(dir);
  let fields: string[] | null = null;
  if (o.csv) {
    const cols = datasetCsvFields();
    await source.forEach((l) => cols.add(l));
    fields = cols.fields;
  }
  const w = new BatchedOutput(o.file === undefined ? stdout : createWriteStream(o.file), o.batch ?? 1 << 20);
  let items = 0;
  try {
    if (fields) await w.write(datasetCsvHeader(fields));
    await source.forEach((l) => {
      items++;
      return w.write(fields ? datasetCsvRow(l, fields) : `${JSON.stringify(l)}\n`);
    });
  } catch (err) {
    await w.close(o.file !== undefined).catch(() => undefined);
    throw err;
  }
  await w.close(o.file !== undefined);
  return items;
}

export function registerDatasetCommand(program: Command): void {
  const cmd = program
    .command('dataset <campaign-or-dir>')
    .description("a campaign's dataset (the items its handler returned), each page's items once: JSON lines, or CSV with --csv; from a folder or s3://bucket/prefix")
    .option('--csv', 'CSV: url, fetchedAt, warcFile, warcOffset, label, then the items’ fields')
    .option('--file <path>', 'write to this file (or s3://bucket/path/file) instead of standard output');
  addS3Options(cmd).action(async (target: string, o: DatasetOptions & S3Flags) => {
    checkS3Flags(o, target, o.file);
    const toFile = async (dir: string, shown: string) => {
      if (o.file === undefined) return void (await exportDataset(dir, { csv: o.csv }));
      const { file, result: items } = await writeOutputFile(o.file, o, (f) => exportDataset(dir, { csv: o.csv, file: f }));
      process.stderr.write(`${items} item(s) from ${shown} to ${file}\n`);
    };
    if (isLocationUrl(target)) {
      // Every campaign's newest seal, as a folder's sealed/ holds them: the folder code picks the one sealed dataset, or reads the raw items.
      await withBucketOutput(target, o, { sealed: 'all' }, async (view) => {
        const has = async (sub: string) => (await fsp.readdir(path.join(view.dir, sub)).catch(() => [])).length > 0;
        if (!(await has('index')) && !(await has('sealed'))) throw new UsageError(`no campaign output at ${view.location} (no index/ or sealed/ objects there)`);
        await toFile(view.dir, view.location);
      });
      return;
    }
    const dir = await outputDirOf(target);
    await toFile(dir, dir);
  });
}
