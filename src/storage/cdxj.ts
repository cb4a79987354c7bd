import { createReadStream, createWriteStream, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CDXAndRecordIndexer, type IndexerOffsetLength, type WARCRecord } from 'warcio';
import { surt } from './surt';
import { StorageError } from './storage-error';
import { warcPrefixOf } from './warc-writer';
import { randomBytes } from 'node:crypto';

// CDXJ: the replay index pywb, the Internet Archive's tools and WACZ read.
// One line per response or revisit record:
//   <SURT key> <14-digit timestamp> {"url","mime","status","digest","length","offset","filename"}
// sorted in byte order (what `LC_ALL=C sort` gives and what replay tools
// binary-search). Fields and their spelling are those of pywb's own indexer
// (PyPI cdxj-indexer): strings throughout, the digest with its `sha1:`
// prefix, mime `warc/revisit` for revisit records.
//
// Record parsing, request/response pairing and field extraction are
// warcio.js's CDXIndexer (already our WARC library; the code Webrecorder's
// browsertrix-crawler indexes with). The rest is ours: the SURT key (pywb
// looks pages up by the key the IA's `surt` computes, which warcio.js's
// getSurt does not always match: ./surt.ts), only response and revisit
// records (it also indexes metadata and resource records), the sort and
// the spill to disk.

/** One CDXJ line's JSON part; every value a string, as pywb writes them. */
export interface CdxjFields {
  url: string;
  mime: string;
  status?: string;
  digest?: string;
  length: string;
  offset: string;
  filename: string;
}

export interface CdxjLine {
  urlkey: string;
  timestamp: string;
  fields: CdxjFields;
}

const INDEXED_TYPES = new Set(['response', 'revisit']);

/** Lines held in memory before a sorted run is spilled to a temporary file. */
export const DEFAULT_RUN_BYTES = 64 * 1024 * 1024;

export function formatCdxjLine(l: CdxjLine): string {
  return `${l.urlkey} ${l.timestamp} ${JSON.stringify(l.fields)}\n`;
}

export function parseCdxjLine(line: string): CdxjLine {
  const a = line.indexOf(' ');
  const b = line.indexOf(' ', a + 1);
  if (a <= 0 || b <= a) throw new StorageError('CORRUPT', null, `not a CDXJ line: ${line.slice(0, 200)}`);
  return { urlkey: line.slice(0, a), timestamp: line.slice(a + 1, b), fields: JSON.parse(line.slice(b + 1)) as CdxjFields };
}

/** Counts the records warcio.js parsed, so a file that is not a WARC at all is told apart from an empty one. */
class CountingIndexer extends CDXAndRecordIndexer {
  records = 0;
  override indexRecord(record: WARCRecord | null, at: IndexerOffsetLength, filename: string) {
    if (record?.warcType) this.records++;
    return super.indexRecord(record, at, filename);
  }
}

const str = (v: unknown): string | undefined => (v === null || v === undefined || v === '' ? undefined : String(v));

/**
 * The CDXJ lines of one WARC file, in file order (unsorted). `filename` is
 * what the lines name: the path replay tools resolve against their archive
 * folder (default: the file's basename). An incomplete last record (what a
 * writer that died mid-write leaves) is not indexed; a non-empty file with
 * no WARC record in it is CORRUPT.
 */
export async function* indexWarcFile(file: string, filename = path.basename(file)): AsyncGenerator<CdxjLine> {
  const indexer = new CountingIndexer({ noSurt: true });
  const stream = createReadStream(file);
  try {
    for await (const res of indexer.iterIndex([{ filename, reader: stream }])) {
      const { cdx, record } = res as unknown as { cdx: Record<string, unknown>; record: { warcType?: string; warcPayloadDigest?: string | null } };
      if (!INDEXED_TYPES.has(record.warcType ?? '')) continue;
      const status = str(cdx.status);
      // warcio.js drops the algorithm; pywb's indexer keeps the header's value whole.
      const digest = str(record.warcPayloadDigest);
      const fields: CdxjFields = {
        url: String(cdx.url),
        mime: str(cdx.mime) ?? 'unk',
        ...(status ? { status } : {}),
        ...(digest ? { digest } : {}),
        length: String(cdx.length),
        offset: String(cdx.offset),
        filename,
      };
      yield { urlkey: surt(fields.url), timestamp: String(cdx.timestamp), fields };
    }
    if (indexer.records === 0 && (await fsp.stat(file)).size > 0) throw new StorageError('CORRUPT', file, 'no WARC record in a non-empty file');
  } catch (err) {
    if (err instanceof StorageError) throw err;
    throw new StorageError('CORRUPT', file, 'cannot index WARC file', { cause: err });
  } finally {
    stream.destroy();
  }
}

