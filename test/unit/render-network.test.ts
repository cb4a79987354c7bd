// What a rendered page's requests become on the wire and in the archive
// (docs/rendering.md): the browser's headers passed on (Range and the
// conditional headers never: a file is fetched whole), a POST's redirect, a
// shared file read back from its WARC record to answer a later page, the
// CDXJ key pywb finds a POST's response by, HTTP/2 pseudo-headers kept out
// of records, and when another host's turn comes too late for the page.
import path from 'node:path';
import { forwardedHeaders, redirected } from '../../src/browser/page-requests';
import { SessionCache } from '../../src/browser/page-routes';
import type { FetchResult } from '../../src/http/http-types';
import { parseRef } from '../../src/redis/captures';
import { indexWarcFile } from '../../src/storage/cdxj';
import { readResponseAt, readWarcFile } from '../../src/storage/warc-reader';
import { storedResponseHeaders, WarcWriter } from '../../src/storage/warc-writer';
import { answerHeaders } from '../../activities/render';
import { turnInTime } from '../../activities/render-hosts';
import { tempDirs } from '../support/temp-dirs';

const tmpDir = tempDirs('render-network-');

describe('forwardedHeaders', () => {
  test("passes what a script set and what a server answers by (Origin, Referer), never Range, conditionals, cookies or the client's own", () => {
    const out = forwardedHeaders({
      Accept: 'application/json',
      'Content-Type': 'application/json',
      Origin: 'http://app.test',
      Referer: 'http://app.test/',
      'X-Requested-With': 'XMLHttpRequest',
      Range: 'bytes=0-99',
      'If-Range': '"v1"',
      'If-None-Match': '"v1"',
      'If-Modified-Since': 'Wed, 21 Oct 2015 07:28:00 GMT',
      Cookie: 'sid=browser-copy',
      'User-Agent': 'HeadlessChrome',
      'Accept-Encoding': 'gzip, deflate, br, zstd',
      'Accept-Language': 'en-US',
      Host: 'app.test',
      'Content-Length': '12',
      ':authority': 'app.test',
    });
    expect(out).toEqual({
      accept: 'application/json',
      'content-type': 'application/json',
      origin: 'http://app.test',
      referer: 'http://app.test/',
      'x-requested-with': 'XMLHttpRequest',
    });
  });
});

describe('redirected', () => {
  const post = { url: 'http://a.test/api', method: 'POST' as const, headers: { 'content-type': 'application/json', accept: '*/*' }, body: Buffer.from('{"q":1}') };

  test('a POST answered 301, 302 or 303 goes on as a GET without its body or its Content-Type', () => {
    for (const status of [301, 302, 303]) expect(redirected(post, status, 'http://a.test/r')).toEqual({ url: 'http://a.test/r', method: 'GET', headers: { accept: '*/*' } });
  });

  test('307 and 308 keep method and body; a GET stays a GET', () => {
    expect(redirected(post, 307, 'http://b.test/r')).toEqual({ ...post, url: 'http://b.test/r' });
    expect(redirected(post, 308, 'http://b.test/r').body?.toString()).toBe('{"q":1}');
    expect(redirected({ url: 'http://a.test/x', method: 'GET', headers: {} }, 302, 'http://a.test/y')).toEqual({ url: 'http://a.test/y', method: 'GET', headers: {} });
  });
});

test('SessionCache keeps whole 200s only, the first answer for a URL', () => {
  const c = new SessionCache();
  const res = (status: number, body: string, truncated: FetchResult['truncated'] = null) => ({ status, headers: {}, body: Buffer.from(body), truncated }) as unknown as FetchResult;
  c.remember('http://a.test/partial', res(206, 'part'));
  c.remember('http://a.test/cut', res(200, 'cut', 'length'));
  c.remember('http://a.test/ok', res(200, 'first'));
  c.keep('http://a.test/ok', { status: 200, headers: {}, body: Buffer.from('second') });
  expect(c.get('http://a.test/partial')).toBeUndefined();
  expect(c.get('http://a.test/cut')).toBeUndefined();
  expect(c.get('http://a.test/ok')?.body.toString()).toBe('first');
});

test("turnInTime: a turn is taken only when it comes before the page's deadline", () => {
  expect(turnInTime(0, 1_000, 2_000)).toBe(true);
  expect(turnInTime(999, 1_000, 2_000)).toBe(true);
  expect(turnInTime(1_000, 1_000, 2_000)).toBe(false);
  expect(turnInTime(5_000, 1_000, 2_000)).toBe(false);
});

