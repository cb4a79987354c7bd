import { constants as bufferConstants } from 'node:buffer';
import { hash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { RenderReason } from '../browser/adaptive';
import { createUniqueFile, ensureWritableDir, writeFully, type FileRollover } from './files';
import { StorageError } from './storage-error';
import { SerialQueue } from './serial-queue';

// The crawl index: one JSON object per line, one file per process (same
// collision-free naming as the WARC files), so concurrent processes never
// share a file and need no locking. Page bodies live in the WARCs only; an
// entry points at its response record through `warc`.

/**
 * What happened to a URL taken from a frontier (docs/crawling-rules.md), a
 * closed union: a new outcome is a compile error until every switch over
 * outcomes handles it (activities/pipeline/outcome.ts holds the constants
 * call sites use). Failures ('error', 'refused', 'http-error',
 * 'robots-unavailable', 'host-budget-exhausted', 'budget-exhausted') carry
 * `error.code`; an 'http-error' is a final 4xx/5xx response, stored in the
 * WARC, with code `HTTP_<status>`. Revisit campaigns add 'not-modified' (a
 * 304) and 'gone' (a page that kept answering 404/410). Indexes of other
 * versions may hold other strings: readers count those as failed.
 */
export type IndexOutcome =
  | 'fetched'
  | 'duplicate'
  | 'redirect'
  | 'sitemap'
  | 'http-error'
  | 'error'
  | 'refused'
  | 'robots-disallowed'
  | 'robots-unavailable'
  | 'host-budget-exhausted'
  | 'budget-exhausted'
  | 'skipped-content-type'
  | 'not-modified'
  | 'gone'
  /** An HTML page whose link extraction outlasted content.maxParseMs: stored, the links found until then followed. */
  | 'parse-timeout'
  /** An RSS, Atom or JSON feed fetched for its item links (found by a page's <link rel=alternate>): a request, not a page. */
  | 'feed'
  /** An embed not requested: the campaign's budgets.maxEmbeds is spent (pages go on). */
  | 'embed-budget-exhausted';

export interface IndexEntry {
  url: string;
  /** URL fingerprint. */
  fp: string;
  /**
   * Id of the attempt that wrote this line. The commit that counted stores
   * its attempt's id in Redis, so the sealed index keeps exactly the
   * committed line of each URL (src/storage/seal.ts). Absent in lines of
   * older releases.
   */
  attemptId?: string;
  host: string;
  campaignId: string;
  status: number | null;
  outcome: IndexOutcome;
  contentType: string | null;
  /** Size of the stored body. */
  bytes: number;
  /** `sha256:<hex>` of the stored body; see contentHashOf. */
  contentHash: string | null;
  /** ISO 8601. */
  fetchedAt: string;
  fetchMs?: number;
  depth: number;
  referrer: string | null;
  warc?: { file: string; offset: number; length: number };
  error?: { code: string; message: string };
  /** For outcome "redirect": where the 3xx pointed (the target is its own frontier entry and index line). */
  redirectTo?: string;
  truncated?: string | null;
  /** What the frontier entry was: absent for pages; `embed`: a page requisite (a stylesheet, script, image, font…). */
  kind?: 'sitemap' | 'sitemap-child' | 'feed' | 'embed';
  /**
   * How the URL was reached, Heritrix's hop path: one letter a hop from a
   * seed ('' for a seed): L a link (or a URL a sitemap or feed lists), E an
   * embed (a page requisite), R a redirect, P a sitemap found from robots.txt
   * or the root. Paths past 40 hops keep their last 40, prefixed by how many were cut (`37+LLE…`).
   */
  hops?: string;
  /** Requisites of the page (or stylesheet) past budgets.maxEmbedsPerPage, not fetched. */
  embedsDropped?: number;
  /**
   * render: browser or auto: how the page's render ended (docs/rendering.md);
   * absent for pages not rendered. `reason` (auto only): why it was rendered
   * (sample, pattern-differs, host-differs, recheck: src/browser/adaptive.ts).
   */
  render?: {
    done: 'quiet' | 'deadline' | 'failed';
    ms: number;
    requests: number;
    error?: { code: string; message: string };
    reason?: RenderReason;
    /** browser.scroll: viewport steps taken and why scrolling stopped (`bottom`, `steps`, `deadline`). */
    scroll?: { steps: number; end: string };
    /**
     * browser.scrollBoxes, expand, autoclick, autoplay: rounds run and how they ended
     * (`done`, `rounds`, `deadline`), inner-box scrolling steps and boxes,
     * details/tabs/accordions opened, clicks (and of them those that tried to
     * leave the page), media played, links the behaviors found (src/browser/behaviors.ts).
     */
    behaviors?: { rounds: number; end: string; boxSteps?: number; boxes?: number; opened?: number; clicks?: number; navigations?: number; played?: number; links: number };
    /** browser.text: where the page's text is (its `urn:text:` resource record), for the WACZ's page lists. */
    text?: { file: string; offset: number; length: number };
    /** Other frames whose DOM was read for links. */
    frames?: number;
  };
  /** For feeds (and pages that turned out to be one): the feed's format, items' links, links new to the frontier, parse problems. */
  feed?: { kind: string; links: number; added: number; truncated: boolean; errors: string[] };
  /** An HTML page's <title>, whitespace collapsed, at most 300 characters (the rendered DOM's for a rendered page); absent without one. */
  title?: string;
  /** <link rel=canonical> of an HTML page, normalised. */
  canonical?: string | null;
  /** Content dedup verdict for a page whose body matched an earlier one. */
  duplicateOf?: { url: string; kind: 'exact' | 'near'; distance: number };
  /**
   * The response was stored as a WARC revisit record (its payload digest
   * was stored before): the response record it refers to. `bytes` is the
   * payload, not stored again.
   */
  revisit?: { url: string; date: string; recordId: string | null };
  /** Revisit campaigns: what this visit found against the last (src/revisit/adapt.ts): new, changed, unchanged, missing, gone, kept. */
  change?: string;
  /** Discovered links dropped by the spider-trap rules: counts by code, plus a few samples (URLs cut to 200 characters). */
  rejectedLinks?: { counts: Record<string, number>; samples: { code: string; url: string; length: number }[] };
  /** Links of the page (its own and its handler's) past budgets.maxLinksPerPage, not followed. */
  linksDropped?: number;
  /** The handler route the page was enqueued with (absent: the default route). */
  label?: string;
  /** Dataset items the campaign's handler returned for this page (absent without a handler). */
  items?: number;
  /** For sitemaps: URLs listed, URLs new to the frontier, child sitemaps, parse problems. */
  sitemap?: { kind: string; urls: number; added: number; sitemaps: number; truncated: false | 'bytes' | 'count'; errors: string[] };
}

/** The `contentHash` value for a stored body. */
export function contentHashOf(body: Uint8Array): string {
  return `sha256:${hash('sha256', body, 'hex')}`;
}

export interface IndexWriterOptions {
  dir: string;
  /** File name prefix; default 'index'. */
  prefix?: string;
  /** Start a new file once the current one has reached this size (at a line boundary); default: never. */
  maxFileBytes?: number;
  /** An output in object storage: files finished by age too, each handed on for its upload (see WarcWriterOptions.rollover). */
  rollover?: FileRollover;
}

export class IndexWriter {
  // Appends run one after another so each line is one complete write and
  // close() knows when the last one has landed.
  private readonly queue = new SerialQueue();
  private closed = false;
  /**
   * Bytes of whole lines in the current file: every append is written at
   * this offset (not at the descriptor's position, which a failed write has
   * moved past a fragment), and a failed append is cut back to it.
   */
  private size = 0;
  /** Finishes the current file at its age bound (rollover only). */
  private ageTimer: NodeJS.Timeout | null = null;
  private readonly maxFileBytes: number | null;
  private readonly rollover: FileRollover | null;

  private constructor(
    private readonly dir: string,
    private readonly prefix: string,
    /** The current file; null after a failed write that could not be cut back, or once it is finished (the next append starts a new file). */
    private fh: FileHandle | null,
    private currentPath: string,
    opts: IndexWriterOptions,
  ) {
    this.maxFileBytes = opts.maxFileBytes ?? null;
    this.rollover = opts.rollover ?? null;
    if (fh) this.startAgeTimer(fh);
  }

  static async open(opts: IndexWriterOptions): Promise<IndexWriter> {
    if (!opts.dir) throw new StorageError('INVALID_INPUT', null, 'IndexWriter needs a dir');
    const prefix = opts.prefix ?? 'index';
    if (!/^[A-Za-z0-9._-]+$/.test(prefix)) {
      throw new StorageError('INVALID_INPUT', null, `index prefix must match [A-Za-z0-9._-]+, got ${JSON.stringify(prefix)}`);
    }
    if (opts.maxFileBytes !== undefined && !(opts.maxFileBytes > 0)) throw new StorageError('INVALID_INPUT', null, `maxFileBytes must be positive, got ${opts.maxFileBytes}`);
    if (opts.rollover && !(opts.rollover.maxFileAgeMs > 0)) throw new StorageError('INVALID_INPUT', null, `maxFileAgeMs must be positive, got ${opts.rollover.maxFileAgeMs}`);
    const dir = path.resolve(opts.dir);
    await ensureWritableDir(dir);
    const { path: full, fh } = await createUniqueFile(dir, prefix, '.jsonl');
    return new IndexWriter(dir, prefix, fh, full, opts);
  }

  /**
   * Absolute path of this process's index file: the one being written, or
   * last written. A failed write that cannot be cut back off abandons its
   * file (see recoverFromFailedWrite), so a writer may leave several.
   */
  get path(): string {
    return this.currentPath;
  }

  /** Basename of the index file. */
  get file(): string {
    return path.basename(this.path);
  }

  append(e: IndexEntry): Promise<void> {
    return this.appendAll([e], 'index entry');
  }

  /**
   * Several lines in one write (a page's dataset items): JSON.stringify
   * escapes every newline inside strings, so each object is exactly one
   * line, and the lines go out in one write, so a crash leaves at most one
   * partial last line, which readIndex skips. A write that fails (disk
   * full) is cut back off before the error is raised, so the next append
   * starts on a line boundary and no committed line is glued to a fragment.
   */
  appendAll(lines: readonly { url: string }[], what = 'index entry'): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    return this.queue.run(async () => {
      if (this.closed) throw new StorageError('CLOSED', this.path, 'IndexWriter is closed');
      const buf = Buffer.from(lines.map((l) => `${JSON.stringify(l)}\n`).join(''), 'utf8');
      // As the WARC writer rotates: a file ends at most one write past the bound, never inside a write.
      if (this.fh && this.maxFileBytes !== null && this.size >= this.maxFileBytes) await this.finishCurrent();
      const fh = this.fh ?? (await this.startFile());
      const offset = this.size;
      try {
        await writeFully(fh, buf, offset);
      } catch (err) {
        await this.recoverFromFailedWrite(fh, offset);
        throw new StorageError('WRITE_FAILED', this.path, `cannot append ${what} for ${lines[0]!.url}`, { cause: err });
      }
      this.size = offset + buf.length;
    });
  }

  /** Finishes the current file after the appends queued before (the next append starts a new one); see WarcWriter.finishFile. */
  finishFile(): Promise<void> {
    return this.queue.run(() => (this.closed ? Promise.resolve() : this.finishCurrent()));
  }

  /** Waits for queued appends, flushes to disk and closes. */
  close(): Promise<void> {
    return this.queue.run(async () => {
      if (this.closed) return;
      this.closed = true;
      await this.finishCurrent();
    });
  }

  /**
   * Flushes the current file to disk and closes it; with a rollover, hands
   * it on, or removes it when it holds no line (there is nothing to upload).
   */
  private async finishCurrent(): Promise<void> {
    const fh = this.fh;
    this.fh = null;
    this.stopAgeTimer();
    if (!fh) return;
    try {
      await fh.sync();
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw new StorageError('CLOSE_FAILED', this.path, 'cannot flush index file', { cause: err });
    }
    await fh.close();
    if (!this.rollover) return;
    if (this.size === 0) await fsp.unlink(this.path).catch(() => undefined);
    else await this.rollover.finished(this.path);
  }

  private startAgeTimer(fh: FileHandle): void {
    if (!this.rollover) return;
    this.ageTimer = setTimeout(
      () => void this.queue.run(() => (this.fh === fh && !this.closed ? this.finishCurrent() : Promise.resolve())).catch(() => undefined),
      this.rollover.maxFileAgeMs,
    );
    // The bound is for a running crawl; it must not keep an idle process alive.
    this.ageTimer.unref();
  }

  private stopAgeTimer(): void {
    if (this.ageTimer) clearTimeout(this.ageTimer);
    this.ageTimer = null;
  }

  // Cut a partial write back off so the next line starts at a line boundary
  // (as the WARC writer does); if even that fails, abandon the file: its
  // fragment stays an unterminated last line, which readers skip, and the
  // next append goes to a new file.
  private async recoverFromFailedWrite(fh: FileHandle, goodSize: number): Promise<void> {
    try {
      await fh.truncate(goodSize);
    } catch {
      // Not handed on: its fragment makes it no finished file (a spooled one is cut back by the sweep after this process).
      this.fh = null;
      this.stopAgeTimer();
      await fh.close().catch(() => undefined);
    }
  }

  private async startFile(): Promise<FileHandle> {
    const { path: full, fh } = await createUniqueFile(this.dir, this.prefix, '.jsonl');
    this.fh = fh;
    this.currentPath = full;
    this.size = 0;
    this.startAgeTimer(fh);
    return fh;
  }
}

