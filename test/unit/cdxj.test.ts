// The CDXJ index against the WARC records it points at, read back by an
// independent reader: Python's warcio opens each line's (offset, length)
// slice on its own and must find exactly one record there, with the line's
// URL, type and payload digest. The order is `LC_ALL=C sort`'s.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { PROJECT_ROOT } from '../../src/stack/paths';
import { indexCovers, listWarcFiles, parseCdxjLine, withIndexLock, writeCampaignCdxj, writeCdxj, type CdxjLine } from '../../src/storage/cdxj';
import { WarcWriter, type WarcExchange, type WarcLocation } from '../../src/storage/warc-writer';
import { appendRevisit } from '../support/revisit';
import { ensurePythonWarcio, run, VENV_PY } from '../support/warcio';
import { tempDirs } from '../support/temp-dirs';

jest.setTimeout(180_000);

const tmpDir = tempDirs('cdxj-test-');

const T0 = Date.UTC(2025, 4, 6, 7, 8, 9, 500);

function exchange(url: string, i: number, status: number, contentType: string, body: Buffer, metadata = true): WarcExchange {
  return {
    url,
    fetchedAt: new Date(T0 + i * 1000),
    request: { method: 'GET', headers: { 'User-Agent': 'test/1' } },
    response: { status, headers: { 'Content-Type': contentType, ...(status === 301 ? { Location: '/b' } : {}) }, body },
    ...(metadata ? { metadata: { outlink: [`${url}#x`] } } : {}),
  };
}

// For each line: the slice alone, as a file of its own; warcio must read exactly one record from it.
const PY_SLICES = String.raw`
import sys, json, io, zlib
from warcio.archiveiterator import ArchiveIterator
folder = sys.argv[1]
for line in sys.stdin:
    key, ts, data = line.rstrip('\n').split(' ', 2)
    f = json.loads(data)
    with open(folder + '/' + f['filename'], 'rb') as fh:
        fh.seek(int(f['offset']))
        raw = fh.read(int(f['length']))
    d = zlib.decompressobj(31)
    d.decompress(raw)
    recs = []
    for rec in ArchiveIterator(io.BytesIO(raw), check_digests=True):
        h = rec.rec_headers
        rec.content_stream().read()
        recs.append({'type': rec.rec_type, 'uri': h.get_header('WARC-Target-URI'), 'digest': h.get_header('WARC-Payload-Digest'),
                     'date': h.get_header('WARC-Date'), 'status': rec.http_headers.get_statuscode() if rec.http_headers else None,
                     'problems': list(rec.digest_checker.problems)})
    print(json.dumps({'line': f, 'memberComplete': d.eof and not d.unused_data, 'records': recs}))
`;

// Every response and revisit record of the files, by whole-file iteration.
const PY_ALL = String.raw`
import sys, json
from warcio.archiveiterator import ArchiveIterator
for p in sys.argv[1:]:
    with open(p, 'rb') as fh:
        it = ArchiveIterator(fh)
        for rec in it:
            if rec.rec_type in ('response', 'revisit'):
                print(json.dumps({'file': p.rsplit('/', 1)[-1], 'offset': it.get_record_offset(), 'length': it.get_record_length(), 'uri': rec.rec_headers.get_header('WARC-Target-URI')}))
`;

interface SliceCheck {
  line: CdxjLine['fields'];
  memberComplete: boolean;
  records: { type: string; uri: string; digest: string | null; date: string; status: string | null; problems: string[] }[];
}