/** `*.warc.gz` and `*.warc` files of a folder (not recursive), in name order. */
export async function listWarcFiles(dir: string): Promise<string[]> {
  try {
    return (await fsp.readdir(dir))
      .filter((n) => n.endsWith('.warc.gz') || n.endsWith('.warc'))
      .sort()
      .map((n) => path.join(dir, n));
  } catch (err) {
    throw new StorageError('READ_FAILED', dir, 'cannot list WARC folder', { cause: err });
  }
}

export interface WriteCdxjOptions {
  /** Where the sorted runs of a large index are spilled; default the OS temp folder. */
  tmpDir?: string;
  /** Bytes of lines kept in memory before a run is spilled. */
  runBytes?: number;
  /**
   * An index whose lines go into the new one too, except those whose
   * `filename` `replaces` says the new files index again: a folder's index
   * keeps the other campaigns' lines. A missing file keeps nothing; a line
   * that is not CDXJ is kept as it is (nothing is lost for want of parsing).
   */
  keep?: { file: string; replaces: (filename: string) => boolean };
}

export interface CdxjResult {
  file: string;
  /** Lines written: the new files' records plus the lines kept. */
  lines: number;
  warcFiles: number;
  /** Lines taken over from `keep.file` (0 without one). */
  keptLines: number;
}

const byteOrder = (a: Buffer, b: Buffer) => Buffer.compare(a, b);

/**
 * Indexes WARC files into one sorted CDXJ file, written to `<out>.tmp` and
 * renamed into place, so a reader never sees half an index. Identical lines
 * (the same record indexed twice) are written once.
 */
