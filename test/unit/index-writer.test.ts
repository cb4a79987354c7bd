import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { DatasetWriter, readRawDataset, type DatasetLine } from '../../src/storage/dataset-writer';
import { IndexWriter, contentHashOf, readIndex } from '../../src/storage/index-writer';
import type { IndexEntry, IndexOutcome } from '../../src/storage/index-writer';
import { StorageError } from '../../src/storage/storage-error';
import { tempDirs } from '../support/temp-dirs';

const tmpDir = tempDirs('index-writer-test-');

function entry(i: number, over: Partial<IndexEntry> = {}): IndexEntry {
  const body = Buffer.from(`body ${i}`);
  return {
    url: `https://example.test/p/${i}`,
    fp: `fp${i}`,
    host: 'example.test',
    campaignId: 'c1',
    status: 200,
    outcome: 'fetched',
    contentType: 'text/html',
    bytes: body.length,
    contentHash: contentHashOf(body),
    fetchedAt: new Date(Date.UTC(2024, 0, 1) + i).toISOString(),
    fetchMs: i,
    depth: i % 4,
    referrer: i === 0 ? null : `https://example.test/p/${i - 1}`,
    warc: { file: 'crawl-x.warc.gz', offset: i * 1000, length: 900 },
    ...over,
  };
}

const NAME_RE = new RegExp(`^index-\\d{17}-.+-${process.pid}-\\d{5}\\.jsonl$`);

/**
 * The disk fills up in the middle of the writer's next append: one write
 * lands half its bytes, the one after fails with ENOSPC; later writes
 * succeed again (space was freed). With `truncateFails`, cutting the file
 * back fails too.
 */
