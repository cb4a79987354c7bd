import { createReadStream, createWriteStream, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

// An external sort of text lines in byte order (what `LC_ALL=C sort` gives):
// lines are held in memory up to a budget, then spilled as sorted runs that
// are merged at the end. What the CDXJ index and the list of revisit
// records' originals (./revisit-originals.ts) are sorted with, whatever
// their size.

/**
 * Lines held in memory before a sorted run is spilled to a temporary file.
 * The worker that seals a campaign holds them, as one small Buffer each: a
 * 250,000-line index (70 MB) sorted under a worker's node options peaked
 * 120 MB above the process's start with 64 MB runs, 70 MB with 16 MB runs,
 * and took no longer (docs/benchmarks-history.md, issue 27 worker memory). The same
 * size as the seal's buckets (./seal.ts).
 */
export const DEFAULT_RUN_BYTES = 16 * 1024 * 1024;

const byteOrder = (a: Buffer, b: Buffer) => Buffer.compare(a, b);

export class LineSorter {
  private readonly runs: string[] = [];
  private spillDir: string | null = null;
  private buf: Buffer[] = [];
  private held = 0;

  /** `tmpDir`: where runs are spilled (default the OS temp folder). */
  constructor(
    private readonly tmpDir?: string,
    private readonly runBytes = DEFAULT_RUN_BYTES,
  ) {}

  /** One line, its newline included. */
  async add(line: Buffer): Promise<void> {
    this.buf.push(line);
    this.held += line.length;
    if (this.held >= this.runBytes) await this.spill();
  }

  /** Writes every line added, sorted, each distinct line once, to `out`; the number written. */
  async writeTo(out: string): Promise<number> {
    if (this.runs.length === 0) {
      this.buf.sort(byteOrder);
      return writeLines(out, this.buf);
    }
    if (this.buf.length) await this.spill();
    return mergeRuns(this.runs, out);
  }

  /** Removes the spilled runs. */
  async dispose(): Promise<void> {
    this.buf = [];
    if (this.spillDir) await fsp.rm(this.spillDir, { recursive: true, force: true });
    this.spillDir = null;
  }

  private async spill(): Promise<void> {
    this.spillDir ??= await fsp.mkdtemp(path.join(this.tmpDir ?? os.tmpdir(), 'cdxj-'));
    this.buf.sort(byteOrder);
    const run = path.join(this.spillDir, `run-${this.runs.length}.cdxj`);
    await writeLines(run, this.buf);
    this.runs.push(run);
    this.buf = [];
    this.held = 0;
  }
}

// Both writers go through pipeline() rather than write() and 'drain': a
// write error (ENOSPC, or EFBIG past a file size limit) then rejects the
// promise, where a bare write stream emits an 'error' event that nothing
// listens to yet, which kills the process (a worker sealing a campaign, its
// index lock and temporary file left behind), and a loop waiting for a
// 'drain' that never comes would hang. pipeline() also stops the source
// (the generator's finally runs) and destroys the file stream on error, and
// keeps the stream's backpressure: at most a high-water mark of lines is
// held, whatever the index's size.

/** Writes sorted lines to `file`, each distinct line once; the number written. */
async function writeLines(file: string, lines: Iterable<Buffer>): Promise<number> {
  let n = 0;
  function* distinct(): Generator<Buffer> {
    let last: Buffer | null = null;
    for (const l of lines) {
      if (last && last.equals(l)) continue;
      last = l;
      n++;
      yield l;
    }
  }
  await pipeline(Readable.from(distinct()), createWriteStream(file));
  return n;
}

/** k-way merge of sorted runs (a linear scan for the smallest head: runs are few, each up to runBytes). */
async function mergeRuns(runs: string[], out: string): Promise<number> {
  const inputs = runs.map((r) => createReadStream(r));
  let n = 0;
  async function* merged(): AsyncGenerator<Buffer> {
    const readers = inputs.map((input) => readline.createInterface({ input, crlfDelay: Infinity }));
    try {
      const iters = readers.map((rl) => rl[Symbol.asyncIterator]());
      const heads: (Buffer | null)[] = [];
      const next = async (i: number) => {
        const r = await iters[i]!.next();
        heads[i] = r.done ? null : Buffer.from(`${r.value}\n`, 'utf8');
      };
      for (let i = 0; i < iters.length; i++) await next(i);
      let last: Buffer | null = null;
      for (;;) {
        let min = -1;
        for (let i = 0; i < heads.length; i++) if (heads[i] && (min < 0 || Buffer.compare(heads[i]!, heads[min]!) < 0)) min = i;
        if (min < 0) break;
        const l = heads[min]!;
        if (!last || !last.equals(l)) {
          n++;
          yield l;
        }
        last = l;
        await next(min);
      }
    } finally {
      // Also when the write failed part way: no run's descriptor left open.
      for (const rl of readers) rl.close();
    }
  }
  try {
    await pipeline(Readable.from(merged()), createWriteStream(out));
  } finally {
    for (const input of inputs) input.destroy();
  }
  return n;
}
