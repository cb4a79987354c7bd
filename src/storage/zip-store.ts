import { createHash } from 'node:crypto';
import { createReadStream, promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { writeFully } from './files';

// A ZIP writer for WACZ: every entry STORED (no compression), as WACZ wants
// for WARCs and gzipped indexes so a reader can seek into them by byte range,
// with ZIP64 fields wherever a size or an offset passes 4 GiB (a campaign's
// WARCs easily do). Entries are files streamed from disk or small buffers;
// nothing is held in memory but one chunk. No npm dependency does this: the
// ZIP libraries in our tree are transitive and deflate or buffer whole entries.

const MAX32 = 0xffffffff;
const UTF8_NAMES = 0x0800;

export type ZipSource = { name: string; file: string } | { name: string; data: Buffer };

interface Written {
  name: Buffer;
  crc: number;
  size: number;
  offset: number;
  zip64: boolean;
}

export interface ZipOptions {
  /** When entries are dated (DOS time, local fields as UTC); default now. */
  date?: Date;
  /** Write ZIP64 fields even when nothing needs them (tests use it to check readers accept them). */
  forceZip64?: boolean;
}

function dosDateTime(d: Date): { time: number; date: number } {
  const year = Math.max(1980, d.getUTCFullYear());
  return {
    time: (d.getUTCHours() << 11) | (d.getUTCMinutes() << 5) | Math.floor(d.getUTCSeconds() / 2),
    date: ((year - 1980) << 9) | ((d.getUTCMonth() + 1) << 5) | d.getUTCDate(),
  };
}

async function summarize(src: ZipSource): Promise<{ crc: number; size: number; sha256: string }> {
  const hash = createHash('sha256');
  if ('data' in src) return { crc: crc32(src.data), size: src.data.length, sha256: hash.update(src.data).digest('hex') };
  let crc = 0;
  let size = 0;
  for await (const chunk of createReadStream(src.file)) {
    crc = crc32(chunk as Buffer, crc);
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { crc, size, sha256: hash.digest('hex') };
}

function u64(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
}

/** One ZIP file being written; entries are added in order, then `close()` writes the central directory. */
export class StoredZipWriter {
  private pos = 0;
  private readonly written: Written[] = [];
  private readonly time: number;
  private readonly date: number;

  private constructor(
    private readonly fh: FileHandle,
    private readonly opts: ZipOptions,
  ) {
    ({ time: this.time, date: this.date } = dosDateTime(opts.date ?? new Date()));
  }

  /** Creates (or replaces) `file`. */
  static async open(file: string, opts: ZipOptions = {}): Promise<StoredZipWriter> {
    return new StoredZipWriter(await fsp.open(file, 'w'), opts);
  }

  private async put(b: Buffer): Promise<void> {
    await writeFully(this.fh, b, this.pos);
    this.pos += b.length;
  }

  /** Adds one entry; returns its size and SHA-256 (hex), taken in the same pass as its CRC. */
  async add(src: ZipSource): Promise<{ size: number; sha256: string }> {
    const name = Buffer.from(src.name, 'utf8');
    const { crc, size, sha256 } = await summarize(src);
    const zip64 = this.opts.forceZip64 === true || size >= MAX32;
    const offset = this.pos;
    const extra = zip64 ? Buffer.concat([Buffer.from([0x01, 0x00, 16, 0]), u64(size), u64(size)]) : Buffer.alloc(0);
    const head = Buffer.alloc(30);
    head.writeUInt32LE(0x04034b50, 0);
    head.writeUInt16LE(zip64 ? 45 : 20, 4);
    head.writeUInt16LE(UTF8_NAMES, 6);
    head.writeUInt16LE(0, 8); // stored
    head.writeUInt16LE(this.time, 10);
    head.writeUInt16LE(this.date, 12);
    head.writeUInt32LE(crc >>> 0, 14);
    head.writeUInt32LE(zip64 ? MAX32 : size, 18);
    head.writeUInt32LE(zip64 ? MAX32 : size, 22);
    head.writeUInt16LE(name.length, 26);
    head.writeUInt16LE(extra.length, 28);
    await this.put(Buffer.concat([head, name, extra]));
    if ('data' in src) await this.put(src.data);
    else {
      let copied = 0;
      for await (const chunk of createReadStream(src.file)) {
        await this.put(chunk as Buffer);
        copied += (chunk as Buffer).length;
      }
      // The file changed between the two reads: the CRC and size written above would be wrong.
      if (copied !== size) throw new Error(`${src.file} changed while it was being zipped (${size} then ${copied} bytes)`);
    }
    this.written.push({ name, crc, size, offset, zip64 });
    return { size, sha256 };
  }

  /** Writes the central directory, syncs and closes; returns the ZIP's size. */
  async close(): Promise<number> {
    try {
      const cdStart = this.pos;
      for (const w of this.written) {
        const bigOffset = this.opts.forceZip64 === true || w.offset >= MAX32;
        const fields = [...(w.zip64 ? [u64(w.size), u64(w.size)] : []), ...(bigOffset ? [u64(w.offset)] : [])];
        const body = Buffer.concat(fields);
        const extra = fields.length ? Buffer.concat([Buffer.from([0x01, 0x00, body.length, 0]), body]) : Buffer.alloc(0);
        const h = Buffer.alloc(46);
        h.writeUInt32LE(0x02014b50, 0);
        h.writeUInt16LE((3 << 8) | 45, 4); // made by: Unix, spec 4.5
        h.writeUInt16LE(w.zip64 || bigOffset ? 45 : 20, 6);
        h.writeUInt16LE(UTF8_NAMES, 8);
        h.writeUInt16LE(0, 10);
        h.writeUInt16LE(this.time, 12);
        h.writeUInt16LE(this.date, 14);
        h.writeUInt32LE(w.crc >>> 0, 16);
        h.writeUInt32LE(w.zip64 ? MAX32 : w.size, 20);
        h.writeUInt32LE(w.zip64 ? MAX32 : w.size, 24);
        h.writeUInt16LE(w.name.length, 28);
        h.writeUInt16LE(extra.length, 30);
        h.writeUInt32LE((0o100644 << 16) >>> 0, 38); // a regular file, rw-r--r--
        h.writeUInt32LE(bigOffset ? MAX32 : w.offset, 42);
        await this.put(Buffer.concat([h, w.name, extra]));
      }
      const cdSize = this.pos - cdStart;
      const n = this.written.length;
      const needZip64 = this.opts.forceZip64 === true || n >= 0xffff || cdStart >= MAX32 || cdSize >= MAX32;
      if (needZip64) {
        const eocd64At = this.pos;
        const r = Buffer.alloc(56);
        r.writeUInt32LE(0x06064b50, 0);
        u64(44).copy(r, 4);
        r.writeUInt16LE((3 << 8) | 45, 12);
        r.writeUInt16LE(45, 14);
        u64(n).copy(r, 24);
        u64(n).copy(r, 32);
        u64(cdSize).copy(r, 40);
        u64(cdStart).copy(r, 48);
        const loc = Buffer.alloc(20);
        loc.writeUInt32LE(0x07064b50, 0);
        u64(eocd64At).copy(loc, 8);
        loc.writeUInt32LE(1, 16);
        await this.put(Buffer.concat([r, loc]));
      }
      const end = Buffer.alloc(22);
      end.writeUInt32LE(0x06054b50, 0);
      end.writeUInt16LE(needZip64 ? 0xffff : n, 8);
      end.writeUInt16LE(needZip64 ? 0xffff : n, 10);
      end.writeUInt32LE(needZip64 ? MAX32 : cdSize, 12);
      end.writeUInt32LE(needZip64 ? MAX32 : cdStart, 16);
      await this.put(end);
      await this.fh.sync();
      return this.pos;
    } finally {
      await this.fh.close();
    }
  }

  /** Closes the file without finishing it (after a failure; the caller removes it). */
  async abort(): Promise<void> {
    await this.fh.close().catch(() => undefined);
  }
}
