// Seed lists too large for a command line or a workflow input: a file
// (plain text or gzip) or an http(s) URL, one URL per line, read as a
// stream in batches, each with a position to resume from.
//
// Why positions and not "skip N seeds": an activity that seeds frontiers from
// a list of millions heartbeats the position of the last batch it enqueued;
// after a retry (or in the next activity, after a continue-as-new) it starts
// from there. For a plain local file the position is a byte offset, so the
// read starts with a seek, not from the top. A gzip stream cannot be entered
// in the middle: it is decompressed again from the start and the bytes before
// the position are counted and dropped, not split into lines (cheap next to a
// fetch per seed). A URL source is downloaded again and skipped alike: Range
// requests would save the download, but whether the server honours them, and
// whether the body is compressed, is only known after the first bytes.
//
// Memory: at most one batch of seeds, the line being assembled (at most
// maxLineBytes) and the stream buffers (tens of KiB) are held; the file is
// never read whole. Reading is pulled by the consumer, so a slow consumer
// pauses the file or the download.
//
// A URL source is a list the user named, not crawl traffic: it is fetched
// without the campaign's address policy or --resolve pins, with timeouts of
// its own that end in a SEEDS_TIMEOUT error naming them.
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { pipeline as pipelineAsync } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { Agent, interceptors, request } from 'undici';
import { DEFAULT_USER_AGENT } from '../config/campaign';
import { CrawlerError } from '../errors';

export type SeedSourceErrorCode =
  /** The source string is neither a path nor an http(s) URL, or is `-` where no CLI copied standard input. */
  | 'SEEDS_BAD_SOURCE'
  /** A position that is not one this module handed out (negative, fractional, missing fields). */
  | 'SEEDS_BAD_POSITION'
  /** No such file; HTTP 404 or 410. */
  | 'SEEDS_NOT_FOUND'
  /** Permission denied, a directory, a corrupt gzip stream, another HTTP status, a network failure. */
  | 'SEEDS_UNREADABLE'
  /** A NUL byte or invalid UTF-8: not a text list (a zip, a bzip2 file, a Latin-1 file…). */
  | 'SEEDS_NOT_TEXT'
  /** One line longer than maxLineBytes: not a list of URLs, or lines not ended by LF. */
  | 'SEEDS_TOO_LONG_LINE'
  /** A URL source did not connect, answer or send its body in time. */
  | 'SEEDS_TIMEOUT'
  /** Resuming found the source shorter, or a position not at a line start: it changed since the position was taken. */
  | 'SEEDS_CHANGED';

export class SeedSourceError extends CrawlerError<SeedSourceErrorCode> {
  /** 1-based line number, for errors about one line. */
  readonly line: number | null;
  /**
   * Whether trying again may help (a network failure, a timeout, an HTTP 5xx
   * or 429); false for what stays wrong until someone changes the source.
   */
  readonly retryable: boolean;

