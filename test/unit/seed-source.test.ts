// Seed lists read from files, gzip, a copy of standard input and loopback URLs,
// in batches that resume from their positions.
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import {
  readListEntries,
  readSeedBatch,
  readSeedBatches,
  readSeedBatchesFromStream,
  saveSeedStream,
  SeedSourceError,
  SEEDS_START,
  type SeedBatch,
  type SeedReadOptions,
} from '../../src/seeds/seed-source';

// A test here streams a million-line list: seconds of CPU that a loaded machine stretches past Jest's 5 s.
jest.setTimeout(60_000);

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seed-source-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const write = (name: string, content: string | Buffer) => {
  const p = path.join(dir, name);
  fs.writeFileSync(p, content);
  return p;
};

async function all(source: string, opts: SeedReadOptions): Promise<SeedBatch[]> {
  const out: SeedBatch[] = [];
  for await (const b of readSeedBatches(source, opts)) out.push(b);
  return out;
}

async function failure(p: Promise<unknown>): Promise<SeedSourceError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof SeedSourceError) return err;
    throw err;
  }
  throw new Error('expected a SeedSourceError');
}

const LIST = [
  '\uFEFF# seeds for the test web',
  'http://a.test/',
  '',
  '   http://b.test/x?y=1   ',
  '# a comment',
  '\t#indented comment',
  'http://c.test/#frag\r',
  'http://d.test/ü',
  'http://e.test/',
].join('\n');

test('a plain list: one seed per line, trimmed (CR too); blank lines, # comments and a BOM skipped; a last line without LF kept', async () => {
  const [batch, ...rest] = await all(write('plain.txt', LIST), { batchSize: 100 });
  expect(rest).toEqual([]);
  expect(batch.seeds).toEqual(['http://a.test/', 'http://b.test/x?y=1', 'http://c.test/#frag', 'http://d.test/ü', 'http://e.test/']);
  expect(batch.lines).toEqual([2, 4, 7, 8, 9]);
  expect(batch.done).toBe(true);
  expect(batch.start).toEqual(SEEDS_START);
  expect(batch.next).toEqual({ line: 9, byte: Buffer.byteLength(LIST), seeds: 5 });
});

test('gzip is recognised by its magic bytes, not the name: .txt that is gzip, .gz that is plain', async () => {
  const gz = write('really-gzip.txt', zlib.gzipSync(LIST));
  const plain = write('not-really.gz', LIST);
  const a = await all(gz, { batchSize: 100 });
  const b = await all(plain, { batchSize: 100 });
  expect(a.map((x) => x.seeds)).toEqual(b.map((x) => x.seeds));
  expect(a[0].seeds).toHaveLength(5);
  // Positions count bytes of the decompressed text, as for the plain file.
  expect(a[0].next).toEqual(b[0].next);
});

test('concatenated gzip members (cat a.gz b.gz) read as one list', async () => {
  const p = write('two-members.gz', Buffer.concat([zlib.gzipSync('http://a.test/\n'), zlib.gzipSync('http://b.test/\n')]));
  expect((await readSeedBatch(p, { batchSize: 10 })).seeds).toEqual(['http://a.test/', 'http://b.test/']);
});

const numbered = (n: number) => {
  const lines: string[] = [];
  for (let i = 1; i <= n; i++) {
    lines.push(`http://h${i}.test/`);
    if (i % 4 === 0) lines.push('# every fourth seed is followed by a comment', '');
  }
  return lines.join('\n') + '\n';
};