function fillDiskOnNextAppend(w: IndexWriter, opts: { truncateFails?: boolean } = {}): void {
  const fh = (w as unknown as { fh: FileHandle }).fh;
  const realWrite = fh.write.bind(fh) as (buf: Uint8Array, off: number, len: number, pos: number | null) => Promise<{ bytesWritten: number }>;
  let step = 0;
  Object.assign(fh, {
    write: (buf: Uint8Array, off: number, len: number, pos: number | null) => {
      step++;
      if (step === 1) return realWrite(buf, off, Math.floor(len / 2), pos);
      if (step === 2) return Promise.reject(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
      return realWrite(buf, off, len, pos);
    },
  });
  if (opts.truncateFails) {
    Object.assign(fh, { truncate: () => Promise.reject(Object.assign(new Error('EIO: i/o error, ftruncate'), { code: 'EIO' })) });
  }
}

describe('IndexWriter', () => {
  it('round-trips entries, including awkward strings and optional fields', async () => {
    const dir = tmpDir();
    const w = await IndexWriter.open({ dir });
    expect(w.file).toMatch(NAME_RE);
    const entries: IndexEntry[] = [
      entry(0),
      entry(1, {
        url: 'https://example.test/line\nbreak?\u2028x="y"',
        status: null,
        outcome: 'error',
        contentType: null,
        contentHash: null,
        bytes: 0,
        error: { code: 'ECONNRESET', message: 'socket hang up\r\nagain' },
      }),
      entry(2, { outcome: 'redirect', warc: undefined, redirectTo: 'https://b.test/' }),
      // An outcome of another version: written and read back as it is.
      entry(3, { outcome: 'some-future-outcome' as IndexOutcome, truncated: 'time' }),
    ];
    for (const e of entries) await w.append(e);
    await w.close();

    const text = fs.readFileSync(w.path, 'utf8');
    expect(text.split('\n')).toHaveLength(entries.length + 1); // one line each, trailing newline
    // undefined fields vanish in JSON, exactly as they would after any round trip.
    expect(await readIndex(dir)).toEqual(JSON.parse(JSON.stringify(entries)));
  });

  it('keeps every line whole under 200 concurrent appends', async () => {
    const dir = tmpDir();
    const w = await IndexWriter.open({ dir });
    const big = 'x'.repeat(100_000); // larger than a pipe buffer, to make a torn write visible
    const entries = Array.from({ length: 200 }, (_, i) => entry(i, i % 10 === 0 ? { referrer: big } : {}));
    await Promise.all(entries.map((e) => w.append(e)));
    await w.close();
    const got = await readIndex(dir);
    expect(got).toHaveLength(200);
    // Appends land in call order.
    expect(got.map((e) => e.fp)).toEqual(entries.map((e) => e.fp));
    expect(got.filter((e) => e.referrer === big)).toHaveLength(20);
  });

  it('gives each writer its own file and reads them all', async () => {
    const dir = tmpDir();
    const writers = await Promise.all([1, 2, 3].map(() => IndexWriter.open({ dir })));
    expect(new Set(writers.map((w) => w.file)).size).toBe(3);
    await Promise.all(writers.flatMap((w, k) => [0, 1, 2].map((i) => w.append(entry(k * 10 + i)))));
    await Promise.all(writers.map((w) => w.close()));
    fs.writeFileSync(path.join(dir, 'ignored.txt'), 'not an index');
    const got = await readIndex(dir);
    expect(got.map((e) => e.fp).sort()).toEqual(['fp0', 'fp1', 'fp10', 'fp11', 'fp12', 'fp2', 'fp20', 'fp21', 'fp22']);
  });

  it('skips a truncated last line left by a killed writer', async () => {
    const dir = tmpDir();
    const w = await IndexWriter.open({ dir });
    await w.append(entry(0));
    await w.append(entry(1));
    await w.close();
    const line = JSON.stringify(entry(2));
    for (const cut of [1, 10, line.length - 1]) {
      const copy = path.join(dir, `index-crashed-${cut}.jsonl`);
      fs.writeFileSync(copy, fs.readFileSync(w.path, 'utf8') + line.slice(0, cut));
    }
    // A complete last entry that only lost its newline is still kept.
    fs.writeFileSync(path.join(dir, 'index-crashed-nl.jsonl'), `${JSON.stringify(entry(5))}\n${line}`);
    fs.writeFileSync(path.join(dir, 'index-empty.jsonl'), '');
    const got = await readIndex(dir);
    expect(got.map((e) => e.fp)).toEqual(['fp0', 'fp1', 'fp0', 'fp1', 'fp0', 'fp1', 'fp0', 'fp1', 'fp5', 'fp2']);
  });

  it('treats a bad line before the end as corruption, naming the file', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'index-bad.jsonl');
    fs.writeFileSync(file, `${JSON.stringify(entry(0))}\n{"url": broken\n${JSON.stringify(entry(1))}\n`);
    const err = await readIndex(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect(err).toMatchObject({ code: 'CORRUPT', file });
    expect((err as Error).message).toContain('line 2');
  });

  it('returns nothing for a missing directory and rejects appends after close', async () => {
    expect(await readIndex(path.join(tmpDir(), 'nope'))).toEqual([]);
    const w = await IndexWriter.open({ dir: tmpDir(), prefix: 'idx' });
    expect(w.file.startsWith('idx-')).toBe(true);
    await w.close();
    await expect(w.append(entry(0))).rejects.toMatchObject({ code: 'CLOSED', file: w.path });
  });

  it('cuts a failed half-written append back off, so the next line is not glued to its fragment', async () => {
    const dir = tmpDir();
    const w = await IndexWriter.open({ dir });
    await w.append(entry(1));
    fillDiskOnNextAppend(w);
    await expect(w.append(entry(2, { attemptId: 'a2' }))).rejects.toMatchObject({ code: 'WRITE_FAILED', file: w.path, cause: { code: 'ENOSPC' } });
    // Space again: another page commits, then the failed one is retried.
    await w.append(entry(3));
    await w.append(entry(2, { attemptId: 'a2b' }));
    await w.close();
    const committed = [entry(1), entry(3), entry(2, { attemptId: 'a2b' })];
    expect(fs.readFileSync(w.path, 'utf8')).toBe(committed.map((e) => `${JSON.stringify(e)}\n`).join(''));
    expect(await readIndex(dir)).toEqual(committed);
  });

  it('abandons the file for a new one when a failed append cannot be cut back', async () => {
    const dir = tmpDir();
    const w = await IndexWriter.open({ dir });
    const first = w.path;
    await w.append(entry(1));
    fillDiskOnNextAppend(w, { truncateFails: true });
    await expect(w.append(entry(2))).rejects.toMatchObject({ code: 'WRITE_FAILED', cause: { code: 'ENOSPC' } });
    await w.append(entry(3));
    await w.append(entry(2));
    await w.close();
    expect(w.path).not.toBe(first);
    expect(w.file).toMatch(NAME_RE);
    // The abandoned file ends in the fragment, an unterminated last line readers skip.
    const old = fs.readFileSync(first, 'utf8');
    expect(old.startsWith(`${JSON.stringify(entry(1))}\n`)).toBe(true);
    expect(old.endsWith('\n')).toBe(false);
    expect(fs.readFileSync(w.path, 'utf8')).toBe(`${JSON.stringify(entry(3))}\n${JSON.stringify(entry(2))}\n`);
    const got = await readIndex(dir);
    expect(got.map((e) => e.fp).sort()).toEqual(['fp1', 'fp2', 'fp3']);
  });

  it('keeps dataset lines whole after a failed half-written append', async () => {
    const dir = tmpDir();
    const dw = await DatasetWriter.open(dir);
    const item = (i: number): DatasetLine => ({
      url: `https://example.test/p/${i}`,
      fp: `fp${i}`,
      campaignId: 'c1',
      label: null,
      fetchedAt: entry(i).fetchedAt,
      warc: { file: 'crawl-x.warc.gz', offset: i * 1000 },
      item: { title: `page ${i}`, n: i },
    });
    await dw.appendAll([item(1), item(2)]);
    fillDiskOnNextAppend((dw as unknown as { w: IndexWriter }).w);
    await expect(dw.appendAll([item(3), item(4)])).rejects.toMatchObject({ code: 'WRITE_FAILED' });
    await dw.appendAll([item(5)]);
    await dw.appendAll([item(3), item(4)]);
    await dw.close();
    expect((await readRawDataset(dir)).map((l) => l.item.n)).toEqual([1, 2, 5, 3, 4]);
  });

  it('hashes bodies as sha256:hex', () => {
    expect(contentHashOf(new Uint8Array(0))).toBe('sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});