  constructor(
    code: SeedSourceErrorCode,
    readonly source: string,
    message: string,
    opts: { line?: number; retryable?: boolean; cause?: unknown } = {},
  ) {
    super(code, message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'SeedSourceError';
    this.line = opts.line ?? null;
    this.retryable = opts.retryable ?? false;
  }
}

/**
 * Where reading stopped: plain JSON, so it fits in a heartbeat, an activity
 * result or a workflow's continue-as-new input.
 */
export interface SeedPosition {
  /** Physical lines consumed, blank lines and comments included; the next line read is number line + 1. */
  line: number;
  /** Bytes of the (decompressed) text consumed: where line `line + 1` starts. */
  byte: number;
  /** Seeds handed out before this position (progress counts). */
  seeds: number;
}

export const SEEDS_START: Readonly<SeedPosition> = Object.freeze({ line: 0, byte: 0, seeds: 0 });

export interface SeedBatch {
  /** Up to batchSize seeds, trimmed, in file order; not checked as URLs (the caller normalises and rejects). */
  seeds: string[];
  /** 1-based line number of each seed, for messages about a bad one. */
  lines: number[];
  /** The position this batch was read from. */
  start: SeedPosition;
  /**
   * Where the following batch starts: after this batch's last seed and any
   * blank or comment lines behind it. Resuming from it yields exactly the
   * batches that would have followed.
   */
  next: SeedPosition;
  /**
   * The source ends with this batch. Every read ends with exactly one batch
   * marked done; it is empty only when there is nothing after `start` (an
   * empty list, or a resume from the end).
   */
  done: boolean;
}

export interface SeedReadOptions {
  /** Seeds per batch, 1 to MAX_SEED_BATCH_SIZE. */
  batchSize: number;
  /** Resume here (a batch's `next`); default the start. */
  from?: SeedPosition;
  /** Longest line accepted, in bytes (a trailing CR included). Default DEFAULT_MAX_LINE_BYTES. */
  maxLineBytes?: number;
  /** URL sources: time to establish the connection. Default 10 s. */
  connectTimeoutMs?: number;
  /** URL sources: time from request to response headers. Default 30 s. */
  headersTimeoutMs?: number;
  /** URL sources: longest pause between two body chunks. Default 60 s. */
  bodyTimeoutMs?: number;
  /** Stops the read (an activity's cancellation signal); the iteration throws the signal's reason. */
  signal?: AbortSignal;
}

/** Far above any URL (browsers stop near 2 MB, the crawler's default cap on discovered links is 2048). */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024;
export const MAX_SEED_BATCH_SIZE = 1_000_000;
const DEFAULT_TIMEOUTS = { connectTimeoutMs: 10_000, headersTimeoutMs: 30_000, bodyTimeoutMs: 60_000 };
const MAX_REDIRECTS = 5;
const LF = 0x0a;

export type ParsedSeedSource = { kind: 'file'; path: string } | { kind: 'url'; url: URL };

/** A file path (or file: URL) or an http(s) URL. `-` is the CLI's to replace with a copy of its standard input. */
export function parseSeedSource(source: string): ParsedSeedSource {
  if (typeof source !== 'string' || source.trim() === '') throw new SeedSourceError('SEEDS_BAD_SOURCE', String(source), 'seed source is empty: give a file path or an http(s) URL');
  if (source === '-') {
    throw new SeedSourceError('SEEDS_BAD_SOURCE', source, '"-" (standard input) cannot be read here: the crawl command copies standard input to a file in the output folder first');
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) {
    let url: URL;
    try {
      url = new URL(source);
    } catch {
      throw new SeedSourceError('SEEDS_BAD_SOURCE', source, `seed source ${JSON.stringify(source)} is not a valid URL`);
    }
    if (url.protocol === 'file:') return { kind: 'file', path: fileURLToPath(url) };
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new SeedSourceError('SEEDS_BAD_SOURCE', source, `seed source ${JSON.stringify(source)}: only files and http(s) URLs can be read (got ${url.protocol})`);
    }
    return { kind: 'url', url };
  }
  return { kind: 'file', path: source };
}

function checkPosition(source: string, p: SeedPosition): SeedPosition {
  const ok = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (!p || typeof p !== 'object' || !ok(p.line) || !ok(p.byte) || !ok(p.seeds) || p.line > p.byte) {
    throw new SeedSourceError('SEEDS_BAD_POSITION', source, `not a seed list position: ${JSON.stringify(p)} (expected {line, byte, seeds} from an earlier batch)`);
  }
  return { line: p.line, byte: p.byte, seeds: p.seeds };
}

/**
 * Reads `source` from `opts.from` in batches of up to `opts.batchSize`
 * seeds. Blank lines and lines starting with `#` (after trimming) are
 * skipped; every other line, trimmed, is one seed. gzip is recognised by its
 * magic bytes, whatever the name. Breaking out of the loop closes the file
 * or the connection.
 */
export async function* readSeedBatches(source: string, opts: SeedReadOptions): AsyncGenerator<SeedBatch, void, undefined> {
  const from = checkPosition(source, opts.from ?? SEEDS_START);
  yield* batchesOf(readLines(source, from, opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES, opts), from, opts);
}