describe.each([
  ['plain file', (name: string, text: string) => write(name, text)],
  ['gzip file', (name: string, text: string) => write(name, zlib.gzipSync(text))],
])('batches and positions: %s', (_kind, make) => {
  test('read batches 1–3, then resume from the position after batch 2 (and after batch 1): identical batches', async () => {
    const source = make('twenty-five.txt', numbered(25));
    const batches = await all(source, { batchSize: 10 });
    expect(batches.map((b) => b.seeds.length)).toEqual([10, 10, 5]);
    expect(batches.map((b) => b.done)).toEqual([false, false, true]);
    expect(batches[2].seeds[4]).toBe('http://h25.test/');
    // Each batch starts where the one before ended.
    expect(batches[1].start).toEqual(batches[0].next);
    expect(batches[2].start).toEqual(batches[1].next);
    expect(batches[1].next.seeds).toBe(20);

    // A position is plain JSON: it goes through a heartbeat unchanged.
    const afterTwo = JSON.parse(JSON.stringify(batches[1].next));
    expect(await all(source, { batchSize: 10, from: afterTwo })).toEqual([batches[2]]);
    expect(await all(source, { batchSize: 10, from: batches[0].next })).toEqual(batches.slice(1));
    // One batch at a time, the source closed in between.
    expect(await readSeedBatch(source, { batchSize: 10, from: batches[1].next })).toEqual(batches[2]);
  });

  test('a list that fills its last batch exactly: that batch says done, its next covers the trailing comments', async () => {
    const source = make('twenty.txt', numbered(20) + '# the end\n\n');
    const batches = await all(source, { batchSize: 10 });
    expect(batches.map((b) => [b.seeds.length, b.done])).toEqual([
      [10, false],
      [10, true],
    ]);
    // The comment lines after seed 8 belong to batch 1's tail, not batch 2.
    expect(batches[1].lines[0]).toBe(batches[0].next.line + 1);
    const resumed = await all(source, { batchSize: 10, from: batches[1].next });
    expect(resumed).toEqual([{ seeds: [], lines: [], start: batches[1].next, next: batches[1].next, done: true }]);
  });

  test('a list of comments only is one empty batch marked done', async () => {
    const source = make('nothing.txt', '# nothing here\n\n   \n');
    expect(await all(source, { batchSize: 5 })).toEqual([{ seeds: [], lines: [], start: SEEDS_START, next: { line: 3, byte: 20, seeds: 0 }, done: true }]);
  });

  test('a list replaced since the position was taken is refused, not read from the middle of a line', async () => {
    const source = make('replaced.txt', numbered(25));
    const [first] = await all(source, { batchSize: 10 });
    make('replaced.txt', 'http://other.test/with/a/much/longer/first/line/than/before/so/the/offset/falls/inside/it\n'.repeat(3));
    const err = await failure(all(source, { batchSize: 10, from: first.next }));
    expect(err.code).toBe('SEEDS_CHANGED');
    make('replaced.txt', 'http://short.test/\n');
    expect((await failure(all(source, { batchSize: 10, from: first.next }))).code).toBe('SEEDS_CHANGED');
  });
});

test('a 1,000,000-line gzip list streams through in batches that never exceed the batch size', async () => {
  const source = path.join(dir, 'million.gz');
  const N = 1_000_000;
  async function* lines() {
    for (let i = 0; i < N; i += 10_000) {
      let chunk = '';
      for (let j = i; j < i + 10_000; j++) chunk += `http://site${j % 5000}.test:8080/page/${j}\n`;
      yield chunk;
    }
  }
  await pipeline(Readable.from(lines()), zlib.createGzip(), fs.createWriteStream(source));
  const sizes: number[] = [];
  let done = 0;
  let last = '';
  let expectedNext = 0;
  let inOrder = true;
  for await (const b of readSeedBatches(source, { batchSize: 7_000 })) {
    sizes.push(b.seeds.length);
    if (b.done) done++;
    if (b.lines[0] !== expectedNext + 1) inOrder = false;
    expectedNext += b.seeds.length;
    if (b.seeds.length) last = b.seeds[b.seeds.length - 1];
  }
  expect(Math.max(...sizes)).toBe(7_000);
  expect(sizes.reduce((a, b) => a + b, 0)).toBe(N);
  expect(sizes.length).toBe(Math.ceil(N / 7_000));
  expect(done).toBe(1);
  expect(inOrder).toBe(true);
  expect(last).toBe(`http://site${(N - 1) % 5000}.test:8080/page/${N - 1}`);
});

