// Issue 39's lost disk: three workers, each with a spool folder of its own
// (no folder shared at all), write a campaign into a real S3-compatible
// bucket with an upload age longer than the crawl, so every page each one
// commits stays in its spool until the campaign's flush. One is killed with
// kill -9 mid-crawl and its spool deleted: the pages it had committed are in
// no file anywhere. The campaign must still complete with every page of the
// test web exactly once in the sealed index read from the bucket, and every
// sealed line's WARC record read back from the bucket.
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { startCampaign } from '../../src/temporal/campaign-client';
import { openObjectStore, parseOutputLocation, type S3Location } from '../../src/storage/output-location';
import { readResponseAt } from '../../src/storage/warc-reader';
import type { IndexEntry } from '../../src/storage/index-writer';
import { createHarness, type Harness } from '../support/harness';
import { startTestObjectStore, type TestObjectStore } from '../support/object-store';

jest.setTimeout(15 * 60_000);

const HOSTS = 6;
const PAGES = 20;

let server: TestObjectStore;
let h: Harness;
let root: string;
const printed: string[] = [];
const savedEnv = { ...process.env };

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

beforeAll(async () => {
  server = await startTestObjectStore('crawl');
  Object.assign(process.env, server.env);
  for (const v of ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_PROFILE']) delete process.env[v];
  root = path.join(process.env.CRAWLER_TEST_DATA_DIR!, `lost-disk-${process.pid}`);
  // `{slot}`: each worker its own spool and cache, as on machines that share nothing.
  h = await createHarness('lost-disk', {
    workers: 3,
    env: { CRAWLER_SPOOL_DIR: path.join(root, 'w{slot}', 'spool'), CRAWLER_CACHE_DIR: path.join(root, 'w{slot}', 'cache') },
    onLog: (l) => printed.push(l),
  });
  for (let i = 0; i < HOSTS; i++) h.web.addSite({ host: `s${i}.lost-disk.test`, pages: PAGES, fanOut: 3, seed: i });
});

afterAll(async () => {
  await h?.close();
  await server?.stop();
  process.env = savedEnv;
});

test('a worker killed with its spool deleted mid-crawl: every page once in the sealed index in the bucket, every record there', async () => {
  const seeds = Array.from({ length: HOSTS }, (_, i) => h.web.url(`s${i}.lost-disk.test`, '/'));
  const expected = h.web.expectedPages(seeds);
  expect(expected.size).toBe(HOSTS * PAGES);
  const campaignId = `lost-disk-${process.pid}-${Date.now().toString(36)}`;
  const location = `s3://${server.bucket}/runs/${campaignId}/`;
  const handle = await startCampaign(h.client, h.taskQueue, {
    campaignId,
    seeds,
    politeness: { minDelayMs: 150, maxInFlightPerAddress: null },
    fetch: { resolve: h.web.resolveArgs() },
    // Nothing is uploaded before the campaign's flush: a lost spool loses every page its worker committed.
    output: { dir: location, s3: { endpoint: server.endpoint, pathStyle: true }, upload: { maxFileAgeMs: 3_600_000 } },
  });

  // Mid-crawl: a third of the pages fetched, every worker has had hosts by then.
  const pageRequests = () => h.web.requests().filter((r) => r.path !== '/robots.txt' && r.path !== '/sitemap.xml').length;
  while (pageRequests() < (HOSTS * PAGES) / 3) await new Promise((r) => setTimeout(r, 50));
  // The worker that holds the most committed pages in its spool (the first sessions of hosts run
  // where their workflow started, so the pages are not spread evenly).
  const heldBy = (slot: number): string[] => {
    const dir = path.join(root, `w${slot}`, 'spool');
    return fs.existsSync(dir) ? (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.includes('index') && f.endsWith('.jsonl')) : [];
  };
  const linesHeld = (slot: number): number =>
    heldBy(slot).reduce(
      (n, f) =>
        n +
        fs
          .readFileSync(path.join(root, `w${slot}`, 'spool', f), 'utf8')
          .split('\n')
          .filter(Boolean).length,
      0,
    );
  const victim = [...h.pool.alive()].sort((a, b) => linesHeld(b.slot) - linesHeld(a.slot))[0];
  const spool = path.join(root, `w${victim.slot}`, 'spool');
  await h.pool.kill9(victim);
  // What it committed but held was in files under its spool: the disk is gone.
  const held = linesHeld(victim.slot);
  fs.rmSync(spool, { recursive: true, force: true });

  const result = await handle.result();
  if (process.env.CRAWLER_TEST_VERBOSE) process.stderr.write(`[lost-disk] ${JSON.stringify(result)}\n`);
  expect(result.status).toBe('completed');
  // The killed worker had index files in its spool: the scenario lost committed pages.
  expect(held).toBeGreaterThan(0);
  // And they were put back and fetched again.
  const requeued = printed.filter((l) => l.includes('are fetched again'));
  expect(requeued.length).toBeGreaterThan(0);

  // The sealed index, read from the bucket.
  const sealedFile = result.sealedIndex?.file;
  expect(sealedFile?.startsWith(location)).toBe(true);
  const store = openObjectStore(parseOutputLocation(location) as S3Location, { endpoint: server.endpoint, pathStyle: true });
  try {
    const text = (await bytesOf(await store.read(sealedFile!.slice(location.length)))).toString('utf8');
    const lines = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as IndexEntry);
    const urls = lines.map((e) => e.url);
    expect(new Set(urls).size).toBe(urls.length);
    expect(new Set(urls.filter((u) => expected.has(u)))).toEqual(expected);
    expect(result.sealedIndex?.missing).toBe(0);

    // Every sealed line's record, read back from the bucket.
    const tmp = path.join(root, 'record.gz');
    let checked = 0;
    for (const e of lines) {
      if (!e.warc) continue;
      const bytes = await bytesOf(await store.read(`warc/${e.warc.file}`, { start: e.warc.offset, length: e.warc.length }));
      expect(bytes.length).toBe(e.warc.length);
      fs.writeFileSync(tmp, bytes);
      const rec = await readResponseAt(tmp, 0, e.warc.length);
      expect(rec.targetUri).toBe(e.url);
      expect(rec.payloadDigestOk).not.toBe(false);
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(expected.size);
  } finally {
    store.destroy();
  }
});
