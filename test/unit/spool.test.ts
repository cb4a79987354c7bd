// The pure and local parts of spooling outputs for object storage: spool
// folder names, object keys, who wrote a file, the retry back-off, cutting a
// killed writer's file back to its last whole record, the ready/ mark.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { cutBackToWholeRecords, gzipHeaderLength, wholeGzipMembersEnd, wholeLinesEnd } from '../../src/storage/cut-back';
import { uniqueFileStem, writerOfFile } from '../../src/storage/files';
import { markFinished, objectKeyOf, refusedPathOf, spoolContents, spoolDirOf } from '../../src/storage/spool';
import { retryDelayMs } from '../../src/storage/spool-uploader';
import { readWarcFile } from '../../src/storage/warc-reader';
import { WarcWriter, type WarcLocation } from '../../src/storage/warc-writer';
import { tempDirs } from '../support/temp-dirs';
import { pageExchange } from '../support/page-exchange';

const tmpDir = tempDirs('spool-unit-');
const HOST = os.hostname().replace(/[^A-Za-z0-9.-]/g, '_');

const exchange = pageExchange;

describe('names', () => {
  test('a spool folder per location: a readable name and a hash, safe as one path segment, distinct for locations whose names meet', () => {
    const a = spoolDirOf('/spool', 's3://bucket/crawls/shop');
    expect(path.dirname(a)).toBe('/spool');
    expect(path.basename(a)).toMatch(/^bucket-crawls-shop-[0-9a-f]{12}$/);
    expect(spoolDirOf('/spool', 's3://bucket/crawls/shop')).toBe(a);
    // Same readable name, other location: another folder.
    expect(spoolDirOf('/spool', 's3://bucket/crawls-shop')).not.toBe(a);
    expect(path.basename(spoolDirOf('/spool', '/mnt/nfs/out'))).toMatch(/^mnt-nfs-out-[0-9a-f]{12}$/);
    expect(path.basename(spoolDirOf('/spool', '../..'))).toMatch(/^output-[0-9a-f]{12}$/);
    expect(path.basename(spoolDirOf('/spool', `s3://b/${'x'.repeat(300)}`)).length).toBeLessThanOrEqual(73);
  });

  test('the object key of a ready file is its path in the spool folder without ready/', () => {
    const sd = '/spool/loc-1';
    expect(objectKeyOf(sd, '/spool/loc-1/warc/ready/c-1.warc.gz')).toBe('warc/c-1.warc.gz');
    expect(objectKeyOf(sd, '/spool/loc-1/index/ready/index-1.jsonl')).toBe('index/index-1.jsonl');
    expect(objectKeyOf(sd, '/spool/loc-1/datasets/default/ready/dataset-1.jsonl')).toBe('datasets/default/dataset-1.jsonl');
    expect(() => objectKeyOf(sd, '/spool/loc-1/warc/c-1.warc.gz')).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => objectKeyOf(sd, '/spool/other/warc/ready/c-1.warc.gz')).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(refusedPathOf('/spool/loc-1/warc/ready/c-1.warc.gz')).toBe('/spool/loc-1/warc/refused/c-1.warc.gz');
  });

  test('who wrote a file is read from its unique name, whatever dashes and digits its prefix and host hold', () => {
    const stem = uniqueFileStem('camp-2024-20240101000000000-x');
    expect(writerOfFile(`${stem}.warc.gz`)).toEqual({ host: HOST, pid: process.pid });
    expect(writerOfFile(`${uniqueFileStem('index')}.jsonl`)).toEqual({ host: HOST, pid: process.pid });
    expect(writerOfFile('crawl-20250101000000000-my-host.example-77-00012.warc.gz')).toEqual({ host: 'my-host.example', pid: 77 });
    expect(writerOfFile('report.json')).toBeNull();
  });

  test('retries back off by doubling, capped', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 100].map((n) => retryDelayMs(n, 1000, 30_000))).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    expect(retryDelayMs(0, 1000, 30_000)).toBe(0);
  });
});