describe('writeCdxj', () => {
  beforeAll(async () => {
    await ensurePythonWarcio();
  });

  it('writes one sorted line per response and revisit record, each pointing at exactly that record', async () => {
    const dir = tmpDir();
    // Two writers: two files, each with warcinfo, request and metadata records the index must skip.
    const a = await WarcWriter.open({ dir, prefix: 'a' });
    const b = await WarcWriter.open({ dir, prefix: 'b' });
    const page = Buffer.from('<html><body>same text</body></html>');
    const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(3000, 7)]);
    const locs: Record<string, WarcLocation> = {};
    locs.root = await a.writeExchange(exchange('http://www.Site.test:8080/', 0, 200, 'text/html; charset=utf-8', page));
    locs.redirect = await a.writeExchange(exchange('http://site.test:8080/a?z=1&b=2', 1, 301, 'text/html', Buffer.from('moved'), false));
    locs.pdf = await b.writeExchange(exchange('http://site.test:8080/doc.pdf', 2, 200, 'application/pdf', pdf));
    locs.missing = await b.writeExchange(exchange('http://other.test/x', 3, 404, 'text/plain', Buffer.from('no')));
    locs.copy = await b.writeExchange(exchange('http://other.test/copy', 4, 200, 'text/html', page));
    await a.close();
    await b.close();
    // A duplicate of the root page, stored as a revisit record after the others of file b.
    const [fileA, fileB] = (await listWarcFiles(dir)).map((f) => path.basename(f));
    const revisit = appendRevisit(path.join(dir, fileB!), {
      url: 'http://mirror.test/',
      date: new Date(T0 + 5000),
      refersToUrl: 'http://www.Site.test:8080/',
      refersToDate: new Date(T0),
      payloadDigest: locs.root!.payloadDigest,
      status: 200,
      headers: [
        ['Content-Type', 'text/html; charset=utf-8'],
        ['Content-Length', String(page.length)],
      ],
    });

    const out = path.join(dir, 'out', 'index.cdxj');
    // A tiny run size forces the spill-and-merge path.
    const res = await writeCdxj(await listWarcFiles(dir), out, { runBytes: 400, tmpDir: dir });
    expect(res).toEqual({ file: out, lines: 6, warcFiles: 2, keptLines: 0 });
    const text = fs.readFileSync(out, 'utf8');
    expect(fs.existsSync(`${out}.tmp`)).toBe(false);
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(6);

    // Byte order, as `LC_ALL=C sort` puts it.
    const sorted = spawnSync('sort', [out], { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
    expect(sorted.status).toBe(0);
    expect(text).toBe(sorted.stdout);
    // The same without spilling.
    const inMemory = path.join(dir, 'in-memory.cdxj');
    await writeCdxj(await listWarcFiles(dir), inMemory);
    expect(fs.readFileSync(inMemory, 'utf8')).toBe(text);

    const parsed = lines.map(parseCdxjLine);
    const byUrl = new Map(parsed.map((l) => [l.fields.url, l]));
    expect(byUrl.get('http://www.Site.test:8080/')).toEqual({
      urlkey: 'test,site:8080)/',
      timestamp: '20250506070809',
      fields: {
        url: 'http://www.Site.test:8080/',
        mime: 'text/html',
        status: '200',
        digest: locs.root!.payloadDigest,
        length: String(locs.root!.length),
        offset: String(locs.root!.offset),
        filename: fileA,
      },
    });
    // Query arguments sorted in the key, as SURT has them.
    expect(byUrl.get('http://site.test:8080/a?z=1&b=2')).toMatchObject({ urlkey: 'test,site:8080)/a?b=2&z=1', fields: { status: '301', mime: 'text/html' } });
    expect(byUrl.get('http://site.test:8080/doc.pdf')!.fields).toMatchObject({ mime: 'application/pdf', filename: fileB });
    expect(byUrl.get('http://other.test/x')!.fields.status).toBe('404');
    expect(byUrl.get('http://mirror.test/')).toEqual({
      urlkey: 'test,mirror)/',
      timestamp: '20250506070814',
      fields: {
        url: 'http://mirror.test/',
        mime: 'warc/revisit',
        status: '200',
        digest: locs.root!.payloadDigest,
        length: String(revisit.length),
        offset: String(revisit.offset),
        filename: fileB,
      },
    });
    // Our own writer's locations agree for every response.
    for (const [key, url] of [
      ['root', 'http://www.Site.test:8080/'],
      ['redirect', 'http://site.test:8080/a?z=1&b=2'],
      ['pdf', 'http://site.test:8080/doc.pdf'],
      ['missing', 'http://other.test/x'],
      ['copy', 'http://other.test/copy'],
    ] as const) {
      expect({ url, offset: byUrl.get(url)!.fields.offset, length: byUrl.get(url)!.fields.length }).toEqual({
        url,
        offset: String(locs[key]!.offset),
        length: String(locs[key]!.length),
      });
    }

    // The independent reader: each slice is one whole gzip member holding exactly the line's record.
    const py = run(VENV_PY, ['-c', PY_SLICES, dir], text);
    expect(py.stderr).toBe('');
    const checks = py.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as SliceCheck);
    expect(checks).toHaveLength(6);
    for (const c of checks) {
      expect({ url: c.line.url, complete: c.memberComplete, n: c.records.length }).toEqual({ url: c.line.url, complete: true, n: 1 });
      const [r] = c.records;
      expect({ url: c.line.url, type: r!.type, uri: r!.uri, digest: r!.digest, status: r!.status, problems: r!.problems }).toEqual({
        url: c.line.url,
        type: c.line.mime === 'warc/revisit' ? 'revisit' : 'response',
        uri: c.line.url,
        digest: c.line.digest,
        status: c.line.status,
        problems: [],
      });
    }
    // And the index misses none: warcio's own walk finds the same (file, offset, length) set.
    const all = run(VENV_PY, ['-c', PY_ALL, ...(await listWarcFiles(dir))]);
    expect(all.status).toBe(0);
    const walked = all.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { file: string; offset: number; length: number; uri: string })
      .map((r) => `${r.file} ${r.offset} ${r.length} ${r.uri}`)
      .sort();
    expect(parsed.map((l) => `${l.fields.filename} ${l.fields.offset} ${l.fields.length} ${l.fields.url}`).sort()).toEqual(walked);
  });

  it("indexes a page's screenshots and text (resource records, urn:fullPage:… urn:text:…) as pywb's indexer does, and the responses around them where they are", async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const before = await w.writeExchange(exchange('http://spa.test/', 0, 200, 'text/html', Buffer.from('<div id="app"></div>')));
    const shot = await w.writeResource({ uri: 'urn:fullPage:http://www.spa.test/', date: new Date(T0 + 500), contentType: 'image/png', body: Buffer.alloc(2000, 1) });
    const text = await w.writeResource({ uri: 'urn:text:http://www.spa.test/', date: new Date(T0 + 500), contentType: 'text/plain; charset=utf-8', body: Buffer.from('Home') });
    const after = await w.writeExchange(exchange('http://spa.test/about', 1, 200, 'text/html', Buffer.from('<div id="app"></div>')));
    await w.close();
    const out = path.join(dir, 'index.cdxj');
    expect(await writeCdxj(await listWarcFiles(dir), out)).toMatchObject({ lines: 4, warcFiles: 1 });
    const lines = fs.readFileSync(out, 'utf8').trimEnd().split('\n').map(parseCdxjLine);
    const name = path.basename((await listWarcFiles(dir))[0]!);
    // The keys pywb (Python surt) computes for them, as `cdxj-indexer` writes them: the URN in lower case, less the trailing slash; no status; the media type without its parameters.
    expect(lines.map((l) => [l.urlkey, l.timestamp, l.fields])).toEqual([
      ['test,spa)/', '20250506070809', expect.objectContaining({ url: 'http://spa.test/', offset: String(before.offset), length: String(before.length) })],
      ['test,spa)/about', '20250506070810', expect.objectContaining({ url: 'http://spa.test/about', offset: String(after.offset), length: String(after.length) })],
      [
        'urn:fullpage:http://www.spa.test',
        '20250506070810',
        {
          url: 'urn:fullPage:http://www.spa.test/',
          mime: 'image/png',
          digest: expect.stringMatching(/^sha1:/),
          length: String(shot.length),
          offset: String(shot.offset),
          filename: name,
        },
      ],
      [
        'urn:text:http://www.spa.test',
        '20250506070810',
        {
          url: 'urn:text:http://www.spa.test/',
          mime: 'text/plain',
          digest: expect.stringMatching(/^sha1:/),
          length: String(text.length),
          offset: String(text.offset),
          filename: name,
        },
      ],
    ]);
  });

  it('writes an empty index for a folder without WARC files, and reports a broken file with its code', async () => {
    const dir = tmpDir();
    const out = path.join(dir, 'index.cdxj');
    expect(await writeCdxj(await listWarcFiles(dir), out)).toEqual({ file: out, lines: 0, warcFiles: 0, keptLines: 0 });
    expect(fs.readFileSync(out, 'utf8')).toBe('');
    const bad = path.join(dir, 'bad.warc.gz');
    fs.writeFileSync(bad, Buffer.from('not a warc at all\r\n\r\n'));
    await expect(writeCdxj([bad], out)).rejects.toMatchObject({ name: 'StorageError', code: 'CORRUPT' });
  });
});

