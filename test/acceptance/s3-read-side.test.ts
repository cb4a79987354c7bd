// Everything that reads a campaign's output, from a bucket: a small catalogue
// is crawled into a folder (with a handler, so there is a dataset), its warc/,
// index/ and datasets/ files are uploaded into a real S3-compatible server
// (test/support/object-store.ts) under a prefix with the folder's layout, as
// the workers' uploader stores them, and then `crawler seal`, `cdxj`, `export
// --wacz` (into the bucket), `report`, `dataset` and `replay` (pywb) are run
// on `s3://bucket/prefix` and on the folder: the same sealed lines, CDXJ
// lines, package contents, report and items, the products published in the
// bucket under keys of their own, replay served from the local cache, and the
// store's credentials (from this process's environment, as the AWS SDK finds
// them) in no output, object, cached file or log line.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { freePort, waitFor } from '../../src/stack/ports';
import { findOrInstallPyReplayTools, type PyReplayTools } from '../../src/stack/tools';
import { parseCdxjLine } from '../../src/storage/cdxj';
import { publicationsOf } from '../../src/storage/mirror-layout';
import { openObjectStore, parseOutputLocation, type S3Location } from '../../src/storage/output-location';
import { bucketOutputSizes, cacheDirOf, OutputMirror, withView } from '../../src/storage/output-mirror';
import type { S3ObjectStore } from '../../src/storage/s3-object-store';
import { readWarcDir } from '../../src/storage/warc-reader';
import { catalogueSite, type CatalogueSite } from '../web/catalogue-site';
import { runCrawlerInProcess, type CliRun } from '../support/in-process-cli';
import { createHarness, launch, outputOf, type Harness } from '../support/harness';
import { startCampaign } from '../../src/temporal/campaign-client';
import { keysUnder, startTestObjectStore, type TestObjectStore } from '../support/object-store';
import type { SealCampaignResult } from '../../activities/seal-campaign';
import { domainWorkflowId } from '../../workflows/ids';
import { hostKey } from '../../src/url/normalize';

jest.setTimeout(600_000);

const ROOT = path.resolve(__dirname, '..', '..');
const CATALOGUE = path.join(ROOT, 'examples/catalogue-handler.ts');

let server: TestObjectStore;
let h: Harness;
let shop: CatalogueSite;
let tools: PyReplayTools;
let bucket: S3ObjectStore;
let campaignId: string;
/** The campaign's output folder, and the same output in the bucket. */
let folder: string;
let prefix: string;
let location: string;
let cacheRoot: string;
let s3Flags: string[];
const savedEnv = { ...process.env };
/** Every line any process printed: the credentials must be in none of them. */
const printed: string[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  server = await startTestObjectStore('crawl');
  // Credentials reach every process as a worker's or an operator's: the AWS SDK's variables.
  // The workers the harness starts inherit them too, so their logs are checked as well.
  Object.assign(process.env, server.env);
  for (const v of ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_PROFILE']) delete process.env[v];
  cacheRoot = path.join(process.env.CRAWLER_TEST_DATA_DIR!, `s3-read-cache-${process.pid}`);
  process.env.CRAWLER_CACHE_DIR = cacheRoot;
  tools = await findOrInstallPyReplayTools((m) => process.stderr.write(`[replay tools] ${m}\n`));
  h = await createHarness('s3-read', { workers: 1, onLog: (l) => printed.push(l) });
  shop = catalogueSite('shop.s3-read.test', { products: 8, perPage: 4, seed: 5 });
  h.web.addSite(shop.spec);
  const handle = await launch(h, { seeds: [h.web.url(shop.spec.host, '/')], handler: CATALOGUE, politeness: { minDelayMs: 20 } });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  campaignId = result.campaignId;
  folder = outputOf(h, campaignId).dir;

  // The folder's raw files into the bucket, keys as the uploader gives them (their path in the folder).
  prefix = `runs/${campaignId}/`;
  location = `s3://${server.bucket}/${prefix}`;
  bucket = openObjectStore(parseOutputLocation(`s3://${server.bucket}/`) as S3Location, { endpoint: server.endpoint, pathStyle: true });
  for (const area of ['warc', 'index', 'datasets']) {
    for (const rel of fs.readdirSync(path.join(folder, area), { recursive: true }) as string[]) {
      const file = path.join(folder, area, rel);
      if (fs.statSync(file).isFile()) await bucket.putFile(`${prefix}${area}/${rel.split(path.sep).join('/')}`, file);
    }
  }
  s3Flags = ['--s3-endpoint', server.endpoint, '--s3-path-style'];
}, 600_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  bucket?.destroy();
  await h?.close();
  await server?.stop();
  process.env = savedEnv;
});

