// A plain folder (a local disk, an NFS mount) as an object store: what the
// spool uploader's tests run against, and a real store for a campaign whose
// workers share a mount. Objects are files under the folder, a key's `/` a
// subfolder. Writes go to a temporary name in the target folder and appear
// under their key by a hard link, which fails when the key exists: nothing
// is ever replaced, and a reader never sees a half-written object.
import { randomBytes } from 'node:crypto';
import { constants as fsConstants, promises as fsp, type Dirent } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ObjectStore, StoredObject } from './object-store';
import { syncDir } from './files';
import { StorageError } from './storage-error';

/** Temporary names of writes in progress: never listed as objects. */
const TEMP_NAME = /^\.put-[0-9a-f]{16}\.tmp$/;

/**
 * Why `key` cannot name an object, or null. Keys are relative and use `/`:
 * no empty, `.` or `..` segment could be a file name that stays under the folder.
 */
export function objectKeyProblem(key: string): string | null {
  if (typeof key !== 'string' || key === '') return 'is empty';
  if (/[\0\\]/.test(key)) return 'holds a NUL or a backslash';
  const segments = key.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..')) return 'has an empty, "." or ".." segment (keys are relative, separated by single slashes)';
  if (TEMP_NAME.test(segments[segments.length - 1]!)) return 'is a name the store keeps for writes in progress';
  return null;
}

export class FolderObjectStore implements ObjectStore {
  readonly location: string;
  private readonly root: string;

  constructor(folder: string) {
    this.root = path.resolve(folder);
    this.location = this.root;
  }

  async putFile(key: string, file: string): Promise<void> {
    // copyFile: the kernel's copy (a reflink where the file system has them), never through this thread.
    await this.putVia(key, (tmp) => fsp.copyFile(file, tmp, fsConstants.COPYFILE_EXCL));
  }

  async putBytes(key: string, body: Uint8Array): Promise<void> {
    await this.putVia(key, (tmp) => fsp.writeFile(tmp, body, { flag: 'wx' }));
  }

  async read(key: string, range?: { start: number; length?: number }): Promise<Readable> {
    const file = this.pathOf(key);
    const start = range?.start ?? 0;
    const length = range?.length;
    if (!Number.isSafeInteger(start) || start < 0 || (length !== undefined && (!Number.isSafeInteger(length) || length < 0))) {
      throw new StorageError('INVALID_INPUT', null, `bad range ${JSON.stringify(range)} of ${key}`);
    }
    // Opened first, so a missing object is an error here rather than on the stream.
    const fh = await this.open(key, file);
    if (length === 0) {
      await fh.close();
      return Readable.from([]);
    }
    return fh.createReadStream({ start, ...(length === undefined ? {} : { end: start + length - 1 }) });
  }

  async size(key: string): Promise<number | null> {
    const file = this.pathOf(key);
    try {
      const st = await fsp.stat(file);
      return st.isFile() ? st.size : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw new StorageError('READ_FAILED', file, `cannot stat ${key}`, { cause: err });
    }
  }

  async remove(key: string): Promise<void> {
    const file = this.pathOf(key);
    try {
      await fsp.rm(file, { force: true });
    } catch (err) {
      throw new StorageError('WRITE_FAILED', file, `cannot delete ${key}`, { cause: err });
    }
  }

  /**
   * Every object whose key starts with `prefix` (a string prefix, as in S3:
   * `warc/` or `warc/crawl-`), in key order. Folders are walked in the order
   * their keys sort (a folder `a` sorts as `a/`), so the listing streams
   * without holding every key.
   */
  async *list(prefix: string): AsyncIterable<StoredObject> {
    if (/[\0\\]/.test(prefix) || prefix.split('/').some((s) => s === '.' || s === '..')) {
      throw new StorageError('INVALID_INPUT', null, `bad prefix ${JSON.stringify(prefix)}`);
    }
    const slash = prefix.lastIndexOf('/');
    const base = slash < 0 ? '' : prefix.slice(0, slash + 1);
    yield* this.walk(base, prefix);
  }

  private async *walk(keyDir: string, prefix: string): AsyncGenerator<StoredObject> {
    const dir = path.join(this.root, ...keyDir.split('/').filter(Boolean));
    let entries: Dirent[];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw new StorageError('READ_FAILED', dir, 'cannot list the store', { cause: err });
    }
    const sorted = entries
      .filter((e) => (e.isDirectory() || e.isFile()) && !TEMP_NAME.test(e.name))
      .map((e) => ({ e, key: `${keyDir}${e.name}${e.isDirectory() ? '/' : ''}` }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const { e, key } of sorted) {
      if (e.isDirectory()) {
        // Only folders that can hold a key with the prefix (or that the prefix goes into).
        if (key.startsWith(prefix) || prefix.startsWith(key)) yield* this.walk(key, prefix);
        continue;
      }
      if (!key.startsWith(prefix)) continue;
      const size = await this.size(key);
      if (size !== null) yield { key, size };
    }
  }

  private pathOf(key: string): string {
    const problem = objectKeyProblem(key);
    if (problem) throw new StorageError('INVALID_INPUT', null, `object key ${JSON.stringify(key)} ${problem}`);
    return path.join(this.root, ...key.split('/'));
  }

  private async open(key: string, file: string): Promise<FileHandle> {
    try {
      const fh = await fsp.open(file, 'r');
      if ((await fh.stat()).isFile()) return fh;
      await fh.close();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'EISDIR') throw new StorageError('READ_FAILED', file, `cannot read ${key}`, { cause: err });
    }
    throw new StorageError('OBJECT_MISSING', null, `no object ${key} in ${this.location}`);
  }

  /**
   * Writes through `fill` into a temporary file beside the target, flushed to
   * disk, then links it in under the key: the link fails if the key exists,
   * so two writers of one key (a retried upload) cannot both win, and the
   * loser compares sizes: the same size is this content stored before.
   */
  private async putVia(key: string, fill: (tmp: string) => Promise<void>): Promise<void> {
    const target = this.pathOf(key);
    const dir = path.dirname(target);
    const tmp = path.join(dir, `.put-${randomBytes(8).toString('hex')}.tmp`);
    try {
      await fsp.mkdir(dir, { recursive: true });
      await fill(tmp);
      const fh = await fsp.open(tmp, 'r+');
      let size: number;
      try {
        await fh.sync();
        size = (await fh.stat()).size;
      } finally {
        await fh.close();
      }
      try {
        await fsp.link(tmp, target);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const existing = await this.size(key);
        if (existing === size) return;
        throw new StorageError('OBJECT_EXISTS', null, `${key} exists in ${this.location} with ${existing} bytes, not these ${size}: not overwritten`);
      }
      await syncDir(dir);
    } catch (err) {
      if (err instanceof StorageError) throw err;
      throw new StorageError('WRITE_FAILED', target, `cannot store ${key}`, { cause: err });
    } finally {
      await fsp.unlink(tmp).catch(() => undefined);
    }
  }
}
