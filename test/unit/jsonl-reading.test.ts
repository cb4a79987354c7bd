// Index and dataset files are read one line at a time, not as one string per
// file: a string holds at most ~512 MiB (buffer.constants.MAX_STRING_LENGTH),
// and an index or a sealed dataset of a million pages is larger. The rules of
// readIndex (unterminated last line, CORRUPT with a line number) are checked
// against the whole-file reader it replaced, at chunk sizes that split lines
// and UTF-8 characters anywhere; files just over the string limit are read
// for real (whitespace-padded, ~1 s each); `crawler dataset` writes its
// output a batch at a time, byte for byte as before.
import { constants as bufferConstants } from 'node:buffer';
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { registerDatasetCommand } from '../../src/cli/commands/dataset';
import { loadCampaignIndex } from '../../src/cli/commands/report';
import { datasetCsv, readDataset, type DatasetLine } from '../../src/storage/dataset-writer';
import { readIndex, type IndexEntry } from '../../src/storage/index-writer';
import { StorageError } from '../../src/storage/storage-error';
import { tempDirs } from '../support/temp-dirs';

jest.setTimeout(60_000);

const tmpDir = tempDirs('jsonl-reading-test-');

/** readIndex as it was: each file in one string, split on '\n'. The reference for its rules. */
async function wholeFileReadIndex(dir: string, accept: (fileName: string) => boolean = () => true): Promise<IndexEntry[]> {
  const names = fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.jsonl') && accept(n))
    .sort();
  const parse = (line: string): IndexEntry | null => {
    try {
      const v: unknown = JSON.parse(line);
      return v && typeof v === 'object' && !Array.isArray(v) && typeof (v as { url?: unknown }).url === 'string' ? (v as IndexEntry) : null;
    } catch {
      return null;
    }
  };
  const out: IndexEntry[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    const tail = lines.pop() ?? '';
    lines.forEach((line, i) => {
      if (line.trim() === '') return;
      const e = parse(line);
      if (!e) throw new StorageError('CORRUPT', file, `line ${i + 1} is not an index entry`);
      out.push(e);
    });
    const e = tail.trim() === '' ? null : parse(tail);
    if (e) out.push(e);
  }
  return out;
}

const CHUNK_SIZES = [1, 2, 3, 5, 7, 16, 61, 4096, undefined];

function entry(i: number, over: Record<string, unknown> = {}): IndexEntry {
  return {
    url: `https://example.test/${i}`,
    fp: `fp${i}`,
    host: 'example.test',
    campaignId: 'c1',
    status: 200,
    outcome: 'fetched',
    contentType: 'text/html',
    bytes: i,
    contentHash: null,
    fetchedAt: `2026-01-01T00:00:${String(i % 60).padStart(2, '0')}.000Z`,
    depth: 0,
    referrer: null,
    ...over,
  };
}
const j = (i: number, over: Record<string, unknown> = {}) => JSON.stringify(entry(i, over));

async function errorOf(p: Promise<unknown>): Promise<{ name: string; code: unknown; file: unknown; message: string }> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof StorageError)) throw new Error(`expected a StorageError, got ${String(err)}`);
  return { name: err.name, code: err.code, file: err.file, message: err.message };
}