describe('cutting a killed writer’s file back', () => {
  test('a WARC is cut at the end of its last whole gzip member: every record kept is whole, none partial', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const locs: WarcLocation[] = [];
    for (let i = 0; i < 4; i++) locs.push(await w.writeExchange(exchange(i, 50_000 * i)));
    await w.close();
    const file = path.join(dir, w.files[0]!);
    const whole = fs.readFileSync(file);
    expect(await wholeGzipMembersEnd(file)).toBe(whole.length);
    const records = await readWarcFile(file, { truncatedTail: 'throw' });

    // Cut inside the last response's member: it and what follows go, everything before stays.
    fs.writeFileSync(file, whole.subarray(0, locs[3]!.offset + 100));
    expect(await cutBackToWholeRecords(file)).toBe(locs[3]!.offset);
    const kept = await readWarcFile(file, { truncatedTail: 'throw' });
    expect(kept.map((r) => r.recordId)).toEqual(records.filter((r) => r.offset < locs[3]!.offset).map((r) => r.recordId));
    expect(kept.every((r) => r.blockDigestOk)).toBe(true);

    // Cut inside the trailer (CRC and length) of a member: that member is not whole.
    fs.writeFileSync(file, whole.subarray(0, locs[1]!.offset + locs[1]!.length - 3));
    expect(await wholeGzipMembersEnd(file)).toBe(locs[1]!.offset);
    // Not even the warcinfo record whole: nothing is kept.
    fs.writeFileSync(file, whole.subarray(0, 7));
    expect(await cutBackToWholeRecords(file)).toBe(0);
    expect(fs.statSync(file).size).toBe(0);
  });

  test('a member whose data inflates but whose CRC does not match is not whole', async () => {
    const file = path.join(tmpDir(), 'x.warc.gz');
    const a = zlib.gzipSync(Buffer.from('first record'));
    const b = Buffer.from(zlib.gzipSync(Buffer.from('second record')));
    b[b.length - 6] ^= 0xff; // a CRC byte
    fs.writeFileSync(file, Buffer.concat([a, b]));
    expect(await wholeGzipMembersEnd(file)).toBe(a.length);
    // Headers: with a file name (FNAME) it is still a gzip header; anything else is not.
    expect(gzipHeaderLength(Buffer.from([0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3, 0x61, 0x62, 0]))).toBe(13);
    expect(gzipHeaderLength(Buffer.from([0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3, 0x61]))).toBeNull();
    expect(gzipHeaderLength(Buffer.from('WARC/1.1\r\n'))).toBeNull();
  });

  test('an index or dataset file is cut after its last newline; a file of another kind is left alone', async () => {
    const dir = tmpDir();
    const jsonl = path.join(dir, 'index-1.jsonl');
    fs.writeFileSync(jsonl, '{"url":"a"}\n{"url":"b"}\n{"url":"c","half');
    expect(await cutBackToWholeRecords(jsonl)).toBe(24);
    expect(fs.readFileSync(jsonl, 'utf8')).toBe('{"url":"a"}\n{"url":"b"}\n');
    expect(await wholeLinesEnd(jsonl)).toBe(24); // nothing more to cut
    fs.writeFileSync(jsonl, 'no newline at all');
    expect(await wholeLinesEnd(jsonl)).toBe(0);
    const other = path.join(dir, 'notes.txt');
    fs.writeFileSync(other, 'half a line');
    expect(await cutBackToWholeRecords(other)).toBeNull();
    expect(fs.readFileSync(other, 'utf8')).toBe('half a line');
  });
});

describe('the spool folder', () => {
  test('markFinished moves a file into ready/ beside it; spoolContents tells ready files from open ones', async () => {
    const sd = tmpDir();
    fs.mkdirSync(path.join(sd, 'warc'), { recursive: true });
    fs.mkdirSync(path.join(sd, 'datasets', 'default'), { recursive: true });
    fs.writeFileSync(path.join(sd, 'location.json'), '{"location":"s3://b/p"}\n');
    const a = path.join(sd, 'warc', 'a.warc.gz');
    const b = path.join(sd, 'datasets', 'default', 'd.jsonl');
    fs.writeFileSync(a, 'a');
    fs.writeFileSync(b, 'b');
    const ready = await markFinished(a);
    expect(ready).toBe(path.join(sd, 'warc', 'ready', 'a.warc.gz'));
    expect(fs.readFileSync(ready, 'utf8')).toBe('a');
    expect(fs.existsSync(a)).toBe(false);
    fs.mkdirSync(path.join(sd, 'warc', 'refused'));
    fs.writeFileSync(path.join(sd, 'warc', 'refused', 'r.warc.gz'), 'r');
    expect(await spoolContents(sd)).toEqual({ ready: [ready], open: [b] });
  });
});
