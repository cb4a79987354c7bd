// The spool: where a worker writes the outputs of campaigns whose archive is
// in object storage. One folder per output location under the spool root,
// laid out as an output folder (warc/, index/, datasets/default/), so the
// writers work as they do for a folder. A finished file is moved into a
// `ready/` folder beside it: the rename is the durable mark that the file is
// whole and will not change (its name, which index lines and its own
// WARC-Filename carry, stays). The uploader (src/storage/spool-uploader.ts)
// stores ready files under their path without `ready/`, so the bucket holds
// the layout of an output folder.
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { syncDir } from './files';
import type { S3Settings } from './output-location';
import { StorageError } from './storage-error';

/** Where finished files wait for their upload, beside the files being written. */
export const READY_DIR = 'ready';
/** Where a finished file goes when the store holds its key with other content: kept, never uploaded over it. */
export const REFUSED_DIR = 'refused';
/** The output location a spool folder is for, so a sweep after a restart knows where its files go. */
export const LOCATION_FILE = 'location.json';

/**
 * An output location in object storage and the settings that reach it
 * (output.s3: endpoint, region, path-style; never credentials). Two
 * campaigns that name one location through different endpoints are two
 * targets: their files must not go to one store.
 */
export interface OutputTarget {
  dir: string;
  s3?: S3Settings | null;
}

/** The identity of a target: its location, and its settings when there are any. */
export function targetKeyOf(t: OutputTarget): string {
  const s3 = t.s3
    ? Object.fromEntries(
        Object.entries(t.s3)
          .filter(([, v]) => v !== undefined && v !== null)
          .sort(([a], [b]) => a.localeCompare(b)),
      )
    : {};
  return Object.keys(s3).length ? `${t.dir} ${JSON.stringify(s3)}` : t.dir;
}

/**
 * The spool folder of an output target: a readable name made from its
 * location (`s3://bucket/crawls/x` -> `bucket-crawls-x`) and a short hash of
 * the target, so two targets whose readable names meet still get folders of
 * their own.
 */
export function spoolDirOf(root: string, target: OutputTarget | string): string {
  const t = typeof target === 'string' ? { dir: target } : target;
  const readable =
    t.dir
      .replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^[-.]+|[-.]+$/g, '')
      .slice(0, 60)
      .replace(/[-.]+$/, '') || 'output';
  return path.join(path.resolve(root), `${readable}-${createHash('sha256').update(targetKeyOf(t)).digest('hex').slice(0, 12)}`);
}

/** Makes the spool folder of `target` and records the target in it (once). */
export async function prepareSpoolDir(spoolDir: string, target: OutputTarget): Promise<void> {
  const file = path.join(spoolDir, LOCATION_FILE);
  try {
    await fsp.mkdir(spoolDir, { recursive: true });
    if (
      await fsp.stat(file).then(
        () => true,
        () => false,
      )
    )
      return;
    // Written whole under another name, then renamed: a reader never sees half of it.
    const tmp = `${file}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, `${JSON.stringify({ location: target.dir, s3: target.s3 ?? null })}\n`);
    await fsp.rename(tmp, file);
    await syncDir(spoolDir);
  } catch (err) {
    throw new StorageError('OPEN_FAILED', spoolDir, 'cannot prepare the spool folder', { cause: err });
  }
}

/** The output target recorded in a spool folder, or null when it has none (not a spool folder). */
export async function spoolLocationOf(spoolDir: string): Promise<OutputTarget | null> {
  try {
    const v = JSON.parse(await fsp.readFile(path.join(spoolDir, LOCATION_FILE), 'utf8')) as { location?: unknown; s3?: unknown };
    if (typeof v.location !== 'string') return null;
    return { dir: v.location, s3: v.s3 && typeof v.s3 === 'object' ? (v.s3 as S3Settings) : null };
  } catch {
    return null;
  }
}

/**
 * Marks a finished file (flushed to disk and closed by its writer) by moving
 * it into `ready/` beside it; returns its new path. The folders are synced,
 * so after a machine crash the file is either still being written (a sweep
 * cuts it back) or ready, never lost between the two.
 */
export async function markFinished(file: string): Promise<string> {
  const dir = path.dirname(file);
  const readyDir = path.join(dir, READY_DIR);
  const to = path.join(readyDir, path.basename(file));
  try {
    await fsp.mkdir(readyDir, { recursive: true });
    await fsp.rename(file, to);
    await syncDir(readyDir);
    await syncDir(dir);
  } catch (err) {
    throw new StorageError('WRITE_FAILED', file, 'cannot mark the file finished', { cause: err });
  }
  return to;
}

/** The object key of a ready file: its path in the spool folder without `ready/` (`warc/ready/x.warc.gz` -> `warc/x.warc.gz`). */
export function objectKeyOf(spoolDir: string, readyFile: string): string {
  const parts = path.relative(spoolDir, readyFile).split(path.sep);
  if (parts.length < 2 || parts[parts.length - 2] !== READY_DIR || parts.some((p) => p === '..' || p === '')) {
    throw new StorageError('INVALID_INPUT', readyFile, `not a ready file of ${spoolDir}`);
  }
  return [...parts.slice(0, -2), parts[parts.length - 1]].join('/');
}

/** Where a ready file goes when the store refuses it: `refused/` beside `ready/`. */
export function refusedPathOf(readyFile: string): string {
  return path.join(path.dirname(path.dirname(readyFile)), REFUSED_DIR, path.basename(readyFile));
}

export interface SpoolContents {
  /** Finished files, waiting for their upload. */
  ready: string[];
  /** Files being written, or left by a writer that died. */
  open: string[];
}

/** The files of a spool folder, walked whole (refused files and the location file aside). */
export async function spoolContents(spoolDir: string): Promise<SpoolContents> {
  const out: SpoolContents = { ready: [], open: [] };
  const walk = async (dir: string, inReady: boolean): Promise<void> => {
    let entries;
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw new StorageError('READ_FAILED', dir, 'cannot list the spool folder', { cause: err });
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name === REFUSED_DIR || inReady) continue;
        await walk(full, e.name === READY_DIR);
      } else if (e.isFile() && !(dir === spoolDir && e.name.startsWith(LOCATION_FILE))) {
        (inReady ? out.ready : out.open).push(full);
      }
    }
  };
  await walk(spoolDir, false);
  return out;
}