/**
 * The same batches from a byte stream the caller opened (plain or gzip),
 * which must start at the beginning of the list: a position in
 * `opts.from` is reached by counting and dropping bytes. `label` names the
 * stream in errors.
 */
export async function* readSeedBatchesFromStream(label: string, chunks: AsyncIterable<Buffer>, opts: SeedReadOptions): AsyncGenerator<SeedBatch, void, undefined> {
  const from = checkPosition(label, opts.from ?? SEEDS_START);
  const bytes = skipTo(label, gunzipIfCompressed(label, chunks), from.byte);
  yield* batchesOf(splitLines(label, bytes, from, opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES), from, opts);
}

async function* batchesOf(chunks: AsyncIterable<RawLine[]>, from: SeedPosition, opts: SeedReadOptions): AsyncGenerator<SeedBatch, void, undefined> {
  const batchSize = opts.batchSize;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1 || batchSize > MAX_SEED_BATCH_SIZE) {
    throw new RangeError(`batchSize must be a whole number from 1 to ${MAX_SEED_BATCH_SIZE} (got ${batchSize})`);
  }
  const signal = opts.signal;
  const stopIfAborted = () => {
    if (signal?.aborted) throw signal.reason ?? new Error('aborted');
  };
  stopIfAborted();
  let seeds = from.seeds;
  let batch: SeedBatch = { seeds: [], lines: [], start: from, next: from, done: false };
  for await (const lines of chunks) {
    for (const line of lines) {
      const text = line.text.trim();
      if (text !== '' && !text.startsWith('#')) {
        // A full batch goes out only once the next seed (or the end) is seen,
        // so that the last batch can say done and its `next` covers the
        // comments behind it.
        if (batch.seeds.length === batchSize) {
          stopIfAborted();
          yield batch;
          batch = { seeds: [], lines: [], start: batch.next, next: batch.next, done: false };
        }
        batch.seeds.push(text);
        batch.lines.push(line.number);
        seeds++;
      }
      batch.next = { line: line.number, byte: line.end, seeds };
    }
  }
  stopIfAborted();
  batch.done = true;
  yield batch;
}

/** One batch from `from`, the source closed afterwards: for callers that keep nothing open between batches. */
export async function readSeedBatch(source: string, opts: SeedReadOptions): Promise<SeedBatch> {
  for await (const batch of readSeedBatches(source, opts)) return batch;
  throw new Error('unreachable: readSeedBatches always yields');
}

/**
 * Every non-blank, non-comment line of a small list (e.g. --resolve-file),
 * trimmed, with its line number. Same sources, gzip detection and errors as
 * readSeedBatches.
 */
export async function* readListEntries(source: string, opts: Omit<SeedReadOptions, 'batchSize' | 'from'> = {}): AsyncGenerator<{ value: string; line: number }> {
  for await (const lines of readLines(source, SEEDS_START, opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES, opts)) {
    for (const line of lines) {
      const value = line.text.trim();
      if (value !== '' && !value.startsWith('#')) yield { value, line: line.number };
    }
  }
}

interface RawLine {
  /** Decoded, untrimmed, without its LF. */
  text: string;
  number: number;
  /** Byte offset just after the line's LF (or after its last byte, at the end). */
  end: number;
}

async function* readLines(source: string, from: SeedPosition, maxLineBytes: number, opts: Omit<SeedReadOptions, 'batchSize'>): AsyncGenerator<RawLine[]> {
  const parsed = parseSeedSource(source);
  const bytes = parsed.kind === 'file' ? fileText(source, parsed.path, from.byte) : skipTo(source, gunzipIfCompressed(source, urlBytes(source, parsed.url, opts)), from.byte);
  yield* splitLines(source, bytes, from, maxLineBytes);
}