describe("an output folder's index shared by campaigns", () => {
  async function campaignWarc(out: string, campaign: string, urls: string[], i0 = 0): Promise<void> {
    const w = await WarcWriter.open({ dir: path.join(out, 'warc'), prefix: campaign });
    for (const [i, u] of urls.entries()) await w.writeExchange(exchange(u, i0 + i, 200, 'text/html', Buffer.from(`<p>${u}</p>`), false));
    await w.close();
  }
  const indexed = (out: string) => fs.readFileSync(path.join(out, 'index.cdxj'), 'utf8').trimEnd().split('\n');
  const urlsOf = (lines: string[], campaign: string) =>
    lines
      .map(parseCdxjLine)
      .filter((l) => l.fields.filename.startsWith(`${campaign}-`))
      .map((l) => l.fields.url)
      .sort();

  it("keeps the other campaigns' lines, replaces the campaign's own, and stays in byte order", async () => {
    const out = tmpDir();
    await campaignWarc(out, 'alpha', ['http://a.test/', 'http://z.test/']);
    await campaignWarc(out, 'beta', ['http://m.test/']);
    expect(await writeCampaignCdxj(out, 'alpha')).toMatchObject({ lines: 2, keptLines: 0 });
    // Sealing beta used to leave alpha's captures out of the folder's index.
    expect(await writeCampaignCdxj(out, 'beta')).toMatchObject({ lines: 3, keptLines: 2 });
    let lines = indexed(out);
    expect(urlsOf(lines, 'alpha')).toEqual(['http://a.test/', 'http://z.test/']);
    expect(urlsOf(lines, 'beta')).toEqual(['http://m.test/']);
    expect(lines).toEqual([...lines].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));

    // alpha goes on and is indexed again: its lines are replaced (none twice), beta's kept.
    await campaignWarc(out, 'alpha', ['http://b.test/'], 5);
    expect(await writeCampaignCdxj(out, 'alpha')).toMatchObject({ lines: 4, keptLines: 1 });
    lines = indexed(out);
    expect(urlsOf(lines, 'alpha')).toEqual(['http://a.test/', 'http://b.test/', 'http://z.test/']);
    expect(urlsOf(lines, 'beta')).toEqual(['http://m.test/']);

    // Elsewhere than the folder's index, a campaign's own lines alone.
    const own = path.join(out, 'beta-only.cdxj');
    expect(await writeCampaignCdxj(out, 'beta', own)).toMatchObject({ lines: 1, keptLines: 0 });
  });

  it('two campaigns indexed into one folder at once both end up in it (the lock), and no lock is left behind', async () => {
    const out = tmpDir();
    await campaignWarc(out, 'alpha', ['http://a.test/', 'http://b.test/']);
    await campaignWarc(out, 'beta', ['http://c.test/', 'http://d.test/']);
    await Promise.all([writeCampaignCdxj(out, 'alpha'), writeCampaignCdxj(out, 'beta')]);
    const lines = indexed(out);
    expect(urlsOf(lines, 'alpha')).toEqual(['http://a.test/', 'http://b.test/']);
    expect(urlsOf(lines, 'beta')).toEqual(['http://c.test/', 'http://d.test/']);
    expect(fs.existsSync(path.join(out, 'index.cdxj.lock'))).toBe(false);
  });

  it("a campaign whose ID begins another's keeps that one's lines (a and a-b)", async () => {
    const out = tmpDir();
    await campaignWarc(out, 'a', ['http://a.test/']);
    await campaignWarc(out, 'a-b', ['http://b.test/']);
    await writeCampaignCdxj(out, 'a-b');
    expect(await writeCampaignCdxj(out, 'a')).toMatchObject({ lines: 2, keptLines: 1 });
    expect(await writeCampaignCdxj(out, 'a')).toMatchObject({ lines: 2, keptLines: 1 });
    expect(urlsOf(indexed(out), 'a-b')).toEqual(['http://b.test/']);
    // Which campaigns the folder's index covers (replay indexes again when its campaign is missing).
    const cdxj = path.join(out, 'index.cdxj');
    expect(await indexCovers(cdxj, await listWarcFiles(path.join(out, 'warc')))).toBe(true);
    await campaignWarc(out, 'c', ['http://c.test/']);
    expect(await indexCovers(cdxj, await listWarcFiles(path.join(out, 'warc')))).toBe(false);
  });

  it("a live writer's lock is waited for, up to a limit (LOCKED); released, it is taken; one that fails still gives it up", async () => {
    const out = path.join(tmpDir(), 'index.cdxj');
    fs.writeFileSync(`${out}.lock`, 'someone\n');
    await expect(withIndexLock(out, async () => 'ran', { waitMs: 600 })).rejects.toMatchObject({ name: 'StorageError', code: 'LOCKED' });
    setTimeout(() => fs.rmSync(`${out}.lock`), 300);
    expect(await withIndexLock(out, async () => 'ran', { waitMs: 5_000 })).toBe('ran');
    expect(fs.existsSync(`${out}.lock`)).toBe(false);
    await expect(
      withIndexLock(out, async () => {
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(fs.existsSync(`${out}.lock`)).toBe(false);
  });

  it("a lock seen unchanged for the stale time is a dead writer's: taken over once, by one waiter at a time", async () => {
    const out = path.join(tmpDir(), 'index.cdxj');
    for (let round = 0; round < 5; round++) {
      // Its mtime is now: only the waiters' own watching tells it is dead.
      fs.writeFileSync(`${out}.lock`, 'dead 123\n');
      let inside = 0;
      let most = 0;
      const critical = async () => {
        most = Math.max(most, ++inside);
        await new Promise((r) => setTimeout(r, 150));
        inside--;
      };
      await Promise.all([1, 2, 3].map(() => withIndexLock(out, critical, { staleMs: 300, waitMs: 10_000 })));
      expect(most).toBe(1);
      expect(fs.existsSync(`${out}.lock`)).toBe(false);
      expect(fs.readdirSync(path.dirname(out)).filter((f) => f.endsWith('.dead'))).toEqual([]);
    }
  });

  it('a write that fails (file size limit: EFBIG) rejects with WRITE_FAILED, leaving no temporary file, spill folder or lock, the index as it was', async () => {
    // In a child process under `ulimit -f`: writing past the limit fails with
    // EFBIG (node ignores SIGXFSZ), as a full disk fails with ENOSPC. Such an
    // error used to be an 'error' event nobody listened to: the process died
    // mid-seal, its lock and temporary file left in the folder.
    const LIMIT_KIB = 512;
    // Each in a folder of its own: the final write, the merge of spilled runs, and a spill itself past the limit.
    const cases = [{}, { runBytes: 64 * 1024 }, { runBytes: 1024 * 1024 }];
    // Another campaign's lines, kept by alpha's seal: the new index is about 3 times the limit.
    const kept = Array.from({ length: 10_000 }, (_, i) => {
      const url = `http://b.test/page/${String(i).padStart(5, '0')}`;
      return `test,b)/page/${String(i).padStart(5, '0')} 20250506070809 ${JSON.stringify({ url, mime: 'text/html', status: '200', length: '100', offset: String(i * 100), filename: 'beta-20250506070809000-0.warc.gz' })}\n`;
    }).join('');
    expect(kept.length).toBeGreaterThan(2 * LIMIT_KIB * 1024);
    const folders: string[] = [];
    for (const _ of cases) {
      const out = tmpDir();
      await campaignWarc(out, 'alpha', ['http://a.test/']);
      fs.writeFileSync(path.join(out, 'index.cdxj'), kept);
      folders.push(out);
    }
    const script = path.join(tmpDir(), 'seal.ts');
    fs.writeFileSync(
      script,
      `import { writeCampaignCdxj } from ${JSON.stringify(path.join(PROJECT_ROOT, 'src', 'storage', 'cdxj'))};
const cases = ${JSON.stringify(cases)};
(async () => {
  for (const [i, out] of process.argv.slice(2).entries()) {
    try {
      await writeCampaignCdxj(out, 'alpha', undefined, cases[i]);
      console.log(JSON.stringify({ ok: true }));
    } catch (err) {
      const e = err as { name: string; code: string; cause?: { code?: string } };
      console.log(JSON.stringify({ ok: false, name: e.name, code: e.code, cause: e.cause?.code }));
    }
  }
})();
`,
    );
    const tsxDir = path.join(PROJECT_ROOT, 'node_modules', 'tsx', 'dist');
    const node = [process.execPath, '--require', path.join(tsxDir, 'preflight.cjs'), '--import', pathToFileURL(path.join(tsxDir, 'loader.mjs')).href, script, ...folders];
    const res = spawnSync('bash', ['-c', `ulimit -f ${LIMIT_KIB} && exec "$@"`, 'bash', ...node], { encoding: 'utf8', timeout: 120_000 });
    // Exited by itself, having caught each rejection: no crash, no hang.
    expect({ status: res.status, signal: res.signal, stderr: res.stderr }).toEqual({ status: 0, signal: null, stderr: '' });
    expect(
      res.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual(cases.map(() => ({ ok: false, name: 'StorageError', code: 'WRITE_FAILED', cause: 'EFBIG' })));
    for (const out of folders) {
      // The index untouched, and nothing else left beside it: no index.cdxj.<pid>.<hex>.tmp, no lock, no cdxj-* spill folder.
      expect(fs.readdirSync(out).sort()).toEqual(['index.cdxj', 'warc']);
      expect(fs.readFileSync(path.join(out, 'index.cdxj'), 'utf8') === kept).toBe(true);
    }
  });

  it("a writer whose lock was taken over does not remove the new holder's", async () => {
    const out = path.join(tmpDir(), 'index.cdxj');
    await withIndexLock(out, async () => {
      // Someone decided we were dead and holds the lock now.
      fs.writeFileSync(`${out}.lock`, 'other 456\n');
    });
    expect(fs.readFileSync(`${out}.lock`, 'utf8')).toBe('other 456\n');
  });
});

describe('crawler cdxj', () => {
  const cli = (args: string[], cwd: string) => {
    const c = crawlerCommand(args);
    return spawnSync(c.command, c.args, { cwd, encoding: 'utf8' });
  };

  it('indexes a folder of WARC files, or an output folder through its warc/ folder; bad input exits 2', async () => {
    const out = tmpDir();
    const w = await WarcWriter.open({ dir: path.join(out, 'warc'), prefix: 'camp' });
    await w.writeExchange(exchange('http://a.test/', 0, 200, 'text/html', Buffer.from('<p>a</p>')));
    await w.writeExchange(exchange('http://a.test/b', 1, 200, 'text/html', Buffer.from('<p>b</p>')));
    await w.close();

    const byFolder = cli(['cdxj', out], out);
    expect({ status: byFolder.status, stderr: byFolder.stderr }).toEqual({ status: 0, stderr: '2 CDXJ lines from 1 WARC files\n' });
    expect(byFolder.stdout).toBe(`${path.join(out, 'index.cdxj')}\n`);
    const lines = fs.readFileSync(path.join(out, 'index.cdxj'), 'utf8').trimEnd().split('\n').map(parseCdxjLine);
    expect(lines.map((l) => l.fields.url)).toEqual(['http://a.test/', 'http://a.test/b']);

    const warcFolder = cli(['cdxj', path.join(out, 'warc')], out);
    expect(warcFolder.stdout).toBe(`${path.join(out, 'warc', 'index.cdxj')}\n`);
    expect(fs.readFileSync(path.join(out, 'warc', 'index.cdxj'), 'utf8')).toBe(fs.readFileSync(path.join(out, 'index.cdxj'), 'utf8'));

    // By campaign: only that campaign's files, found where crawl puts them.
    const byCampaign = cli(['cdxj', 'camp', '--out', out, '-o', path.join(out, 'x.cdxj')], out);
    expect(byCampaign.status).toBe(0);
    expect(fs.readFileSync(path.join(out, 'x.cdxj'), 'utf8')).toBe(fs.readFileSync(path.join(out, 'index.cdxj'), 'utf8'));
    const other = cli(['cdxj', 'cam', '--out', out], out);
    expect(other.status).toBe(2);
    expect(other.stderr).toContain('no WARC files of campaign cam');
    const empty = cli(['cdxj', tmpDir()], out);
    expect(empty.status).toBe(2);
    expect(empty.stderr).toContain('no .warc.gz or .warc files');
  });
});