/** `crawler <args…>` in this process; what it printed is kept for the credentials check. */
async function cli(args: string[]): Promise<CliRun> {
  const r = await runCrawlerInProcess(args);
  printed.push(r.stdout, r.stderr);
  return r;
}
async function ok(args: string[]): Promise<string> {
  const r = await cli(args);
  if (r.code !== 0) throw new Error(`crawler ${args.join(' ')} exited ${r.code}:\n${r.stderr}`);
  return r.stdout;
}
const lastLine = (s: string) => s.trim().split('\n').pop()!;

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
/** The object at an s3:// URL of the test bucket. */
const objectAt = async (url: string): Promise<Buffer> => bytesOf(await bucket.read(url.slice(`s3://${server.bucket}/`.length)));
const bucketKeysUnder = (p: string): Promise<string[]> => keysUnder(bucket, p);

/** `crawler seal --json`: the seal's result. */
type SealJson = SealCampaignResult;
/** What a seal's result says, but where its files are and when it ran. */
const figures = (r: SealJson) => ({
  lines: r.lines,
  rawLines: r.rawLines,
  dropped: r.dropped,
  unreadable: r.unreadable,
  missing: r.missing,
  revisits: r.revisits,
  rendered: r.rendered,
  buckets: r.buckets,
  datasets: r.datasets.map((d) => ({ name: d.name, items: d.items, dropped: d.dropped })),
  cdxj: r.cdxj && { lines: r.cdxj.lines, warcFiles: r.cdxj.warcFiles, keptLines: r.cdxj.keptLines },
});

test("a seal from the bucket gives the folder seal's lines, items and replay index, published under a key of its own with its manifest last", async () => {
  const fromFolder = JSON.parse(await ok(['seal', campaignId, '--out', folder, '--json'])) as SealJson;
  const fromBucket = JSON.parse(await ok(['seal', campaignId, '--out', location, ...s3Flags, '--json'])) as SealJson;
  expect(figures(fromBucket)).toEqual(figures(fromFolder));
  expect(fromBucket.lines).toBeGreaterThan(shop.products.length);
  expect(fromBucket.datasets.map((d) => d.items)).toEqual([shop.products.length]);
  expect(fromBucket.file).toMatch(new RegExp(`^${location}sealed/\\d{8}T\\d{9}Z-[0-9a-f]{8}/${campaignId}\\.index\\.jsonl$`));

  // The same bytes: the sealed index, the sealed dataset, the replay index.
  expect((await objectAt(fromBucket.file)).equals(fs.readFileSync(fromFolder.file))).toBe(true);
  expect((await objectAt(fromBucket.datasets[0].file)).equals(fs.readFileSync(path.join(folder, 'sealed', `${campaignId}.dataset-default.jsonl`)))).toBe(true);
  expect((await objectAt(fromBucket.cdxj!.file)).equals(fs.readFileSync(path.join(folder, 'index.cdxj')))).toBe(true);
  const id = fromBucket.file.split('/').slice(-2)[0];
  expect((await bucketKeysUnder(`${prefix}sealed/`)).sort()).toEqual(
    [`${campaignId}.dataset-default.jsonl`, `${campaignId}.index.jsonl`, `${campaignId}.seal.json`, 'index.cdxj'].map((n) => `${prefix}sealed/${id}/${n}`).sort(),
  );
  // The manifest names the index by its URL (the view it was written in is gone).
  const manifest = JSON.parse((await objectAt(`${location}sealed/${id}/${campaignId}.seal.json`)).toString()) as { file: string; lines: number; info: Record<string, unknown> };
  expect(manifest).toMatchObject({ file: fromBucket.file, lines: fromBucket.lines, info: { by: 'crawler seal' } });

  // Sealed again: a second publication beside the first, which is left as it was; readers take the newer.
  const again = JSON.parse(await ok(['seal', campaignId, '--out', location, ...s3Flags, '--json'])) as { file: string };
  const pubs = publicationsOf((await bucketKeysUnder(`${prefix}sealed/`)).map((key) => ({ key: key.slice(prefix.length), size: 0 })));
  expect(pubs.map((p) => p.id)).toHaveLength(2);
  expect(again.file).toContain(pubs[0].id);
  expect(pubs[1].id).toBe(id);
  expect((await objectAt(again.file)).equals(fs.readFileSync(fromFolder.file))).toBe(true);
});

