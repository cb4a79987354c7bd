import { createReadStream } from 'node:fs';
import readline from 'node:readline';
import type { CdxjLine } from './cdxj';
import { indexWarcFile } from './cdxj';
import { LineSorter } from './line-sort';
import { surt } from './surt';
import { payloadDigestOf } from './warc-writer';

// Whether every revisit record of a set of WARC files has its original among
// them: a revisit record holds no payload, and a replay tool finds it by
// asking its index for a capture (not a revisit) of the URI the record refers
// to with the record's payload digest, closest to the date it refers to
// (pywb's ResolvingLoader; ReplayWeb.page does the same). A package whose
// index lacks that capture answers the revisited URL with an error. Checked
// on the index itself, by what replay looks up: the SURT key of
// WARC-Refers-To-Target-URI and the digest.
//
// Sized for any campaign: the revisits' references are sorted on disk
// (./line-sort.ts) and walked beside the sorted index, so memory holds one
// URL's captures at a time, whatever the number of revisit records.

/** What a replay tool needs the index to hold for one revisit record. */
export interface RevisitRef {
  /** SURT key of the URI the record refers to (its own URI without WARC-Refers-To-Target-URI). */
  key: string;
  /** The payload digest a capture there must have; '-' when the record has none (any capture then does, as in pywb). */
  digest: string;
  /** The revisit record's own URI, 14-digit timestamp and file (as its index line names them). */
  url: string;
  timestamp: string;
  filename: string;
  /** WARC-Refers-To-Target-URI and WARC-Refers-To-Date, as written (null when absent). */
  refersTo: string | null;
  refersToDate: string | null;
}

/** A revisit of an empty payload needs no original: replay serves the record's own empty body (pywb does). */
const EMPTY_DIGEST = payloadDigestOf(new Uint8Array(0));

const keyOf = (line: string) => line.slice(0, line.indexOf(' '));

/**
 * The revisit records of the lines writeCdxj indexes (its `onLine`), sorted
 * on disk by the key they need: `<key> <digest> <JSON of the rest>`.
 */
export class RevisitRefs {
  private readonly sorter: LineSorter;
  /** Revisit records seen (those of an empty payload included). */
  count = 0;

  constructor(tmpDir?: string, runBytes?: number) {
    this.sorter = new LineSorter(tmpDir, runBytes);
  }

  /** writeCdxj's `onLine`: keeps the line when it is a revisit record's. */
  readonly add = async (line: CdxjLine): Promise<void> => {
    if (line.fields.mime !== 'warc/revisit') return;
    this.count++;
    const digest = line.fields.digest ?? '-';
    if (digest === EMPTY_DIGEST) return;
    const refersTo = line.revisitOf?.uri ?? null;
    const ref = { url: line.fields.url, timestamp: line.timestamp, filename: line.fields.filename, refersTo, refersToDate: line.revisitOf?.date ?? null };
    await this.sorter.add(Buffer.from(`${refersTo ? surt(refersTo) : line.urlkey} ${digest} ${JSON.stringify(ref)}\n`, 'utf8'));
  };

  /** Writes the sorted references to `file`. */
  writeTo(file: string): Promise<number> {
    return this.sorter.writeTo(file);
  }

  dispose(): Promise<void> {
    return this.sorter.dispose();
  }
}

/** Lines of a file, one at a time, null at the end. */
function lineReader(file: string): { next(): Promise<string | null>; close(): void } {
  const input = createReadStream(file);
  const rl = readline.createInterface({ input, crlfDelay: Infinity });
  const it = rl[Symbol.asyncIterator]();
  return {
    async next() {
      for (;;) {
        const r = await it.next();
        if (r.done) return null;
        if (r.value) return r.value;
      }
    },
    close() {
      rl.close();
      input.destroy();
    },
  };
}

/**
 * The references (a file RevisitRefs wrote) that the sorted CDXJ `cdxj`
 * does not satisfy: no capture other than a revisit at the key with that
 * digest. Both files are read once, side by side.
 */
export async function* unresolvedRevisits(cdxj: string, refsFile: string): AsyncGenerator<RevisitRef> {
  const refs = lineReader(refsFile);
  const index = lineReader(cdxj);
  try {
    let head = await index.next();
    let groupKey: string | null = null;
    let digests = new Set<string>();
    for (let ref = await refs.next(); ref !== null; ref = await refs.next()) {
      const key = keyOf(ref);
      const rest = ref.slice(key.length + 1);
      const digest = rest.slice(0, rest.indexOf(' '));
      if (key !== groupKey) {
        // The index's captures at this key: the lines before it skipped, byte order as both files are sorted.
        const k = Buffer.from(key, 'utf8');
        while (head !== null && Buffer.compare(Buffer.from(keyOf(head), 'utf8'), k) < 0) head = await index.next();
        digests = new Set();
        while (head !== null && keyOf(head) === key) {
          const at = head.indexOf(' ', key.length + 1);
          const fields = JSON.parse(head.slice(at + 1)) as CdxjLine['fields'];
          if (fields.mime !== 'warc/revisit') digests.add(fields.digest ?? '-');
          head = await index.next();
        }
        groupKey = key;
      }
      if (digest === '-' ? digests.size > 0 : digests.has(digest)) continue;
      yield { key, digest, ...(JSON.parse(rest.slice(digest.length + 1)) as Omit<RevisitRef, 'key' | 'digest'>) };
    }
  } finally {
    refs.close();
    index.close();
  }
}

/**
 * Which of `files` hold a capture (not a revisit) that one of `needed`
 * (`<key> <digest>` of unresolved references) asks for: each file is read
 * until its first such capture. A file that cannot be indexed holds none.
 */
export async function filesHoldingOriginals(files: string[], needed: Set<string>, anyDigest: Set<string>): Promise<string[]> {
  const found: string[] = [];
  for (const file of files) {
    try {
      for await (const line of indexWarcFile(file)) {
        if (line.fields.mime === 'warc/revisit') continue;
        if (anyDigest.has(line.urlkey) || needed.has(`${line.urlkey} ${line.fields.digest ?? '-'}`)) {
          found.push(file);
          break;
        }
      }
    } catch {
      // Not a WARC file we can read: it holds nothing a replay tool could use either.
    }
  }
  return found;
}
