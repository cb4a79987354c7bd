import { createHash } from 'node:crypto';
import { createReadStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { WARCParser } from 'warcio';
import { StorageError } from './storage-error';
import { base32 } from './warc-writer';

// Reads WARC files back (tests, audits, re-processing). Parsing is warcio.js's;
// digests are recomputed here with node:crypto rather than trusted, so this is
// a check of what the writer put on disk, not of what it believed it wrote.

export interface WarcReadRecord {
  /** Basename of the WARC file. */
  file: string;
  /** Byte offset of the record's gzip member in the file. */
  offset: number;
  /** Compressed length of that gzip member. */
  length: number;
  type: string;
  targetUri?: string;
  recordId: string;
  /** null when the record has no WARC-Payload-Digest, its algorithm is unknown, or it is a revisit (the payload is elsewhere). */
  payloadDigestOk: boolean | null;
  /** false when WARC-Block-Digest is missing, unsupported or wrong. */
  blockDigestOk: boolean;
  /** WARC headers (name case as written; a repeated name keeps its last value). */
  headers: Record<string, string>;
  /** HTTP headers of response/request records, names lower-cased. */
  httpHeaders?: Record<string, string>;
  /** HTTP status line of response/request records. */
  statusLine?: string;
  /** The HTTP entity for application/http records, else the whole block. */
  payload?: Buffer;
}

export interface ReadWarcOptions {
  /**
   * What to do with an incomplete last record, the one thing a crashed writer
   * can leave behind: 'skip' (default) drops it, 'throw' raises CORRUPT.
   */
  truncatedTail?: 'skip' | 'throw';
}

const HTTP_TYPES = new Set(['response', 'request', 'revisit']);
const CRLFCRLF = Buffer.from('\r\n\r\n');

/** All records of all `*.warc.gz` files in `dir` (not recursive), files in name order. */
export async function readWarcDir(dir: string, opts: ReadWarcOptions = {}): Promise<WarcReadRecord[]> {
  let names: string[];
  try {
    names = (await fsp.readdir(dir)).filter((n) => n.endsWith('.warc.gz')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new StorageError('READ_FAILED', dir, 'cannot list WARC directory', { cause: err });
  }
  const out: WarcReadRecord[] = [];
  for (const name of names) out.push(...(await readWarcFile(path.join(dir, name), opts)));
  return out;
}

/**
 * A WARC header's value as read: warcio.js joins a repeated header with
 * ",,,", and its own iterator, which splits them again, throws for a WARC-*
 * name other than WARC-Concurrent-To and WARC-Protocol, so a WARC-Target-URI
 * holding ",,," could not be read. Those names are never repeated: their
 * value is kept whole. Of a repeated one, the last, as before.
 */
function lastValue(name: string, value: string): string {
  const lower = name.toLowerCase();
  if (lower.startsWith('warc-') && lower !== 'warc-concurrent-to' && lower !== 'warc-protocol') return value;
  const at = value.lastIndexOf(',,,');
  return at > 0 ? value.slice(at + 3) : value;
}

/** All records of one WARC file. */
export async function readWarcFile(file: string, opts: ReadWarcOptions = {}): Promise<WarcReadRecord[]> {
  const name = path.basename(file);
  const out: WarcReadRecord[] = [];
  let size: number;
  try {
    size = (await fsp.stat(file)).size;
  } catch (err) {
    throw new StorageError('READ_FAILED', file, 'cannot stat WARC file', { cause: err });
  }
  // warcio.js stops quietly at a gzip member it cannot finish; comparing where
  // the last whole record ended with the file size is how we notice.
  let parsedEnd = 0;
  const stream = createReadStream(file);
  try {
    // parseHttp off: the block stays raw, so the block digest is computed over
    // the exact stored bytes rather than over re-serialised headers.
    const parser = new WARCParser(stream, { keepHeadersCase: true, parseHttp: false });
    for await (const record of parser) {
      const offset = parser.offset;
      const headers: Record<string, string> = {};
      for (const [k, v] of Map.prototype.entries.call(record.warcHeaders.headers) as IterableIterator<[string, string]>) headers[k] = lastValue(k, v);
      const declared = Number(record.warcHeaders.headers.get('Content-Length') ?? NaN);
      const block = Buffer.from(await record.readFully(false));
      // A short block means the data ran out: this is the truncated tail.
      if (block.length !== declared) break;
      const length = parser.recordLength;
      parsedEnd = offset + length;
      const type = record.warcType ?? '';
      const rec: WarcReadRecord = {
        file: name,
        offset,
        length,
        type,
        recordId: record.warcHeaders.headers.get('WARC-Record-ID') ?? '',
        blockDigestOk: digestMatches(record.warcHeaders.headers.get('WARC-Block-Digest'), block) === true,
        payloadDigestOk: null,
        headers,
      };
      const target = record.warcTargetURI;
      if (target) rec.targetUri = target;

      let payload: Buffer | null = block;
      if (HTTP_TYPES.has(type) && /application\/http/i.test(record.warcContentType ?? '')) {
        const split = splitHttp(block);
        payload = split ? split.payload : null;
        if (split) {
          rec.statusLine = split.statusLine;
          rec.httpHeaders = split.headers;
        }
      }
      if (payload) rec.payload = payload;
      const declaredPayload = record.warcHeaders.headers.get('WARC-Payload-Digest');
      // A revisit's payload is in the record it refers to: its digest cannot be checked here.
      if (declaredPayload && type !== 'revisit') rec.payloadDigestOk = payload ? digestMatches(declaredPayload, payload) : false;
      out.push(rec);
    }
  } catch (err) {
    if (err instanceof StorageError) throw err;
    throw new StorageError('CORRUPT', file, 'cannot parse WARC file', { cause: err });
  } finally {
    stream.destroy();
  }
  if (parsedEnd < size && (opts.truncatedTail ?? 'skip') === 'throw') {
    throw new StorageError('CORRUPT', file, `${size - parsedEnd} bytes after the last complete record at ${parsedEnd}`);
  }
  return out;
}

function splitHttp(block: Buffer): { statusLine: string; headers: Record<string, string>; payload: Buffer } | null {
  const end = block.indexOf(CRLFCRLF);
  if (end < 0) return null;
  const lines = block.subarray(0, end).toString('utf8').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { statusLine: lines[0] ?? '', headers, payload: block.subarray(end + 4) };
}

const ALGOS: Record<string, string> = { sha1: 'sha1', 'sha-1': 'sha1', sha256: 'sha256', 'sha-256': 'sha256' };

/** true/false for a checkable digest header, null when absent or of an unknown algorithm. */
export function digestMatches(declared: string | null | undefined, data: Uint8Array): boolean | null {
  if (!declared) return null;
  const colon = declared.indexOf(':');
  if (colon < 0) return null;
  const algo = ALGOS[declared.slice(0, colon).toLowerCase()];
  if (!algo) return null;
  const value = declared.slice(colon + 1).trim();
  const raw = createHash(algo).update(data).digest();
  // Both encodings are in the wild: base32 (Heritrix, warcio) and hex.
  return value.toUpperCase() === base32(raw) || value.toLowerCase() === raw.toString('hex');
}

/** A response record read back on its own: what a rendered page's shared file is answered from (src/redis/captures.ts). */
export interface StoredResponse {
  targetUri: string | null;
  status: number;
  /** HTTP headers as stored, names lower-cased (a repeated name: its values joined with ', ', Set-Cookie with '\n'). */
  headers: Record<string, string>;
  payload: Buffer;
  /** Whether the payload is the one WARC-Payload-Digest names: a record read at a stale offset is not taken for another. */
  payloadDigestOk: boolean;
}

/** The gzip member of one record: `length` bytes at `offset` of `file`. */
async function memberAt(file: string, offset: number, length: number): Promise<Buffer> {
  const member = Buffer.alloc(length);
  let fh: Awaited<ReturnType<typeof fsp.open>> | null = null;
  try {
    fh = await fsp.open(file, 'r');
    const { bytesRead } = await fh.read(member, 0, length, offset);
    if (bytesRead !== length) throw new Error(`${bytesRead} of ${length} bytes at ${offset}`);
  } catch (err) {
    throw new StorageError('READ_FAILED', file, `cannot read the record at ${offset}`, { cause: err });
  } finally {
    await fh?.close().catch(() => undefined);
  }
  return member;
}

/**
 * The resource record (a screenshot, a page's text) whose gzip member is
 * `length` bytes at `offset` of `file`: its URI and block. READ_FAILED when
 * the file cannot be read there, CORRUPT when the bytes are not one resource record.
 */
export async function readResourceAt(file: string, offset: number, length: number): Promise<{ targetUri: string | null; contentType: string | null; block: Buffer }> {
  const member = await memberAt(file, offset, length);
  try {
    const record = await new WARCParser(Readable.from([member])).parse();
    if (!record || record.warcType !== 'resource') throw new Error(`not a resource record (${record?.warcType ?? 'nothing'})`);
    return { targetUri: record.warcTargetURI ?? null, contentType: record.warcContentType ?? null, block: Buffer.from(await record.readFully(false)) };
  } catch (err) {
    throw new StorageError('CORRUPT', file, `no resource record at ${offset}`, { cause: err });
  }
}

/**
 * The response record whose gzip member is `length` bytes at `offset` of
 * `file` (a WarcLocation). Throws StorageError READ_FAILED when the file
 * cannot be read there (not on this machine, cut short), CORRUPT when the
 * bytes are not one response record.
 */
export async function readResponseAt(file: string, offset: number, length: number): Promise<StoredResponse> {
  const member = await memberAt(file, offset, length);
  try {
    const parser = new WARCParser(Readable.from([member]));
    const record = await parser.parse();
    if (!record || record.warcType !== 'response' || !record.httpHeaders) throw new Error(`not a response record (${record?.warcType ?? 'nothing'})`);
    const status = Number(record.httpHeaders.statusCode);
    if (!Number.isInteger(status)) throw new Error(`no status in ${JSON.stringify(record.httpHeaders.statusline)}`);
    const headers: Record<string, string> = {};
    for (const [rawName, value] of record.httpHeaders.headers) {
      const name = rawName.toLowerCase();
      headers[name] = name in headers ? `${headers[name]}${name === 'set-cookie' ? '\n' : ', '}${value}` : value;
    }
    // Raw: the stored payload is already decoded and unchunked (its encoding headers are renamed, src/storage/warc-writer.ts).
    const payload = Buffer.from(await record.readFully(false));
    return {
      targetUri: record.warcTargetURI ?? null,
      status,
      headers,
      payload,
      payloadDigestOk: digestMatches(record.warcPayloadDigest, payload) === true,
    };
  } catch (err) {
    throw new StorageError('CORRUPT', file, `no response record at ${offset}`, { cause: err });
  }
}
