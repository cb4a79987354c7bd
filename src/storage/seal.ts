// Sealing: the campaign's final index, exactly one line per URL taken from
// a frontier, the committed one. The raw index files (one per worker
// process, appended while the crawl runs) can hold a URL twice: an attempt
// that stored its line and died before its commit, or an old attempt that
// lost to a newer one, leaves a line behind. Each line carries its
// attempt's id, and the commit that counted stored that id in Redis under
// the URL's fingerprint (crawlCommit in src/redis/scripts.ts): sealing
// keeps the line whose id the commit stored, and drops the others.
//
// It scales without holding the campaign in memory: pass 1 streams every
// raw file once and spreads the campaign's lines over bucket files by
// fingerprint range (about `bucketBytes` each; fingerprints are hashes, so
// buckets come out even); pass 2 takes one bucket at a time, asks Redis
// which attempt committed each of its URLs (HMGET per host, batched) and
// writes the winners in fingerprint order. Memory: one bucket; time and
// disk: linear in the raw index (it is read twice and written twice).
// The output is sorted by fingerprint whatever the bucket count, so a
// campaign sealed twice gives the same file.
import { randomBytes } from 'node:crypto';
import { createReadStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { ensureWritableDir, writeFully } from './files';
import { StorageError } from './storage-error';

/** Bucket size aimed at in pass 2 (one bucket's lines are in memory at a time). */
export const DEFAULT_BUCKET_BYTES = 16 * 1024 * 1024;
/** Fingerprint cells: the first two characters of a fingerprint (base64url), in byte order. */
const B64URL_SORTED = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';
const CELLS = 64 * 64;
/** Fingerprints per Redis lookup, and lookups in flight. */
const LOOKUP_BATCH = 500;
const LOOKUP_CONCURRENCY = 16;
/** Pass 1 writes a bucket's buffered lines once they reach this much (bounded in total below). */
const FLUSH_BYTES = 1024 * 1024;
const FLUSH_TOTAL_BYTES = 32 * 1024 * 1024;

export interface SealOptions {
  /** The campaign's output folder (raw index in `index/`, the sealed one goes to `sealed/`). */
  outputDir: string;
  campaignId: string;
  /** For one host, the id of the attempt whose commit counted, per fingerprint (null: not committed). */
  committed: (host: string, fps: string[]) => Promise<(string | null)[]>;
  /** URLs the campaign's counters say were committed, to tell how many have no line; null when unknown. */
  expectedLines?: number | null;
  /** Written into the manifest as is (campaign status, key…). */
  info?: Record<string, unknown>;
  bucketBytes?: number;
  /** Called between files and buckets (a heartbeat). */
  onProgress?: () => void;
  /**
   * An output in a bucket: whether the WARC record a line points at is there (its file uploaded,
   * and long enough). A committed line whose record is not (its WARC file was lost with a worker's
   * disk) is left out like a line never written, so its URL counts among the `missing` and can be
   * fetched again. Absent: every line's record is taken to be there (a folder).
   */
  recordThere?: (warc: { file: string; offset: number; length: number }) => boolean;
  /** Told, per host, the fingerprints whose committed line the sealed index kept (a bucket's commits then need no undo). */
  onSealed?: (host: string, fps: string[]) => Promise<void>;
}

export interface SealResult {
  campaignId: string;
  /** Absolute path of the sealed index. */
  file: string;
  /** Lines in the sealed index: URLs committed with their line. */
  lines: number;
  /** Lines of this campaign in the raw files. */
  rawLines: number;
  /** Raw lines left out: attempts whose commit did not count (a worker died before it, a newer attempt won) or never came (a cancelled campaign's pages in flight), and lines without an attempt id (older releases). */
  dropped: number;
  /** Raw lines that are not JSON (a killed writer's cut-off last line). */
  unreadable: number;
  /** URLs the counters say were committed that have no line (a line that could not be written); null when the counters were not given. */
  missing: number | null;
  /** Committed lines whose response was stored as a revisit record, and their payload bytes (not stored again). */
  revisits: { records: number; bytesSaved: number };
  /**
   * Committed HTML pages (2xx page entries) and those of them rendered in a
   * browser, by why (`render.reason` of the index line; `browser` under
   * render: browser, which renders them all): what `render: auto` cost.
   */
  rendered: RenderedCount;
  buckets: number;
  sealedAt: string;
  durationMs: number;
}

/** Where a campaign's sealed index and its manifest are. */
export function sealedPaths(outputDir: string, campaignId: string): { dir: string; index: string; manifest: string } {
  const dir = path.join(path.resolve(outputDir), 'sealed');
  return { dir, index: path.join(dir, `${campaignId}.index.jsonl`), manifest: path.join(dir, `${campaignId}.seal.json`) };
}

/** The manifest of the last seal, or null when the campaign was never sealed. */
export async function readSealManifest(outputDir: string, campaignId: string): Promise<(SealResult & { info?: Record<string, unknown> }) | null> {
  try {
    return JSON.parse(await fsp.readFile(sealedPaths(outputDir, campaignId).manifest, 'utf8')) as SealResult & { info?: Record<string, unknown> };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new StorageError('READ_FAILED', sealedPaths(outputDir, campaignId).manifest, 'cannot read seal manifest', { cause: err });
  }
}

/** The bucket of a fingerprint: its first two characters' cell, ranges in byte order. */
export function bucketOf(fp: string, buckets: number): number {
  const a = B64URL_SORTED.indexOf(fp[0] ?? '-');
  const b = B64URL_SORTED.indexOf(fp[1] ?? '-');
  const cell = Math.max(0, a) * 64 + Math.max(0, b);
  return Math.floor((cell * buckets) / CELLS);
}

export interface RenderedCount {
  pages: number;
  htmlPages: number;
  reasons: Record<string, number>;
}

interface Candidate {
  host: string;
  attemptId: string;
  revisitBytes: number;
  /** renderTag of the line. */
  render: string;
  line: string;
}

/**
 * What a line counts for in `rendered`: '' not an HTML page (an embed, a
 * redirect, an error, a sitemap), `-` an HTML page not rendered, otherwise
 * why it was rendered.
 */
export function renderTag(e: { kind?: unknown; status?: unknown; contentType?: unknown; render?: unknown }): string {
  const r = e.render && typeof e.render === 'object' ? (e.render as { reason?: unknown }) : null;
  if (r) return typeof r.reason === 'string' && /^[a-z-]{1,40}$/.test(r.reason) ? r.reason : 'browser';
  const page = e.kind === undefined || e.kind === 'page';
  const ok = typeof e.status === 'number' && e.status >= 200 && e.status < 300;
  return page && ok && typeof e.contentType === 'string' && /^\s*(text\/html|application\/xhtml\+xml)/i.test(e.contentType) ? '-' : '';
}

/**
 * Writes `<out>/sealed/<campaign>.index.jsonl` (replacing an earlier seal
 * atomically) and its manifest `<campaign>.seal.json`. Safe to run again
 * and while another seal of the same campaign runs (each works in its own
 * temporary folder; the last rename wins, and both write the same file).
 */
export async function sealCampaignIndex(opts: SealOptions): Promise<SealResult> {
  const started = Date.now();
  const rawDir = path.join(path.resolve(opts.outputDir), 'index');
  const out = sealedPaths(opts.outputDir, opts.campaignId);
  await ensureWritableDir(out.dir);
  const work = path.join(out.dir, `.${opts.campaignId}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  await fsp.mkdir(work);
  const progress = opts.onProgress ?? (() => undefined);
  try {
    const names = await rawIndexFiles(rawDir);
    let rawBytes = 0;
    for (const n of names) rawBytes += (await fsp.stat(path.join(rawDir, n))).size;
    const buckets = Math.min(CELLS, Math.max(1, Math.ceil(rawBytes / (opts.bucketBytes ?? DEFAULT_BUCKET_BYTES))));

    // Pass 1: the campaign's lines, spread over bucket files by fingerprint.
    const files = await Promise.all(Array.from({ length: buckets }, (_, i) => fsp.open(path.join(work, `b${i}`), 'w')));
    const pending: string[][] = files.map(() => []);
    const pendingBytes = new Array<number>(buckets).fill(0);
    let buffered = 0;
    const flush = async (i: number) => {
      if (pending[i].length === 0) return;
      const buf = Buffer.from(pending[i].join(''), 'utf8');
      buffered -= pendingBytes[i];
      pending[i] = [];
      pendingBytes[i] = 0;
      await writeFully(files[i], buf, null);
    };
    const perBucketFlush = Math.max(16 * 1024, Math.min(FLUSH_BYTES, Math.floor(FLUSH_TOTAL_BYTES / buckets)));
    let rawLines = 0;
    let dropped = 0;
    let unreadable = 0;
    try {
      for (const name of names) {
        for await (const line of readLines(path.join(rawDir, name))) {
          if (line.trim() === '') continue;
          const e = parseLine(line);
          if (!e) {
            unreadable++;
            continue;
          }
          if (e.campaignId !== opts.campaignId) continue;
          rawLines++;
          if (!e.attemptId || !e.fp || !e.host) {
            dropped++;
            continue;
          }
          const revisitBytes = e.revisit ? Number(e.bytes) || 0 : 0;
          const row = `${e.fp}\t${e.host}\t${e.attemptId}\t${revisitBytes}\t${renderTag(e)}\t${line}\n`;
          const i = bucketOf(e.fp, buckets);
          pending[i].push(row);
          pendingBytes[i] += row.length;
          buffered += row.length;
          if (pendingBytes[i] >= perBucketFlush || buffered >= FLUSH_TOTAL_BYTES) await flush(i);
        }
        progress();
      }
      for (let i = 0; i < buckets; i++) await flush(i);
    } finally {
      await Promise.all(files.map((f) => f.close().catch(() => undefined)));
    }

    // Pass 2: one bucket at a time, the committed line of each URL, in fingerprint order.
    const tmpIndex = path.join(work, 'index.jsonl');
    const fh = await fsp.open(tmpIndex, 'w');
    let lines = 0;
    const revisits = { records: 0, bytesSaved: 0 };
    const rendered: RenderedCount = { pages: 0, htmlPages: 0, reasons: {} };
    try {
      for (let i = 0; i < buckets; i++) {
        const winners = await sealBucket(path.join(work, `b${i}`), opts.committed, opts.recordThere, opts.onSealed);
        dropped += winners.dropped;
        const chunk: string[] = [];
        for (const w of winners.lines) {
          chunk.push(w.line.endsWith('\n') ? w.line : `${w.line}\n`);
          lines++;
          if (w.revisitBytes > 0) {
            revisits.records++;
            revisits.bytesSaved += w.revisitBytes;
          }
          if (w.render !== '') rendered.htmlPages++;
          if (w.render !== '' && w.render !== '-') {
            rendered.pages++;
            rendered.reasons[w.render] = (rendered.reasons[w.render] ?? 0) + 1;
          }
        }
        if (chunk.length) await writeFully(fh, Buffer.from(chunk.join(''), 'utf8'), null);
        await fsp.rm(path.join(work, `b${i}`), { force: true });
        progress();
      }
      await fh.sync();
    } catch (err) {
      if (err instanceof StorageError) throw err;
      throw new StorageError('WRITE_FAILED', tmpIndex, 'cannot write the sealed index', { cause: err });
    } finally {
      await fh.close();
    }
    await fsp.rename(tmpIndex, out.index);

    const expected = opts.expectedLines ?? null;
    const result: SealResult = {
      campaignId: opts.campaignId,
      file: out.index,
      lines,
      rawLines,
      dropped,
      unreadable,
      missing: expected === null ? null : Math.max(0, expected - lines),
      revisits,
      rendered,
      buckets,
      sealedAt: new Date().toISOString(),
      durationMs: Date.now() - started,
    };
    const tmpManifest = path.join(work, 'seal.json');
    await fsp.writeFile(tmpManifest, `${JSON.stringify({ ...result, ...(opts.info ? { info: opts.info } : {}) }, null, 2)}\n`);
    await fsp.rename(tmpManifest, out.manifest);
    return result;
  } finally {
    await fsp.rm(work, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function sealBucket(
  file: string,
  committed: SealOptions['committed'],
  recordThere?: SealOptions['recordThere'],
  onSealed?: SealOptions['onSealed'],
): Promise<{ lines: { fp: string; line: string; revisitBytes: number; render: string }[]; dropped: number }> {
  const byFp = new Map<string, Candidate[]>();
  for await (const row of readLines(file)) {
    if (row === '') continue;
    const t1 = row.indexOf('\t');
    const t2 = row.indexOf('\t', t1 + 1);
    const t3 = row.indexOf('\t', t2 + 1);
    const t4 = row.indexOf('\t', t3 + 1);
    const t5 = row.indexOf('\t', t4 + 1);
    const fp = row.slice(0, t1);
    const c: Candidate = {
      host: row.slice(t1 + 1, t2),
      attemptId: row.slice(t2 + 1, t3),
      revisitBytes: Number(row.slice(t3 + 1, t4)),
      render: row.slice(t4 + 1, t5),
      line: row.slice(t5 + 1),
    };
    const list = byFp.get(fp);
    if (list) list.push(c);
    else byFp.set(fp, [c]);
  }
  // Which attempt committed each URL: per host (its own Redis key), in batches.
  const byHost = new Map<string, string[]>();
  for (const [fp, cs] of byFp) {
    for (const host of new Set(cs.map((c) => c.host))) {
      const fps = byHost.get(host);
      if (fps) fps.push(fp);
      else byHost.set(host, [fp]);
    }
  }
  const jobs: { host: string; fps: string[] }[] = [];
  for (const [host, fps] of byHost) for (let i = 0; i < fps.length; i += LOOKUP_BATCH) jobs.push({ host, fps: fps.slice(i, i + LOOKUP_BATCH) });
  const winner = new Map<string, string>();
  for (let i = 0; i < jobs.length; i += LOOKUP_CONCURRENCY) {
    await Promise.all(
      jobs.slice(i, i + LOOKUP_CONCURRENCY).map(async ({ host, fps }) => {
        const ids = await committed(host, fps);
        fps.forEach((fp, j) => {
          const id = ids[j];
          if (id) winner.set(`${host}\t${fp}`, id);
        });
      }),
    );
  }
  const lines: { fp: string; line: string; revisitBytes: number; render: string }[] = [];
  const kept = new Map<string, string[]>();
  let dropped = 0;
  for (const [fp, cs] of byFp) {
    // The last line written by the committed attempt (one, unless a file was copied twice).
    let pick: Candidate | null = null;
    for (const c of cs) if (winner.get(`${c.host}\t${fp}`) === c.attemptId) pick = c;
    if (pick && recordThere && !recordOf(pick.line, recordThere)) pick = null;
    if (pick) {
      lines.push({ fp, line: pick.line, revisitBytes: pick.revisitBytes, render: pick.render });
      if (onSealed) {
        const fps = kept.get(pick.host) ?? [];
        fps.push(fp);
        kept.set(pick.host, fps);
      }
    }
    dropped += cs.length - (pick ? 1 : 0);
  }
  for (const [host, fps] of kept) for (let i = 0; i < fps.length; i += LOOKUP_BATCH) await onSealed!(host, fps.slice(i, i + LOOKUP_BATCH));
  lines.sort((a, b) => (a.fp < b.fp ? -1 : a.fp > b.fp ? 1 : 0));
  return { lines, dropped };
}

/** Whether a line's WARC record is there; a line without one (a failure, a redirect's own line) has nothing to miss. */
function recordOf(line: string, recordThere: NonNullable<SealOptions['recordThere']>): boolean {
  let warc: unknown;
  try {
    warc = (JSON.parse(line) as { warc?: unknown }).warc;
  } catch {
    return true;
  }
  if (!warc || typeof warc !== 'object') return true;
  const w = warc as { file?: unknown; offset?: unknown; length?: unknown };
  if (typeof w.file !== 'string' || typeof w.offset !== 'number' || typeof w.length !== 'number') return true;
  return recordThere({ file: w.file, offset: w.offset, length: w.length });
}

async function rawIndexFiles(dir: string): Promise<string[]> {
  try {
    return (await fsp.readdir(dir)).filter((n) => n.endsWith('.jsonl')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new StorageError('READ_FAILED', dir, 'cannot list index directory', { cause: err });
  }
}

async function* readLines(file: string): AsyncGenerator<string> {
  const stream = createReadStream(file, { encoding: 'utf8', highWaterMark: 1024 * 1024 });
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  try {
    for await (const line of rl) yield line;
  } catch (err) {
    throw new StorageError('READ_FAILED', file, 'cannot read index file', { cause: err });
  } finally {
    rl.close();
    stream.destroy();
  }
}

function parseLine(line: string): {
  campaignId?: unknown;
  fp?: string;
  host?: string;
  attemptId?: string;
  revisit?: unknown;
  bytes?: unknown;
  kind?: unknown;
  status?: unknown;
  contentType?: unknown;
  render?: unknown;
} | null {
  try {
    const v: unknown = JSON.parse(line);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as ReturnType<typeof parseLine>) : null;
  } catch {
    return null;
  }
}