test('reading is pulled by the consumer: the list is never read more than a bounded distance ahead of the batches taken', async () => {
  // A generated gzip list of 1,000,000 lines; the generator counts what has been pulled from it.
  const N = 1_000_000;
  let produced = 0;
  async function* text() {
    while (produced < N) {
      let chunk = '';
      for (let k = 0; k < 1000; k++) chunk += `http://site${produced + k}.test/\n`;
      produced += 1000;
      yield chunk;
    }
  }
  const gz = Readable.from(text()).pipe(zlib.createGzip());
  let lead = 0;
  let consumed = 0;
  let batches = 0;
  for await (const b of readSeedBatchesFromStream('generated', gz, { batchSize: 1000 })) {
    consumed += b.seeds.length;
    lead = Math.max(lead, produced - consumed);
    // Stop half-way: the rest must not have been produced.
    if (++batches === 500) break;
  }
  expect(consumed).toBe(500_000);
  // Stream buffers (a few hundred KiB of text) only, far from the whole list.
  expect(lead).toBeLessThan(100_000);
  expect(produced).toBeLessThan(600_000);
});

describe('errors, each with a stable code', () => {
  test('a missing file: SEEDS_NOT_FOUND; a directory: SEEDS_UNREADABLE', async () => {
    const missing = await failure(all(path.join(dir, 'no-such-list.txt'), { batchSize: 1 }));
    expect(missing.code).toBe('SEEDS_NOT_FOUND');
    expect(missing.message).toContain('no-such-list.txt');
    expect((await failure(all(dir, { batchSize: 1 }))).code).toBe('SEEDS_UNREADABLE');
  });

  test('a line longer than the limit: SEEDS_TOO_LONG_LINE with its line number', async () => {
    const p = write('long.txt', `http://a.test/\nhttp://b.test/${'x'.repeat(300)}\n`);
    const err = await failure(all(p, { batchSize: 10, maxLineBytes: 200 }));
    expect(err.code).toBe('SEEDS_TOO_LONG_LINE');
    expect(err.line).toBe(2);
    // A file without LF at all (one endless line) fails the same way, in bounded memory.
    const endless = write('endless.txt', 'y'.repeat(300_000));
    expect((await failure(all(endless, { batchSize: 10 }))).code).toBe('SEEDS_TOO_LONG_LINE');
  });

  test('binary or non-UTF-8 content: SEEDS_NOT_TEXT; a gzip header over garbage: SEEDS_UNREADABLE', async () => {
    const nul = await failure(all(write('nul.txt', Buffer.from('http://a.test/\nPK\x03\x04\x00\x00\n', 'latin1')), { batchSize: 10 }));
    expect([nul.code, nul.line]).toEqual(['SEEDS_NOT_TEXT', 2]);
    const latin1 = await failure(all(write('latin1.txt', Buffer.from('http://caf\xe9.test/\n', 'latin1')), { batchSize: 10 }));
    expect([latin1.code, latin1.line]).toEqual(['SEEDS_NOT_TEXT', 1]);
    // A real U+FFFD is text.
    expect((await readSeedBatch(write('fffd.txt', 'http://a.test/\uFFFD\n'), { batchSize: 1 })).seeds).toEqual(['http://a.test/\uFFFD']);
    const corrupt = await failure(all(write('corrupt.gz', Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(64, 7)])), { batchSize: 10 }));
    expect(corrupt.code).toBe('SEEDS_UNREADABLE');
    const truncated = zlib.gzipSync(numbered(2000));
    const cut = await failure(all(write('truncated.gz', truncated.subarray(0, truncated.length - 20)), { batchSize: 10_000 }));
    expect(cut.code).toBe('SEEDS_UNREADABLE');
  });

  test('"-", other schemes and forged positions are refused', async () => {
    expect((await failure(all('-', { batchSize: 1 }))).code).toBe('SEEDS_BAD_SOURCE');
    expect((await failure(all('ftp://files.test/seeds.txt', { batchSize: 1 }))).code).toBe('SEEDS_BAD_SOURCE');
    const p = write('pos.txt', 'http://a.test/\n');
    expect((await failure(all(p, { batchSize: 1, from: { line: -1, byte: 0, seeds: 0 } }))).code).toBe('SEEDS_BAD_POSITION');
    expect((await failure(all(p, { batchSize: 1, from: { line: 1 } as never }))).code).toBe('SEEDS_BAD_POSITION');
  });
});