test('parseRef: a capture reference as stored, anything else ignored', () => {
  expect(parseRef(JSON.stringify({ f: 'c-1.warc.gz', o: 10, l: 20, s: 200 }))).toEqual({ file: 'c-1.warc.gz', offset: 10, length: 20, status: 200 });
  expect(parseRef(null)).toBeNull();
  expect(parseRef('not json')).toBeNull();
  // A path would read outside the WARC folder.
  expect(parseRef(JSON.stringify({ f: '../x.warc.gz', o: 10, l: 20, s: 200 }))).toBeNull();
  expect(parseRef(JSON.stringify({ f: 'c.warc.gz', o: -1, l: 20, s: 200 }))).toBeNull();
});

describe('a shared file read back from its WARC record (captures)', () => {
  test('the stored status, headers and body, as the browser gets them again; a wrong offset is an error, not another record', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir, prefix: 'cap' });
    const url = 'http://app.test/static/app.js';
    const body = Buffer.from('console.log("app");');
    await w.writeExchange({
      url: 'http://app.test/',
      fetchedAt: new Date(),
      request: { method: 'GET', headers: {} },
      response: { status: 200, headers: { 'content-type': 'text/html' }, body: Buffer.from('<p>') },
    });
    const loc = await w.writeExchange({
      url,
      fetchedAt: new Date(),
      request: { method: 'GET', headers: { accept: '*/*' } },
      response: { status: 200, headers: { 'content-type': 'text/javascript', 'content-encoding': 'br', 'content-length': '12', 'set-cookie': 'a=1\nb=2', etag: '"v1"' }, body },
    });
    await w.close();
    const file = path.join(dir, loc.file);
    const stored = await readResponseAt(file, loc.offset, loc.length);
    expect({ uri: stored.targetUri, status: stored.status, body: stored.payload.toString(), ok: stored.payloadDigestOk }).toEqual({
      uri: url,
      status: 200,
      body: body.toString(),
      ok: true,
    });
    expect(answerHeaders(stored.headers)).toEqual({ 'content-type': 'text/javascript', etag: '"v1"' });
    await expect(readResponseAt(file, loc.offset + 1, loc.length)).rejects.toMatchObject({ code: 'CORRUPT' });
    await expect(readResponseAt(path.join(dir, 'missing.warc.gz'), loc.offset, loc.length)).rejects.toMatchObject({ code: 'READ_FAILED' });
  });
});

describe("a rendered page's POST in the archive", () => {
  test('its request record holds the body, and its CDXJ line is keyed by the URL with the body as pywb keys a POST', async () => {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir, prefix: 'post' });
    const url = 'http://app.test/api/echo';
    const sent = Buffer.from(JSON.stringify({ word: 'hello', n: 2 }));
    const loc = await w.writeExchange({
      url,
      fetchedAt: new Date(Date.UTC(2025, 0, 2, 3, 4, 5)),
      request: { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(sent.length) }, body: sent },
      response: { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"echo":"hello"}') },
    });
    await w.writeExchange({
      url: 'http://app.test/api/echo',
      fetchedAt: new Date(Date.UTC(2025, 0, 2, 3, 4, 6)),
      request: { method: 'GET', headers: {} },
      response: { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{}') },
    });
    await w.close();
    const lines = [];
    for await (const l of indexWarcFile(path.join(dir, loc.file))) lines.push(l);
    expect(lines.map((l) => l.urlkey)).toEqual(['test,app)/api/echo?__wb_method=post&n=2&word=hello', 'test,app)/api/echo']);
    expect(lines[0]!.fields).toMatchObject({ method: 'POST', requestBody: 'word=hello&n=2', status: '200' });
    expect(lines[1]!.fields.method).toBeUndefined();
    const request = (await readWarcFile(path.join(dir, loc.file))).find((r) => r.type === 'request' && r.statusLine?.startsWith('POST '));
    expect({ line: request?.statusLine, body: request?.payload?.toString(), type: request?.httpHeaders?.['content-type'] }).toEqual({
      line: 'POST /api/echo HTTP/1.1',
      body: sent.toString(),
      type: 'application/json',
    });
  });
});

test('HTTP/2 pseudo-headers are not written as headers of a record', () => {
  const h = storedResponseHeaders({ ':status': '200', 'content-type': 'text/plain', 'set-cookie': 'a=1\nb=2' }, 3, true);
  expect(h).toEqual([
    ['content-type', 'text/plain'],
    ['set-cookie', 'a=1'],
    ['set-cookie', 'b=2'],
    ['Content-Length', '3'],
  ]);
});
