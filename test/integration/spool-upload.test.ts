// Outputs in object storage, end to end on one machine: the writers of the
// output registry write into the spool, finish files by size and by age,
// and the uploader takes them into a store (a FolderObjectStore here, a real
// one: the contract is the S3 store's). A writer killed mid-write leaves
// files the next start's sweep cuts back and uploads; a store that fails
// delays uploads and loses nothing; a flush leaves nothing in the spool.
// Every record is read back from the store with the repo's WARC reader.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../../src/config/project-root';
import { createLogger } from '../../src/log/logger';
import { FolderObjectStore } from '../../src/storage/folder-object-store';
import type { IndexEntry } from '../../src/storage/index-writer';
import { IDLE_CLOSE_MS, OutputRegistry, type UploadBounds } from '../../src/storage/output-registry';
import { spoolContents, spoolDirOf } from '../../src/storage/spool';
import { SpoolUploader } from '../../src/storage/spool-uploader';
import { readResponseAt, readWarcFile } from '../../src/storage/warc-reader';
import type { WarcExchange, WarcLocation } from '../../src/storage/warc-writer';
import { tempDirs } from '../support/temp-dirs';
import { keysUnder } from '../support/object-store';

const tmpDir = tempDirs('spool-upload-');
/** The output location the tests' store factory answers for (any string the factory knows). */
const DIR = 's3://spool-test/campaign';
const HOUR = 3_600_000;

function exchange(i: number, bodyBytes = 1500): WarcExchange {
  return {
    url: `http://site.test/p${i}`,
    fetchedAt: new Date(Date.UTC(2025, 0, 1, 0, 0, i)),
    request: { method: 'GET', headers: { Accept: '*/*' } },
    // Random text: pages that do not compress to nothing, so the size bound is met after a few.
    response: { status: 200, headers: { 'Content-Type': 'text/html' }, body: Buffer.from(`<p>page ${i}</p>${randomBytes(bodyBytes).toString('hex')}`) },
  };
}

/** Waits until `cond` holds (what a test waits for, not how long it takes). */
async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await new Promise((r) => setTimeout(r, 10));
}

const keys = keysUnder;

interface Setup {
  root: string;
  storeDir: string;
  store: FolderObjectStore;
  uploader: SpoolUploader;
  outputs: OutputRegistry;
  spoolDir: string;
  warnings: string[];
}

async function setup(opts: { storeDir?: string; root?: string; retryMs?: number } = {}): Promise<Setup> {
  const tmp = tmpDir();
  const root = opts.root ?? path.join(tmp, 'spool');
  const storeDir = opts.storeDir ?? path.join(tmp, 'store');
  const store = new FolderObjectStore(storeDir);
  const warnings: string[] = [];
  const log = createLogger({ level: 'warn', write: (line) => void warnings.push(line) });
  const uploader = new SpoolUploader({
    root,
    openStore: (t) => (t.dir === DIR ? store : null),
    firstRetryMs: opts.retryMs ?? 20,
    maxRetryMs: opts.retryMs ?? 200,
    sweepEveryMs: 0,
    log,
  });
  await uploader.start();
  return { root, storeDir, store, uploader, outputs: new OutputRegistry(IDLE_CLOSE_MS, uploader), spoolDir: spoolDirOf(root, DIR), warnings };
}

async function teardown(s: Setup): Promise<void> {
  await s.outputs.closeAll();
  await s.uploader.close();
}

/** Pages of a crawl as the page pipeline writes them: the WARC exchange, its index line, a dataset item. */
async function crawl(s: Setup, bounds: UploadBounds, from: number, to: number): Promise<WarcLocation[]> {
  const locs: WarcLocation[] = [];
  for (let i = from; i < to; i++) {
    const ex = exchange(i);
    const loc = await (await s.outputs.warc(DIR, 'camp', { upload: bounds })).writeExchange(ex);
    locs.push(loc);
    const warc = { file: loc.file, offset: loc.offset, length: loc.length };
    await (await s.outputs.index(DIR, { upload: bounds })).append({ url: ex.url, fetchedAt: ex.fetchedAt.toISOString(), warc } as IndexEntry);
    await (
      await s.outputs.dataset(DIR, { upload: bounds })
    ).appendAll([{ url: ex.url, fp: `fp${i}`, campaignId: 'camp', label: null, fetchedAt: ex.fetchedAt.toISOString(), warc, item: { i } }]);
  }
  return locs;
}