/** The lines of each chunk as one array: an await per line would cost more than the split itself. */
async function* splitLines(source: string, bytes: AsyncIterable<Buffer>, from: SeedPosition, maxLineBytes: number): AsyncGenerator<RawLine[]> {
  const splitter = new LineSplitter(source, from, maxLineBytes);
  for await (const chunk of bytes) {
    const lines = splitter.push(chunk);
    if (lines.length > 0) yield lines;
  }
  const last = splitter.end();
  if (last) yield [last];
}

class LineSplitter {
  private parts: Buffer[] = [];
  private partBytes = 0;
  private pos: number;
  private line: number;

  constructor(
    private readonly source: string,
    from: SeedPosition,
    private readonly maxLineBytes: number,
  ) {
    this.pos = from.byte;
    this.line = from.line;
  }

  push(chunk: Buffer): RawLine[] {
    const out: RawLine[] = [];
    let i = 0;
    while (i < chunk.length) {
      const lf = chunk.indexOf(LF, i);
      const piece = chunk.subarray(i, lf < 0 ? chunk.length : lf);
      if (this.partBytes + piece.length > this.maxLineBytes) {
        throw new SeedSourceError(
          'SEEDS_TOO_LONG_LINE',
          this.source,
          `line ${this.line + 1} of ${this.source} is longer than ${this.maxLineBytes} bytes: expected one URL per line`,
          { line: this.line + 1 },
        );
      }
      if (lf < 0) {
        // Copied: a subarray would pin the whole chunk until the line ends.
        this.parts.push(Buffer.from(piece));
        this.partBytes += piece.length;
        break;
      }
      out.push(this.finish(this.partBytes === 0 ? piece : Buffer.concat([...this.parts, piece]), 1));
      i = lf + 1;
    }
    return out;
  }

  /** The last line when the source does not end with LF. */
  end(): RawLine | null {
    return this.partBytes === 0 ? null : this.finish(Buffer.concat(this.parts), 0);
  }

  private finish(bytes: Buffer, terminator: number): RawLine {
    this.parts = [];
    this.partBytes = 0;
    this.line += 1;
    this.pos += bytes.length + terminator;
    return { text: decodeLine(this.source, bytes, this.line), number: this.line, end: this.pos };
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function decodeLine(source: string, bytes: Buffer, line: number): string {
  const notText = (what: string) =>
    new SeedSourceError('SEEDS_NOT_TEXT', source, `line ${line} of ${source} ${what}: expected a UTF-8 text file (or gzip of one) with one URL per line`, { line });
  if (bytes.includes(0)) throw notText('contains a NUL byte');
  const text = bytes.toString('utf8');
  // The lenient decode is the fast path; U+FFFD may be a real character or a bad byte.
  if (text.includes('\uFFFD')) {
    try {
      strictUtf8.decode(bytes);
    } catch {
      throw notText('is not valid UTF-8');
    }
  }
  return text;
}

function fsError(source: string, err: unknown): SeedSourceError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return new SeedSourceError('SEEDS_NOT_FOUND', source, `seed list ${source} does not exist`, { cause: err });
  const why = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message;
  return new SeedSourceError('SEEDS_UNREADABLE', source, `cannot read seed list ${source}: ${why}`, { cause: err, retryable: code === 'EIO' || code === 'EAGAIN' });
}

async function* fromFile(source: string, fh: FileHandle, start: number): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of fh.createReadStream({ start, autoClose: false, highWaterMark: 64 * 1024 })) yield chunk as Buffer;
  } catch (err) {
    throw fsError(source, err);
  }
}