test("a CDXJ from the bucket has the lines of the folder's, and is published there", async () => {
  const folderCdxj = lastLine(await ok(['cdxj', campaignId, '--out', folder]));
  const url = lastLine(await ok(['cdxj', campaignId, '--out', location, ...s3Flags]));
  expect(url).toMatch(new RegExp(`^${location}sealed/[^/]+/index\\.cdxj$`));
  const ours = (await objectAt(url)).toString();
  expect(ours).toBe(fs.readFileSync(folderCdxj, 'utf8'));
  const lines = ours.trimEnd().split('\n').map(parseCdxjLine);
  expect(lines.filter((l) => l.fields.url.includes('/product/'))).toHaveLength(shop.products.length);
  // Its manifest says whose it is, and came after it.
  const manifest = JSON.parse((await objectAt(url.replace(/index\.cdxj$/, `${campaignId}.cdxj.json`))).toString()) as Record<string, unknown>;
  expect(manifest).toMatchObject({ campaignId, file: url, lines: lines.length, by: 'crawler cdxj' });
  // -o writes the campaign's lines to a local file instead, and publishes nothing.
  const before = await bucketKeysUnder(`${prefix}sealed/`);
  const local = path.join(h.outDir, `${campaignId}-local.cdxj`);
  expect(lastLine(await ok(['cdxj', campaignId, '--out', location, ...s3Flags, '-o', local]))).toBe(local);
  expect(fs.readFileSync(local, 'utf8')).toBe(ours);
  expect(await bucketKeysUnder(`${prefix}sealed/`)).toEqual(before);
});

