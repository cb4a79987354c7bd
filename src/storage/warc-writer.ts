import { createHash, hash, randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { HeadersMultiMap, StatusAndHeaders, WARCRecord } from 'warcio';
import { SerialQueue } from './serial-queue';
import { createUniqueFile, ensureWritableDir, writeFully, type FileRollover } from './files';
import { StorageError } from './storage-error';
import { REDACTED, SECRET_REQUEST_HEADERS, SECRET_RESPONSE_HEADERS } from '../http/header-rules';
import { redactRequestBody } from './request-body';

// Page storage: every fetched page goes into WARC/1.1 files, one gzip member
// per record, and nowhere else. Many worker processes (possibly on different
// machines) write into the same folder, so each process owns its own files
// and never appends to anybody else's.

/**
 * The file-name prefix of a campaign's WARCs. A scheduled run's ID has
 * colons (the time Temporal appends); in a file name a colon makes a
 * relative reference look like a URL scheme to replay tools, so the files
 * drop it (WARC-Filename and isPartOf keep the ID).
 */
export function warcPrefixOf(campaignId: string): string {
  return campaignId.replaceAll(':', '');
}

// ---------------------------------------------------------------------------
// Public types

export interface WarcWriterOptions {
  dir: string;
  /** File name prefix; default 'crawl'. */
  prefix?: string;
  /** Start a new file once the current one has reached this size; default 1 GiB. */
  maxFileBytes?: number;
  /** `software` field of each warcinfo record. */
  software?: string;
  /** `operator` field of each warcinfo record. */
  operator?: string;
  /** Campaign id, the `isPartOf` field of each warcinfo record. */
  isPartOf?: string;
  /**
   * fdatasync after every exchange. Off by default: a process crash loses
   * nothing either way (the data is in the page cache); only a machine crash
   * does, and paying a disk flush per page is rarely worth it.
   */
  syncEachWrite?: boolean;
  /**
   * An output in object storage: files are finished by age too, and each
   * finished file is handed on for its upload. Absent (a folder): a file is
   * finished by size and when the writer closes, and stays where it is.
   */
  rollover?: FileRollover;
}

export interface WarcExchange {
  url: string;
  fetchedAt: Date;
  /** Address the response came from. */
  ip?: string;
  request: {
    method: string;
    /** '1.1', 'HTTP/1.1', '2', …; default HTTP/1.1. */
    httpVersion?: string;
    headers: Record<string, string>;
    /** Request target; default path + query of `url`. */
    path?: string;
    /** More header names whose values are secrets (those the credentials file added): redacted like Authorization. */
    secretHeaders?: readonly string[];
    /**
     * The request body (a login form's POST). Stored in the request record;
     * unless keepSecrets, fields that look secret are redacted (src/storage/request-body.ts)
     * and Content-Length says what is stored (the sent length kept as X-Crawler-Original-Content-Length).
     */
    body?: Uint8Array;
  };
  response: {
    status: number;
    statusText?: string;
    httpVersion?: string;
    /** Headers as received from the server. */
    headers: Record<string, string>;
    body: Uint8Array;
    /**
     * Whether `body` has already had its Content-Encoding removed (what
     * fetch-style clients hand out). Default true. When false the body is
     * the encoded entity and Content-Encoding is kept as is.
     */
    bodyDecoded?: boolean;
    /** Why the body is incomplete, if it is: becomes WARC-Truncated. */
    truncated?: 'length' | 'time' | null;
    /** payloadDigestOf(body), when the caller has it already (revisit detection does): not hashed again. */
    payloadDigest?: string;
  };
  /** Written as a `metadata` record (application/warc-fields), e.g. outlinks, fetchTimeMs. */
  metadata?: Record<string, string | string[]>;
  /**
   * The payload was stored before, in the response record named here: the
   * exchange is written as a `revisit` record (profile
   * identical-payload-digest: the response's headers, no body; its payload
   * digest is still the body's) instead of a response record.
   */
  revisit?: RevisitOf;
  /**
   * The response (or revisit) record's WARC-Record-ID, `<urn:uuid:…>`; default a random one. A
   * payload's original is written with responseRecordId's, so the payload index need not keep it.
   */
  recordId?: string;
  /**
   * Keep the values of secret headers (output.warcKeepSecrets). By default
   * the values of Authorization, Proxy-Authorization and Cookie request
   * headers, of `request.secretHeaders`, and of Set-Cookie response headers
   * become REDACTED; their names stay, so the record still says what was sent.
   */
  keepSecrets?: boolean;
}

/** A `resource` record (WARC 1.1, 6.6): a block stored as it is, with its own media type. */
export interface WarcResource {
  /** WARC-Target-URI, written exactly as given (e.g. `urn:view:https://example.test/`). */
  uri: string;
  date: Date;
  /** The block's media type, e.g. image/png. */
  contentType: string;
  body: Uint8Array;
  /** WARC-Concurrent-To: the record ID of a record captured with this one, when known. */
  concurrentTo?: string;
}

export interface WarcResourceLocation {
  file: string;
  offset: number;
  length: number;
  recordId: string;
}

/** The response record a revisit refers to: its target URI and WARC-Date exactly as written, and its record ID. */
export interface RevisitOf {
  uri: string;
  date: string;
  recordId: string | null;
  /**
   * identical-payload-digest (default): the response's payload was stored
   * before. server-not-modified: the server answered a conditional request
   * with 304 (a revisit of continuous crawling): the record is the 304's
   * headers, and `payloadDigest` (the referred capture's) is its payload
   * digest.
   */
  profile?: 'identical-payload-digest' | 'server-not-modified';
  payloadDigest?: string;
}

export const REVISIT_PROFILE = 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest';
export const NOT_MODIFIED_PROFILE = 'http://netpreserve.org/warc/1.1/revisit/server-not-modified';

/** `sha1:BASE32` of a payload, as in WARC-Payload-Digest: what revisit detection keys on. */
export function payloadDigestOf(payload: Uint8Array): string {
  return sha1Base32(payload);
}

/** Where the response (or revisit) record of an exchange landed. */
export interface WarcLocation {
  /** 'revisit' when the exchange was written as a revisit record. */
  type: 'response' | 'revisit';
  /** Basename of the WARC file. */
  file: string;
  /** Byte offset of the response record's gzip member in the file. */
  offset: number;
  /** Compressed length of that gzip member. */
  length: number;
  recordId: string;
  /** `sha1:BASE32`, as in WARC-Payload-Digest. */
  payloadDigest: string;
  /** `sha1:BASE32`, as in WARC-Block-Digest. */
  blockDigest: string;
}

// ---------------------------------------------------------------------------
// Record building

const WARC_VERSION = 'WARC/1.1';
const DEFAULT_MAX_FILE_BYTES = 1024 ** 3;
const DEFAULT_SOFTWARE = 'durable-crawler (warcio.js)';

// warcio.js's header map splits any value containing ",,," (its internal
// multi-value join marker) into several header lines when serialising, so a
// server's value with ",,," would be cut up. Here the only marker is LF,
// which headerSafe removes from every name and value: a name holds several
// lines only when they were appended as separate values (a repeated
// Set-Cookie), and each is written as its own header line, in order.
const LINE_JOIN = '\n';
class VerbatimHeaders extends HeadersMultiMap {
  override isMultiValue(_name: string, value: string): boolean {
    return value.includes(LINE_JOIN);
  }

  override getMultiple(name: string): string[] | undefined {
    return this.get(name)?.split(LINE_JOIN);
  }

  override append(name: string, value: string): void {
    const prev = this.get(name);
    this.set(name, prev === undefined ? value : `${prev}${LINE_JOIN}${value}`);
  }

  override *[Symbol.iterator](): IterableIterator<[string, string]> {
    // Map's own entries: HeadersMultiMap's iterator splits on ",,,".
    for (const [name, value] of this.entries()) {
      for (const v of value.split(LINE_JOIN)) yield [name, v];
    }
  }
}

// A CR or LF inside a name or value would end the header early and let a
// server's header smuggle extra lines into our record.
function headerSafe(s: string): string {
  return s.replace(/[\r\n]+/g, ' ');
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

// Fetch-style clients expose header values as byte strings (each byte one
// char <= U+00FF). warcio.js serialises headers as UTF-8, which would turn a
// raw 0xE9 into 0xC3 0xA9. If the bytes are valid UTF-8 we hand warcio the
// decoded text so it re-encodes to exactly the received bytes; otherwise
// (latin1 on the wire, or already-decoded Unicode) UTF-8 of the text is the
// best we can store.
function headerValue(v: string): string {
  const safe = headerSafe(v);
  // eslint-disable-next-line no-control-regex
  if (!/[^\x00-\x7f]/.test(safe) || /[^\x00-\xff]/.test(safe)) return safe;
  try {
    return strictUtf8.decode(Buffer.from(safe, 'latin1'));
  } catch {
    return safe;
  }
}

function httpVersionOf(v: string | undefined): string {
  if (!v) return 'HTTP/1.1';
  const bare = v.replace(/^HTTP\//i, '').trim();
  return `HTTP/${bare || '1.1'}`;
}

function requestTarget(url: string): string {
  try {
    const u = new URL(url);
    return `${u.pathname || '/'}${u.search}`;
  } catch {
    return '/';
  }
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).host || null;
  } catch {
    return null;
  }
}

/**
 * Headers of the stored response. Like other crawlers that store decoded
 * payloads, the framing/encoding headers that no longer describe the stored
 * bytes are renamed (kept for the record, ignored by replay tools):
 *  - Content-Encoding (only if the body was decoded): the payload is identity-encoded now;
 *  - Transfer-Encoding: the client always removes chunking;
 *  - Content-Length: the decoded and/or truncated size differs from the wire size.
 * A fresh Content-Length with the stored size is appended, so a reader of the
 * HTTP block never depends on connection-close framing.
 */
export function storedResponseHeaders(headers: Record<string, string>, storedBytes: number, bodyDecoded: boolean): [string, string][] {
  const out: [string, string][] = [];
  for (const [rawName, value] of Object.entries(headers)) {
    const name = headerSafe(rawName);
    const lower = name.toLowerCase();
    // HTTP/2 pseudo-headers (:status…) are not headers of the HTTP/1.1 message a record holds.
    if (lower.startsWith(':')) continue;
    if (lower === 'content-encoding' && bodyDecoded) {
      out.push(['X-Crawler-Original-Content-Encoding', headerValue(value)]);
    } else if (lower === 'transfer-encoding') {
      out.push(['X-Crawler-Original-Transfer-Encoding', headerValue(value)]);
    } else if (lower === 'content-length') {
      out.push(['X-Crawler-Original-Content-Length', headerValue(value)]);
    } else if (lower === 'set-cookie') {
      // The client joins repeated Set-Cookie headers with LF (a cookie's
      // Expires holds ', '): one line each, as the server sent them.
      for (const cookie of value.split('\n')) out.push([name, headerValue(cookie)]);
    } else {
      out.push([name, headerValue(value)]);
    }
  }
  out.push(['Content-Length', String(storedBytes)]);
  return out;
}

/**
 * The request body as the record stores it (redacted unless `keep`), with
 * `headers` brought in line: Content-Length is the stored length, the sent
 * one kept as X-Crawler-Original-Content-Length when they differ.
 */
function storedRequestBody(req: WarcExchange['request'], headers: [string, string][], keep: boolean): Uint8Array {
  const sent = req.body;
  if (!sent || sent.length === 0) return EMPTY;
  const type = headers.find(([n]) => n.toLowerCase() === 'content-type')?.[1];
  const stored = keep ? sent : redactRequestBody(sent, type);
  const at = headers.findIndex(([n]) => n.toLowerCase() === 'content-length');
  if (stored.length !== sent.length) {
    if (at !== -1) headers.splice(at, 1, ['X-Crawler-Original-Content-Length', headers[at]![1]]);
    headers.push(['Content-Length', String(stored.length)]);
  } else if (at === -1) headers.push(['Content-Length', String(stored.length)]);
  return stored;
}

/** Request headers with the values of `secret` names redacted (null: kept). */
function redactRequest(headers: [string, string][], secret: ReadonlySet<string> | null): [string, string][] {
  if (!secret) return headers;
  return headers.map(([n, v]) => (secret.has(n.toLowerCase()) ? [n, REDACTED] : [n, v]));
}

/**
 * Response headers with Set-Cookie values redacted. Every Set-Cookie, not
 * only those of credentialed sessions: a session cookie is a credential
 * whoever asked for it, and the crawler cannot tell which cookie is one.
 */
function redactResponse(headers: [string, string][], keep: boolean): [string, string][] {
  if (keep) return headers;
  return headers.map(([n, v]) => (SECRET_RESPONSE_HEADERS.has(n.toLowerCase()) ? [n, REDACTED] : [n, v]));
}

function verbatim(entries: [string, string][]): VerbatimHeaders {
  const h = new VerbatimHeaders();
  // Repeated Set-Cookie lines are kept, each its own line; any other name keeps one value.
  for (const [n, v] of entries) {
    if (n.toLowerCase() === 'set-cookie') h.append(n, v);
    else h.set(n, v);
  }
  return h;
}

function warcFields(fields: Record<string, string | string[]>): Uint8Array {
  let text = '';
  for (const [rawName, value] of Object.entries(fields)) {
    // ':' would end the field name early; whitespace is not allowed in it.
    const name = headerSafe(rawName).replace(/[:\s]+/g, '_');
    for (const v of Array.isArray(value) ? value : [value]) text += `${name}: ${headerSafe(v)}\r\n`;
  }
  return Buffer.from(text, 'utf8');
}

function sha1Base32(data: Uint8Array): string {
  return `sha1:${base32(hash('sha1', data, 'buffer'))}`;
}

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
/** RFC 4648 base32 (a SHA-1 is 20 bytes, so never any padding). */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let acc = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += B32[(acc << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += '=';
  return out;
}

function urn(): string {
  return `<urn:uuid:${randomUUID()}>`;
}

/**
 * The record ID of an attempt's response record for `uri` fetched at `date` (WARC-Date, as
 * written): a version-8 UUID of 122 bits of SHA-256 over the three, what the payload index
 * derives again from the page, date and attempt it keeps (src/dedup/payload-index.ts) instead of
 * keeping 16 bytes of a random ID. An attempt writes one response record, so two records share
 * an ID only when two attempts with the same 48-bit random id fetched the same URL in the same
 * millisecond (docs/operations.md states the odds).
 */
export function responseRecordId(uri: string, date: string, attemptId: string): string {
  const b = hash('sha256', `response\n${uri}\n${date}\n${attemptId}`, 'buffer').subarray(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x80;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `<urn:uuid:${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}>`;
}

const EMPTY = new Uint8Array(0);
const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');

/**
 * The WARC header block: the version line, then each header as it was set,
 * as warcio.js's toString() lays it out. Read from the Map's own entries:
 * warcio's iterator would split a value holding ",,," (its multi-value
 * marker, which a URL may hold) and throws for a WARC-* name, so a page
 * whose URL had ",,," could not be stored.
 */
function warcHeaderBlock(record: WARCRecord): string {
  let text = `${record.warcHeaders.statusline}\r\n`;
  for (const [name, value] of Map.prototype.entries.call(record.warcHeaders.headers) as IterableIterator<[string, string]>) text += `${name}: ${value}\r\n`;
  return text;
}

/**
 * A record as one gzip member. The plain record is laid out exactly as
 * warcio.js's WARCSerializer writes it (WARC header block, CRLF, HTTP
 * header block, payload, CRLF CRLF; Content-Length the HTTP block and
 * payload), without its async iterators and with node:crypto's SHA-1
 * instead of the WebAssembly one it instantiates for every record. The
 * digests are those warcio defines (block: the HTTP header block, then the
 * payload; payload: the payload); warcinfo records carry the block digest
 * their caller set. The HTTP header block is encoded once, for the digest
 * and the record. Compressed in one synchronous call: zlib's own work is
 * the same on the event loop as in libuv's pool, and the asynchronous
 * call's stream and promise around it cost a page more than the
 * compression's wait (docs/benchmarks-history.md, issue 27).
 */
function gzipMember(record: WARCRecord, payload: Uint8Array, payloadDigest?: string): Uint8Array {
  const http = record.httpHeaders ? Buffer.from(`${record.httpHeaders.toString()}\r\n`, 'utf8') : null;
  const headers = record.warcHeaders.headers;
  if (record.warcType !== 'warcinfo') {
    const block = createHash('sha1');
    if (http) block.update(http);
    block.update(payload);
    // A revisit's block has no payload, but its payload digest is the (identical) payload's.
    headers.set('WARC-Payload-Digest', payloadDigest ?? sha1Base32(payload));
    headers.set('WARC-Block-Digest', `sha1:${base32(block.digest())}`);
  }
  headers.set('Content-Length', String((http?.length ?? 0) + payload.length));
  const head = Buffer.from(warcHeaderBlock(record), 'utf8');
  return zlib.gzipSync(Buffer.concat(http ? [head, CRLF, http, payload, CRLFCRLF] : [head, CRLF, payload, CRLFCRLF]));
}

// ---------------------------------------------------------------------------
// Writer

interface OpenWarc {
  name: string;
  path: string;
  fh: FileHandle;
  size: number;
  warcinfoId: string;
  /** Finishes the file at its age bound (rollover only). */
  ageTimer: NodeJS.Timeout | null;
}

export class WarcWriter {
  private readonly dir: string;
  private readonly prefix: string;
  private readonly maxFileBytes: number;
  private readonly info: Record<string, string>;
  private readonly syncEachWrite: boolean;
  private readonly rollover: FileRollover | null;
  // Every write runs after the previous one settled: a file is only ever
  // appended to by one operation at a time, so records never interleave.
  private readonly queue = new SerialQueue();
  private current: OpenWarc | null = null;
  private closed = false;
  private readonly finished: string[] = [];

  private constructor(opts: WarcWriterOptions) {
    this.dir = path.resolve(opts.dir);
    this.prefix = opts.prefix ?? 'crawl';
    this.maxFileBytes = opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    this.syncEachWrite = opts.syncEachWrite ?? false;
    this.rollover = opts.rollover ?? null;
    this.info = {
      software: opts.software ?? DEFAULT_SOFTWARE,
      format: 'WARC File Format 1.1',
      conformsTo: 'http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/',
      hostname: os.hostname(),
      ...(opts.operator ? { operator: opts.operator } : {}),
      ...(opts.isPartOf ? { isPartOf: opts.isPartOf } : {}),
    };
  }

  /**
   * Checks the folder is writable. The first file is created on the first
   * write, so a worker that never fetches leaves no warcinfo-only file behind.
   */
  static async open(opts: WarcWriterOptions): Promise<WarcWriter> {
    if (!opts.dir) throw new StorageError('INVALID_INPUT', null, 'WarcWriter needs a dir');
    if (opts.prefix !== undefined && !/^[A-Za-z0-9._-]+$/.test(opts.prefix)) {
      throw new StorageError('INVALID_INPUT', null, `WARC prefix must match [A-Za-z0-9._-]+, got ${JSON.stringify(opts.prefix)}`);
    }
    if (opts.maxFileBytes !== undefined && !(opts.maxFileBytes > 0)) {
      throw new StorageError('INVALID_INPUT', null, `maxFileBytes must be positive, got ${opts.maxFileBytes}`);
    }
    if (opts.rollover && !(opts.rollover.maxFileAgeMs > 0)) {
      throw new StorageError('INVALID_INPUT', null, `maxFileAgeMs must be positive, got ${opts.rollover.maxFileAgeMs}`);
    }
    await ensureWritableDir(opts.dir);
    return new WarcWriter(opts);
  }

  /** Basename of the file currently being written, if any. */
  get currentFile(): string | null {
    return this.current?.name ?? null;
  }

  /** Basenames of every file this writer has created, in order. */
  get files(): string[] {
    return this.current ? [...this.finished, this.current.name] : [...this.finished];
  }

  /**
   * Appends response, request and (if given) metadata records of one fetch.
   * Safe to call concurrently; calls are applied one at a time in call order.
   */
  writeExchange(ex: WarcExchange): Promise<WarcLocation> {
    return this.queue.run(() => this.doWrite(ex));
  }

  /**
   * Appends one `resource` record: a block that is not an HTTP exchange (a
   * page's screenshot, `urn:view:<url>`), its digests computed as for
   * any record. Queued with the exchanges, in call order.
   */
  writeResource(r: WarcResource): Promise<WarcResourceLocation> {
    return this.queue.run(() => this.doWriteResource(r));
  }

  /**
   * Finishes the current file after the writes queued before (the next write
   * starts a new one): how a flush gets every record of this writer to its
   * upload without closing it.
   */
  finishFile(): Promise<void> {
    return this.queue.run(() => (this.closed ? Promise.resolve() : this.finishCurrent()));
  }

  /** Waits for queued writes, flushes the current file to disk and closes it. */
  close(): Promise<void> {
    return this.queue.run(async () => {
      if (this.closed) return;
      this.closed = true;
      await this.finishCurrent();
    });
  }

  private async doWrite(ex: WarcExchange): Promise<WarcLocation> {
    if (this.closed) throw new StorageError('CLOSED', this.current?.path ?? null, 'WarcWriter is closed');
    validateExchange(ex);

    // Rotate once the file has reached the limit: each file ends at most one
    // exchange past it, and an exchange is never split across files.
    if (this.current && this.current.size >= this.maxFileBytes) await this.finishCurrent();
    const file = this.current ?? (await this.startFile());

    const { members, responseId } = await this.buildExchange(ex, file.warcinfoId);
    const response = members[0]!;
    const offset = await this.append(file, members, ex.url);
    return {
      type: ex.revisit ? 'revisit' : 'response',
      file: file.name,
      offset,
      length: response.bytes.length,
      recordId: responseId,
      payloadDigest: response.payloadDigest,
      blockDigest: response.blockDigest,
    };
  }

  /** Writes the members at the end of the file, in one write: a crash can only leave a truncated tail. Returns where they start. */
  private async append(file: OpenWarc, members: { bytes: Uint8Array }[], url: string): Promise<number> {
    const buf = Buffer.concat(members.map((m) => m.bytes));
    const offset = file.size;
    try {
      await writeFully(file.fh, buf, offset);
      if (this.syncEachWrite) await file.fh.datasync();
    } catch (err) {
      await this.recoverFromFailedWrite(file, offset);
      throw new StorageError('WRITE_FAILED', file.path, `cannot write WARC records for ${url}`, { cause: err });
    }
    file.size += buf.length;
    return offset;
  }

  private async doWriteResource(r: WarcResource): Promise<WarcResourceLocation> {
    if (this.closed) throw new StorageError('CLOSED', this.current?.path ?? null, 'WarcWriter is closed');
    if (!r || typeof r.uri !== 'string' || r.uri.length === 0) throw new StorageError('INVALID_INPUT', null, 'invalid resource: uri is required');
    if (!(r.date instanceof Date) || Number.isNaN(r.date.getTime())) throw new StorageError('INVALID_INPUT', null, `invalid resource ${r.uri}: date is not a valid Date`);
    if (!(r.body instanceof Uint8Array)) throw new StorageError('INVALID_INPUT', null, `invalid resource ${r.uri}: body must be a Uint8Array`);
    if (this.current && this.current.size >= this.maxFileBytes) await this.finishCurrent();
    const file = this.current ?? (await this.startFile());
    const recordId = urn();
    const rec = WARCRecord.create(
      {
        url: r.uri,
        date: r.date.toISOString(),
        type: 'resource',
        warcVersion: WARC_VERSION,
        warcHeaders: {
          'WARC-Record-ID': recordId,
          'WARC-Warcinfo-ID': file.warcinfoId,
          'Content-Type': headerSafe(r.contentType),
          ...(r.concurrentTo ? { 'WARC-Concurrent-To': headerSafe(r.concurrentTo) } : {}),
        },
      },
      [r.body],
    );
    // As for exchanges: exactly the URI given, not as `new URL()` re-spells it.
    rec.warcHeaders.headers.set('WARC-Target-URI', headerSafe(r.uri));
    const bytes = gzipMember(rec, r.body);
    const offset = await this.append(file, [{ bytes }], r.uri);
    return { file: file.name, offset, length: bytes.length, recordId };
  }

  // Cut a partial write back off so later records start at a record boundary
  // and their offsets stay right; if even that fails, abandon the file.
  private async recoverFromFailedWrite(file: OpenWarc, goodSize: number): Promise<void> {
    try {
      await file.fh.truncate(goodSize);
    } catch {
      // Left as it is, not handed on: with a fragment at its end it is no
      // finished file. A spooled one is cut back by the sweep after this process.
      this.current = null;
      this.finished.push(file.name);
      if (file.ageTimer) clearTimeout(file.ageTimer);
      await file.fh.close().catch(() => undefined);
    }
  }

  private async buildExchange(ex: WarcExchange, warcinfoId: string): Promise<{ members: { bytes: Uint8Array; payloadDigest: string; blockDigest: string }[]; responseId: string }> {
    const date = ex.fetchedAt.toISOString();
    const responseId = ex.recordId ?? urn();
    const common: Record<string, string> = { 'WARC-Warcinfo-ID': warcinfoId };
    if (ex.ip) common['WARC-IP-Address'] = headerSafe(ex.ip);

    const res = ex.response;
    const statusText = res.statusText || STATUS_CODES[res.status] || '';
    const rv = ex.revisit;
    const response = this.record(
      {
        url: ex.url,
        date,
        type: rv ? 'revisit' : 'response',
        warcHeaders: {
          'WARC-Record-ID': responseId,
          ...common,
          ...(rv
            ? {
                // WARC 1.1, 6.7.2: the record that holds the payload, by URI and date (and ID when known).
                'WARC-Profile': rv.profile === 'server-not-modified' ? NOT_MODIFIED_PROFILE : REVISIT_PROFILE,
                'WARC-Refers-To-Target-URI': headerSafe(rv.uri),
                'WARC-Refers-To-Date': headerSafe(rv.date),
                ...(rv.recordId ? { 'WARC-Refers-To': headerSafe(rv.recordId) } : {}),
              }
            : res.truncated
              ? { 'WARC-Truncated': res.truncated }
              : {}),
        },
        statusline: headerSafe(`${httpVersionOf(res.httpVersion)} ${res.status}${statusText ? ` ${statusText}` : ''}`),
        headers: redactResponse(storedResponseHeaders(res.headers, res.body.length, res.bodyDecoded ?? true), ex.keepSecrets === true),
      },
      rv ? EMPTY : res.body,
    );

    const req = ex.request;
    const reqHeaders = redactRequest(
      Object.entries(req.headers)
        .filter(([n]) => !n.startsWith(':'))
        .map(([n, v]): [string, string] => [headerSafe(n), headerValue(v)]),
      ex.keepSecrets === true ? null : new Set([...SECRET_REQUEST_HEADERS, ...(req.secretHeaders ?? []).map((n) => n.toLowerCase())]),
    );
    const reqBody = storedRequestBody(req, reqHeaders, ex.keepSecrets === true);
    const host = hostOf(ex.url);
    // The client adds Host on the wire even when the caller did not set it.
    if (host && !reqHeaders.some(([n]) => n.toLowerCase() === 'host')) reqHeaders.unshift(['Host', host]);
    const request = this.record(
      {
        url: ex.url,
        date,
        type: 'request',
        warcHeaders: { 'WARC-Record-ID': urn(), 'WARC-Concurrent-To': responseId, ...common },
        statusline: headerSafe(`${req.method} ${req.path ?? requestTarget(ex.url)} ${httpVersionOf(req.httpVersion)}`),
        headers: reqHeaders,
      },
      reqBody,
    );

    const records: { r: WARCRecord; payload: Uint8Array; payloadDigest?: string }[] = [
      rv
        ? { r: response, payload: EMPTY, payloadDigest: rv.payloadDigest ?? res.payloadDigest ?? sha1Base32(res.body) }
        : { r: response, payload: res.body, payloadDigest: res.payloadDigest },
      { r: request, payload: reqBody },
    ];
    if (ex.metadata && Object.keys(ex.metadata).length > 0) {
      const fields = warcFields(ex.metadata);
      records.push({
        r: WARCRecord.create(
          {
            url: ex.url,
            date,
            type: 'metadata',
            warcVersion: WARC_VERSION,
            warcHeaders: { 'WARC-Record-ID': urn(), 'WARC-Concurrent-To': responseId, ...common },
          },
          [fields],
        ),
        payload: fields,
      });
    }
    // create() passes the URL through `new URL()`, which may re-encode it;
    // WARC-Target-URI must be exactly the URL the index records.
    for (const { r } of records) r.warcHeaders.headers.set('WARC-Target-URI', headerSafe(ex.url));

    const members = records.map(({ r, payload, payloadDigest }) => {
      const bytes = gzipMember(r, payload, payloadDigest);
      return {
        bytes,
        payloadDigest: r.warcHeaders.headers.get('WARC-Payload-Digest') ?? '',
        blockDigest: r.warcHeaders.headers.get('WARC-Block-Digest') ?? '',
      };
    });
    return { members, responseId };
  }

  private record(
    o: {
      url: string;
      date: string;
      type: 'response' | 'request' | 'revisit';
      warcHeaders: Record<string, string>;
      statusline: string;
      headers: [string, string][];
    },
    body: Uint8Array,
  ): WARCRecord {
    const rec = WARCRecord.create({ url: o.url, date: o.date, type: o.type, warcVersion: WARC_VERSION, warcHeaders: o.warcHeaders }, [body]);
    // Set after create(): create() would put our headers into a plain
    // HeadersMultiMap, which mangles values containing ",,," (see VerbatimHeaders).
    rec.httpHeaders = new StatusAndHeaders({ statusline: o.statusline, headers: verbatim(o.headers) });
    // create() sets the identical-payload-digest profile on every revisit: ours (a 304's server-not-modified) wins.
    if (o.warcHeaders['WARC-Profile']) rec.warcHeaders.headers.set('WARC-Profile', o.warcHeaders['WARC-Profile']);
    return rec;
  }

  private async startFile(): Promise<OpenWarc> {
    const { name, path: full, fh } = await createUniqueFile(this.dir, this.prefix, '.warc.gz');
    const warcinfoId = urn();
    try {
      const body = warcFields(this.info);
      const rec = WARCRecord.create(
        {
          type: 'warcinfo',
          filename: name,
          warcVersion: WARC_VERSION,
          warcHeaders: { 'WARC-Record-ID': warcinfoId, 'WARC-Block-Digest': sha1Base32(body) },
        },
        [body],
      );
      // warcio.js computes no digests for warcinfo; we set the block digest
      // above so a reader can verify every record of the file.
      const bytes = gzipMember(rec, body);
      await writeFully(fh, bytes, 0);
      const file: OpenWarc = { name, path: full, fh, size: bytes.length, warcinfoId, ageTimer: null };
      if (this.rollover) {
        // Queued like a write, so it never lands in the middle of one.
        file.ageTimer = setTimeout(
          () => void this.queue.run(() => (this.current === file ? this.finishCurrent() : Promise.resolve())).catch(() => undefined),
          this.rollover.maxFileAgeMs,
        );
        // The bound is for a running crawl; it must not keep an idle process alive.
        file.ageTimer.unref();
      }
      this.current = file;
      return file;
    } catch (err) {
      await fh.close().catch(() => undefined);
      await fsp.unlink(full).catch(() => undefined);
      throw new StorageError('WRITE_FAILED', full, 'cannot write warcinfo record', { cause: err });
    }
  }

  private async finishCurrent(): Promise<void> {
    const file = this.current;
    if (!file) return;
    this.current = null;
    this.finished.push(file.name);
    if (file.ageTimer) clearTimeout(file.ageTimer);
    try {
      await file.fh.sync();
      await file.fh.close();
    } catch (err) {
      await file.fh.close().catch(() => undefined);
      throw new StorageError('CLOSE_FAILED', file.path, 'cannot flush and close WARC file', { cause: err });
    }
    await this.rollover?.finished(file.path);
  }
}

function validateExchange(ex: WarcExchange): void {
  const bad = (why: string) => new StorageError('INVALID_INPUT', null, `invalid exchange for ${ex?.url}: ${why}`);
  if (!ex || typeof ex.url !== 'string' || ex.url.length === 0) throw bad('url is required');
  if (!(ex.fetchedAt instanceof Date) || Number.isNaN(ex.fetchedAt.getTime())) throw bad('fetchedAt is not a valid Date');
  if (!(ex.response?.body instanceof Uint8Array)) throw bad('response.body must be a Uint8Array');
  if (!Number.isInteger(ex.response.status) || ex.response.status < 100 || ex.response.status > 999) {
    throw bad(`status ${ex.response.status} is not a 3-digit HTTP status`);
  }
  if (!ex.request?.method || /\s/.test(ex.request.method)) throw bad('request.method must be a token');
  if (ex.recordId !== undefined && !/^<urn:[^\s<>]+>$/.test(ex.recordId)) throw bad(`recordId ${JSON.stringify(ex.recordId)} is not <urn:…>`);
}