test('standard input is copied to a file in the output folder (gzip kept as gzip), and read from there', async () => {
  const out = path.join(dir, 'campaign-out');
  const plain = await saveSeedStream(Readable.from([Buffer.from('http://a.test/\n# c\n'), Buffer.from('http://b.test/\n')]), out, 'seeds-c1');
  expect(plain).toEqual({ path: path.join(out, 'seeds-c1.txt'), bytes: 34, gzip: false });
  expect(fs.readFileSync(plain.path, 'utf8')).toBe('http://a.test/\n# c\nhttp://b.test/\n');
  const gz = await saveSeedStream(Readable.from([zlib.gzipSync(numbered(30))]), out, 'seeds-c2');
  expect(gz.path).toBe(path.join(out, 'seeds-c2.txt.gz'));
  expect(gz.gzip).toBe(true);
  const batches = await all(gz.path, { batchSize: 100 });
  expect(batches[0].seeds).toHaveLength(30);
  // No partial file is left behind.
  expect(fs.readdirSync(out).sort()).toEqual(['seeds-c1.txt', 'seeds-c2.txt.gz']);
});

test('readListEntries: non-blank, non-comment lines with their numbers (for --resolve-file)', async () => {
  const p = write('resolve.txt', '# pins\na.test:80:127.0.0.1\n\n b.test:443:[::1] \n');
  const entries: { value: string; line: number }[] = [];
  for await (const e of readListEntries(p)) entries.push(e);
  expect(entries).toEqual([
    { value: 'a.test:80:127.0.0.1', line: 2 },
    { value: 'b.test:443:[::1]', line: 4 },
  ]);
});

describe('a URL source (loopback server)', () => {
  let server: http.Server;
  let base: string;
  const hung: http.ServerResponse[] = [];
  const LISTS: Record<string, Buffer> = {
    '/seeds.txt': Buffer.from(numbered(25)),
    '/seeds.bin': zlib.gzipSync(numbered(25)),
  };
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/moved') {
        res.writeHead(302, { location: '/seeds.bin' }).end();
      } else if (req.url === '/broken') {
        res.writeHead(503).end('try later');
      } else if (req.url === '/silent') {
        hung.push(res); // never answers
      } else if (req.url && LISTS[req.url]) {
        // Two writes: the reader must join lines across chunks.
        const body = LISTS[req.url];
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.write(body.subarray(0, 37));
        res.end(body.subarray(37));
      } else {
        res.writeHead(404).end();
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const r of hung) r.destroy();
    server.closeAllConnections();
    server.close();
  });

  test('plain and gzip (served as octet-stream, found by magic bytes, behind a redirect) read and resume like a file', async () => {
    const fromFile = await all(write('same.txt', numbered(25)), { batchSize: 10 });
    for (const url of [`${base}/seeds.txt`, `${base}/moved`]) {
      const batches = await all(url, { batchSize: 10 });
      expect(batches.map((b) => b.seeds)).toEqual(fromFile.map((b) => b.seeds));
      expect(batches.map((b) => b.next)).toEqual(fromFile.map((b) => b.next));
      expect(await all(url, { batchSize: 10, from: batches[1].next })).toEqual([batches[2]]);
    }
  });

  test('404: SEEDS_NOT_FOUND; 503: SEEDS_UNREADABLE, retryable; no answer: SEEDS_TIMEOUT naming the limit', async () => {
    const missing = await failure(all(`${base}/nope.txt`, { batchSize: 1 }));
    expect([missing.code, missing.retryable]).toEqual(['SEEDS_NOT_FOUND', false]);
    const broken = await failure(all(`${base}/broken`, { batchSize: 1 }));
    expect([broken.code, broken.retryable]).toEqual(['SEEDS_UNREADABLE', true]);
    expect(broken.message).toContain('HTTP 503');
    const silent = await failure(all(`${base}/silent`, { batchSize: 1, headersTimeoutMs: 200 }));
    expect([silent.code, silent.retryable]).toEqual(['SEEDS_TIMEOUT', true]);
    expect(silent.message).toContain('did not answer within 200 ms');
  });
});