/** How JSONL files are read; internal, for tests. */
export interface JsonlReadOptions {
  /** Bytes read at a time (default 1 MiB). */
  chunkSize?: number;
  /** A longer line (in bytes) is not decoded and counts as a bad line (default: the longest string Node can hold). */
  maxLineBytes?: number;
}

const READ_CHUNK = 1 << 20;

/**
 * Calls `fn` with every line of `file`, split on '\n' and decoded as UTF-8
 * one line at a time: memory holds a chunk and a line, so a file of any
 * size can be read (one string for a whole file fails beyond ~512 MiB).
 * `line` counts from 1, blank lines included; `terminated` is false only
 * for a last line without its '\n'; `text` is null for a line too long to
 * decode. A promise returned by `fn` is awaited before the next line.
 */
export async function forEachJsonlLine(
  file: string,
  fn: (text: string | null, line: number, terminated: boolean) => void | Promise<void>,
  opts: JsonlReadOptions = {},
): Promise<void> {
  const chunkSize = Math.max(1, opts.chunkSize ?? READ_CHUNK);
  const maxLineBytes = opts.maxLineBytes ?? bufferConstants.MAX_STRING_LENGTH;
  let fh: FileHandle;
  try {
    fh = await fsp.open(file, 'r');
  } catch (err) {
    throw new StorageError('READ_FAILED', file, 'cannot read index file', { cause: err });
  }
  try {
    const buf = Buffer.allocUnsafe(chunkSize);
    // The start of a line that goes on in the next chunk (copied: buf is reused), unless it is already too long.
    let carry: Buffer[] = [];
    let carryBytes = 0;
    let overlong = false;
    let line = 0;
    const decode = (last: Buffer): string | null => {
      if (overlong || carryBytes + last.length > maxLineBytes) return null;
      try {
        return carry.length === 0 ? last.toString('utf8') : Buffer.concat([...carry, last], carryBytes + last.length).toString('utf8');
      } catch {
        return null; // longer than a string can be
      }
    };
    for (;;) {
      let n: number;
      try {
        n = (await fh.read(buf, 0, chunkSize, null)).bytesRead;
      } catch (err) {
        throw new StorageError('READ_FAILED', file, 'cannot read index file', { cause: err });
      }
      if (n === 0) break;
      const chunk = buf.subarray(0, n);
      let start = 0;
      for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
        const text = decode(chunk.subarray(start, nl));
        carry = [];
        carryBytes = 0;
        overlong = false;
        start = nl + 1;
        const r = fn(text, ++line, true);
        if (r) await r;
      }
      if (start < n && !overlong) {
        if (carryBytes + n - start > maxLineBytes) {
          overlong = true;
          carry = [];
          carryBytes = 0;
        } else {
          carry.push(Buffer.from(chunk.subarray(start)));
          carryBytes += n - start;
        }
      }
    }
    if (carryBytes > 0 || overlong) {
      const r = fn(decode(Buffer.alloc(0)), ++line, false);
      if (r) await r;
    }
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** The `*.jsonl` files of `dir` that `accept` takes, in name order; none for a missing `dir`. */
async function jsonlFiles(dir: string, accept: (fileName: string) => boolean): Promise<string[]> {
  try {
    return (await fsp.readdir(dir)).filter((n) => n.endsWith('.jsonl') && accept(n)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new StorageError('READ_FAILED', dir, 'cannot list index directory', { cause: err });
  }
}

/**
 * Every entry of all `*.jsonl` files in `dir` (files in name order), one at
 * a time, with readIndex's rules; streamed, so the files can be larger than
 * memory. Entries before a CORRUPT line have been passed to `fn` when it is
 * raised. A promise returned by `fn` is awaited before the next entry.
 */
export async function forEachIndexEntry(
  dir: string,
  fn: (entry: IndexEntry) => void | Promise<void>,
  accept: (fileName: string) => boolean = () => true,
  opts: JsonlReadOptions = {},
): Promise<void> {
  for (const name of await jsonlFiles(dir, accept)) {
    const file = path.join(dir, name);
    await forEachJsonlLine(
      file,
      (text, line, terminated) => {
        if (text !== null && text.trim() === '') return;
        const entry = text === null ? null : parseEntry(text);
        if (entry) return fn(entry);
        // An unterminated last line is what a killed writer leaves: skipped.
        if (terminated) throw new StorageError('CORRUPT', file, `line ${line} is not an index entry`);
      },
      opts,
    );
  }
}

/**
 * All entries of all `*.jsonl` files in `dir` (files in name order). A last
 * line without its newline is what a killed writer leaves: it is kept if it
 * is still complete JSON and skipped otherwise. A bad line anywhere else is
 * real corruption and raises CORRUPT. Lines are split on '\n' only (a '\r'
 * before it is whitespace to JSON). Files are read line by line, so each can
 * be larger than the longest string (~512 MiB); see forEachIndexEntry to
 * avoid holding all entries.
 */
export async function readIndex(dir: string, accept: (fileName: string) => boolean = () => true, opts: JsonlReadOptions = {}): Promise<IndexEntry[]> {
  const out: IndexEntry[] = [];
  await forEachIndexEntry(dir, (e) => void out.push(e), accept, opts);
  return out;
}

function parseEntry(line: string): IndexEntry | null {
  try {
    const v: unknown = JSON.parse(line);
    if (v && typeof v === 'object' && !Array.isArray(v) && typeof (v as { url?: unknown }).url === 'string') {
      return v as IndexEntry;
    }
    return null;
  } catch {
    return null;
  }
}
