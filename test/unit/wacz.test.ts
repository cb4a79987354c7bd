// The WACZ package and the ZIP under it, opened by Python's zipfile (an
// independent reader): stored entries whose CRCs check, ZIP64 fields read
// right, a datapackage whose sha256 hashes and sizes match the entries, and
// an index inside that points into the packed WARCs. `wacz validate` and
// pywb check real crawls in test/acceptance/replay.test.ts.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { listWarcFiles } from '../../src/storage/cdxj';
import type { IndexEntry } from '../../src/storage/index-writer';
import { pagesFromIndex, pageTexts, writeWacz } from '../../src/storage/wacz';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { WarcWriter, type RevisitOf, type WarcExchange, type WarcLocation } from '../../src/storage/warc-writer';
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
                      'pages': z.read('pages/pages.jsonl').decode('utf-8'),
                      'extraPages': z.read('pages/extraPages.jsonl').decode('utf-8') if 'pages/extraPages.jsonl' in names else None, 'slices': slices}))
`;

interface WaczView {
  names: string[];
  dp: { profile: string; wacz_version: string; created: string; title: string; mainPageURL: string; resources: { name: string; path: string; hash: string; bytes: number }[] };
  digest: { path: string; hash: string };
  hashes: Record<string, string>;
  sizes: Record<string, number>;
  methods: number[];
  pages: string;
  extraPages: string | null;
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
    expect(res).toEqual({ file, bytes: fs.statSync(file).size, warcFiles: 1, cdxjLines: 2, pages: 2, addedWarcFiles: [], missingOriginals: 0 });
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
    expect(v.extraPages).toBeNull();
    // Each index line's slice of the packed WARC is that URL's response record.
    expect(v.slices.map((s) => s.url).sort()).toEqual(['http://a.test/', 'http://a.test/b']);
    for (const s of v.slices) {
      expect(s.record).toContain('WARC-Type: response\r\n');
      expect(s.record).toContain(`WARC-Target-URI: ${s.url}\r\n`);
    }
  });

  it("lists the seeds' pages in pages.jsonl and the others in extraPages.jsonl, with their titles, each file in the datapackage", async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir: path.join(dir, 'warc'), prefix: 'camp' });
    await w.writeExchange({
      url: 'http://a.test/',
      fetchedAt: new Date(Date.UTC(2024, 0, 1)),
      request: { method: 'GET', headers: {} },
      response: { status: 200, headers: { 'Content-Type': 'text/html' }, body: Buffer.from('<title>Home</title>') },
    });
    await w.close();
    const file = path.join(dir, 'camp.wacz');
    const seed = { id: 'p1', url: 'http://a.test/', ts: '2024-01-01T00:00:00.000Z', title: 'Home', depth: 0, seed: true as const };
    const extra = [
      { id: 'p2', url: 'http://a.test/b', ts: '2024-01-01T00:00:01.000Z', title: 'Page B', depth: 1 },
      { id: 'p3', url: 'http://a.test/c', ts: '2024-01-01T00:00:02.000Z', depth: 2 },
    ];
    const res = await writeWacz(file, { warcFiles: await listWarcFiles(path.join(dir, 'warc')), pages: [seed], extraPages: extra, mainPageUrl: seed.url });
    expect(res.pages).toBe(3);
    const v = python(PY_WACZ, [file]) as WaczView;
    const lines = (text: string | null) =>
      (text ?? '')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown);
    expect(lines(v.pages)).toEqual([{ format: 'json-pages-1.0', id: 'pages', title: 'Seed Pages' }, seed]);
    expect(lines(v.extraPages)).toEqual([{ format: 'json-pages-1.0', id: 'extra-pages', title: 'Extra Pages' }, ...extra]);
    expect(v.dp.resources.map((r) => r.path)).toContain('pages/extraPages.jsonl');
    expect(v.dp.resources.find((r) => r.path === 'pages/extraPages.jsonl')).toEqual({
      name: 'extrapages.jsonl',
      path: 'pages/extraPages.jsonl',
      hash: v.hashes['pages/extraPages.jsonl'],
      bytes: v.sizes['pages/extraPages.jsonl'],
    });
    expect(v.dp.mainPageURL).toBe('http://a.test/');
  });

  it("lists each page's text where the crawl archived it (a urn:text: record the index line names); a record that is not the page's leaves it without", async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir: path.join(dir, 'warc'), prefix: 'camp' });
    await w.writeExchange({
      url: 'http://a.test/',
      fetchedAt: new Date(Date.UTC(2024, 0, 1)),
      request: { method: 'GET', headers: {} },
      response: { status: 200, headers: { 'Content-Type': 'text/html' }, body: Buffer.from('<div id="app"></div>') },
    });
    const text = (page: string, body: string) =>
      w.writeResource({ uri: `urn:text:${page}`, date: new Date(Date.UTC(2024, 0, 1)), contentType: 'text/plain; charset=utf-8', body: Buffer.from(body, 'utf8') });
    const home = await text('http://a.test/', 'Welcome — rendered by a script');
    const other = await text('http://a.test/other', 'Not the page b');
    await w.close();
    const warcs = await listWarcFiles(path.join(dir, 'warc'));
    const entry = (url: string, at: { file: string; offset: number; length: number } | null): IndexEntry => ({
      url,
      fp: `fp-${url}`,
      host: 'a.test',
      campaignId: 'c',
      status: 200,
      outcome: 'fetched',
      contentType: 'text/html',
      bytes: 1,
      contentHash: null,
      fetchedAt: '2024-01-01T00:00:00.000Z',
      depth: url === 'http://a.test/' ? 0 : 1,
      referrer: null,
      warc: { file: 'f', offset: 0, length: 1 },
      render: { done: 'quiet', ms: 1, requests: 0, ...(at ? { text: { file: at.file, offset: at.offset, length: at.length } } : {}) },
    });
    // /b's line names /other's record (a stale location): not taken for /b's text.
    const entries = [entry('http://a.test/', home), entry('http://a.test/b', other), entry('http://a.test/c', null)];
    const listed = pagesFromIndex(entries);
    const texts = pageTexts(entries, warcs);
    const file = path.join(dir, 'camp.wacz');
    await writeWacz(file, { warcFiles: warcs, pages: listed.filter((p) => p.seed), extraPages: listed.filter((p) => !p.seed), textOf: (p) => texts.textOf(p) });
    const v = python(PY_WACZ, [file]) as WaczView;
    const lines = (t: string | null) =>
      (t ?? '')
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((l) => JSON.parse(l) as { url: string; text?: string });
    expect(lines(v.pages).map((p) => [p.url, p.text])).toEqual([['http://a.test/', 'Welcome — rendered by a script']]);
    expect(lines(v.extraPages).map((p) => [p.url, p.text])).toEqual([
      ['http://a.test/b', undefined],
      ['http://a.test/c', undefined],
    ]);
    expect(texts.unread).toBe(1);
  });

  it('refuses two WARC files of the same name', async () => {
    await expect(writeWacz(path.join(tmpDir(), 'x.wacz'), { warcFiles: ['/a/x.warc.gz', '/b/x.warc.gz'], pages: [] })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});

// Revisit records and their originals. A revisit record holds no payload:
// replay finds it through the index, as a capture of the URI the record
// refers to with the same payload digest. Whatever WARC files a package is
// given, it holds the original of every revisit record it packs, or it is
// not written.
describe('writeWacz: originals of revisit records', () => {
  const at = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s));
  const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
  const exchange = (url: string, s: number, type: string, body: Buffer, status = 200): WarcExchange => ({
    url,
    fetchedAt: at(s),
    request: { method: 'GET', headers: {} },
    response: { status, headers: { 'Content-Type': type }, body },
  });
  const of = (url: string, loc: WarcLocation, s: number): RevisitOf => ({ uri: url, date: at(s).toISOString(), recordId: loc.recordId });
  const packed = (file: string) => python(PY_WACZ, [file]) as WaczView;
  /** The packed index's full captures (no revisit), as `<url> <WARC-Payload-Digest>`. */
  const captures = (v: WaczView) => v.slices.filter((s) => s.record.includes('WARC-Type: response\r\n')).map((s) => `${s.url} ${/WARC-Payload-Digest: (\S+)/.exec(s.record)![1]}`);

  it("packs the folder's file that holds the originals when the files given lack it (a running campaign's list taken before a worker opened it)", async () => {
    const dir = tmpDir();
    const warcDir = path.join(dir, 'warc');
    const listed = await WarcWriter.open({ dir: warcDir, prefix: 'camp' });
    const opened = await WarcWriter.open({ dir: warcDir, prefix: 'camp' });
    await listed.writeExchange(exchange('http://a.test/', 1, 'text/html', Buffer.from('<p>home</p>')));
    // Another worker, in a file of its own: the stylesheet and the logo in full.
    const css = await opened.writeExchange(exchange('http://a.test/style.css', 2, 'text/css', Buffer.from('body{color:red}')));
    const logo = await opened.writeExchange(exchange('http://a.test/logo.png', 3, 'image/png', PNG));
    // Then, in the listed file: the same stylesheet at a second URL (identical payload), and the logo again, not modified (a 304 of continuous crawling).
    await listed.writeExchange({ ...exchange('http://b.test/style.css', 4, 'text/css', Buffer.from('body{color:red}')), revisit: of('http://a.test/style.css', css, 2) });
    await listed.writeExchange({
      ...exchange('http://a.test/logo.png', 5, 'image/png', Buffer.alloc(0), 304),
      revisit: { ...of('http://a.test/logo.png', logo, 3), profile: 'server-not-modified', payloadDigest: logo.payloadDigest },
    });
    await Promise.all([listed.close(), opened.close()]);
    const file = path.join(dir, 'camp.wacz');
    const res = await writeWacz(file, {
      warcFiles: [path.join(warcDir, listed.files[0]!)],
      pages: [{ id: 'p', url: 'http://a.test/', ts: at(1).toISOString() }],
      originalsFrom: () => listWarcFiles(warcDir),
    });
    expect(res).toMatchObject({ warcFiles: 2, addedWarcFiles: [path.join(warcDir, opened.files[0]!)], missingOriginals: 0, cdxjLines: 5 });
    const v = packed(file);
    expect(v.names.filter((n) => n.startsWith('archive/')).sort()).toEqual([listed.files[0], opened.files[0]].map((n) => `archive/${n}`).sort());
    // Both revisits' originals are in the packed index, at the URI each refers to, with its digest.
    expect(captures(v)).toEqual(expect.arrayContaining([`http://a.test/style.css ${css.payloadDigest}`, `http://a.test/logo.png ${logo.payloadDigest}`]));
  });

  it('refuses a package whose revisit record refers to a capture in no WARC file; writes it, counted, when told to', async () => {
    const dir = tmpDir();
    const warcDir = path.join(dir, 'warc');
    const w = await WarcWriter.open({ dir: warcDir, prefix: 'camp' });
    await w.writeExchange(exchange('http://a.test/', 1, 'text/html', Buffer.from('<p>home</p>')));
    // The original was written on a machine whose files never reached this folder.
    const elsewhere = await WarcWriter.open({ dir: tmpDir(), prefix: 'camp' });
    const gone = await elsewhere.writeExchange(exchange('http://a.test/gone.css', 2, 'text/css', Buffer.from('p{margin:0}')));
    await elsewhere.close();
    await w.writeExchange({ ...exchange('http://b.test/gone.css', 3, 'text/css', Buffer.from('p{margin:0}')), revisit: of('http://a.test/gone.css', gone, 2) });
    await w.close();
    // The folder has the URL, but with another payload (the file changed since): not the original.
    const other = await WarcWriter.open({ dir: warcDir, prefix: 'other' });
    await other.writeExchange(exchange('http://a.test/gone.css', 9, 'text/css', Buffer.from('p{margin:1em}')));
    await other.close();
    const file = path.join(dir, 'out', 'camp.wacz');
    const opts = { warcFiles: [path.join(warcDir, w.files[0]!)], pages: [], originalsFrom: () => listWarcFiles(warcDir) };
    await expect(writeWacz(file, opts)).rejects.toMatchObject({
      name: 'StorageError',
      code: 'MISSING_ORIGINALS',
      message: expect.stringContaining(
        `1 revisit record refers to a capture in none of the WARC files: http://b.test/gone.css (20240101000003, in ${w.files[0]}) refers to http://a.test/gone.css at 2024-01-01T00:00:02.000Z`,
      ),
    });
    expect(fs.readdirSync(path.dirname(file))).toEqual([]);
    const res = await writeWacz(file, { ...opts, allowMissingOriginals: true });
    expect(res).toMatchObject({ warcFiles: 1, addedWarcFiles: [], missingOriginals: 1 });
  });

  it("adds nothing when the files given hold every original, even where another campaign's file has the same payload", async () => {
    const dir = tmpDir();
    const warcDir = path.join(dir, 'warc');
    const w = await WarcWriter.open({ dir: warcDir, prefix: 'camp' });
    const body = Buffer.from('console.log(1)');
    const js = await w.writeExchange(exchange('http://a.test/app.js', 1, 'text/javascript', body));
    await w.writeExchange({ ...exchange('http://b.test/app.js', 2, 'text/javascript', body), revisit: of('http://a.test/app.js', js, 1) });
    // A revisit of its own URL, and one of an empty payload (no original needed: replay serves the empty body).
    await w.writeExchange({ ...exchange('http://a.test/app.js', 3, 'text/javascript', body), revisit: of('http://a.test/app.js', js, 1) });
    const empty = await w.writeExchange(exchange('http://a.test/empty.txt', 4, 'text/plain', Buffer.alloc(0)));
    await w.writeExchange({ ...exchange('http://b.test/empty.txt', 5, 'text/plain', Buffer.alloc(0)), revisit: of('http://c.test/never', empty, 4) });
    await w.close();
    const other = await WarcWriter.open({ dir: warcDir, prefix: 'other' });
    await other.writeExchange(exchange('http://a.test/app.js', 7, 'text/javascript', body));
    await other.close();
    let listedOthers = 0;
    const res = await writeWacz(path.join(dir, 'camp.wacz'), {
      warcFiles: [path.join(warcDir, w.files[0]!)],
      pages: [],
      originalsFrom: async () => {
        listedOthers++;
        return listWarcFiles(warcDir);
      },
    });
    expect(res).toMatchObject({ warcFiles: 1, addedWarcFiles: [], missingOriginals: 0, cdxjLines: 5 });
    // Nothing was missing, so the folder was not even listed.
    expect(listedOthers).toBe(0);
  });
});

