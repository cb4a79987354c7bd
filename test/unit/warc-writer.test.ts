import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { StorageError } from '../../src/storage/storage-error';
import { WarcWriter, base32, responseRecordId, storedResponseHeaders } from '../../src/storage/warc-writer';
import type { WarcExchange, WarcLocation } from '../../src/storage/warc-writer';
import { readWarcDir } from '../../src/storage/warc-reader';
import type { WarcReadRecord } from '../../src/storage/warc-reader';
import { ensurePythonWarcio, PY_DUMP, run, VENV, VENV_PY, WARCIO_VERSION, type PyRecord } from '../support/warcio';
import { TOOLS_DIR } from '../../src/stack/paths';
import { tempDirs } from '../support/temp-dirs';

const NAME_RE = new RegExp(
  `^crawl-\\d{17}-${os
    .hostname()
    .replace(/[^A-Za-z0-9.-]/g, '_')
    .replace(/\./g, '\\.')}-${process.pid}-\\d{5}\\.warc\\.gz$`,
);

const tmpDir = tempDirs('warc-writer-test-');

function exchange(i: number, over: Partial<WarcExchange['response']> = {}, extra: Partial<WarcExchange> = {}): WarcExchange {
  return {
    url: `https://example.test/page/${i}?q=${i}`,
    fetchedAt: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678) + i),
    ip: '192.0.2.7',
    request: { method: 'GET', headers: { 'User-Agent': 'test-crawler/1.0', Accept: '*/*' } },
    response: {
      status: 200,
      headers: { 'Content-Type': 'text/html; charset=utf-8' },
      body: Buffer.from(`<html>page ${i}</html>`),
      ...over,
    },
    ...extra,
  };
}

const sha1b32 = (b: Uint8Array) => `sha1:${base32(createHash('sha1').update(b).digest())}`;
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

function byId(records: WarcReadRecord[]): Map<string, WarcReadRecord> {
  return new Map(records.map((r) => [r.recordId, r]));
}

describe('base32', () => {
  it('matches the RFC 4648 test vectors and the well-known empty SHA-1', () => {
    const enc = (s: string) => base32(Buffer.from(s));
    expect(['', 'f', 'fo', 'foo', 'foob', 'fooba', 'foobar'].map(enc)).toEqual(['', 'MY======', 'MZXQ====', 'MZXW6===', 'MZXW6YQ=', 'MZXW6YTB', 'MZXW6YTBOI======']);
    expect(sha1b32(new Uint8Array(0))).toBe('sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ');
  });
});

describe('storedResponseHeaders', () => {
  it('renames encoding/framing headers of a decoded body and sets the stored length', () => {
    const h = storedResponseHeaders({ 'content-encoding': 'br', 'Transfer-Encoding': 'chunked', 'Content-Length': '10', ETag: '"x"' }, 42, true);
    expect(h).toEqual([
      ['X-Crawler-Original-Content-Encoding', 'br'],
      ['X-Crawler-Original-Transfer-Encoding', 'chunked'],
      ['X-Crawler-Original-Content-Length', '10'],
      ['ETag', '"x"'],
      ['Content-Length', '42'],
    ]);
  });

  it('gives each of the LF-joined Set-Cookie values its own entry, in order', () => {
    const h = storedResponseHeaders({ 'Set-Cookie': 'a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT\nb=2', 'X-Other': 'p\nq' }, 0, true);
    expect(h).toEqual([
      ['Set-Cookie', 'a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT'],
      ['Set-Cookie', 'b=2'],
      ['X-Other', 'p q'],
      ['Content-Length', '0'],
    ]);
  });

  it('keeps Content-Encoding when the body is still encoded', () => {
    const h = storedResponseHeaders({ 'Content-Encoding': 'gzip' }, 3, false);
    expect(h).toEqual([
      ['Content-Encoding', 'gzip'],
      ['Content-Length', '3'],
    ]);
  });
});