/** A local file's text from byte `start`: a seek for plain text, decompress-and-skip for gzip. */
async function* fileText(source: string, file: string, start: number): AsyncGenerator<Buffer> {
  let fh: FileHandle;
  try {
    fh = await open(file, 'r');
  } catch (err) {
    throw fsError(source, err);
  }
  try {
    let size: number;
    const head = Buffer.alloc(2);
    try {
      const st = await fh.stat();
      if (st.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
      size = st.size;
      await fh.read(head, 0, 2, 0);
    } catch (err) {
      throw fsError(source, err);
    }
    if (isGzip(head)) {
      yield* skipTo(source, gunzipIfCompressed(source, fromFile(source, fh, 0)), start);
      return;
    }
    if (start > 0) {
      // Resume check: the position must be a line start of this file.
      const before = Buffer.alloc(1);
      if (start > size) throw changed(source, start);
      await fh.read(before, 0, 1, start - 1);
      if (before[0] !== LF && start !== size) throw changed(source, start);
    }
    yield* fromFile(source, fh, start);
  } finally {
    await fh.close();
  }
}

function changed(source: string, at: number): SeedSourceError {
  return new SeedSourceError(
    'SEEDS_CHANGED',
    source,
    `seed list ${source} changed since it was read: byte ${at} is not the start of a line any more (or the list is shorter); start the read again from the beginning`,
  );
}

const isGzip = (b: Buffer) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;

/** Passes plain bytes through and decompresses gzip (concatenated members too), told apart by the first two bytes. */
async function* gunzipIfCompressed(source: string, chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const it = chunks[Symbol.asyncIterator]();
  let finished = false;
  try {
    const head: Buffer[] = [];
    let headBytes = 0;
    while (headBytes < 2) {
      const r = await it.next();
      if (r.done) {
        finished = true;
        break;
      }
      head.push(r.value);
      headBytes += r.value.length;
    }
    const first = Buffer.concat(head);
    const all = async function* () {
      if (first.length > 0) yield first;
      while (!finished) {
        const r = await it.next();
        if (r.done) finished = true;
        else yield r.value;
      }
    };
    if (!isGzip(first)) {
      yield* all();
      return;
    }
    const gunzip = zlib.createGunzip();
    // Errors of either side end the loop below: pipeline destroys gunzip with them.
    pipeline(Readable.from(all(), { objectMode: false }), gunzip, () => {});
    try {
      for await (const chunk of gunzip) yield chunk as Buffer;
    } catch (err) {
      if (err instanceof SeedSourceError) throw err;
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (code.startsWith('Z_') || code === 'ERR_STREAM_PREMATURE_CLOSE') {
        throw new SeedSourceError('SEEDS_UNREADABLE', source, `seed list ${source} starts like gzip but does not decompress: ${(err as Error).message}`, { cause: err });
      }
      throw err;
    }
  } finally {
    if (!finished) await it.return?.();
  }
}

/**
 * Drops the first `start` bytes, checking that they end at a line start
 * (the byte before is LF, or nothing follows): a cheap guard against a list
 * replaced between two reads.
 */
async function* skipTo(source: string, chunks: AsyncIterable<Buffer>, start: number): AsyncGenerator<Buffer> {
  if (start === 0) {
    yield* chunks;
    return;
  }
  let seen = 0;
  let lastSkipped = -1;
  let pendingEndCheck = false;
  for await (const chunk of chunks) {
    if (pendingEndCheck) {
      if (chunk.length > 0) throw changed(source, start);
      continue;
    }
    if (seen + chunk.length <= start) {
      seen += chunk.length;
      if (chunk.length > 0) lastSkipped = chunk[chunk.length - 1];
      if (seen === start && lastSkipped !== LF) pendingEndCheck = true;
      continue;
    }
    const cut = start - seen;
    if (cut > 0) lastSkipped = chunk[cut - 1];
    if (lastSkipped !== LF) throw changed(source, start);
    yield chunk.subarray(cut);
    // From here on, pass everything through.
    for await (const rest of chunks) yield rest;
    return;
  }
  if (seen < start) throw changed(source, start);
}

async function* urlBytes(source: string, url: URL, opts: Omit<SeedReadOptions, 'batchSize'>): AsyncGenerator<Buffer> {
  const t = { ...DEFAULT_TIMEOUTS, ...definedOnly(opts) };
  const agent = new Agent({ connect: { timeout: t.connectTimeoutMs }, headersTimeout: t.headersTimeoutMs, bodyTimeout: t.bodyTimeoutMs });
  const netError = (err: unknown): unknown => {
    if (opts.signal?.aborted) return opts.signal.reason ?? err;
    const code = (err as { code?: string }).code ?? '';
    const limit =
      code === 'UND_ERR_CONNECT_TIMEOUT'
        ? `did not accept a connection within ${t.connectTimeoutMs} ms`
        : code === 'UND_ERR_HEADERS_TIMEOUT'
          ? `did not answer within ${t.headersTimeoutMs} ms`
          : code === 'UND_ERR_BODY_TIMEOUT'
            ? `sent nothing for ${t.bodyTimeoutMs} ms in the middle of the list`
            : null;
    if (limit) return new SeedSourceError('SEEDS_TIMEOUT', source, `seed list ${source} ${limit}`, { cause: err, retryable: true });
    return new SeedSourceError('SEEDS_UNREADABLE', source, `cannot download seed list ${source}: ${(err as Error).message}${code ? ` (${code})` : ''}`, {
      cause: err,
      retryable: true,
    });
  };
  try {
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(url, {
        method: 'GET',
        dispatcher: agent.compose(interceptors.redirect({ maxRedirections: MAX_REDIRECTS })),
        // identity: gzip is recognised in the body itself, whatever the headers say.
        headers: { 'user-agent': DEFAULT_USER_AGENT, 'accept-encoding': 'identity', accept: 'text/plain, */*' },
        signal: opts.signal,
      });
    } catch (err) {
      throw netError(err);
    }
    if (res.statusCode < 200 || res.statusCode > 299) {
      await res.body.dump().catch(() => {});
      const s = res.statusCode;
      if (s === 404 || s === 410) throw new SeedSourceError('SEEDS_NOT_FOUND', source, `seed list ${source} does not exist (HTTP ${s})`);
      throw new SeedSourceError(
        'SEEDS_UNREADABLE',
        source,
        `seed list ${source} answered HTTP ${s}${s >= 300 && s < 400 ? ` (more than ${MAX_REDIRECTS} redirects, or one without a Location)` : ''}`,
        {
          retryable: s >= 500 || s === 429 || s === 408,
        },
      );
    }
    try {
      for await (const chunk of res.body) yield chunk as Buffer;
    } catch (err) {
      throw netError(err);
    } finally {
      if (!res.body.destroyed) res.body.destroy();
    }
  } finally {
    await agent.destroy().catch(() => {});
  }
}