describe('readIndex reads line by line, with the rules of the whole-file reader', () => {
  test('lines and UTF-8 characters split across chunk boundaries, CRLF, blank lines, unterminated last lines', async () => {
    const dir = tmpDir();
    const write = (name: string, content: string | Buffer) => fs.writeFileSync(path.join(dir, name), content);
    write('a-plain.jsonl', `${j(0)}\n${j(1)}\n${j(2)}\n`);
    // Multi-byte characters (2, 3 and 4 bytes, and U+2028, which is no line break here) at every offset.
    write('b-utf8.jsonl', [0, 1, 2, 3].map((i) => `${j(10 + i, { url: `https://例え.test/${'é'.repeat(i)}😀\u2028`, title: '日本語テキスト' })}\n`).join(''));
    write('c-crlf.jsonl', `${j(20)}\r\n${j(21)}\r\n\r\n${j(22)}\r\n`);
    write('d-blank.jsonl', `\n\n  \t\n${j(30)}\n\r\n\uFEFF\n${j(31)}\n\n`);
    write('e-tail-complete.jsonl', `${j(40)}\n${j(41)}`);
    write('f-tail-torn.jsonl', `${j(50)}\n${j(51).slice(0, 30)}`);
    write('g-tail-crlf.jsonl', `${j(60)}\r\n${j(61)}\r`);
    write('h-tail-not-entry.jsonl', `${j(70)}\n[1,2]`);
    write('i-empty.jsonl', '');
    write('j-newline-only.jsonl', '\n');
    write('k-blank-tail.jsonl', `${j(80)}\n   `);
    // Bytes that are not UTF-8, inside strings: replaced (U+FFFD) the same way.
    const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
    write('l-bad-utf8.jsonl', bytes(`${j(90)}\n{"url":"https://x.test/`, [0xff, 0xe6, 0x97], '","fp":"fp91"}\n{"url":"', [0xf0, 0x9f], `"}\n${j(92)}\n`, [0xf0, 0x9f]));
    write('m-long-line.jsonl', `${j(100, { pad: 'x'.repeat(10_000) })}\n${j(101)}\n`);
    write('n-not-index.txt', 'not read\n');
    const reference = await wholeFileReadIndex(dir);
    expect(reference.length).toBeGreaterThan(20);
    expect(reference.map((e) => e.fp)).toContain('fp41');
    expect(reference.map((e) => e.fp)).toContain('fp61');
    expect(reference.map((e) => e.fp)).not.toContain('fp51');
    for (const chunkSize of CHUNK_SIZES) {
      expect({ chunkSize, entries: await readIndex(dir, undefined, { chunkSize }) }).toEqual({ chunkSize, entries: reference });
    }
    const accept = (n: string) => n.startsWith('b-') || n.startsWith('e-');
    for (const chunkSize of CHUNK_SIZES) expect(await readIndex(dir, accept, { chunkSize })).toEqual(await wholeFileReadIndex(dir, accept));
  });

  test('a bad line before the end is CORRUPT with its line number (blank lines counted), at any chunk size', async () => {
    const cases: Record<string, string | Buffer> = {
      'syntax.jsonl': `${j(0)}\n{"url": broken\n${j(1)}\n`,
      'after-crlf-and-blanks.jsonl': `${j(0)}\r\n\r\n\n${j(1)}\r\n[1]\r\n${j(2)}\r\n`,
      'torn-then-more.jsonl': `${j(0)}\n${j(1).slice(0, 40)}\n${j(2)}\n`,
      'no-url.jsonl': `${j(0)}\n{"fp":"x"}\n`,
      'string.jsonl': `"${'s'.repeat(100)}"\n${j(0)}`,
      'bom.jsonl': `\uFEFF${j(0)}\n`,
      'not-utf8.jsonl': Buffer.concat([Buffer.from(`${j(0)}\n`), Buffer.from([0xff, 0xfe, 0x0a])]),
      'cut-utf8.jsonl': Buffer.concat([Buffer.from(`${j(0)}\n${j(1)}`), Buffer.from([0xf0, 0x9f, 0x0a]), Buffer.from(j(2))]),
      'last-terminated.jsonl': `${j(0)}\n${j(1)}\n{"url":"x"\n`,
    };
    for (const [name, content] of Object.entries(cases)) {
      const dir = tmpDir();
      fs.writeFileSync(path.join(dir, name), content);
      const want = await errorOf(wholeFileReadIndex(dir));
      expect(want).toMatchObject({ code: 'CORRUPT', file: path.join(dir, name) });
      for (const chunkSize of CHUNK_SIZES) expect({ name, chunkSize, err: await errorOf(readIndex(dir, undefined, { chunkSize })) }).toEqual({ name, chunkSize, err: want });
    }
  });

  test('read failures are READ_FAILED naming the file or folder; a missing folder has no entries', async () => {
    const dir = tmpDir();
    fs.mkdirSync(path.join(dir, 'a-folder.jsonl'));
    expect(await errorOf(readIndex(dir))).toMatchObject({
      code: 'READ_FAILED',
      file: path.join(dir, 'a-folder.jsonl'),
      message: expect.stringContaining('cannot read index file'),
    });
    const notDir = path.join(dir, 'plain');
    fs.writeFileSync(notDir, '');
    expect(await errorOf(readIndex(notDir))).toMatchObject({ code: 'READ_FAILED', file: notDir, message: expect.stringContaining('cannot list index directory') });
    expect(await readIndex(path.join(dir, 'nope'))).toEqual([]);
  });

  test('a line too long to decode is a bad line: CORRUPT before the end, skipped as the last', async () => {
    for (const chunkSize of [3, 16, 4096]) {
      const dir = tmpDir();
      const long = j(1, { pad: 'x'.repeat(2000) });
      fs.writeFileSync(path.join(dir, 'a.jsonl'), `${j(0)}\n${long}`);
      expect(await readIndex(dir, undefined, { chunkSize, maxLineBytes: 1000 })).toEqual([entry(0)]);
      expect(await readIndex(dir, undefined, { chunkSize, maxLineBytes: long.length })).toEqual([entry(0), entry(1, { pad: 'x'.repeat(2000) })]);
      fs.appendFileSync(path.join(dir, 'a.jsonl'), `\n${j(2)}\n`);
      expect(await errorOf(readIndex(dir, undefined, { chunkSize, maxLineBytes: 1000 }))).toMatchObject({
        code: 'CORRUPT',
        message: expect.stringContaining('line 2 is not an index entry'),
      });
      expect(await readIndex(dir, undefined, { chunkSize, maxLineBytes: long.length })).toHaveLength(3);
    }
  });
});

/**
 * A JSONL file of more bytes than the longest string: `lines` at the start,
 * between 1 MiB runs of blank lines (which readers skip), and at the end,
 * where the last one has no newline.
 */
function writeOverStringLimit(file: string, lines: string[]): void {
  const pad = Buffer.alloc(1 << 20, ' ');
  for (let i = 4095; i < pad.length; i += 4096) pad[i] = 0x0a;
  const runs = Math.ceil(bufferConstants.MAX_STRING_LENGTH / pad.length) + 1;
  const fd = fs.openSync(file, 'w');
  try {
    lines.forEach((l, i) => {
      fs.writeSync(fd, i === lines.length - 1 ? l : `${l}\n`);
      // Lines land across the 1 MiB chunks the reader reads.
      if (i < lines.length - 1) for (let r = 0; r < Math.ceil(runs / (lines.length - 1)); r++) fs.writeSync(fd, pad);
    });
  } finally {
    fs.closeSync(fd);
  }
  expect(fs.statSync(file).size).toBeGreaterThan(bufferConstants.MAX_STRING_LENGTH);
}

describe('files larger than the longest string', () => {
  test('readIndex, and the report and archive commands (loadCampaignIndex), read an index file over 512 MiB', async () => {
    const out = tmpDir();
    fs.mkdirSync(path.join(out, 'index'));
    const file = path.join(out, 'index', 'index-big.jsonl');
    const entries = [entry(0), entry(1, { campaignId: 'other' }), entry(2, { title: '😀'.repeat(1000) }), entry(3)];
    try {
      writeOverStringLimit(
        file,
        entries.map((e) => JSON.stringify(e)),
      );
      expect(await readIndex(path.join(out, 'index'))).toEqual(entries);
      expect(await loadCampaignIndex('c1', [out])).toEqual({ dir: path.join(out, 'index'), entries: [entries[0], entries[2], entries[3]] });
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  test('readDataset and `crawler dataset` read a sealed dataset over 512 MiB', async () => {
    const out = tmpDir();
    fs.mkdirSync(path.join(out, 'index'));
    fs.mkdirSync(path.join(out, 'sealed'));
    const file = path.join(out, 'sealed', 'c1.dataset-default.jsonl');
    const lines = [0, 1, 2].map((i) => datasetLine(i, 0));
    try {
      writeOverStringLimit(
        file,
        lines.map((l) => JSON.stringify(l)),
      );
      expect(await readDataset(out)).toEqual(lines);
      const run = await runDatasetCommand([out]);
      expect(run.stdout.join('')).toBe(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
    } finally {
      fs.rmSync(file, { force: true });
    }
  });
});

function datasetLine(page: number, attempt: number, item: Record<string, unknown> = { n: page }): DatasetLine {
  return {
    url: `https://shop.test/p/${page}`,
    fp: `fp${page}`,
    attemptId: `a${page}.${attempt}`,
    campaignId: 'c1',
    label: page % 2 ? 'detail' : null,
    fetchedAt: `2026-01-01T00:${String(attempt).padStart(2, '0')}:00.000Z`,
    warc: { file: `w${attempt}.warc.gz`, offset: page * 1000 },
    item,
  };
}

/** Runs `crawler dataset <args>` in this process; what it writes to stdout and stderr, write by write. */
async function runDatasetCommand(args: string[]): Promise<{ stdout: string[]; stderr: string[] }> {
  const program = new Command().exitOverride();
  registerDatasetCommand(program);
  const got = { stdout: [] as string[], stderr: [] as string[] };
  const capture = (into: string[]) =>
    ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      into.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      const cb = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      if (cb) process.nextTick(cb);
      return true;
    }) as typeof process.stdout.write;
  const out = jest.spyOn(process.stdout, 'write').mockImplementation(capture(got.stdout));
  const err = jest.spyOn(process.stderr, 'write').mockImplementation(capture(got.stderr));
  try {
    await program.parseAsync(['node', 'crawler', 'dataset', ...args]);
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return got;
}

describe('crawler dataset writes as it reads, byte for byte as before', () => {
  // About 4 MB of items: pages 0..N, each with items of its committed attempt (1) and of a lost one (0).
  const PAGES = 3000;
  const item = (page: number, k: number) => ({
    sku: `S${page}-${k}`,
    name: k % 3 === 0 ? `Mug, "blue" ${page}` : `Tasse ${page} 😀`,
    priceCents: page * 10 + k,
    tags: k === 1 ? ['a', 'b'] : undefined,
    ...(page % 500 === 7 ? { url: 'x', note: 'two\r\nlines' } : {}),
    text: 'lorem ipsum dolor sit amet '.repeat(20),
  });
  function rawCampaign(): { out: string; committed: DatasetLine[] } {
    const out = tmpDir();
    fs.mkdirSync(path.join(out, 'index'));
    fs.mkdirSync(path.join(out, 'datasets', 'default'), { recursive: true });
    const index: string[] = [];
    const raw: string[] = [];
    const committed: DatasetLine[] = [];
    for (let p = 0; p < PAGES; p++) {
      for (const attempt of [0, 1]) {
        const lines = [0, 1].map((k) => datasetLine(p, attempt, item(p, k)));
        // Page 0..: the lost attempt is indexed too; the later fetch counts.
        index.push(JSON.stringify({ ...entry(p), fp: `fp${p}`, fetchedAt: lines[0]!.fetchedAt, warc: { file: lines[0]!.warc.file, offset: lines[0]!.warc.offset, length: 1 } }));
        raw.push(...lines.map((l) => JSON.stringify(l)));
        if (attempt === 1) committed.push(...lines);
      }
    }
    fs.writeFileSync(path.join(out, 'index', 'index-1.jsonl'), `${index.join('\n')}\n`);
    // Two workers' files, one with CRLF line ends and a torn last line.
    fs.writeFileSync(path.join(out, 'datasets', 'default', 'dataset-a.jsonl'), `${raw.filter((_, i) => i % 2 === 0).join('\n')}\n`);
    fs.writeFileSync(path.join(out, 'datasets', 'default', 'dataset-b.jsonl'), `${raw.filter((_, i) => i % 2 === 1).join('\r\n')}\r\n{"url":"torn`);
    return { out, committed };
  }

  test('JSON lines and CSV of a running campaign (raw files) and of a sealed one, to stdout in batches', async () => {
    const { out, committed } = rawCampaign();
    const lines = await readDataset(out);
    expect(lines.length).toBe(committed.length);
    const jsonl = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
    const csv = datasetCsv(lines);
    expect(jsonl.length).toBeGreaterThan(3 << 20);
    expect(JSON.parse(JSON.stringify(lines))).toEqual(JSON.parse(JSON.stringify(committed.sort((a, b) => lineOrder(a) - lineOrder(b)))));
    for (const [args, want] of [
      [[out], jsonl],
      [[out, '--csv'], csv],
    ] as const) {
      const run = await runDatasetCommand([...args]);
      expect(run.stdout.join('')).toBe(want);
      // Several writes of about 1 MiB, not one string of it all.
      expect(run.stdout.length).toBeGreaterThan(2);
      expect(Math.max(...run.stdout.map((s) => s.length))).toBeLessThan(1.5 * (1 << 20));
      expect(run.stderr).toEqual([]);
    }
    // Sealed: its one file is the dataset (here: the committed lines in another order).
    fs.mkdirSync(path.join(out, 'sealed'));
    const sealed = [...committed].reverse();
    fs.writeFileSync(path.join(out, 'sealed', 'c1.dataset-default.jsonl'), sealed.map((l) => `${JSON.stringify(l)}\n`).join(''));
    const run = await runDatasetCommand([out, '--csv']);
    expect(run.stdout.join('')).toBe(datasetCsv(sealed));
    expect(run.stdout.length).toBeGreaterThan(2);
  });

  test('--file gets the same bytes; an empty dataset gives an empty file (JSON lines) or the header (CSV)', async () => {
    const { out } = rawCampaign();
    const lines = await readDataset(out);
    const target = path.join(tmpDir(), 'items.jsonl');
    let run = await runDatasetCommand([out, '--file', target]);
    expect(fs.readFileSync(target, 'utf8')).toBe(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
    expect(run).toEqual({ stdout: [], stderr: [`${lines.length} item(s) from ${out} to ${target}\n`] });
    run = await runDatasetCommand([out, '--csv', '--file', target]);
    expect(fs.readFileSync(target, 'utf8')).toBe(datasetCsv(lines));
    expect(run.stdout).toEqual([]);

    const empty = tmpDir();
    fs.mkdirSync(path.join(empty, 'index'));
    run = await runDatasetCommand([empty, '--file', target]);
    expect(fs.readFileSync(target, 'utf8')).toBe('');
    expect(run.stderr).toEqual([`0 item(s) from ${empty} to ${target}\n`]);
    run = await runDatasetCommand([empty, '--csv']);
    expect(run.stdout.join('')).toBe('url,fetchedAt,warcFile,warcOffset,label\r\n');
  });

  test('a corrupt dataset file fails the command with CORRUPT', async () => {
    const { out } = rawCampaign();
    fs.writeFileSync(path.join(out, 'datasets', 'default', 'dataset-0.jsonl'), `${JSON.stringify(datasetLine(0, 1))}\nnot json\n`);
    const err = await runDatasetCommand([out, '--csv']).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'CORRUPT', message: expect.stringContaining('line 2 is not an index entry') });
  });
});

/** The order readDataset gives the fixture's committed lines: file a (even raw lines), then file b. */
function lineOrder(l: DatasetLine): number {
  const page = Number(l.fp.slice(2));
  const k = String(l.item.sku).endsWith('-0') ? 0 : 1;
  const rawIndex = page * 4 + 2 + k; // attempt 1's lines follow attempt 0's two
  return (rawIndex % 2) * 1e9 + rawIndex;
}
