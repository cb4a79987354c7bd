// How the writers of an output in object storage finish files: by size and
// by age (so a slow crawl's pages still reach the store soon) and on request
// (a flush), each finished file handed on for its upload, while a folder's
// writers behave as before.
import fs from 'node:fs';
import path from 'node:path';
import type { FileRollover } from '../../src/storage/files';
import { IndexWriter, readIndex, type IndexEntry } from '../../src/storage/index-writer';
import { readWarcFile } from '../../src/storage/warc-reader';
import { WarcWriter, type WarcLocation } from '../../src/storage/warc-writer';
import { tempDirs } from '../support/temp-dirs';
import { pageExchange } from '../support/page-exchange';

const tmpDir = tempDirs('writer-rollover-');

const exchange = pageExchange;

/** Waits until `cond` holds (what a test waits for, not how long it takes). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 10));
}

/** A rollover that records every file handed on, and lets a test wait for the next. */
function recordingRollover(maxFileAgeMs: number): FileRollover & { files: string[]; next(): Promise<string> } {
  const files: string[] = [];
  let waiting: ((f: string) => void) | null = null;
  return {
    maxFileAgeMs,
    files,
    async finished(file) {
      files.push(file);
      waiting?.(file);
      waiting = null;
    },
    next: () => new Promise((resolve) => (waiting = resolve)),
  };
}

describe('writers of a spooled output', () => {
  test('a WARC writer finishes a file at the size bound and hands it on; the name stays what its WARC-Filename says', async () => {
    const dir = tmpDir();
    const roll = recordingRollover(3_600_000);
    const w = await WarcWriter.open({ dir, maxFileBytes: 3000, rollover: roll });
    const locs: WarcLocation[] = [];
    for (let i = 0; i < 6; i++) locs.push(await w.writeExchange(exchange(i, 1500)));
    await w.close();
    expect(roll.files.length).toBeGreaterThan(1);
    expect(roll.files.map((f) => path.basename(f))).toEqual(w.files);
    for (const f of roll.files) {
      const records = await readWarcFile(f, { truncatedTail: 'throw' });
      expect(records[0]!.headers['WARC-Filename']).toBe(path.basename(f));
    }
    // Every response is where its location says, in the file it names.
    for (const loc of locs) {
      const records = await readWarcFile(path.join(dir, loc.file));
      expect(records.find((r) => r.offset === loc.offset)?.recordId).toBe(loc.recordId);
    }
  });

  test('a WARC writer finishes its file at the age bound, written to since or not, and the next write starts a new one', async () => {
    const dir = tmpDir();
    const roll = recordingRollover(50);
    const w = await WarcWriter.open({ dir, rollover: roll });
    const aged = roll.next();
    const first = await w.writeExchange(exchange(1));
    expect(path.basename(await aged)).toBe(first.file);
    expect(w.currentFile).toBeNull();
    const second = await w.writeExchange(exchange(2));
    expect(second.file).not.toBe(first.file);
    await w.close();
    expect(roll.files.map((f) => path.basename(f))).toEqual([first.file, second.file]);
  });

  test('finishFile finishes the current file and keeps the writer open', async () => {
    const dir = tmpDir();
    const roll = recordingRollover(3_600_000);
    const w = await WarcWriter.open({ dir, rollover: roll });
    const a = await w.writeExchange(exchange(1));
    await w.finishFile();
    expect(roll.files.map((f) => path.basename(f))).toEqual([a.file]);
    await w.finishFile(); // nothing open: nothing handed on
    const b = await w.writeExchange(exchange(2));
    await w.close();
    expect(roll.files.map((f) => path.basename(f))).toEqual([a.file, b.file]);
  });

  test('an index writer finishes a file at the size bound, on a line boundary, and hands each on', async () => {
    const dir = tmpDir();
    const roll = recordingRollover(3_600_000);
    const entry = (i: number) => ({ url: `http://site.test/${i}`, pad: 'x'.repeat(100) }) as unknown as IndexEntry;
    const w = await IndexWriter.open({ dir, maxFileBytes: 250, rollover: roll });
    for (let i = 0; i < 6; i++) await w.append(entry(i));
    await w.close();
    // Each file ends one write past 250 bytes at most; all lines are there once.
    expect(roll.files.length).toBe(3);
    for (const f of roll.files) expect(fs.readFileSync(f, 'utf8').split('\n')).toHaveLength(3);
    expect((await readIndex(dir)).map((e) => e.url)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `http://site.test/${i}`));
    expect(fs.readdirSync(dir).sort()).toEqual(roll.files.map((f) => path.basename(f)).sort());
  });

  test('an index writer finishes its file at the age bound; one that never got a line is removed, not handed on', async () => {
    const dir = tmpDir();
    const roll = recordingRollover(50);
    const idle = await IndexWriter.open({ dir, rollover: roll });
    const empty = idle.path;
    await until(() => !fs.existsSync(empty));
    expect(roll.files).toEqual([]);
    const aged = roll.next();
    await idle.append({ url: 'http://site.test/late' } as IndexEntry);
    expect(idle.path).not.toBe(empty);
    expect(await aged).toBe(idle.path);
    expect(fs.readFileSync(idle.path, 'utf8')).toBe('{"url":"http://site.test/late"}\n');
    await idle.close();
    expect(roll.files).toEqual([idle.path]);
  });

  test('a folder output is as before: no file finished by age, the index never rolls over, nothing handed on', async () => {
    const dir = tmpDir();
    const w = await IndexWriter.open({ dir });
    for (let i = 0; i < 50; i++) await w.append({ url: `http://site.test/${i}` } as IndexEntry);
    await w.close();
    expect(fs.readdirSync(dir)).toEqual([path.basename(w.path)]);
  });
});