function definedOnly(o: Omit<SeedReadOptions, 'batchSize'>): Partial<typeof DEFAULT_TIMEOUTS> {
  const out: Partial<typeof DEFAULT_TIMEOUTS> = {};
  for (const k of Object.keys(DEFAULT_TIMEOUTS) as (keyof typeof DEFAULT_TIMEOUTS)[]) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/**
 * Copies a stream (the CLI's standard input) to `<dir>/<baseName>.txt`, or
 * `.txt.gz` when it is gzip, and returns the file's absolute path. Workers
 * read seed lists themselves, on other machines too, and cannot read the
 * CLI's standard input: the output folder is the one place they share. The
 * copy is written under a temporary name and renamed, so a reader never
 * sees half of it.
 */
export async function saveSeedStream(input: NodeJS.ReadableStream | AsyncIterable<Buffer>, dir: string, baseName: string): Promise<{ path: string; bytes: number; gzip: boolean }> {
  const absDir = path.resolve(dir);
  await mkdir(absDir, { recursive: true });
  const tmp = path.join(absDir, `.${baseName}.${process.pid}.partial`);
  let bytes = 0;
  let head = Buffer.alloc(0);
  try {
    await pipelineAsync(
      input as AsyncIterable<Buffer>,
      async function* (chunks: AsyncIterable<Buffer | string>) {
        for await (const c of chunks) {
          const b = typeof c === 'string' ? Buffer.from(c) : c;
          if (head.length < 2) head = Buffer.concat([head, b.subarray(0, 2 - head.length)]);
          bytes += b.length;
          yield b;
        }
      },
      createWriteStream(tmp),
    );
    const gzip = isGzip(head);
    const final = path.join(absDir, `${baseName}.txt${gzip ? '.gz' : ''}`);
    await rename(tmp, final);
    return { path: final, bytes, gzip };
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