/** A WACZ's entries as Python's zipfile reads them: names, pages (the seeds' and the others' lists together), the index unzipped, and each WARC's sha256. */
function waczContents(file: string): { names: string[]; pages: string; cdxj: string; warcs: Record<string, string> } {
  const py = String.raw`
import sys, json, zipfile, hashlib, gzip
with zipfile.ZipFile(sys.argv[1]) as z:
    lists = [n for n in ('pages/pages.jsonl', 'pages/extraPages.jsonl') if n in z.namelist()]
    print(json.dumps({'names': sorted(z.namelist()), 'pages': ''.join(z.read(n).decode() for n in lists),
        'cdxj': gzip.decompress(z.read('indexes/index.cdx.gz')).decode(),
        'warcs': {n: hashlib.sha256(z.read(n)).hexdigest() for n in z.namelist() if n.startswith('archive/')}}))
`;
  const r = spawnSync(tools.python, ['-c', py, file], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as ReturnType<typeof waczContents>;
}

test("a WACZ exported from the bucket into the bucket holds the pages and WARCs of the folder's, validates, and is never replaced", async () => {
  const localWacz = path.join(h.outDir, `${campaignId}.wacz`);
  expect(lastLine(await ok(['export', campaignId, '--wacz', localWacz, '--out', folder]))).toBe(localWacz);
  const target = `s3://${server.bucket}/exports/${campaignId}.wacz`;
  expect(lastLine(await ok(['export', campaignId, '--wacz', target, '--out', location, ...s3Flags]))).toBe(target);
  const fetched = path.join(h.outDir, `${campaignId}-from-bucket.wacz`);
  fs.writeFileSync(fetched, await objectAt(target));
  const [ours, theirs] = [waczContents(fetched), waczContents(localWacz)];
  expect(ours).toEqual(theirs);
  expect(Object.keys(ours.warcs).length).toBeGreaterThan(0);
  expect(ours.pages.split('\n').filter((l) => l.includes('/product/'))).toHaveLength(shop.products.length);
  const valid = spawnSync(path.join(tools.bin, 'wacz'), ['validate', '-f', fetched], { encoding: 'utf8' });
  expect(valid.stdout).toContain('Validation succeeded');

  // The key is taken: a second export is refused before anything is written, and the object stays.
  const size = (await bucket.size(`exports/${campaignId}.wacz`))!;
  const refused = await cli(['export', campaignId, '--wacz', target, '--out', location, ...s3Flags]);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toMatch(/already exists: objects are never replaced/);
  expect(await bucket.size(`exports/${campaignId}.wacz`)).toBe(size);
});

test("a report from the bucket is the folder's report, published under reports/", async () => {
  const folderReport = lastLine(await ok(['report', campaignId, '--out', folder, '--file', path.join(h.outDir, `${campaignId}-report.html`)]));
  const r = await cli(['report', campaignId, '--out', location, ...s3Flags]);
  expect(r.code).toBe(0);
  const url = lastLine(r.stdout);
  expect(url).toMatch(new RegExp(`^${location}reports/\\d{8}T\\d{9}Z-[0-9a-f]{8}/${campaignId}\\.report\\.html$`));
  expect(r.stderr).toContain(`from the newest seal in ${location}sealed/`);
  // Generated at another moment; otherwise the same page.
  const undated = (html: string) => html.replace(/generated \d{4}-\d\d-\d\dT[\d:.]+Z/g, 'generated …').replace(/"generatedAt":"[^"]+"/g, '"generatedAt":…');
  const html = (await objectAt(url)).toString();
  expect(undated(html)).toBe(undated(fs.readFileSync(folderReport, 'utf8')));
  expect(html).toContain(`data-campaign="${campaignId}"`);
  // A campaign that is not there: the message names the bucket, not the cache folder looked in.
  const none = await cli(['report', 'no-such-campaign', '--out', location, ...s3Flags]);
  expect(none.code).toBe(2);
  expect(none.stderr).toContain(`no index entries for campaign no-such-campaign in ${location.replace(/\/$/, '')}`);
  expect(none.stderr).not.toContain(cacheRoot);
  expect(html).toMatch(/data-figure="pages-fetched" data-value="(\d+)"/);
  expect(Number(/data-figure="pages-fetched" data-value="(\d+)"/.exec(html)![1])).toBeGreaterThan(shop.products.length);
});

test("the dataset from the bucket has the folder's items, as JSON lines and as CSV, to standard output and into the bucket", async () => {
  const folderItems = await ok(['dataset', folder]);
  const bucketItems = await ok(['dataset', location, ...s3Flags]);
  expect(bucketItems).toBe(folderItems);
  const skus = folderItems
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { item: { sku: string } }).item.sku)
    .sort();
  expect(skus).toEqual(shop.products.map((p) => p.sku).sort());
  expect(await ok(['dataset', location, ...s3Flags, '--csv'])).toBe(await ok(['dataset', folder, '--csv']));
  const empty = await cli(['dataset', `s3://${server.bucket}/nothing-here/`, ...s3Flags]);
  expect(empty.code).toBe(2);
  expect(empty.stderr).toContain(`no campaign output at s3://${server.bucket}/nothing-here/`);
  const target = `s3://${server.bucket}/exports/${campaignId}-items.jsonl`;
  await ok(['dataset', location, ...s3Flags, '--file', target]);
  expect((await objectAt(target)).toString()).toBe(folderItems);
});