/** Every JSON line of the store's objects under `prefix`, in key order. */
async function storedLines(s: Setup, prefix: string): Promise<{ url: string; warc?: { file: string; offset: number; length: number } }[]> {
  const out = [];
  for (const key of await keys(s.store, prefix)) {
    const text = fs.readFileSync(path.join(s.storeDir, key), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    for (const line of text.slice(0, -1).split('\n')) out.push(JSON.parse(line) as { url: string; warc?: { file: string; offset: number; length: number } });
  }
  return out;
}

/** Each WARC object is whole (no partial record at its end), and every location's response is there, as written. */
async function expectRecordsInStore(s: Setup, locs: WarcLocation[]): Promise<void> {
  const files = await keys(s.store, 'warc/');
  for (const key of files) {
    const records = await readWarcFile(path.join(s.storeDir, key), { truncatedTail: 'throw' });
    expect(records.every((r) => r.blockDigestOk)).toBe(true);
    expect(records[0]!.headers['WARC-Filename']).toBe(key.slice('warc/'.length));
  }
  for (const loc of locs) {
    expect(files).toContain(`warc/${loc.file}`);
    const stored = await readResponseAt(path.join(s.storeDir, 'warc', loc.file), loc.offset, loc.length);
    expect(stored.payloadDigestOk).toBe(true);
  }
}

async function expectSpoolEmpty(s: Setup): Promise<void> {
  expect(await spoolContents(s.spoolDir)).toEqual({ ready: [], open: [] });
}

test('files finished at the size bound go up while the crawl writes; a flush finishes the rest and leaves nothing in the spool', async () => {
  const s = await setup();
  try {
    const bounds = { maxFileBytes: 4000, maxFileAgeMs: HOUR };
    const locs = await crawl(s, bounds, 0, 12);
    // Several WARC files were finished by size already (and some of them uploaded, in the background).
    expect(new Set(locs.map((l) => l.file)).size).toBeGreaterThanOrEqual(4);
    expect(await s.uploader.flush(DIR)).toBe(true);
    await expectSpoolEmpty(s);
    expect((await keys(s.store, 'warc/')).length).toBe(new Set(locs.map((l) => l.file)).size);
    await expectRecordsInStore(s, locs);
    // Every index line and dataset item once, each pointing at a record in the store.
    const index = await storedLines(s, 'index/');
    expect(index.map((e) => e.url).sort()).toEqual(locs.map((_, i) => `http://site.test/p${i}`).sort());
    expect(index.map((e) => e.warc)).toEqual(locs.map((l) => ({ file: l.file, offset: l.offset, length: l.length })));
    expect((await storedLines(s, 'datasets/default/')).map((e) => e.url)).toEqual(index.map((e) => e.url));
    // The writers are still open: the crawl goes on into new files, flushed again.
    const more = await crawl(s, bounds, 12, 14);
    expect(await s.uploader.flush(DIR)).toBe(true);
    await expectSpoolEmpty(s);
    await expectRecordsInStore(s, [...locs, ...more]);
  } finally {
    await teardown(s);
  }
});

test('a slow crawl: files are finished at the age bound and reach the store without any flush', async () => {
  const s = await setup();
  try {
    const [loc] = await crawl(s, { maxFileBytes: 1 << 30, maxFileAgeMs: 100 }, 0, 1);
    await until(
      async () => (await s.store.size(`warc/${loc!.file}`)) !== null && (await keys(s.store, 'index/')).length === 1 && (await keys(s.store, 'datasets/default/')).length === 1,
    );
    await until(async () => (await spoolContents(s.spoolDir)).ready.length === 0);
    await expectRecordsInStore(s, [loc!]);
    expect((await storedLines(s, 'index/')).map((e) => e.url)).toEqual(['http://site.test/p0']);
  } finally {
    await teardown(s);
  }
});

test('a folder output is written as before: into the folder, nothing spooled, nothing uploaded', async () => {
  const s = await setup();
  try {
    const out = path.join(tmpDir(), 'out');
    const w = await s.outputs.warc(out, 'camp', { upload: { maxFileBytes: 1, maxFileAgeMs: 1 } });
    await w.writeExchange(exchange(1));
    await w.writeExchange(exchange(2));
    await (await s.outputs.index(out)).append({ url: 'http://site.test/p1' } as IndexEntry);
    await s.outputs.closeAll();
    // The upload bounds are not a folder's: one WARC file, as with the 1 GiB default.
    expect(fs.readdirSync(path.join(out, 'warc'))).toEqual([w.files[0]]);
    expect(fs.readdirSync(path.join(out, 'index'))).toHaveLength(1);
    expect(fs.existsSync(s.root)).toBe(false);
    expect(await keys(s.store, '')).toEqual([]);
  } finally {
    await teardown(s);
  }
});

test("a killed writer's half-written WARC and index file are cut back at the next start's sweep and uploaded: every whole record, no partial one", async () => {
  const tmp = tmpDir();
  const root = path.join(tmp, 'spool');
  const storeDir = path.join(tmp, 'store');
  const script = path.join(tmp, 'writer.ts');
  const src = (m: string) => JSON.stringify(path.join(PROJECT_ROOT, 'src', 'storage', m));
  fs.writeFileSync(
    script,
    `import fs from 'node:fs';
import path from 'node:path';
import { FolderObjectStore } from ${src('folder-object-store')};
import { IDLE_CLOSE_MS, OutputRegistry } from ${src('output-registry')};
import { SpoolUploader } from ${src('spool-uploader')};
import { WarcWriter } from ${src('warc-writer')};
const [root, storeDir, dir, scratch] = process.argv.slice(2);
const exchange = (i: number) => ({
  url: 'http://site.test/p' + i,
  fetchedAt: new Date(Date.UTC(2025, 0, 1, 0, 0, i)),
  request: { method: 'GET', headers: {} },
  response: { status: 200, headers: { 'Content-Type': 'text/html' }, body: Buffer.alloc(2000, 'page ' + i + ' ') },
});
(async () => {
  const uploader = new SpoolUploader({ root, openStore: (t) => (t.dir === dir ? new FolderObjectStore(storeDir) : null), sweepEveryMs: 0 });
  await uploader.start();
  const outputs = new OutputRegistry(IDLE_CLOSE_MS, uploader);
  const bounds = { maxFileBytes: 1 << 30, maxFileAgeMs: 3_600_000 };
  const warc = await outputs.warc(dir, 'camp', { upload: bounds });
  const index = await outputs.index(dir, { upload: bounds });
  const locs = [];
  for (let i = 0; i < 5; i++) {
    const loc = await warc.writeExchange(exchange(i));
    locs.push(loc);
    await index.append({ url: 'http://site.test/p' + i, warc: { file: loc.file, offset: loc.offset, length: loc.length } } as never);
  }
  const warcFile = path.join(outputs.place(dir).root, 'warc', warc.currentFile!);
  const whole = { warc: fs.statSync(warcFile).size, index: fs.statSync(index.path).size };
  // What a kill in the middle of a write leaves: the first half of the next record's gzip member, the start of the next line.
  const other = await WarcWriter.open({ dir: scratch });
  const next = await other.writeExchange(exchange(5));
  await other.close();
  const member = fs.readFileSync(path.join(scratch, next.file)).subarray(next.offset, next.offset + next.length);
  fs.appendFileSync(warcFile, member.subarray(0, member.length >> 1));
  fs.appendFileSync(index.path, '{"url":"http://site.test/p5","warc":{"fi');
  console.log(JSON.stringify({ locs, whole, warcName: path.basename(warcFile), indexName: path.basename(index.path) }));
  setInterval(() => undefined, 1000);
})();
`,
  );
  const tsxDir = path.join(PROJECT_ROOT, 'node_modules', 'tsx', 'dist');
  const child = spawn(
    process.execPath,
    ['--require', path.join(tsxDir, 'preflight.cjs'), '--import', pathToFileURL(path.join(tsxDir, 'loader.mjs')).href, script, root, storeDir, DIR, path.join(tmp, 'scratch')],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await until(() => out.includes('\n') || child.exitCode !== null);
  child.kill('SIGKILL');
  await exited;
  const wrote = JSON.parse(out) as { locs: WarcLocation[]; whole: { warc: number; index: number }; warcName: string; indexName: string };

  const s = await setup({ root, storeDir });
  try {
    // The sweep at start found the dead writer's files: cut back, marked finished, uploading.
    expect(await s.uploader.flush(DIR)).toBe(true);
    await expectSpoolEmpty(s);
    expect(await keys(s.store, '')).toEqual([`index/${wrote.indexName}`, `warc/${wrote.warcName}`]);
    // Exactly the whole records: the object ends where the last whole one did.
    expect(await s.store.size(`warc/${wrote.warcName}`)).toBe(wrote.whole.warc);
    expect(await s.store.size(`index/${wrote.indexName}`)).toBe(wrote.whole.index);
    const records = await readWarcFile(path.join(storeDir, 'warc', wrote.warcName), { truncatedTail: 'throw' });
    expect(records.filter((r) => r.type === 'response').map((r) => r.targetUri)).toEqual([0, 1, 2, 3, 4].map((i) => `http://site.test/p${i}`));
    await expectRecordsInStore(s, wrote.locs);
    const index = await storedLines(s, 'index/');
    expect(index.map((e) => e.url)).toEqual([0, 1, 2, 3, 4].map((i) => `http://site.test/p${i}`));
    expect(index.map((e) => e.warc)).toEqual(wrote.locs.map((l) => ({ file: l.file, offset: l.offset, length: l.length })));
  } finally {
    await teardown(s);
  }
});

test('a store that fails delays the uploads, retried with back-off, while the crawl goes on; nothing is lost once it is back', async () => {
  const s = await setup();
  try {
    // The store's folder is a plain file: every put fails, as on a mount gone bad (whoever runs the test, root too).
    fs.writeFileSync(s.storeDir, 'not a folder');
    const bounds = { maxFileBytes: 4000, maxFileAgeMs: HOUR };
    const locs = await crawl(s, bounds, 0, 8);
    const flushed = s.uploader.flush(DIR);
    const failures = () => s.warnings.filter((l) => l.includes('upload failed')).length;
    await until(() => failures() >= 4);
    // Retried, and kept: every finished file waits in the spool.
    expect(s.uploader.pendingOf(DIR)).toBeGreaterThan(0);
    expect((await spoolContents(s.spoolDir)).ready.length).toBe(s.uploader.pendingOf(DIR));
    // The writers were never held up: more pages while the store is down.
    locs.push(...(await crawl(s, bounds, 8, 10)));
    fs.unlinkSync(s.storeDir);
    expect(await flushed).toBe(true);
    expect(await s.uploader.flush(DIR)).toBe(true);
    await expectSpoolEmpty(s);
    await expectRecordsInStore(s, locs);
    expect((await storedLines(s, 'index/')).map((e) => e.url)).toEqual(locs.map((_, i) => `http://site.test/p${i}`));
  } finally {
    await teardown(s);
  }
});

test('a key the store holds with other content is never overwritten: the file is kept aside and the flush says so', async () => {
  // No retry on its own after the first failure: the flush below is the next attempt.
  const s = await setup({ retryMs: HOUR });
  try {
    fs.writeFileSync(s.storeDir, 'not a folder');
    const [loc] = await crawl(s, { maxFileBytes: 1 << 30, maxFileAgeMs: HOUR }, 0, 1);
    await s.outputs.finishOpen(DIR);
    await until(() => s.warnings.some((l) => l.includes('upload failed')));
    // Meanwhile someone stored other content under the WARC's key.
    fs.unlinkSync(s.storeDir);
    await s.store.putBytes(`warc/${loc!.file}`, Buffer.from('other content'));
    expect(await s.uploader.flush(DIR)).toBe(false);
    expect(fs.readFileSync(path.join(s.storeDir, 'warc', loc!.file), 'utf8')).toBe('other content');
    const kept = path.join(s.spoolDir, 'warc', 'refused', loc!.file);
    expect((await readWarcFile(kept, { truncatedTail: 'throw' })).some((r) => r.recordId === loc!.recordId)).toBe(true);
    expect(s.warnings.some((l) => l.includes('other content') && l.includes('"level":"error"'))).toBe(true);
    // The rest (the index line) went up.
    expect((await storedLines(s, 'index/')).map((e) => e.url)).toEqual(['http://site.test/p0']);
  } finally {
    await teardown(s);
  }
});
