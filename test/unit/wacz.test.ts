// The WACZ package and the ZIP under it, opened by Python's zipfile (an
// independent reader): stored entries whose CRCs check, ZIP64 fields read
// right, a datapackage whose sha256 hashes and sizes match the entries, and
// an index inside that points into the packed WARCs. `wacz validate` and
// pywb check real crawls in test/integration/replay.test.ts.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { listWarcFiles } from '../../src/storage/cdxj';
import type { IndexEntry } from '../../src/storage/index-writer';
import { pagesFromIndex, writeWacz } from '../../src/storage/wacz';
import { WarcWriter } from '../../src/storage/warc-writer';
import { StoredZipWriter } from '../../src/storage/zip-store';
import { tempDirs } from '../support/temp-dirs';

const tmpDir = tempDirs('wacz-test-');

function python(script: string, args: string[]): unknown {
  const res = spawnSync('python3', ['-c', script, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (res.status !== 0) throw new Error(`python3 failed (${res.status}): ${res.stderr}`);
  return JSON.parse(res.stdout);
}

const PY_ZIP = String.raw`
import sys, json, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    print(json.dumps({'bad': z.testzip(), 'entries': [{'name': i.filename, 'method': i.compress_type, 'size': i.file_size,
        'offset': i.header_offset, 'data': z.read(i).decode('latin1')} for i in z.infolist()]}))
`;

describe('StoredZipWriter', () => {
  it.each([false, true])('writes stored entries Python reads back (forced ZIP64 fields: %s)', async (forceZip64) => {
    const dir = tmpDir();
    const big = path.join(dir, 'big.bin');
    fs.writeFileSync(big, Buffer.alloc(300_000, 0x41));
    const file = path.join(dir, 'x.zip');
    const zip = await StoredZipWriter.open(file, { forceZip64, date: new Date(Date.UTC(2024, 1, 3, 4, 5, 6)) });
    const a = await zip.add({ name: 'archive/big.bin', file: big });
    await zip.add({ name: 'pages/ü.txt', data: Buffer.from('héllo\n', 'latin1') });
    const size = await zip.close();
    expect(fs.statSync(file).size).toBe(size);
    expect(a).toEqual({ size: 300_000, sha256: createHash('sha256').update(fs.readFileSync(big)).digest('hex') });
    const out = python(PY_ZIP, [file]) as { bad: string | null; entries: { name: string; method: number; size: number; offset: number; data: string }[] };
    expect(out.bad).toBeNull();
    expect(out.entries.map((e) => [e.name, e.method, e.size, e.offset])).toEqual([
      ['archive/big.bin', 0, 300_000, 0],
      ['pages/ü.txt', 0, 6, 30 + 'archive/big.bin'.length + (forceZip64 ? 20 : 0) + 300_000],
    ]);
    expect(out.entries[0]!.data).toBe('A'.repeat(300_000));
    expect(out.entries[1]!.data).toBe('héllo\n');
  });
});

const PY_WACZ = String.raw`
import sys, json, zipfile, hashlib, gzip
with zipfile.ZipFile(sys.argv[1]) as z:
    names = z.namelist()
    dp = json.loads(z.read('datapackage.json'))
    digest = json.loads(z.read('datapackage-digest.json'))
    hashes = {n: 'sha256:' + hashlib.sha256(z.read(n)).hexdigest() for n in names}
    sizes = {n: z.getinfo(n).file_size for n in names}
    methods = sorted(set(i.compress_type for i in z.infolist()))
    cdx = gzip.decompress(z.read('indexes/index.cdx.gz')).decode('utf-8')
    slices = []
    for line in cdx.splitlines():
        f = json.loads(line.split(' ', 2)[2])
        warc = z.read('archive/' + f['filename'])
        member = gzip.decompress(warc[int(f['offset']):int(f['offset']) + int(f['length'])]).decode('latin1')
        slices.append({'url': f['url'], 'record': member.split('\r\n\r\n', 1)[0]})
    print(json.dumps({'names': names, 'dp': dp, 'digest': digest, 'hashes': hashes, 'sizes': sizes, 'methods': methods,
                      'pages': z.read('pages/pages.jsonl').decode('utf-8'), 'slices': slices}))
`;

interface WaczView {
  names: string[];
  dp: { profile: string; wacz_version: string; created: string; title: string; mainPageURL: string; resources: { name: string; path: string; hash: string; bytes: number }[] };
  digest: { path: string; hash: string };
  hashes: Record<string, string>;
  sizes: Record<string, number>;
  methods: number[];
  pages: string;
  slices: { url: string; record: string }[];
}

describe('writeWacz', () => {
  it('packs the WARCs, their CDXJ, the pages and a datapackage whose hashes match', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir: path.join(dir, 'warc'), prefix: 'camp' });
    const ex = (url: string, i: number) => ({
      url,
      fetchedAt: new Date(Date.UTC(2024, 0, 1, 0, 0, i)),
      request: { method: 'GET', headers: {} },
      response: { status: 200, headers: { 'Content-Type': 'text/html' }, body: Buffer.from(`<p>${url}</p>`) },
    });
    await w.writeExchange(ex('http://a.test/', 1));
    await w.writeExchange(ex('http://a.test/b', 2));
    await w.close();
    const warcs = await listWarcFiles(path.join(dir, 'warc'));
    const file = path.join(dir, 'out', 'camp.wacz');
    const pages = [
      { id: 'p1', url: 'http://a.test/', ts: '2024-01-01T00:00:01.000Z' },
      { id: 'p2', url: 'http://a.test/b', ts: '2024-01-01T00:00:02.000Z' },
    ];
    const res = await writeWacz(file, { warcFiles: warcs, pages, title: 'camp', mainPageUrl: 'http://a.test/', created: new Date(Date.UTC(2024, 0, 2)) });
    expect(res).toEqual({ file, bytes: fs.statSync(file).size, warcFiles: 1, cdxjLines: 2, pages: 2 });
    expect(fs.readdirSync(path.dirname(file))).toEqual(['camp.wacz']); // no work files left behind

    const v = python(PY_WACZ, [file]) as WaczView;
    const warcName = path.basename(warcs[0]!);
    expect(v.names).toEqual([`archive/${warcName}`, 'indexes/index.cdx.gz', 'pages/pages.jsonl', 'datapackage.json', 'datapackage-digest.json']);
    expect(v.methods).toEqual([0]);
    expect(v.dp).toMatchObject({ profile: 'data-package', wacz_version: '1.1.1', created: '2024-01-02T00:00:00Z', title: 'camp', mainPageURL: 'http://a.test/' });
    expect(v.dp.resources).toEqual(v.names.slice(0, 3).map((n) => ({ name: path.basename(n).toLowerCase(), path: n, hash: v.hashes[n], bytes: v.sizes[n] })));
    expect(v.digest).toEqual({ path: 'datapackage.json', hash: v.hashes['datapackage.json'] });
    expect(
      v.pages
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([{ format: 'json-pages-1.0', id: 'pages', title: 'All Pages' }, ...pages]);
    // Each index line's slice of the packed WARC is that URL's response record.
    expect(v.slices.map((s) => s.url).sort()).toEqual(['http://a.test/', 'http://a.test/b']);
    for (const s of v.slices) {
      expect(s.record).toContain('WARC-Type: response\r\n');
      expect(s.record).toContain(`WARC-Target-URI: ${s.url}\r\n`);
    }
  });

  it('refuses two WARC files of the same name', async () => {
    await expect(writeWacz(path.join(tmpDir(), 'x.wacz'), { warcFiles: ['/a/x.warc.gz', '/b/x.warc.gz'], pages: [] })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});

describe('pagesFromIndex', () => {
  const entry = (url: string, over: Partial<IndexEntry> = {}): IndexEntry => ({
    url,
    fp: `fp-${url}`,
    host: 'a.test',
    campaignId: 'c',
    status: 200,
    outcome: 'fetched',
    contentType: 'text/html; charset=utf-8',
    bytes: 10,
    contentHash: null,
    fetchedAt: '2024-01-01T00:00:00.000Z',
    depth: 0,
    referrer: null,
    warc: { file: 'f', offset: 0, length: 1 },
    ...over,
  });

  it('lists each stored 2xx HTML page once, in fetch order', () => {
    const pages = pagesFromIndex([
      entry('http://a.test/2', { fetchedAt: '2024-01-01T00:00:02.000Z' }),
      entry('http://a.test/1', { fetchedAt: '2024-01-01T00:00:01.000Z' }),
      entry('http://a.test/1', { fetchedAt: '2024-01-01T00:00:03.000Z' }), // again, after a worker died
      entry('http://a.test/dup', { outcome: 'duplicate', fetchedAt: '2024-01-01T00:00:04.000Z' }),
      entry('http://a.test/r', { status: 301, outcome: 'redirect' }),
      entry('http://a.test/404', { status: 404, outcome: 'http-error' }),
      entry('http://a.test/x.pdf', { contentType: 'application/pdf' }),
      entry('http://a.test/sitemap.xml', { kind: 'sitemap', contentType: 'text/html' }),
      entry('http://a.test/gone', { status: null, outcome: 'error', warc: undefined }),
    ]);
    expect(pages).toEqual([
      { id: 'fp-http://a.test/1', url: 'http://a.test/1', ts: '2024-01-01T00:00:01.000Z' },
      { id: 'fp-http://a.test/2', url: 'http://a.test/2', ts: '2024-01-01T00:00:02.000Z' },
      { id: 'fp-http://a.test/dup', url: 'http://a.test/dup', ts: '2024-01-01T00:00:04.000Z' },
    ]);
  });
});