test('pywb replays a page from the cache, through the replay index published in the bucket', async () => {
  const productUrl = h.web.url(shop.spec.host, shop.products[0].path);
  const record = (await readWarcDir(path.join(folder, 'warc'))).find((rec) => rec.type === 'response' && rec.targetUri === productUrl)!;
  const port = await freePort();
  const cmd = crawlerCommand(['replay', campaignId, '--out', location, ...s3Flags, '--port', String(port)]);
  const replay = spawn(cmd.command, cmd.args, { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(replay);
  let out = '';
  replay.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  replay.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const coll = `http://127.0.0.1:${port}/${campaignId.replace(/[^A-Za-z0-9_-]/g, '-')}/`;
  await waitFor(
    'crawler replay',
    async () => (await fetch(coll).catch(() => null))?.ok === true,
    120_000,
    () => (replay.exitCode !== null ? `exit ${replay.exitCode}:\n${out}` : null),
  );
  const res = await fetch(`${coll}id_/${productUrl}`);
  expect(res.status).toBe(200);
  expect(Buffer.from(await res.arrayBuffer()).equals(record.payload!)).toBe(true);
  // The newest index in the bucket covers every WARC of the campaign: nothing was indexed again.
  expect(out).not.toMatch(/indexed \d+ WARC files/);
  // pywb reads a view of the cache, which lasts while it serves.
  const views = path.join(cacheDirOf(cacheRoot, location), 'views');
  expect(fs.readdirSync(views)).toHaveLength(1);
  const exited = new Promise<number | null>((r) => replay.once('exit', (code) => r(code)));
  replay.kill('SIGTERM');
  expect(await exited).toBe(0);
  printed.push(out);
  // Once it is gone, so is its view; the downloaded objects stay for the next command.
  expect(fs.readdirSync(views)).toEqual([]);
  expect(fs.readdirSync(path.join(cacheDirOf(cacheRoot, location), 'objects', 'warc')).length).toBeGreaterThan(0);
});

test('the mirror downloads only what it lacks, and passes over a seal still under way and keys the folder code would not read', async () => {
  const store = openObjectStore(parseOutputLocation(location) as S3Location, { endpoint: server.endpoint, pathStyle: true });
  try {
    const mirror = new OutputMirror(store, { cacheRoot });
    const warcs = (await bucketKeysUnder(`${prefix}warc/`)).map((k) => k.slice(prefix.length));
    const indexKey = (await bucketKeysUnder(`${prefix}index/`)).map((k) => k.slice(prefix.length))[0];
    const whole = mirror.objectPath(indexKey);
    const cut = mirror.objectPath(warcs[0]);
    const inode = fs.statSync(whole).ino;
    // A cached object cut short is downloaded again; a whole one is kept as it is.
    fs.truncateSync(cut, 10);
    // A seal with the newest id but no manifest yet (its upload under way), and a key deeper than index/'s files.
    await store.putBytes(`sealed/29990101T000000000Z-00000000/${campaignId}.index.jsonl`, Buffer.from('{"not":"complete"}\n'));
    await store.putBytes('index/deeper/x.jsonl', Buffer.from('{}\n'));
    await withView(mirror, { warcs: { campaignId }, sealed: { campaignId } }, async (view) => {
      expect(fs.statSync(whole).ino).toBe(inode);
      expect(fs.statSync(cut).size).toBe((await store.size(warcs[0]))!);
      // The newest complete seal, not the one under way.
      expect(fs.readFileSync(path.join(view.dir, 'sealed', `${campaignId}.index.jsonl`), 'utf8')).toBe(
        fs.readFileSync(path.join(folder, 'sealed', `${campaignId}.index.jsonl`), 'utf8'),
      );
      expect(fs.existsSync(path.join(view.dir, 'index', 'deeper'))).toBe(false);
      expect(fs.readdirSync(path.join(view.dir, 'warc')).sort()).toEqual(warcs.map((k) => k.slice('warc/'.length)).sort());
    });
    // What the campaign's summary weighs before sealing in its own activity: the folder's sizes, from a listing.
    const sizeOf = (dir: string, keep: (n: string) => boolean) =>
      fs
        .readdirSync(path.join(folder, dir))
        .filter(keep)
        .reduce((n, f) => n + fs.statSync(path.join(folder, dir, f)).size, 0);
    expect(await bucketOutputSizes(store, campaignId)).toEqual({
      rawIndexBytes: sizeOf('index', (n) => n.endsWith('.jsonl')),
      warcBytes: sizeOf('warc', (n) => n.endsWith('.warc.gz')),
    });
  } finally {
    store.destroy();
  }
});

test("a campaign's seals a newer one superseded are deleted from the bucket, the newest two kept, another campaign's untouched", async () => {
  const store = openObjectStore(parseOutputLocation(location) as S3Location, { endpoint: server.endpoint, pathStyle: true });
  try {
    const c = 'superseded';
    const id = (d: number) => `2025010${d}T000000000Z-0000000${d}`;
    for (const d of [1, 2, 3]) for (const name of [`${c}.index.jsonl`, 'index.cdxj', `${c}.seal.json`]) await store.putBytes(`sealed/${id(d)}/${name}`, Buffer.from(`${d}\n`));
    const before = await bucketKeysUnder(`${prefix}sealed/`);
    const pruned = await withView(new OutputMirror(store, { cacheRoot }), {}, (view) => view.prune(c));
    expect(pruned).toBe(1);
    const after = await bucketKeysUnder(`${prefix}sealed/`);
    // Exactly the oldest seal's three objects went.
    expect(before.filter((k) => !after.includes(k)).sort()).toEqual([`${c}.index.jsonl`, `${c}.seal.json`, 'index.cdxj'].map((n) => `${prefix}sealed/${id(1)}/${n}`).sort());
    // Deleting what is not there is no error.
    await store.remove(`sealed/${id(1)}/${c}.seal.json`);
    expect(await store.size(`sealed/${id(1)}/${c}.seal.json`)).toBeNull();
  } finally {
    store.destroy();
  }
});

test('a campaign whose output is the bucket seals itself there at its end, on the worker, with what its spool uploaded', async () => {
  const id = `${campaignId}-direct`;
  const out = `s3://${server.bucket}/direct/${id}/`;
  const handle = await startCampaign(h.client, h.taskQueue, {
    campaignId: id,
    seeds: [h.web.url(shop.spec.host, '/')],
    handler: CATALOGUE,
    politeness: { minDelayMs: 20, maxInFlightPerAddress: null },
    fetch: { resolve: h.web.resolveArgs() },
    output: { dir: out, s3: { endpoint: server.endpoint, pathStyle: true } },
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  // Sealed from the bucket in the campaign's summary: every committed URL has its line, none is missing.
  expect(result.sealedIndex).toMatchObject({ file: expect.stringMatching(new RegExp(`^${out}sealed/[^/]+/${id}\\.index\\.jsonl$`)), missing: 0 });
  const urlsOf = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { url: string }).url)
      .sort();
  // The same URLs as the campaign crawled into a folder.
  expect(urlsOf((await objectAt(result.sealedIndex!.file)).toString())).toEqual(urlsOf(fs.readFileSync(path.join(folder, 'sealed', `${campaignId}.index.jsonl`), 'utf8')));
  const keys = await bucketKeysUnder(`direct/${id}/`);
  for (const area of ['warc/', 'index/', 'datasets/default/']) expect({ area, stored: keys.some((k) => k.startsWith(`direct/${id}/${area}`)) }).toEqual({ area, stored: true });
  expect(keys.some((k) => k.endsWith(`/${id}.seal.json`) && k.includes('/sealed/'))).toBe(true);
  expect(keys.some((k) => k.endsWith('/index.cdxj') && k.includes('/sealed/'))).toBe(true);
  // Its items, read back from the bucket: each product once.
  const items = await ok(['dataset', out, ...s3Flags]);
  expect(urlsOf(items).length).toBe(shop.products.length);
});

test('the credentials are in no output, object, cached file or log line', async () => {
  const secrets = [server.accessKey, server.secretKey];
  const leaks: string[] = [];
  const check = (where: string, text: string) => {
    for (const s of secrets) if (text.includes(s)) leaks.push(where);
  };
  expect(printed.length).toBeGreaterThan(10);
  printed.forEach((p, i) => check(`printed #${i}`, p));
  for await (const o of bucket.list('')) check(o.key, (await bytesOf(await bucket.read(o.key))).toString('latin1'));
  const walk = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? walk(path.join(dir, d.name)) : d.isFile() ? [path.join(dir, d.name)] : []));
  const files = [...walk(cacheRoot), ...walk(h.outDir)];
  expect(files.some((f) => f.includes(`${path.sep}objects${path.sep}sealed${path.sep}`))).toBe(true);
  for (const f of files) check(f, fs.readFileSync(f).toString('latin1'));
  // The histories of the campaign crawled straight into the bucket, its own and its host's: payloads
  // are base64 in the history's JSON, so read decoded too, as the Web UI shows them.
  const direct = `${campaignId}-direct`;
  const histories: string[] = [];
  for (const wf of [direct, domainWorkflowId(direct, hostKey(h.web.url(shop.spec.host, '/')))]) {
    const raw = JSON.stringify(await h.client.workflow.getHandle(wf).fetchHistory());
    const text = [raw, ...[...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map((d) => Buffer.from(d[1], 'base64').toString('utf8'))].join('\n');
    histories.push(text);
    check(`history of ${wf}`, text);
  }
  // Read as they should be: the campaign's input names its bucket.
  expect(histories[0]).toContain(`s3://${server.bucket}/direct/`);
  expect(leaks).toEqual([]);
  // And the secret really is what the commands reach the store with: a wrong one is refused.
  const saved = process.env.AWS_SECRET_ACCESS_KEY;
  process.env.AWS_SECRET_ACCESS_KEY = `${server.secretKey}x`;
  try {
    const denied = await cli(['dataset', location, ...s3Flags]);
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toMatch(/refused/);
    expect(denied.stderr).not.toContain(server.secretKey);
  } finally {
    process.env.AWS_SECRET_ACCESS_KEY = saved;
  }
});
