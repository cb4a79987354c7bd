// Secrets in the WARC: the values of Authorization, Proxy-Authorization,
// Cookie, the credentials file's own headers and Set-Cookie are redacted by
// default and kept with keepSecrets (output.warcKeepSecrets), read back by
// an independent reader (Python warcio) from files our writer wrote.
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { WarcWriter, type WarcExchange } from '../../src/storage/warc-writer';
import { REDACTED } from '../../src/http/header-rules';
import { ensurePythonWarcio, run, VENV_PY } from '../support/warcio';
import { tempDirs } from '../support/temp-dirs';

jest.setTimeout(120_000);
const tmpDir = tempDirs('warc-redaction-test-');

// The HTTP headers of every request and response record, as warcio parses them.
const PY_HEADERS = String.raw`
import sys, json
from warcio.archiveiterator import ArchiveIterator
for path in sys.argv[1:]:
    with open(path, 'rb') as fh:
        for rec in ArchiveIterator(fh, check_digests=True):
            if rec.rec_type in ('request', 'response'):
                print(json.dumps({'type': rec.rec_type, 'headers': rec.http_headers.headers, 'passed': rec.digest_checker.passed}))
`;

const SECRETS = ['Basic YWxpY2U6czNjcmV0', 'sid=abc123secret', 'k-9911', 'Basic cHJveHk6cHc=', 'session=fresh-77; Path=/; HttpOnly', 'theme=dark'];

function exchange(keepSecrets?: boolean): WarcExchange {
  return {
    url: 'https://intranet.example.test/members/',
    fetchedAt: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)),
    request: {
      method: 'GET',
      headers: {
        'user-agent': 'test-crawler/1.0',
        authorization: 'Basic YWxpY2U6czNjcmV0',
        'proxy-authorization': 'Basic cHJveHk6cHc=',
        cookie: 'sid=abc123secret',
        'x-api-key': 'k-9911',
        accept: '*/*',
      },
      secretHeaders: ['X-Api-Key'],
    },
    response: {
      status: 200,
      headers: { 'content-type': 'text/html', 'set-cookie': 'session=fresh-77; Path=/; HttpOnly\ntheme=dark' },
      body: Buffer.from('<html>members</html>'),
    },
    ...(keepSecrets === undefined ? {} : { keepSecrets }),
  };
}

async function written(keepSecrets?: boolean): Promise<{ files: string[]; records: { type: string; headers: [string, string][]; passed: boolean }[] }> {
  const dir = tmpDir();
  const w = await WarcWriter.open({ dir });
  await w.writeExchange(exchange(keepSecrets));
  await w.close();
  const files = w.files.map((f) => path.join(dir, f));
  const res = run(VENV_PY, ['-c', PY_HEADERS, ...files]);
  expect({ status: res.status, stderr: res.stderr }).toEqual({ status: 0, stderr: '' });
  return {
    files,
    records: res.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
  };
}

beforeAll(async () => {
  await ensurePythonWarcio();
});

test('by default the names stay and the values of credentials and cookies become [redacted], in records that still verify', async () => {
  const { files, records } = await written();
  const request = records.find((r) => r.type === 'request')!;
  const response = records.find((r) => r.type === 'response')!;
  expect(request.headers).toEqual(
    expect.arrayContaining([
      ['authorization', REDACTED],
      ['proxy-authorization', REDACTED],
      ['cookie', REDACTED],
      ['x-api-key', REDACTED],
      ['user-agent', 'test-crawler/1.0'],
      ['accept', '*/*'],
    ]),
  );
  expect(response.headers.filter(([n]) => n.toLowerCase() === 'set-cookie')).toEqual([
    ['set-cookie', REDACTED],
    ['set-cookie', REDACTED],
  ]);
  expect(records.every((r) => r.passed !== false)).toBe(true);
  // Nowhere in the file, whatever record or field.
  const text = Buffer.concat(files.map((f) => gunzipSync(fs.readFileSync(f)))).toString('latin1');
  for (const s of SECRETS) expect(text).not.toContain(s);
  expect(text).toContain('<html>members</html>');
});