export async function writeCdxj(warcFiles: string[], out: string, opts: WriteCdxjOptions = {}): Promise<CdxjResult> {
  const runBytes = opts.runBytes ?? DEFAULT_RUN_BYTES;
  const runs: string[] = [];
  let spillDir: string | null = null;
  let buf: Buffer[] = [];
  let held = 0;
  const spill = async () => {
    spillDir ??= await fsp.mkdtemp(path.join(opts.tmpDir ?? os.tmpdir(), 'cdxj-'));
    buf.sort(byteOrder);
    const run = path.join(spillDir, `run-${runs.length}.cdxj`);
    await writeLines(run, buf);
    runs.push(run);
    buf = [];
    held = 0;
  };
  const add = async (b: Buffer) => {
    buf.push(b);
    held += b.length;
    if (held >= runBytes) await spill();
  };
  let keptLines = 0;
  let tmp: string | null = null;
  try {
    for (const file of warcFiles) {
      for await (const line of indexWarcFile(file)) await add(Buffer.from(formatCdxjLine(line), 'utf8'));
    }
    // Kept lines are sorted again with the new ones, so an index edited by hand still comes out in order.
    for await (const raw of keptLinesOf(opts.keep)) {
      keptLines++;
      await add(Buffer.from(`${raw}\n`, 'utf8'));
    }
    await fsp.mkdir(path.dirname(path.resolve(out)), { recursive: true });
    // Unique: a retried seal may still be writing the previous attempt's file.
    tmp = `${out}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    let lines: number;
    if (runs.length === 0) {
      buf.sort(byteOrder);
      lines = await writeLines(tmp, buf);
    } else {
      if (buf.length) await spill();
      lines = await mergeRuns(runs, tmp);
    }
    await fsp.rename(tmp, out);
    tmp = null;
    return { file: out, lines, warcFiles: warcFiles.length, keptLines };
  } catch (err) {
    // A half-written index (disk full, file size limit) is never renamed into
    // place; removed here, it does not fill the folder attempt after attempt.
    if (tmp) await fsp.rm(tmp, { force: true }).catch(() => undefined);
    if (err instanceof StorageError) throw err;
    throw new StorageError('WRITE_FAILED', out, 'cannot write CDXJ index', { cause: err });
  } finally {
    if (spillDir) await fsp.rm(spillDir, { recursive: true, force: true });
  }
}

/** The lines of `keep.file` that `keep.replaces` does not claim (none when the file does not exist). */
async function* keptLinesOf(keep: WriteCdxjOptions['keep']): AsyncGenerator<string> {
  if (!keep) return;
  const input = createReadStream(keep.file);
  try {
    try {
      await new Promise<void>((resolve, reject) => input.once('open', () => resolve()).once('error', reject));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for await (const raw of readline.createInterface({ input, crlfDelay: Infinity })) {
      if (!raw) continue;
      let filename: string | null = null;
      try {
        filename = parseCdxjLine(raw).fields.filename ?? null;
      } catch {
        // Not CDXJ: kept, since nothing says whose it is.
      }
      if (filename !== null && keep.replaces(filename)) continue;
      yield raw;
    }
  } catch (err) {
    throw new StorageError('READ_FAILED', keep.file, 'cannot read the index to keep', { cause: err });
  } finally {
    // Also when the consumer stops early (a spill failed): no descriptor left open.
    input.destroy();
  }
}

/** Indexes every WARC file of `warcDir` into `out`. */
export async function writeCdxjForDir(warcDir: string, out: string, opts: WriteCdxjOptions = {}): Promise<CdxjResult> {
  return writeCdxj(await listWarcFiles(warcDir), out, opts);
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

/**
 * The output folder's CDXJ index (beside `warc/` and `index/`). It covers
 * every campaign indexed into the folder: campaigns may share one (a
 * campaign started without --out writes into crawl-output itself).
 */
export const CDXJ_FILE = 'index.cdxj';

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The WARC files one campaign wrote into `<outputDir>/warc`: workers name
 * them `<campaign>-<17-digit UTC time>-…` (an output folder may be shared by
 * several campaigns, and `a` must not take `a-b`'s files).
 */
export async function campaignWarcFiles(outputDir: string, campaignId: string): Promise<string[]> {
  const own = ownsWarc(campaignId);
  return (await listWarcFiles(path.join(outputDir, 'warc'))).filter((f) => own(f));
}

/** Whether a WARC file (a path or a CDXJ line's `filename`) is one the campaign's workers wrote. */
function ownsWarc(campaignId: string): (file: string) => boolean {
  const own = new RegExp(`^${escapeRe(warcPrefixOf(campaignId))}-\\d{17}-`);
  return (file) => own.test(path.basename(file));
}

/**
 * Indexes a campaign's WARC files into its output folder's `index.cdxj`
 * (what sealing calls): the campaign's lines are written anew and every
 * other campaign's lines in the folder's index are kept, under a lock, so
 * campaigns sharing a folder never drop each other's captures. With `out`
 * elsewhere, that file gets the campaign's lines alone.
 */
export async function writeCampaignCdxj(
  outputDir: string,
  campaignId: string,
  out = path.join(outputDir, CDXJ_FILE),
  opts: WriteCdxjOptions & { lockWaitMs?: number } = {},
): Promise<CdxjResult> {
  const files = await campaignWarcFiles(outputDir, campaignId);
  const { lockWaitMs, ...rest } = opts;
  const o = { tmpDir: opts.tmpDir ?? outputDir, ...rest };
  if (path.resolve(out) !== path.resolve(outputDir, CDXJ_FILE)) return writeCdxj(files, out, o);
  return withIndexLock(out, () => writeCdxj(files, out, { ...o, keep: { file: out, replaces: ownsWarc(campaignId) } }), { waitMs: lockWaitMs });
}

/** Whether the index has lines of every one of these WARC files (a file with no response or revisit record makes it false: indexing again is then only redundant). */
export async function indexCovers(cdxj: string, warcFiles: string[]): Promise<boolean> {
  const missing = new Set(warcFiles.map((f) => path.basename(f)));
  let input;
  try {
    input = createReadStream(cdxj);
    for await (const raw of readline.createInterface({ input, crlfDelay: Infinity })) {
      const m = /"filename":\s*"([^"]+)"/.exec(raw);
      if (m) missing.delete(m[1]!);
      if (missing.size === 0) return true;
    }
  } catch {
    return false;
  } finally {
    input?.destroy();
  }
  return missing.size === 0;
}

/** A lock no one has touched for this long is a dead holder's (a killed worker): it is taken over. */
export const INDEX_LOCK_STALE_MS = 60_000;
const INDEX_LOCK_TOUCH_MS = 10_000;
/** Waiting longer than this for a lock that is kept alive fails with LOCKED instead of hanging. */
const INDEX_LOCK_WAIT_MS = 30 * 60_000;

/**
 * Runs `fn` holding `<out>.lock`, so two writers of one folder's index do
 * not each rename an index that lacks the other's lines. Ours rather than a
 * library's: a file beside the index is all it takes, on any filesystem the
 * WARCs live on. The lock holds a token of its own, so a holder only ever
 * removes its own lock; its mtime is renewed while held. A waiter takes a
 * lock over only after seeing it unchanged for INDEX_LOCK_STALE_MS by its
 * own clock (machines sharing the folder may disagree on the time), and
 * moves it aside before checking that it moved the very lock it judged dead
 * (two waiters judging the same dead lock: the second puts the first's new
 * lock back).
 */
export async function withIndexLock<T>(out: string, fn: () => Promise<T>, opts: { waitMs?: number; staleMs?: number } = {}): Promise<T> {
  const { waitMs = INDEX_LOCK_WAIT_MS, staleMs = INDEX_LOCK_STALE_MS } = opts;
  const lock = `${out}.lock`;
  const token = `${process.pid}@${os.hostname()} ${randomBytes(6).toString('hex')}\n`;
  const deadline = Date.now() + waitMs;
  await fsp.mkdir(path.dirname(lock), { recursive: true });
  let seen = null as { what: string; since: number } | null;
  for (;;) {
    try {
      await fsp.writeFile(lock, token, { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new StorageError('WRITE_FAILED', lock, 'cannot take the index lock', { cause: err });
    }
    const held = await lockState(lock);
    if (held !== null) {
      if (seen?.what !== held) seen = { what: held, since: Date.now() };
      else if (Date.now() - seen.since > staleMs) {
        await takeOverDeadLock(lock, held.slice(held.indexOf(' ') + 1));
        seen = null;
        continue;
      }
    }
    if (Date.now() > deadline) throw new StorageError('LOCKED', lock, `the index is locked by another writer for more than ${Math.round(waitMs / 1000)} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const touch = setInterval(() => {
    const now = new Date();
    fsp.utimes(lock, now, now).catch(() => undefined);
  }, INDEX_LOCK_TOUCH_MS);
  try {
    return await fn();
  } finally {
    clearInterval(touch);
    if ((await fsp.readFile(lock, 'utf8').catch(() => null)) === token) await fsp.rm(lock, { force: true });
  }
}

/** What identifies a lock as it stands: its mtime, then its token; null when there is none. */
async function lockState(lock: string): Promise<string | null> {
  const [st, token] = await Promise.all([fsp.stat(lock).catch(() => null), fsp.readFile(lock, 'utf8').catch(() => null)]);
  return st && token !== null ? `${st.mtimeMs} ${token}` : null;
}

async function takeOverDeadLock(lock: string, deadToken: string): Promise<void> {
  const aside = `${lock}.${randomBytes(6).toString('hex')}.dead`;
  try {
    await fsp.rename(lock, aside);
  } catch {
    return; // gone already: someone else took it over
  }
  if ((await fsp.readFile(aside, 'utf8').catch(() => null)) !== deadToken) {
    // Moved a live lock (another waiter's, taken a moment ago): put it back unless someone holds the name by now.
    await fsp.link(aside, lock).catch(() => undefined);
  }
  await fsp.rm(aside, { force: true });
}
