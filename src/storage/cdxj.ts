import { createReadStream, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { CDXAndRecordIndexer, type IndexerOffsetLength, type WARCRecord } from 'warcio';
import { surt } from './surt';
import { StorageError } from './storage-error';
import { warcPrefixOf } from './warc-writer';
import { createHash, randomBytes } from 'node:crypto';
import { LineSorter } from './line-sort';

// CDXJ: the replay index pywb, the Internet Archive's tools and WACZ read.
// One line per response, revisit or resource record:
//   <SURT key> <14-digit timestamp> {"url","mime","status","digest","length","offset","filename"}
// sorted in byte order (what `LC_ALL=C sort` gives and what replay tools
// binary-search). Fields and their spelling are those of pywb's own indexer
// (PyPI cdxj-indexer): strings throughout, the digest with its `sha1:`
// prefix, mime `warc/revisit` for revisit records. A resource record (a
// rendered page's screenshots and text, `urn:view:<url>`, `urn:text:<url>`…)
// has its block's media type and no status, as pywb's indexer gives it: that
// line is how ReplayWeb.page finds a page's thumbnail (`urn:thumbnail:<page
// URL>` at the page's time) and pywb serves it.
//
// Record parsing, request/response pairing and field extraction are
// warcio.js's CDXIndexer (already our WARC library; the code Webrecorder's
// browsertrix-crawler indexes with). The rest is ours: the SURT key (pywb
// looks pages up by the key the IA's `surt` computes, which warcio.js's
// getSurt does not always match: ./surt.ts), only response, revisit and
// resource records (it also indexes metadata records), the sort and
// the spill to disk (./line-sort.ts).

/** One CDXJ line's JSON part; every value a string, as pywb writes them. */
export interface CdxjFields {
  url: string;
  mime: string;
  status?: string;
  digest?: string;
  length: string;
  offset: string;
  filename: string;
  /** A response to another method than GET (a rendered page's POST): the method, and its body as the key's query (pywb's fields). */
  method?: string;
  requestBody?: string;
}

export interface CdxjLine {
  urlkey: string;
  timestamp: string;
  fields: CdxjFields;
  /**
   * A revisit record's WARC-Refers-To-Target-URI and WARC-Refers-To-Date
   * (null when absent): where its payload is. Not written into the index
   * (pywb's indexer leaves them out too); what the check that a package
   * holds every original reads (./revisit-originals.ts).
   */
  revisitOf?: { uri: string | null; date: string | null };
}

const INDEXED_TYPES = new Set(['response', 'revisit', 'resource']);

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
      const { cdx, record } = res as unknown as {
        cdx: Record<string, unknown>;
        record: { warcType?: string; warcPayloadDigest?: string | null; warcRefersToTargetURI?: string | null; warcRefersToDate?: string | null };
      };
      if (!INDEXED_TYPES.has(record.warcType ?? '')) continue;
      const status = str(cdx.status);
      // warcio.js drops the algorithm; pywb's indexer keeps the header's value whole.
      const digest = str(record.warcPayloadDigest);
      const fields: CdxjFields = {
        url: String(cdx.url),
        // Without parameters, as pywb's indexer writes it (warcio.js leaves a resource record's whole).
        mime: str(cdx.mime)?.split(';')[0]!.trim() || 'unk',
        ...(status ? { status } : {}),
        ...(digest ? { digest } : {}),
        length: String(cdx.length),
        offset: String(cdx.offset),
        filename,
      };
      // A POST's response (its request record beside it) is keyed by the URL with `__wb_method=post&<body as a query>`,
      // the key pywb computes for the POST a replayed page sends (warcio.js's postToGetUrl is pywb's rule); GETs by their URL.
      const method = str(cdx.method);
      const keyUrl = method && method !== 'GET' && typeof cdx.urlkey === 'string' ? cdx.urlkey : fields.url;
      if (method && method !== 'GET') {
        fields.method = method;
        const body = str(cdx.requestBody);
        if (body) fields.requestBody = body;
      }
      const revisitOf = record.warcType === 'revisit' ? { uri: record.warcRefersToTargetURI ?? null, date: record.warcRefersToDate ?? null } : undefined;
      yield { urlkey: surt(keyUrl), timestamp: String(cdx.timestamp), fields, ...(revisitOf ? { revisitOf } : {}) };
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
  /** Called with each line of the WARC files as it is indexed (not the kept ones), before it is sorted. */
  onLine?: (line: CdxjLine) => void | Promise<void>;
}

export interface CdxjResult {
  file: string;
  /** Lines written: the new files' records plus the lines kept. */
  lines: number;
  warcFiles: number;
  /** Lines taken over from `keep.file` (0 without one). */
  keptLines: number;
}

/**
 * Indexes WARC files into one sorted CDXJ file, written to `<out>.tmp` and
 * renamed into place, so a reader never sees half an index. Identical lines
 * (the same record indexed twice) are written once.
 */
export async function writeCdxj(warcFiles: string[], out: string, opts: WriteCdxjOptions = {}): Promise<CdxjResult> {
  const sorter = new LineSorter(opts.tmpDir, opts.runBytes);
  let keptLines = 0;
  let tmp: string | null = null;
  try {
    for (const file of warcFiles) {
      for await (const line of indexWarcFile(file)) {
        await opts.onLine?.(line);
        await sorter.add(Buffer.from(formatCdxjLine(line), 'utf8'));
      }
    }
    // Kept lines are sorted again with the new ones, so an index edited by hand still comes out in order.
    for await (const raw of keptLinesOf(opts.keep)) {
      keptLines++;
      await sorter.add(Buffer.from(`${raw}\n`, 'utf8'));
    }
    await fsp.mkdir(path.dirname(path.resolve(out)), { recursive: true });
    // Unique: a retried seal may still be writing the previous attempt's file.
    tmp = `${out}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const lines = await sorter.writeTo(tmp);
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
    await sorter.dispose();
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

/** Whether a WARC file (a path, a CDXJ line's `filename`, an object's name) is one the campaign's workers wrote. */
export function ownsWarc(campaignId: string): (file: string) => boolean {
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
 * only through a claim on that very lock (see takeOverDeadLock).
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
        await takeOverDeadLock(lock, held, held.slice(held.indexOf(' ') + 1));
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

/**
 * Removes a lock judged dead, at most once per dead lock. Waiters that judged
 * the same lock dead race for one claim: a hard link named after what they saw
 * (mtime and token), which only one of them can create. The claim's winner
 * checks that the file it linked is the dead holder's (not a lock taken a
 * moment ago) and only then removes the lock. Moving the lock aside instead
 * let a second waiter move the first's new lock and a third take the name
 * before it was put back: two holders at once.
 */
async function takeOverDeadLock(lock: string, held: string, deadToken: string): Promise<void> {
  const claim = `${lock}.${createHash('sha1').update(held).digest('hex').slice(0, 16)}.dead`;
  try {
    await fsp.link(lock, claim);
  } catch {
    return; // the lock is gone, or another waiter claims this dead lock: look again
  }
  try {
    if ((await fsp.readFile(claim, 'utf8').catch(() => null)) === deadToken) await fsp.rm(lock, { force: true });
  } finally {
    await fsp.rm(claim, { force: true });
  }
}