describe('crawler export', () => {
  const cli = (args: string[], cwd: string) => {
    const c = crawlerCommand(args);
    return spawnSync(c.command, c.args, { cwd, encoding: 'utf8' });
  };

  it("packs the campaign's files and those of its folder holding originals; a revisit whose original is nowhere fails it unless allowed", async () => {
    const out = tmpDir();
    const warcDir = path.join(out, 'warc');
    const at = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s));
    const ex = (url: string, s: number, body: string): WarcExchange => ({
      url,
      fetchedAt: at(s),
      request: { method: 'GET', headers: {} },
      response: { status: 200, headers: { 'Content-Type': 'text/html' }, body: Buffer.from(body) },
    });
    // The original, in a file of the folder no longer named after the campaign (renamed by hand, say).
    const kept = await WarcWriter.open({ dir: warcDir, prefix: 'archived' });
    const orig = await kept.writeExchange(ex('http://a.test/same', 1, '<p>same</p>'));
    await kept.close();
    const w = await WarcWriter.open({ dir: warcDir, prefix: 'camp' });
    const home = await w.writeExchange(ex('http://a.test/', 2, '<p>home</p>'));
    await w.writeExchange({ ...ex('http://a.test/copy', 3, '<p>same</p>'), revisit: { uri: 'http://a.test/same', date: at(1).toISOString(), recordId: orig.recordId } });
    await w.close();
    fs.mkdirSync(path.join(out, 'index'));
    const entry = {
      url: 'http://a.test/',
      fp: 'fp-home',
      host: 'a.test',
      campaignId: 'camp',
      status: 200,
      outcome: 'fetched',
      contentType: 'text/html',
      fetchedAt: at(2).toISOString(),
      depth: 0,
      warc: { file: home.file, offset: home.offset, length: home.length },
    };
    fs.writeFileSync(path.join(out, 'index', 'raw.jsonl'), `${JSON.stringify(entry)}\n`);

    const wacz = path.join(out, 'camp.wacz');
    const ok = cli(['export', 'camp', '--wacz', wacz, '--out', out], out);
    expect({ status: ok.status, stdout: ok.stdout }).toEqual({ status: 0, stdout: `${wacz}\n` });
    expect(ok.stderr).toContain(`packed 1 more WARC file holding originals of revisit records: ${kept.files[0]}\n`);
    expect((python(PY_WACZ, [wacz]) as WaczView).names.filter((n) => n.startsWith('archive/')).sort()).toEqual([`archive/${kept.files[0]}`, `archive/${w.files[0]}`].sort());

    // Without that file the original is nowhere: refused, and nothing written.
    fs.rmSync(path.join(warcDir, kept.files[0]!));
    fs.rmSync(wacz);
    const refused = cli(['export', 'camp', '--wacz', wacz, '--out', out], out);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('1 revisit record refers to a capture in none of the WARC files: http://a.test/copy');
    expect(refused.stderr).toContain(`they are in no WARC file of ${warcDir} (--allow-missing-originals writes the package anyway)`);
    expect(fs.existsSync(wacz)).toBe(false);
    const allowed = cli(['export', 'camp', '--wacz', wacz, '--out', out, '--allow-missing-originals'], out);
    expect(allowed.status).toBe(0);
    expect(allowed.stderr).toContain(`warning: 1 revisit records refer to captures in no WARC file of ${warcDir}: those URLs will not replay from the package\n`);
    expect(fs.existsSync(wacz)).toBe(true);
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

  it("lists each stored 2xx HTML page once, in fetch order, with its title and depth; a seed's page (depth 0) is marked", () => {
    const pages = pagesFromIndex([
      entry('http://a.test/2', { fetchedAt: '2024-01-01T00:00:02.000Z', depth: 1, title: 'Two' }),
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
      { id: 'fp-http://a.test/1', url: 'http://a.test/1', ts: '2024-01-01T00:00:01.000Z', depth: 0, seed: true },
      { id: 'fp-http://a.test/2', url: 'http://a.test/2', ts: '2024-01-01T00:00:02.000Z', title: 'Two', depth: 1 },
      { id: 'fp-http://a.test/dup', url: 'http://a.test/dup', ts: '2024-01-01T00:00:04.000Z', depth: 0, seed: true },
    ]);
  });
});
