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
import { StorageError } from './warc-writer';

/** How a URL's outcome is counted in Redis (Frontier.commit's stat field), mirrored from activities/page.ts. */
export type CountedAs = 'fetched' | 'failed' | 'skipped';

const FETCHED = new Set<IndexOutcome>(['fetched', 'duplicate', 'redirect', 'skipped-content-type']);
const SKIPPED = new Set<IndexOutcome>(['sitemap', 'robots-disallowed', 'robots-unavailable', 'host-budget-exhausted', 'budget-exhausted']);

/** fetched: a response that counts as a page; skipped: no request, or a sitemap; failed: everything else ('error', 'http-error', 'refused', unknown). */
export function countedAs(outcome: IndexOutcome): CountedAs {
  if (FETCHED.has(outcome)) return 'fetched';
  if (SKIPPED.has(outcome)) return 'skipped';
  return 'failed';
}

/** The fields of a URL's last line that the tally and a sealed index need. */
export type LatestEntry = Pick<IndexEntry, 'url' | 'fp' | 'host' | 'outcome' | 'bytes' | 'fetchedAt'> & { file: string; line: number };

/**
 * The last line of every URL in `dir`'s `*.jsonl` files, keyed by URL
 * fingerprint. "Last" is the latest `fetchedAt`, then the later file and
 * line: a URL fetched again after a fault may have its lines in two workers'
 * files. Lines are streamed, so memory holds one small record per URL. An
 * unterminated last line (a worker killed while writing it) is skipped; any
 * other line that is not an index entry is an error.
 */
export async function readIndexLatest(dir: string): Promise<Map<string, LatestEntry>> {
  let names: string[];
  try {
    names = (await fsp.readdir(dir)).filter((n) => n.endsWith('.jsonl')).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw new StorageError('READ_FAILED', dir, 'cannot list index directory', { cause: err });
  }
  const latest = new Map<string, LatestEntry>();
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
      const entry: LatestEntry = { url: e.url, fp: e.fp, host: e.host ?? '', outcome: e.outcome, bytes: e.bytes ?? 0, fetchedAt: e.fetchedAt ?? '', file: name, line };
      const prev = latest.get(entry.fp);
      if (!prev || prev.fetchedAt <= entry.fetchedAt) latest.set(entry.fp, entry);
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
  return latest;
}

export interface IndexTally {
  /** Distinct URLs with a line. */
  urls: number;
  fetched: number;
  failed: number;
  skipped: number;
  bytes: number;
  /** Distinct hosts with a line. */
  hosts: number;
}

/** The campaign's counts as its index tells them: one outcome per URL, counted like the commit counts it. */
export async function tallyIndex(dir: string): Promise<IndexTally> {
  const t: IndexTally = { urls: 0, fetched: 0, failed: 0, skipped: 0, bytes: 0, hosts: 0 };
  const hosts = new Set<string>();
  for (const e of (await readIndexLatest(dir)).values()) {
    t.urls++;
    t[countedAs(e.outcome)]++;
    t.bytes += e.bytes;
    hosts.add(e.host);
  }
  t.hosts = hosts.size;
  return t;
}
