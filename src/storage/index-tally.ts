// Reading a campaign's raw index files (one per worker process, one JSON
// line per URL taken from a frontier, a URL fetched again after a fault
// having a second line) into one outcome per URL, and counting them the way
// the frontier's commit counts them. The campaign's summary uses it when
// Redis restarted under the campaign (its counters may then have lost their
// last writes while the index, written before each commit, kept the pages);
// sealing the index at completion can share readIndexLatest.
import { createReadStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { IndexEntry, IndexOutcome } from './index-writer';
import { StorageError } from './storage-error';
import { COUNTED, countersOf, embedCounted, type Counters, type CountedAs, type PageCounted } from '../stats/counters';

/**
 * Every outcome, as the commit counts it (Frontier.commit's stat field,
 * mirrored from activities/page.ts; embeds in their own classes: src/stats/counters.ts):
 * a new outcome does not compile until it is listed here.
 */
const OUTCOME_COUNTED: Readonly<Record<IndexOutcome, PageCounted>> = {
  fetched: 'fetched',
  duplicate: 'fetched',
  redirect: 'fetched',
  'skipped-content-type': 'fetched',
  // A revisit's 304: the page is there, unchanged.
  'not-modified': 'fetched',
  // Stored; only its links may be incomplete.
  'parse-timeout': 'fetched',
  sitemap: 'skipped',
  feed: 'skipped',
  'embed-budget-exhausted': 'skipped',
  'robots-disallowed': 'skipped',
  'robots-unavailable': 'skipped',
  'host-budget-exhausted': 'skipped',
  'budget-exhausted': 'skipped',
  error: 'failed',
  'http-error': 'failed',
  refused: 'failed',
  gone: 'failed',
};

/**
 * fetched: a response that counts as a page; skipped: no request, or a
 * sitemap or feed; failed: a failure, or an outcome of another version.
 */
export function pageCountedAs(outcome: string): PageCounted {
  return Object.prototype.hasOwnProperty.call(OUTCOME_COUNTED, outcome) ? OUTCOME_COUNTED[outcome as IndexOutcome] : 'failed';
}

/** As pageCountedAs; an embed (`kind` 'embed') counts the same way in the embed classes. */
export function countedAs(outcome: string, kind?: string): CountedAs {
  const c = pageCountedAs(outcome);
  return kind === 'embed' ? embedCounted(c) : c;
}

/** The fields of a URL's last line that the tally and a sealed index need. */
export type LatestEntry = Pick<IndexEntry, 'url' | 'fp' | 'host' | 'outcome' | 'bytes' | 'fetchedAt' | 'kind'> & { file: string; line: number };

/**
 * Every index line of `dir`'s `*.jsonl` files, in file-name order, streamed
 * (memory holds one line at a time). An unterminated last line (a worker
 * killed while writing it) is skipped; any other line that is not an index
 * entry is an error (`StorageError` CORRUPT).
 */
export async function forEachIndexLine(dir: string, fn: (entry: LatestEntry) => void): Promise<void> {
  let names: string[];
  try {
    names = (await fsp.readdir(dir)).filter((n) => n.endsWith('.jsonl')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new StorageError('READ_FAILED', dir, 'cannot list index directory', { cause: err });
  }
  for (const name of names) {
    const file = path.join(dir, name);
    const lines = readline.createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
    let n = 0;
    let pending: { text: string; line: number } | null = null;
    const take = (text: string, line: number, strict: boolean) => {
      let e: Partial<IndexEntry> | null;
      try {
        e = JSON.parse(text) as Partial<IndexEntry>;
      } catch {
        e = null;
      }
      if (!e || typeof e.url !== 'string' || typeof e.fp !== 'string' || typeof e.outcome !== 'string') {
        if (strict) throw new StorageError('CORRUPT', file, `line ${line} is not an index entry`);
        return;
      }
      fn({
        url: e.url,
        fp: e.fp,
        host: e.host ?? '',
        outcome: e.outcome,
        bytes: e.bytes ?? 0,
        fetchedAt: e.fetchedAt ?? '',
        ...(e.kind ? { kind: e.kind } : {}),
        file: name,
        line,
      });
    };
    try {
      for await (const text of lines) {
        n++;
        // Every line but the file's last is complete; the last may have been cut by a kill.
        if (pending) take(pending.text, pending.line, true);
        pending = text.trim() === '' ? null : { text, line: n };
      }
    } catch (err) {
      if (err instanceof StorageError) throw err;
      throw new StorageError('READ_FAILED', file, 'cannot read index file', { cause: err });
    }
    if (pending) take(pending.text, pending.line, false);
  }
}

/** Of two lines of one URL, whether `b` is the later: the later fetch, then the later file and line. */
const later = (a: { fetchedAt: string }, b: { fetchedAt: string }) => a.fetchedAt <= b.fetchedAt;

/**
 * The last line of every URL in `dir`, keyed by URL fingerprint: a URL
 * fetched again after a fault may have its lines in two workers' files.
 * Holds one record per URL (about 400 bytes each; tallyIndex, which only
 * counts, needs far less).
 */
export async function readIndexLatest(dir: string): Promise<Map<string, LatestEntry>> {
  const latest = new Map<string, LatestEntry>();
  await forEachIndexLine(dir, (e) => {
    const prev = latest.get(e.fp);
    if (!prev || later(prev, e)) latest.set(e.fp, e);
  });
  return latest;
}

/** The counters (src/stats/counters.ts), with the URLs and hosts they cover. */
export interface IndexTally extends Counters {
  /** Distinct URLs with a line. */
  urls: number;
  /** Distinct hosts with a line. */
  hosts: number;
}

/**
 * The campaign's counts as its index tells them: one outcome per URL (its
 * last line), counted like the commit counts it. Per URL it keeps a slot
 * number keyed by fingerprint and three numbers in growing typed arrays:
 * a million URLs (a 475 MB index) took 3 s and 150 MB on the 2-core test
 * machine, so a worker can count a campaign of millions.
 */
export async function tallyIndex(dir: string): Promise<IndexTally> {
  const slot = new Map<string, number>();
  const hostIds = new Map<string, number>();
  let at = new Float64Array(1024);
  let bytes = new Float64Array(1024);
  let cls = new Uint8Array(1024);
  await forEachIndexLine(dir, (e) => {
    const t = Date.parse(e.fetchedAt) || 0;
    let i = slot.get(e.fp);
    if (i === undefined) {
      i = slot.size;
      slot.set(e.fp, i);
      if (i >= at.length) {
        const grow = <A extends Float64Array | Uint8Array>(a: A, make: (n: number) => A): A => {
          const b = make(a.length * 2);
          b.set(a);
          return b;
        };
        at = grow(at, (n) => new Float64Array(n));
        bytes = grow(bytes, (n) => new Float64Array(n));
        cls = grow(cls, (n) => new Uint8Array(n));
      }
    } else if (at[i] > t) return;
    at[i] = t;
    bytes[i] = e.bytes;
    cls[i] = COUNTED.indexOf(countedAs(e.outcome, e.kind));
    if (!hostIds.has(e.host)) hostIds.set(e.host, hostIds.size);
  });
  const tally: IndexTally = { urls: slot.size, ...countersOf(), hosts: hostIds.size };
  for (let i = 0; i < slot.size; i++) {
    tally[COUNTED[cls[i]]]++;
    tally.bytes += bytes[i];
  }
  return tally;
}
