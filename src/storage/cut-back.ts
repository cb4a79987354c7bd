// What a killed writer leaves is a file whose last record was being written:
// every record before it is whole (each went out in one write, after the
// previous one completed). Before such a file is uploaded it is cut back to
// its last whole record, so an object in the store never ends in a fragment.
// A WARC's records are gzip members (one per record, src/storage/warc-writer.ts):
// a member is whole when it inflates to its end and its trailer's CRC-32 and
// length match what came out. An index or dataset file's records are lines.
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import zlib from 'node:zlib';
import { StorageError } from './storage-error';

const CHUNK = 1 << 20;
/** A gzip header longer than this (a stored file name or comment) is not one of ours, nor a whole member. */
const MAX_HEADER = 64 * 1024;

/** Cuts `file` back to its last whole record; returns its size after, or null for a file of a kind it does not know (nothing is cut). */
export async function cutBackToWholeRecords(file: string): Promise<number | null> {
  const end = file.endsWith('.warc.gz') ? await wholeGzipMembersEnd(file) : file.endsWith('.jsonl') ? await wholeLinesEnd(file) : null;
  if (end === null) return null;
  try {
    const size = (await fsp.stat(file)).size;
    if (end < size) await fsp.truncate(file, end);
  } catch (err) {
    throw new StorageError('WRITE_FAILED', file, `cannot cut the file back to its last whole record at ${end}`, { cause: err });
  }
  return end;
}

/** Where `file`'s last whole gzip member ends (0 when even the first is not whole). */
export async function wholeGzipMembersEnd(file: string): Promise<number> {
  return withFile(file, async (fh, size) => {
    let pos = 0;
    while (pos < size) {
      const end = await memberEnd(fh, pos, size);
      if (end === null) break;
      pos = end;
    }
    return pos;
  });
}

/** Where `file`'s last whole line ends: just after its last '\n' (0 when it has none). */
export async function wholeLinesEnd(file: string): Promise<number> {
  return withFile(file, async (fh, size) => {
    const buf = Buffer.alloc(Math.min(CHUNK, size));
    for (let end = size; end > 0;) {
      const start = Math.max(0, end - buf.length);
      const { bytesRead } = await fh.read(buf, 0, end - start, start);
      const nl = buf.subarray(0, bytesRead).lastIndexOf(10);
      if (nl !== -1) return start + nl + 1;
      end = start;
    }
    return 0;
  });
}

async function withFile<T>(file: string, fn: (fh: FileHandle, size: number) => Promise<T>): Promise<T> {
  let fh: FileHandle;
  try {
    fh = await fsp.open(file, 'r');
  } catch (err) {
    throw new StorageError('READ_FAILED', file, 'cannot open the file to find its last whole record', { cause: err });
  }
  try {
    return await fn(fh, (await fh.stat()).size);
  } catch (err) {
    if (err instanceof StorageError) throw err;
    throw new StorageError('READ_FAILED', file, 'cannot read the file to find its last whole record', { cause: err });
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** The end of the gzip member at `start` when it is whole, else null. */
async function memberEnd(fh: FileHandle, start: number, size: number): Promise<number | null> {
  const head = Buffer.alloc(Math.min(MAX_HEADER, size - start));
  const { bytesRead } = await fh.read(head, 0, head.length, start);
  const headerLength = gzipHeaderLength(head.subarray(0, bytesRead));
  if (headerLength === null) return null;
  const deflated = await inflateFrom(fh, start + headerLength, size);
  if (!deflated) return null;
  const trailerAt = start + headerLength + deflated.consumed;
  if (trailerAt + 8 > size) return null;
  const trailer = Buffer.alloc(8);
  await fh.read(trailer, 0, 8, trailerAt);
  if (trailer.readUInt32LE(0) !== deflated.crc || trailer.readUInt32LE(4) !== deflated.isize) return null;
  return trailerAt + 8;
}

/** RFC 1952 member header: its length, or null if `b` does not start with a whole one. */
export function gzipHeaderLength(b: Buffer): number | null {
  if (b.length < 10 || b[0] !== 0x1f || b[1] !== 0x8b || b[2] !== 8) return null;
  const flags = b[3]!;
  if (flags & 0xe0) return null; // reserved bits set
  let at = 10;
  if (flags & 4) {
    if (at + 2 > b.length) return null;
    at += 2 + b.readUInt16LE(at);
  }
  for (const bit of [8, 16]) {
    if (!(flags & bit)) continue;
    const nul = b.indexOf(0, at);
    if (nul === -1) return null;
    at = nul + 1;
  }
  if (flags & 2) at += 2;
  return at <= b.length ? at : null;
}

/**
 * Inflates the raw deflate stream at `start`, a chunk at a time: how many
 * bytes it took (zlib stops at the stream's end and counts only what it
 * used), and the CRC-32 and length (mod 2^32) of what came out. Null when
 * the stream is broken or the file ends first.
 */
async function inflateFrom(fh: FileHandle, start: number, size: number): Promise<{ consumed: number; crc: number; isize: number } | null> {
  const inflate = zlib.createInflateRaw();
  let crc = 0;
  let isize = 0;
  inflate.on('data', (d: Buffer) => {
    crc = zlib.crc32(d, crc);
    isize = (isize + d.length) % 2 ** 32;
  });
  let settled = false;
  const ended = new Promise<boolean>((resolve) => {
    inflate.once('end', () => resolve(true));
    inflate.once('error', () => resolve(false));
  }).finally(() => {
    settled = true;
  });
  try {
    for (let pos = start; pos < size && !settled;) {
      // A fresh buffer each time: zlib may still hold the last one when its stream ends mid-chunk.
      const buf = Buffer.allocUnsafe(Math.min(CHUNK, size - pos));
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      await Promise.race([new Promise<void>((resolve) => inflate.write(buf.subarray(0, bytesRead), () => resolve())), ended]);
    }
    if (!settled) inflate.end();
    return (await ended) ? { consumed: inflate.bytesWritten, crc: crc >>> 0, isize } : null;
  } finally {
    inflate.destroy();
  }
}
