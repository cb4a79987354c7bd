import { constants as fsConstants, promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { StorageError } from './storage-error';

// File helpers every storage writer shares (WARCs, indexes, the dataset, the
// seal): many worker processes, possibly on different machines, write into
// the same folder, so each creates its own files under names nobody else
// can pick and never appends to anybody else's.

// ---------------------------------------------------------------------------
// Unique file names

// One counter per process, shared by every writer in it, so two writers opened
// in the same millisecond still get different names.
let fileSerial = 0;

function utcStamp(d: Date): string {
  const p = (n: number, w: number) => String(n).padStart(w, '0');
  return (
    p(d.getUTCFullYear(), 4) +
    p(d.getUTCMonth() + 1, 2) +
    p(d.getUTCDate(), 2) +
    p(d.getUTCHours(), 2) +
    p(d.getUTCMinutes(), 2) +
    p(d.getUTCSeconds(), 2) +
    p(d.getUTCMilliseconds(), 3)
  );
}

// Host names are normally [A-Za-z0-9.-] already; anything else would make an
// awkward (or, with '/', impossible) file name.
function safeHostname(): string {
  return os.hostname().replace(/[^A-Za-z0-9.-]/g, '_') || 'unknown-host';
}

/**
 * `<prefix>-<UTC yyyymmddHHMMSSmmm>-<hostname>-<pid>-<5-digit serial>`: host +
 * pid separate processes and machines, the per-process serial separates files
 * of one process. Callers still create with O_EXCL, which turns the remaining
 * risk (two machines sharing a host name) into a retry rather than a clobber.
 */
export function uniqueFileStem(prefix: string, now: Date = new Date()): string {
  fileSerial += 1;
  return `${prefix}-${utcStamp(now)}-${safeHostname()}-${process.pid}-${String(fileSerial).padStart(5, '0')}`;
}

/** Who wrote a file named by uniqueFileStem: the host name (as made safe) and pid in its name. */
export interface FileWriter {
  host: string;
  pid: number;
}

/**
 * The writer named in a file name made by uniqueFileStem (with any suffix),
 * or null for another name. Read from the right: a prefix (a campaign ID)
 * may hold dashes and digits, a host name dashes, but the stamp has 17
 * digits and the serial at least 5.
 */
export function writerOfFile(name: string): FileWriter | null {
  const m = /^.*-\d{17}-([A-Za-z0-9._-]+)-(\d+)-\d{5,}(\.[A-Za-z0-9.]+)?$/.exec(name);
  if (!m) return null;
  const pid = Number(m[2]);
  return Number.isSafeInteger(pid) && pid > 0 ? { host: m[1]!, pid } : null;
}

/** This machine's host name as file names carry it. */
/** Whether a process with this pid exists on this machine (one of another user's too). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function thisHost(): string {
  return safeHostname();
}

// Names of the files this process created: a file with this process's pid
// in its name but not among them was left by an earlier process that had
// the same pid (a container's worker is often pid 1 every time).
const createdHere = new Set<string>();

/** Whether this process created a file of this name (createUniqueFile). */
export function createdByThisProcess(name: string): boolean {
  return createdHere.has(name);
}

/**
 * How the writers of an output in object storage finish files
 * (src/storage/spool.ts): by age as well as by size, so a slow crawl's pages
 * still reach the store soon, and each finished file handed on for its upload.
 */
export interface FileRollover {
  /** A file is finished once it is this old (ms since it was created), written to since or not. */
  maxFileAgeMs: number;
  /** Called with each finished file's path once it is flushed to disk and closed; does not throw. */
  finished(file: string): Promise<void>;
}

const MAX_NAME_ATTEMPTS = 20;

/** Creates a new file that did not exist before (O_EXCL), retrying with a fresh name on collision. */
export async function createUniqueFile(dir: string, prefix: string, suffix: string): Promise<{ name: string; path: string; fh: FileHandle }> {
  let lastErr: unknown;
  for (let attempt = 0; attempt < MAX_NAME_ATTEMPTS; attempt++) {
    const name = `${uniqueFileStem(prefix)}${suffix}`;
    const full = path.join(dir, name);
    try {
      const fh = await fsp.open(full, 'wx');
      createdHere.add(name);
      return { name, path: full, fh };
    } catch (err) {
      lastErr = err;
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new StorageError('OPEN_FAILED', full, 'cannot create storage file', { cause: err });
      }
    }
  }
  throw new StorageError('OPEN_FAILED', dir, `no unused ${prefix}*${suffix} name after ${MAX_NAME_ATTEMPTS} attempts`, {
    cause: lastErr,
  });
}

/** Makes `dir` (recursively) and checks that this process may create files in it. */
export async function ensureWritableDir(dir: string): Promise<void> {
  try {
    await fsp.mkdir(dir, { recursive: true });
    await fsp.access(dir, fsConstants.W_OK | fsConstants.X_OK);
  } catch (err) {
    throw new StorageError('OPEN_FAILED', dir, 'storage directory is not writable', { cause: err });
  }
}

/** Writes all of `buf` at `position`, looping over short writes. */
export async function writeFully(fh: FileHandle, buf: Uint8Array, position: number | null): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position === null ? null : position + done);
    if (bytesWritten <= 0) throw new Error('write returned 0 bytes');
    done += bytesWritten;
  }
}

/**
 * Flushes a folder's entries to disk, so a file created, linked or renamed in
 * it survives a machine crash. Some file systems refuse fsync on a folder
 * (EINVAL): their entries are as durable as they get.
 */
export async function syncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync().catch(() => undefined);
  } finally {
    await fh.close();
  }
}