test('keepSecrets (output.warcKeepSecrets) keeps every value as sent and received', async () => {
  const { records } = await written(true);
  const request = records.find((r) => r.type === 'request')!;
  const response = records.find((r) => r.type === 'response')!;
  expect(request.headers).toEqual(
    expect.arrayContaining([
      ['authorization', 'Basic YWxpY2U6czNjcmV0'],
      ['proxy-authorization', 'Basic cHJveHk6cHc='],
      ['cookie', 'sid=abc123secret'],
      ['x-api-key', 'k-9911'],
    ]),
  );
  expect(response.headers.filter(([n]) => n.toLowerCase() === 'set-cookie').map(([, v]) => v)).toEqual(['session=fresh-77; Path=/; HttpOnly', 'theme=dark']);
});

// The request records' bodies (a login form's POST), as warcio reads them.
const PY_BODIES = String.raw`
import sys, json
from warcio.archiveiterator import ArchiveIterator
for path in sys.argv[1:]:
    with open(path, 'rb') as fh:
        for rec in ArchiveIterator(fh, check_digests=True):
            if rec.rec_type == 'request':
                body = rec.content_stream().read().decode('utf-8')
                print(json.dumps({'statusline': rec.http_headers.protocol + ' ' + rec.http_headers.statusline, 'headers': rec.http_headers.headers, 'body': body, 'passed': rec.digest_checker.passed}))
`;

describe('request bodies (a login form)', () => {
  const PASSWORD = 'pw-Zz81-login';
  const form = `user=alice&password=${encodeURIComponent(PASSWORD)}&csrf_token=tok-5521&remember=on`;

  async function post(body: string, contentType: string | null, keepSecrets?: boolean) {
    const dir = tmpDir();
    const w = await WarcWriter.open({ dir });
    await w.writeExchange({
      url: 'https://shop.example.test/login',
      fetchedAt: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)),
      request: {
        method: 'POST',
        headers: { 'user-agent': 'test-crawler/1.0', ...(contentType ? { 'content-type': contentType } : {}), 'content-length': String(Buffer.byteLength(body)) },
        body: Buffer.from(body),
      },
      response: { status: 302, headers: { location: '/account' }, body: Buffer.alloc(0) },
      ...(keepSecrets === undefined ? {} : { keepSecrets }),
    });
    await w.close();
    const files = w.files.map((f) => path.join(dir, f));
    const res = run(VENV_PY, ['-c', PY_BODIES, ...files]);
    expect({ status: res.status, stderr: res.stderr }).toEqual({ status: 0, stderr: '' });
    const record = JSON.parse(res.stdout.trim()) as { statusline: string; headers: [string, string][]; body: string; passed: boolean };
    const text = Buffer.concat(files.map((f) => gunzipSync(fs.readFileSync(f)))).toString('latin1');
    return { record, text };
  }

  test('a form: the password and the token become [redacted], the other fields stay; Content-Length is what is stored; the record verifies', async () => {
    const { record, text } = await post(form, 'application/x-www-form-urlencoded');
    expect(record.statusline).toBe('POST /login HTTP/1.1');
    expect(record.body).toBe(`user=alice&password=${encodeURIComponent(REDACTED)}&csrf_token=${encodeURIComponent(REDACTED)}&remember=on`);
    expect(record.headers).toEqual(
      expect.arrayContaining([
        ['X-Crawler-Original-Content-Length', String(form.length)],
        ['Content-Length', String(Buffer.byteLength(record.body))],
      ]),
    );
    expect(record.passed).not.toBe(false);
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(encodeURIComponent(PASSWORD));
    expect(text).not.toContain('tok-5521');
  });

  test('JSON: secret keys at any depth are redacted; a body of another type is replaced whole', async () => {
    const json = await post(JSON.stringify({ login: { username: 'alice', password: PASSWORD }, apiKey: 'k-1' }), 'application/json; charset=utf-8');
    expect(JSON.parse(json.record.body)).toEqual({ login: { username: 'alice', password: REDACTED }, apiKey: REDACTED });
    expect(json.text).not.toContain(PASSWORD);
    for (const type of ['text/plain', 'multipart/form-data; boundary=x', null]) {
      const other = await post(`password=${PASSWORD}`, type);
      expect(other.record.body).toBe(REDACTED);
      expect(other.text).not.toContain(PASSWORD);
    }
  });

  test('keepSecrets keeps the body as sent', async () => {
    const { record } = await post(form, 'application/x-www-form-urlencoded', true);
    expect(record.body).toBe(form);
    expect(record.headers).toEqual(expect.arrayContaining([['content-length', String(form.length)]]));
  });
});