describe('WarcWriter', () => {
  it('writes warcinfo, response, request and metadata records that read back intact', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir, isPartOf: 'campaign-1', operator: 'tests', software: 'unit-test/1' });
    expect(w.files).toEqual([]); // no file until the first write
    const ex = exchange(1, {
      headers: {
        'Content-Type': 'text/html',
        'Content-Encoding': 'gzip',
        'Content-Length': '17',
        'X-Multi': 'a,,,b',
        'X-Evil': 'x\r\nX-Injected: yes',
        // A UTF-8 value as a fetch client exposes it: one char per byte.
        'X-Latin': Buffer.from('café', 'utf8').toString('latin1'),
      },
    });
    ex.metadata = { outlink: ['https://example.test/a', 'https://example.test/b'], fetchTimeMs: '12' };
    const loc = await w.writeExchange(ex);
    await w.close();

    expect(loc.file).toMatch(NAME_RE);
    expect(fs.readdirSync(dir)).toEqual([loc.file]);
    expect(loc.payloadDigest).toBe(sha1b32(ex.response.body));
    expect(loc.blockDigest).toMatch(/^sha1:[A-Z2-7]{32}$/);

    // The location alone is enough to pull the response out of the file.
    const raw = fs.readFileSync(path.join(dir, loc.file));
    const member = gunzipSync(raw.subarray(loc.offset, loc.offset + loc.length)).toString('latin1');
    expect(member.startsWith('WARC/1.1\r\n')).toBe(true);
    expect(member).toContain(`WARC-Record-ID: ${loc.recordId}\r\n`);
    expect(member).toContain('WARC-Type: response\r\n');

    const recs = await readWarcDir(dir, { truncatedTail: 'throw' });
    expect(recs.map((r) => r.type)).toEqual(['warcinfo', 'response', 'request', 'metadata']);
    for (const r of recs) {
      expect(r.blockDigestOk).toBe(true);
      expect(r.headers['WARC-Block-Digest']).toMatch(/^sha1:[A-Z2-7]{32}$/);
    }
    const [info, res, req, meta] = recs as [WarcReadRecord, WarcReadRecord, WarcReadRecord, WarcReadRecord];

    expect(info.headers['WARC-Filename']).toBe(loc.file);
    const infoText = info.payload!.toString('utf8');
    expect(infoText).toContain('isPartOf: campaign-1\r\n');
    expect(infoText).toContain('operator: tests\r\n');
    expect(infoText).toContain('software: unit-test/1\r\n');
    expect(infoText).toContain('format: WARC File Format 1.1\r\n');

    expect(res.offset).toBe(loc.offset);
    expect(res.length).toBe(loc.length);
    expect(res.recordId).toBe(loc.recordId);
    expect(res.recordId).toMatch(/^<urn:uuid:[0-9a-f-]{36}>$/);
    expect(res.targetUri).toBe(ex.url);
    expect(res.payloadDigestOk).toBe(true);
    expect(res.headers['WARC-Payload-Digest']).toBe(loc.payloadDigest);
    expect(res.headers['WARC-Block-Digest']).toBe(loc.blockDigest);
    expect(res.headers['WARC-Date']).toBe('2024-01-02T03:04:05.679Z');
    expect(res.headers['WARC-IP-Address']).toBe('192.0.2.7');
    expect(res.headers['WARC-Warcinfo-ID']).toBe(info.recordId);
    expect(res.headers['WARC-Truncated']).toBeUndefined();
    expect(res.headers['Content-Type']).toBe('application/http; msgtype=response');
    expect(res.payload).toEqual(Buffer.from(ex.response.body));
    expect(res.statusLine).toBe('HTTP/1.1 200 OK');
    expect(res.httpHeaders).toMatchObject({
      'content-type': 'text/html',
      'content-length': String(ex.response.body.length),
      'x-crawler-original-content-encoding': 'gzip',
      'x-crawler-original-content-length': '17',
      'x-multi': 'a,,,b',
      'x-evil': 'x X-Injected: yes',
      'x-latin': 'café',
    });
    expect(res.httpHeaders!['content-encoding']).toBeUndefined();
    expect(res.httpHeaders!['x-injected']).toBeUndefined();

    expect(req.headers['WARC-Concurrent-To']).toBe(res.recordId);
    expect(req.headers['WARC-Warcinfo-ID']).toBe(info.recordId);
    expect(req.targetUri).toBe(ex.url);
    expect(req.statusLine).toBe('GET /page/1?q=1 HTTP/1.1');
    expect(req.httpHeaders).toEqual({ host: 'example.test', 'user-agent': 'test-crawler/1.0', accept: '*/*' });
    expect(req.payload!.length).toBe(0);
    expect(req.payloadDigestOk).toBe(true);

    expect(meta.headers['WARC-Concurrent-To']).toBe(res.recordId);
    expect(meta.headers['Content-Type']).toBe('application/warc-fields');
    expect(meta.payload!.toString('utf8')).toBe('outlink: https://example.test/a\r\noutlink: https://example.test/b\r\nfetchTimeMs: 12\r\n');
  });

  it('serialises 50 concurrent writers into whole, ordered, linked records', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const bodies = Array.from({ length: 50 }, (_, i) => randomBytes(i * 997));
    const locs = await Promise.all(bodies.map((body, i) => w.writeExchange(exchange(i, { body }, i % 3 === 0 ? { metadata: { outlink: [`https://example.test/${i}`] } } : {}))));
    await w.close();

    expect(new Set(locs.map((l) => l.file)).size).toBe(1);
    // Writes are applied in call order and never overlap.
    for (let i = 1; i < locs.length; i++) expect(locs[i]!.offset).toBeGreaterThan(locs[i - 1]!.offset + locs[i - 1]!.length - 1);

    const recs = await readWarcDir(dir, { truncatedTail: 'throw' });
    expect(recs.length).toBe(1 + 50 * 2 + 17);
    const ids = byId(recs);
    locs.forEach((loc, i) => {
      const res = ids.get(loc.recordId)!;
      expect(res.type).toBe('response');
      expect(res.offset).toBe(loc.offset);
      expect(res.targetUri).toBe(exchange(i).url);
      // Hash comparison: jest's deep equality on 50 large Buffers takes seconds.
      expect(sha256(res.payload!)).toBe(sha256(bodies[i]!));
      expect(res.payloadDigestOk).toBe(true);
      expect(res.blockDigestOk).toBe(true);
      // The request of an exchange directly follows its response.
      const next = recs[recs.indexOf(res) + 1]!;
      expect(next.type).toBe('request');
      expect(next.headers['WARC-Concurrent-To']).toBe(loc.recordId);
      expect(next.targetUri).toBe(res.targetUri);
    });
    const linked = recs.filter((r) => r.headers['WARC-Concurrent-To']);
    for (const r of linked) expect(ids.get(r.headers['WARC-Concurrent-To']!)?.type).toBe('response');
    expect(new Set(recs.map((r) => r.recordId)).size).toBe(recs.length);
  });

  it('marks truncated responses and digests the stored bytes', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const body = randomBytes(5000);
    const locTime = await w.writeExchange(exchange(1, { body, truncated: 'time' }));
    const locLen = await w.writeExchange(exchange(2, { body, truncated: 'length' }));
    const locNone = await w.writeExchange(exchange(3, { body, truncated: null }));
    await w.close();
    const ids = byId(await readWarcDir(dir, { truncatedTail: 'throw' }));
    expect(ids.get(locTime.recordId)!.headers['WARC-Truncated']).toBe('time');
    expect(ids.get(locLen.recordId)!.headers['WARC-Truncated']).toBe('length');
    expect(ids.get(locNone.recordId)!.headers['WARC-Truncated']).toBeUndefined();
    for (const l of [locTime, locLen, locNone]) {
      expect(ids.get(l.recordId)!.payloadDigestOk).toBe(true);
      expect(l.payloadDigest).toBe(sha1b32(body));
    }
  });

  it("writes a payload's original under the record ID its URL, date and attempt give (the payload index keeps those instead)", async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const ex = exchange(1);
    const date = ex.fetchedAt.toISOString();
    const id = responseRecordId(ex.url, date, 'AbCdEf12');
    // A version-8 UUID, the same every time, and another for any other attempt, date or URL.
    expect(id).toMatch(/^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>$/);
    expect(responseRecordId(ex.url, date, 'AbCdEf12')).toBe(id);
    expect(
      new Set([id, responseRecordId(ex.url, date, 'AbCdEf13'), responseRecordId(`${ex.url}x`, date, 'AbCdEf12'), responseRecordId(ex.url, '2020-01-01T00:00:00.000Z', 'AbCdEf12')])
        .size,
    ).toBe(4);
    const loc = await w.writeExchange({ ...ex, recordId: id });
    await expect(w.writeExchange({ ...ex, recordId: 'not <urn>' })).rejects.toThrow(StorageError);
    await w.close();
    expect(loc.recordId).toBe(id);
    const recs = await readWarcDir(dir, { truncatedTail: 'throw' });
    expect(byId(recs).get(id)!.type).toBe('response');
    // Its request record names it.
    expect(recs.filter((r) => r.headers['WARC-Concurrent-To'] === id).map((r) => r.type)).toEqual(['request']);
  });

  it('stores a URL holding ",,," (warcio.js\'s multi-value marker) whole, in every record of its exchange', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const ex = { ...exchange(1), url: 'https://example.test/a,,,b?c=,,,d' };
    ex.metadata = { via: 'https://example.test/x,,,y' };
    const loc = await w.writeExchange(ex);
    await w.close();
    const recs = await readWarcDir(dir, { truncatedTail: 'throw' });
    expect(recs.map((r) => r.type)).toEqual(['warcinfo', 'response', 'request', 'metadata']);
    for (const r of recs.slice(1)) {
      expect(r.targetUri).toBe(ex.url);
      expect(r.blockDigestOk).toBe(true);
    }
    expect(byId(recs).get(loc.recordId)!.payloadDigestOk).toBe(true);
    expect(recs[3]!.payload!.toString('utf8')).toContain('via: https://example.test/x,,,y\r\n');
  });

  it('round-trips binary bodies byte for byte, including CRLFCRLF and empty bodies', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const tricky = Buffer.concat([Buffer.from('\r\n\r\nWARC/1.1\r\n\r\n'), all, randomBytes(70_000), all]);
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(1000)]);
    const l1 = await w.writeExchange(exchange(1, { body: tricky, headers: { 'Content-Type': 'application/octet-stream' } }));
    const l2 = await w.writeExchange(exchange(2, { body: png, headers: { 'Content-Type': 'image/png' } }));
    const l3 = await w.writeExchange(exchange(3, { status: 204, body: new Uint8Array(0), headers: {} }));
    await w.close();
    const ids = byId(await readWarcDir(dir, { truncatedTail: 'throw' }));
    expect(ids.get(l1.recordId)!.payload!.equals(tricky)).toBe(true);
    expect(ids.get(l2.recordId)!.payload!.equals(png)).toBe(true);
    expect(ids.get(l3.recordId)!.payload!.length).toBe(0);
    expect(ids.get(l3.recordId)!.statusLine).toBe('HTTP/1.1 204 No Content');
    for (const l of [l1, l2, l3]) expect(ids.get(l.recordId)!.payloadDigestOk).toBe(true);
  });

  it('rotates into several files, each starting with its own warcinfo', async () => {
    const dir = tmpDir();
    const max = 4000;
    const w = await WarcWriter.open({ dir, maxFileBytes: max, isPartOf: 'rot' });
    const locs: WarcLocation[] = [];
    // Sequential and concurrent writes both go through rotation.
    for (let i = 0; i < 6; i++) locs.push(await w.writeExchange(exchange(i, { body: randomBytes(1500) })));
    locs.push(...(await Promise.all([6, 7, 8, 9, 10, 11].map((i) => w.writeExchange(exchange(i, { body: randomBytes(1500) }))))));
    await w.close();

    const files = fs.readdirSync(dir).sort();
    expect(files.length).toBeGreaterThanOrEqual(4);
    expect([...w.files].sort()).toEqual(files);
    for (const f of files) expect(f).toMatch(NAME_RE);
    expect(new Set(locs.map((l) => l.file)).size).toBe(files.length);

    const recs = await readWarcDir(dir, { truncatedTail: 'throw' });
    for (const f of files) {
      const inFile = recs.filter((r) => r.file === f);
      const info = inFile[0]!;
      expect(info.type).toBe('warcinfo');
      expect(info.offset).toBe(0);
      expect(info.headers['WARC-Filename']).toBe(f);
      expect(info.payload!.toString()).toContain('isPartOf: rot\r\n');
      expect(inFile.filter((r) => r.type === 'warcinfo')).toHaveLength(1);
      for (const r of inFile.slice(1)) expect(r.headers['WARC-Warcinfo-ID']).toBe(info.recordId);
      // Rotation happens once a file has reached the limit, never mid-exchange.
      const size = fs.statSync(path.join(dir, f)).size;
      if (f !== files[files.length - 1]) expect(size).toBeGreaterThanOrEqual(max);
      expect(inFile.filter((r) => r.type === 'response').length).toBe(inFile.filter((r) => r.type === 'request').length);
    }
    const ids = byId(recs);
    for (const l of locs) {
      const r = ids.get(l.recordId)!;
      expect(r.file).toBe(l.file);
      expect(r.offset).toBe(l.offset);
    }
  });

  it('gives two writers in one process distinct files', async () => {
    const dir = tmpDir();
    const [a, b] = await Promise.all([WarcWriter.open({ dir }), WarcWriter.open({ dir })]);
    const [la, lb] = await Promise.all([a.writeExchange(exchange(1)), b.writeExchange(exchange(2))]);
    await Promise.all([a.close(), b.close()]);
    expect(la.file).not.toBe(lb.file);
    expect(fs.readdirSync(dir)).toHaveLength(2);
    expect(await readWarcDir(dir, { truncatedTail: 'throw' })).toHaveLength(6);
  });

  it('after a crash mid-write only the tail is lost', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    await w.writeExchange(exchange(1));
    await w.writeExchange(exchange(2));
    const last = await w.writeExchange(exchange(3, { body: randomBytes(20_000) }));
    await w.close();
    const file = path.join(dir, last.file);
    const whole = fs.readFileSync(file);
    fs.writeFileSync(file, whole.subarray(0, last.offset + Math.floor(last.length / 2)));

    const recs = await readWarcDir(dir);
    expect(recs.map((r) => r.type)).toEqual(['warcinfo', 'response', 'request', 'response', 'request']);
    for (const r of recs) expect(r.blockDigestOk).toBe(true);
    await expect(readWarcDir(dir, { truncatedTail: 'throw' })).rejects.toMatchObject({ code: 'CORRUPT', file });
  });

  it('rejects bad input and writes after close without wedging the queue', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const bad = w.writeExchange({ ...exchange(1), fetchedAt: new Date('nope') });
    const good = w.writeExchange(exchange(2));
    await expect(bad).rejects.toBeInstanceOf(StorageError);
    await expect(bad).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(good).resolves.toMatchObject({ offset: expect.any(Number) });
    await w.close();
    await w.close(); // idempotent
    await expect(w.writeExchange(exchange(3))).rejects.toMatchObject({ code: 'CLOSED' });
  });

  it('fails to open on an unusable directory with the path in the error', async () => {
    const dir = tmpDir();
    const notADir = path.join(dir, 'file');
    fs.writeFileSync(notADir, 'x');
    await expect(WarcWriter.open({ dir: path.join(notADir, 'sub') })).rejects.toMatchObject({
      code: 'OPEN_FAILED',
      file: path.join(notADir, 'sub'),
    });
    await expect(WarcWriter.open({ dir, prefix: 'a/b' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});

// ---------------------------------------------------------------------------
// Independent check with Python's warcio (a different WARC implementation).

describe('independent check with Python warcio', () => {
  let dir: string;
  let files: string[];
  const expected = new Map<string, { loc: WarcLocation; body: Buffer; status: number; truncated: string | null; url: string }>();

  beforeAll(async () => {
    await ensurePythonWarcio();
    dir = tmpDir();
    const w = await WarcWriter.open({ dir, maxFileBytes: 64 * 1024, isPartOf: 'py-check' });
    const jobs = Array.from({ length: 50 }, (_, i) => {
      const body = i % 5 === 0 ? randomBytes(30_000) : Buffer.from(`<p>${'x'.repeat(i * 50)}</p>`);
      const truncated = i === 7 ? 'length' : i === 8 ? 'time' : null;
      const status = i === 9 ? 404 : 200;
      const ex = exchange(
        i,
        { body, truncated, status, headers: { 'Content-Type': 'text/html', 'Content-Encoding': 'gzip' } },
        {
          metadata: { outlink: [`https://example.test/out/${i}`], fetchTimeMs: String(i) },
        },
      );
      return w.writeExchange(ex).then((loc) => expected.set(loc.recordId, { loc, body, status, truncated, url: ex.url }));
    });
    await Promise.all(jobs);
    await w.close();
    files = fs
      .readdirSync(dir)
      .sort()
      .map((f) => path.join(dir, f));
  }, 300_000);

  it('is the pinned warcio, in a venv of its own', () => {
    const version = run(VENV_PY, ['-c', "import importlib.metadata as m; print(m.version('warcio'))"]);
    expect(version.stdout.trim()).toBe(WARCIO_VERSION);
    expect(WARCIO_VERSION).toMatch(/^\d+\.\d+\.\d+$/);
    // Not the Temporal CLI's venv (.crawler/tools/venv), as the README says.
    expect(VENV).toBe(path.join(TOOLS_DIR, 'pyvenv'));
  });

  it('passes `warcio check -v` with every digest verified', () => {
    expect(files.length).toBeGreaterThan(1);
    const res = run(VENV_PY, ['-m', 'warcio.cli', 'check', '-v', ...files]);
    const out = `${res.stdout}${res.stderr}`;
    expect({ status: res.status, out }).toMatchObject({ status: 0 });
    const records = out.split('\n').filter((l) => /^\s+offset \d+ WARC-Record-ID/.test(l)).length;
    const passes = out.split('\n').filter((l) => l.trim() === 'digest pass').length;
    expect(records).toBe(files.length + 50 * 3);
    expect(passes).toBe(records);
  });

  it('reads the same records, links and payloads through ArchiveIterator', async () => {
    const res = run(VENV_PY, ['-c', PY_DUMP, ...files]);
    expect({ status: res.status, stderr: res.stderr }).toEqual({ status: 0, stderr: '' });
    const py: PyRecord[] = res.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as PyRecord);

    for (const r of py) {
      expect({ id: r.id, passed: r.passed, problems: r.problems }).toEqual({ id: r.id, passed: true, problems: [] });
      expect(r.protocol).toBe('WARC/1.1');
    }

    // Each file starts with its warcinfo, which every other record names.
    for (const f of files.map((p) => path.basename(p))) {
      const inFile = py.filter((r) => r.file === f);
      expect(inFile[0]!.type).toBe('warcinfo');
      expect(inFile[0]!.offset).toBe(0);
      for (const r of inFile.slice(1)) expect(r.warcinfoId).toBe(inFile[0]!.id);
    }

    const pyById = new Map(py.map((r) => [r.id, r]));
    expect(py.filter((r) => r.type === 'response')).toHaveLength(50);
    for (const [id, e] of expected) {
      const r = pyById.get(id)!;
      expect(r).toMatchObject({
        file: e.loc.file,
        offset: e.loc.offset,
        length: e.loc.length,
        type: 'response',
        uri: e.url,
        status: String(e.status),
        truncated: e.truncated,
        sha256: sha256(e.body),
      });
      expect(r.date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    for (const r of py.filter((x) => x.type === 'request' || x.type === 'metadata')) {
      const target = pyById.get(r.concurrentTo!)!;
      expect(target.type).toBe('response');
      expect(target.uri).toBe(r.uri);
      expect(target.file).toBe(r.file);
    }

    // And our own reader agrees with Python record for record.
    const ours = await readWarcDir(dir, { truncatedTail: 'throw' });
    expect(ours.map((r) => [r.file, r.offset, r.length, r.recordId, r.type])).toEqual(py.map((r) => [r.file, r.offset, r.length, r.id, r.type]));
  });
});

// Every Set-Cookie header line of each response/revisit as warcio parses it, digests checked.
const PY_SET_COOKIES = String.raw`
import sys, json
from warcio.archiveiterator import ArchiveIterator
out = []
for path in sys.argv[1:]:
    with open(path, 'rb') as fh:
        for rec in ArchiveIterator(fh, check_digests=True):
            if rec.rec_type not in ('response', 'revisit'):
                continue
            rec.content_stream().read()
            out.append({'id': rec.rec_headers.get_header('WARC-Record-ID'), 'setCookie': [v for k, v in rec.http_headers.headers if k.lower() == 'set-cookie'],
                        'injected': rec.http_headers.get_header('X-Injected'), 'passed': rec.digest_checker.passed})
print(json.dumps(out))
`;

describe('repeated Set-Cookie headers', () => {
  const COOKIE_1 = 'sid=abc; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT; HttpOnly';
  const COOKIE_2 = 'lang=en; Path=/';

  // Set-Cookie values are redacted by default (test/unit/warc-redaction.test.ts); these tests are about how kept ones are written.
  const KEEP = { keepSecrets: true };

  // The HTTP header block of a record, as written: its lines up to the blank line.
  function httpHeaderLines(file: string, loc: WarcLocation): { lines: string[]; block: Buffer; warc: string } {
    const member = gunzipSync(fs.readFileSync(file).subarray(loc.offset, loc.offset + loc.length));
    const end = member.indexOf('\r\n\r\n');
    const warc = member.subarray(0, end).toString('latin1');
    const declared = Number(/\r\nContent-Length: (\d+)/.exec(warc)![1]);
    const block = member.subarray(end + 4, end + 4 + declared);
    // The record ends with CRLFCRLF right after the declared block.
    expect(member.length).toBe(end + 4 + declared + 4);
    const httpEnd = block.indexOf('\r\n\r\n');
    return { lines: block.subarray(0, httpEnd).toString('latin1').split('\r\n'), block, warc };
  }

  it('writes each Set-Cookie value as its own header line, in order, with a block digest of those bytes', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const headers = {
      'Content-Type': 'text/html',
      // How the HTTP client hands over two Set-Cookie headers.
      'set-cookie': `${COOKIE_1}\n${COOKIE_2}`,
      'X-After': 'kept',
    };
    const loc = await w.writeExchange(exchange(1, { headers }, KEEP));
    const rv = await w.writeExchange(exchange(2, { headers }, { ...KEEP, revisit: { uri: exchange(1).url, date: exchange(1).fetchedAt.toISOString(), recordId: loc.recordId } }));
    await w.close();
    const file = path.join(dir, loc.file);

    for (const l of [loc, rv]) {
      const { lines, block, warc } = httpHeaderLines(file, l);
      expect(lines.slice(1)).toEqual([
        'Content-Type: text/html',
        `set-cookie: ${COOKIE_1}`,
        `set-cookie: ${COOKIE_2}`,
        'X-After: kept',
        `Content-Length: ${exchange(1).response.body.length}`,
      ]);
      // Content-Length and the block digest cover exactly the bytes written.
      expect(warc).toContain(`\r\nWARC-Block-Digest: ${sha1b32(block)}\r\n`);
      expect(l.blockDigest).toBe(sha1b32(block));
    }

    const recs = byId(await readWarcDir(dir, { truncatedTail: 'throw' }));
    expect(recs.get(loc.recordId)).toMatchObject({ blockDigestOk: true, payloadDigestOk: true });
    expect(recs.get(rv.recordId)).toMatchObject({ blockDigestOk: true });
  });

  it('keeps CR/LF inside a cookie from starting a header line of its own', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const loc = await w.writeExchange(exchange(1, { headers: { 'Set-Cookie': `a=1\r\nX-Injected: yes\r\n\r\n<html>`, 'X-Evil': 'x\nX-Injected: yes' } }, KEEP));
    await w.close();
    const { lines } = httpHeaderLines(path.join(dir, loc.file), loc);
    // LF separates cookies; a CR left in one is neutralised, other headers stay on one line.
    expect(lines.slice(1)).toEqual([
      'Set-Cookie: a=1 ',
      'Set-Cookie: X-Injected: yes ',
      'Set-Cookie:  ',
      'Set-Cookie: <html>',
      'X-Evil: x X-Injected: yes',
      expect.stringMatching(/^Content-Length: \d+$/),
    ]);
    expect(lines.some((l) => /^x-injected:/i.test(l))).toBe(false);
    expect(byId(await readWarcDir(dir)).get(loc.recordId)).toMatchObject({ blockDigestOk: true, payloadDigestOk: true });
  });

  it('reads back as two Set-Cookie headers with Python warcio, digests verified', async () => {
    await ensurePythonWarcio();
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const loc = await w.writeExchange(exchange(1, { headers: { 'Content-Type': 'text/html', 'set-cookie': `${COOKIE_1}\n${COOKIE_2}` } }, KEEP));
    await w.close();
    const files = fs.readdirSync(dir).map((f) => path.join(dir, f));
    const check = run(VENV_PY, ['-m', 'warcio.cli', 'check', '-v', ...files]);
    expect({ status: check.status, out: `${check.stdout}${check.stderr}` }).toMatchObject({ status: 0 });
    const py = run(VENV_PY, ['-c', PY_SET_COOKIES, ...files]);
    expect({ status: py.status, stderr: py.stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(py.stdout)).toEqual([{ id: loc.recordId, setCookie: [COOKIE_1, COOKIE_2], injected: null, passed: true }]);
  }, 300_000);
});

const PY_REVISITS = String.raw`
import sys, json
from warcio.archiveiterator import ArchiveIterator
out = []
for path in sys.argv[1:]:
    with open(path, 'rb') as fh:
        for rec in ArchiveIterator(fh, check_digests=True):
            if rec.rec_type != 'revisit':
                continue
            h = rec.rec_headers
            body = rec.content_stream().read()
            out.append({'id': h.get_header('WARC-Record-ID'), 'profile': h.get_header('WARC-Profile'),
                        'refersToUri': h.get_header('WARC-Refers-To-Target-URI'), 'refersToDate': h.get_header('WARC-Refers-To-Date'),
                        'payloadDigest': h.get_header('WARC-Payload-Digest'), 'status': rec.http_headers.get_statuscode(),
                        'body': len(body), 'passed': rec.digest_checker.passed})
print(json.dumps(out))
`;

describe('revisit records', () => {
  it('stores a repeated payload as headers only, with the payload digest and refers-to fields of the stored response; warcio reads it', async () => {
    await ensurePythonWarcio();
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const body = randomBytes(20_000);
    const first = exchange(1, { body, headers: { 'Content-Type': 'application/octet-stream' } });
    const orig = await w.writeExchange(first);
    const refersTo = { uri: first.url, date: first.fetchedAt.toISOString(), recordId: orig.recordId };
    const rv = await w.writeExchange(exchange(2, { body, headers: { 'Content-Type': 'application/octet-stream', ETag: '"x"' } }, { revisit: refersTo }));
    await w.close();

    expect(orig.type).toBe('response');
    expect(rv.type).toBe('revisit');
    expect(rv.payloadDigest).toBe(orig.payloadDigest);
    expect(rv.payloadDigest).toBe(sha1b32(body));
    // The body is not stored again: the revisit's member is a small fraction of the response's.
    expect(rv.length).toBeLessThan(orig.length / 10);

    const recs = byId(await readWarcDir(dir));
    const o = recs.get(orig.recordId)!;
    const r = recs.get(rv.recordId)!;
    expect(r).toMatchObject({ type: 'revisit', offset: rv.offset, length: rv.length, blockDigestOk: true, payloadDigestOk: null, statusLine: 'HTTP/1.1 200 OK' });
    expect(r.headers).toMatchObject({
      'WARC-Profile': 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest',
      'WARC-Refers-To-Target-URI': o.targetUri,
      'WARC-Refers-To-Date': o.headers['WARC-Date'],
      'WARC-Refers-To': o.recordId,
      'WARC-Payload-Digest': o.headers['WARC-Payload-Digest'],
      'Content-Type': 'application/http; msgtype=response',
    });
    expect(r.headers['WARC-Truncated']).toBeUndefined();
    expect(r.payload!.length).toBe(0);
    // The response's own headers, with the length of the payload it stands for.
    expect(r.httpHeaders).toMatchObject({ etag: '"x"', 'content-length': String(body.length) });

    const files = fs.readdirSync(dir).map((f) => path.join(dir, f));
    const check = run(VENV_PY, ['-m', 'warcio.cli', 'check', '-v', ...files]);
    expect({ status: check.status, out: `${check.stdout}${check.stderr}` }).toMatchObject({ status: 0 });
    // warcio checks no digest of a revisit (passed: null); ours checked its block above. It reads the fields a replay tool resolves by.
    const py = run(VENV_PY, ['-c', PY_REVISITS, ...files]);
    expect({ status: py.status, stderr: py.stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(py.stdout)).toEqual([
      {
        id: rv.recordId,
        profile: 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest',
        refersToUri: o.targetUri,
        refersToDate: o.headers['WARC-Date'],
        payloadDigest: orig.payloadDigest,
        status: '200',
        body: 0,
        passed: null,
      },
    ]);
  }, 300_000);

  it("stores a 304 as a server-not-modified revisit naming the capture it stands for, with that capture's payload digest", async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const body = Buffer.from('<html>unchanged</html>');
    const first = exchange(1, { body, headers: { 'Content-Type': 'text/html', ETag: '"v1"' } });
    const orig = await w.writeExchange(first);
    const refersTo = { uri: first.url, date: first.fetchedAt.toISOString(), recordId: orig.recordId };
    const rv = await w.writeExchange(
      exchange(
        2,
        { status: 304, statusText: 'Not Modified', body: Buffer.alloc(0), headers: { ETag: '"v1"' } },
        { revisit: { ...refersTo, profile: 'server-not-modified', payloadDigest: orig.payloadDigest } },
      ),
    );
    await w.close();
    expect(rv.type).toBe('revisit');
    const r = byId(await readWarcDir(dir)).get(rv.recordId)!;
    expect(r).toMatchObject({ type: 'revisit', blockDigestOk: true, statusLine: 'HTTP/1.1 304 Not Modified' });
    expect(r.headers).toMatchObject({
      'WARC-Profile': 'http://netpreserve.org/warc/1.1/revisit/server-not-modified',
      'WARC-Refers-To-Target-URI': first.url,
      'WARC-Refers-To-Date': refersTo.date,
      'WARC-Refers-To': orig.recordId,
      'WARC-Payload-Digest': sha1b32(body),
    });
  });
});

// A resource record (a rendered page's screenshot, docs/rendering.md): read
// back by Python warcio, its block (no HTTP headers) the bytes given, both
// digests verified, its target URI the urn as written, and sharing the file
// with exchanges without disturbing their offsets.
const PY_RESOURCES = String.raw`
import sys, json, hashlib
from warcio.archiveiterator import ArchiveIterator
for path in sys.argv[1:]:
    with open(path, 'rb') as fh:
        it = ArchiveIterator(fh, check_digests=True)
        for rec in it:
            h = rec.rec_headers
            data = rec.content_stream().read()
            print(json.dumps({'type': rec.rec_type, 'id': h.get_header('WARC-Record-ID'), 'uri': h.get_header('WARC-Target-URI'),
                              'contentType': h.get_header('Content-Type'), 'date': h.get_header('WARC-Date'),
                              'blockDigest': h.get_header('WARC-Block-Digest'), 'payloadDigest': h.get_header('WARC-Payload-Digest'),
                              'warcinfoId': h.get_header('WARC-Warcinfo-ID'), 'concurrentTo': h.get_header('WARC-Concurrent-To'),
                              'http': rec.http_headers is not None, 'sha256': hashlib.sha256(data).hexdigest(),
                              'passed': rec.digest_checker.passed, 'problems': list(rec.digest_checker.problems),
                              'offset': it.get_record_offset(), 'length': it.get_record_length()}))
`;

describe('resource records', () => {
  it('are written whole, digests and all, between exchanges, and read back by Python warcio', async () => {
    await ensurePythonWarcio();
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    const png = randomBytes(5_000);
    const before = await w.writeExchange(exchange(1));
    const uri = 'urn:screenshot:https://example.test/page/1?q=1';
    const at = await w.writeResource({ uri, date: new Date(Date.UTC(2024, 0, 2, 3, 4, 6)), contentType: 'image/png', body: png, concurrentTo: before.recordId });
    const after = await w.writeExchange(exchange(2));
    await w.close();
    const files = fs.readdirSync(dir).map((f) => path.join(dir, f));
    expect(files).toHaveLength(1);

    const res = run(VENV_PY, ['-c', PY_RESOURCES, ...files]);
    expect({ status: res.status, stderr: res.stderr }).toEqual({ status: 0, stderr: '' });
    const records = res.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.map((r) => r.type)).toEqual(['warcinfo', 'response', 'request', 'resource', 'response', 'request']);
    const resource = records.find((r) => r.type === 'resource')!;
    expect(resource).toMatchObject({
      id: at.recordId,
      uri,
      contentType: 'image/png',
      date: '2024-01-02T03:04:06.000Z',
      blockDigest: sha1b32(png),
      payloadDigest: sha1b32(png),
      warcinfoId: records[0]!.id,
      concurrentTo: before.recordId,
      http: false,
      sha256: createHash('sha256').update(png).digest('hex'),
      passed: true,
      problems: [],
      offset: at.offset,
      length: at.length,
    });
    // The exchange after it is where the writer said.
    expect(records.find((r) => r.id === after.recordId)).toMatchObject({ type: 'response', offset: after.offset, length: after.length, passed: true });
    // Our own reader agrees: block digest recomputed.
    const ours = (await readWarcDir(dir)).find((r) => r.type === 'resource');
    expect({ uri: ours?.targetUri, ok: ours?.blockDigestOk, same: ours?.payload?.equals(png) }).toEqual({ uri, ok: true, same: true });
  });

  it('are refused without a URI or with a body that is not bytes', async () => {
    const w = await WarcWriter.open({ dir: tmpDir() });
    await expect(w.writeResource({ uri: '', date: new Date(), contentType: 'image/png', body: Buffer.alloc(1) })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(w.writeResource({ uri: 'urn:x', date: new Date(), contentType: 'image/png', body: 'png' as unknown as Uint8Array })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    await w.close();
  });
});
