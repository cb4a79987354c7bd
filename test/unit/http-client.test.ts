// Exercises the HTTP layer against real node:http servers bound to 127.0.0.1
// on ephemeral ports; nothing here talks to any other address (the address
// policy tests refuse 10/8, ::1, 169.254.169.254 etc. before dialling).
import type { LookupAddress } from 'node:dns';
import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo, LookupFunction } from 'node:net';
import * as zlib from 'node:zlib';
import { AddressPolicyError } from '../../src/http/address-policy';
import { FetchError, classifyError } from '../../src/http/fetch-error';
import { DnsCache } from '../../src/http/dns-cache';
import { createHttpClient } from '../../src/http/http-client';
import type { AddressGate, HttpClient, HttpClientOptions } from '../../src/http/http-types';
import { Agent, request as undiciRequest } from 'undici';
import { selfSignedCertificate, startTestWeb, type TestWeb } from '../web/test-web';
import { pseudoRandomBytes } from '../support/pseudo-random';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { ResolveOverrideError, createLookup, findOverride, parseResolveEntries, parseResolveEntry } from '../../src/http/resolve-overrides';

jest.setTimeout(10_000);

interface TestServer {
  port: number;
  base: string;
  connections: () => number;
  close: () => Promise<void>;
}

const servers: TestServer[] = [];
const clients: HttpClient[] = [];

async function startServer(handler: http.RequestListener): Promise<TestServer> {
  const server = http.createServer(handler);
  let connections = 0;
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const s: TestServer = {
    port,
    base: `http://127.0.0.1:${port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(s);
  return s;
}

/** A client with the default address policy: loopback is refused. */
function guardedClient(overrides: Partial<HttpClientOptions> = {}): HttpClient {
  const c = createHttpClient({
    userAgent: 'test-crawler/1.0',
    connectTimeoutMs: 1000,
    headersTimeoutMs: 2000,
    bodyTimeoutMs: 2000,
    totalTimeoutMs: 5000,
    ...overrides,
  });
  clients.push(c);
  return c;
}

/** Most tests fetch http://127.0.0.1:PORT directly, so loopback is allowed. */
function client(overrides: Partial<HttpClientOptions> = {}): HttpClient {
  return guardedClient({ allowAddresses: ['127.0.0.0/8', '::1/128'], ...overrides });
}

/** A port that was listening a moment ago and is now closed. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function fetchError(promise: Promise<unknown>): Promise<FetchError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(FetchError);
    return err as FetchError;
  }
  throw new Error('expected the fetch to fail');
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('resolve overrides', () => {
  it('routes a made-up hostname to the local server and keeps the Host header', async () => {
    let seenHost: string | undefined;
    const server = await startServer((req, res) => {
      seenHost = req.headers.host;
      res.end('hello');
    });
    const c = client({ resolve: [`made-up.test:${server.port}:127.0.0.1`] });
    const result = await c.fetch(`http://made-up.test:${server.port}/`);
    expect(result.status).toBe(200);
    expect(result.body.toString()).toBe('hello');
    expect(seenHost).toBe(`made-up.test:${server.port}`);
    expect(result.requestHeaders.host).toBe(`made-up.test:${server.port}`);
    expect(result.remoteAddress).toBe('127.0.0.1');
    expect(result.finalUrl).toBe(`http://made-up.test:${server.port}/`);
  });

  it('only applies to the pinned host and port', () => {
    // Checked at the lookup level: an unpinned made-up name would go to the
    // system resolver, and these tests talk to nothing but 127.0.0.1.
    const overrides = parseResolveEntries(['made-up.test:8080:127.0.0.1']);
    expect(findOverride(overrides, 'MADE-UP.test.', 8080)?.address).toBe('127.0.0.1');
    expect(findOverride(overrides, 'made-up.test', 8081)).toBeUndefined();
    expect(findOverride(overrides, 'other.test', 8080)).toBeUndefined();
  });

  it('parses IPv4, bracketed IPv6 and normalises the host', () => {
    expect(parseResolveEntry('Example.COM.:443:10.0.0.1')).toEqual({ host: 'example.com', port: 443, address: '10.0.0.1', family: 4 });
    expect(parseResolveEntry('example.com:80:[::1]')).toEqual({ host: 'example.com', port: 80, address: '::1', family: 6 });
    expect(parseResolveEntry('[2001:db8::1]:8080:127.0.0.1')).toMatchObject({ host: '2001:db8::1', port: 8080 });
    expect(parseResolveEntries(['a.test:1:127.0.0.1', 'a.test:2:127.0.0.2']).size).toBe(2);
  });

  it.each([
    ['', 'empty'],
    ['example.com', 'missing PORT'],
    ['example.com:443', 'missing ADDR'],
    ['example.com:0:127.0.0.1', 'out of range'],
    ['example.com:70000:127.0.0.1', 'out of range'],
    ['example.com:http:127.0.0.1', 'invalid PORT'],
    ['example.com:443:not-an-ip', 'not an IPv4'],
    ['example.com:443:[::1', 'not an IPv4'],
    ['example.com:443:127.0.0.1,127.0.0.2', 'one ADDR'],
    ['*:443:127.0.0.1', 'wildcard'],
    ['bad host:443:127.0.0.1', 'invalid HOST'],
    ['[::1:443:127.0.0.1', 'unterminated'],
  ])('rejects %j (%s)', (entry, reason) => {
    let caught: unknown;
    try {
      parseResolveEntry(entry);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ResolveOverrideError);
    const err = caught as ResolveOverrideError;
    expect(err.code).toBe('INVALID_RESOLVE_ENTRY');
    expect(err.entry).toBe(entry);
    expect(err.message).toContain(reason);
  });

  it('rejects duplicates and fails client construction on a bad entry', () => {
    expect(() => parseResolveEntries(['a.test:80:127.0.0.1', 'A.test:80:127.0.0.2'])).toThrow(/duplicate/);
    expect(() => createHttpClient({ userAgent: 'x', resolve: ['nope'] })).toThrow(ResolveOverrideError);
  });

  it('provides a net.connect lookup that honours options.all and falls back to dns.lookup', async () => {
    const server = net.createServer((socket) => socket.end('hi'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const lookup = createLookup(parseResolveEntries([`made-up.test:${port}:127.0.0.1`]), port);
      for (const autoSelectFamily of [true, false]) {
        const data = await new Promise<string>((resolve, reject) => {
          const socket = net.connect({ host: 'made-up.test', port, lookup, autoSelectFamily });
          let text = '';
          socket.on('data', (d) => (text += d.toString()));
          socket.on('end', () => resolve(text));
          socket.on('error', reject);
        });
        expect(data).toBe('hi');
      }
      const all = await new Promise<unknown>((resolve, reject) => lookup('made-up.test', { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));
      expect(all).toEqual([{ address: '127.0.0.1', family: 4 }]);
      // Not pinned: dns.lookup answers (an IP literal needs no DNS server).
      const fallback = await new Promise<unknown>((resolve, reject) => lookup('127.0.0.1', {}, (err, address) => (err ? reject(err) : resolve(address))));
      expect(fallback).toBe('127.0.0.1');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('request and response basics', () => {
  it('sends the configured headers and flattens response headers', async () => {
    let seen: http.IncomingHttpHeaders = {};
    const server = await startServer((req, res) => {
      seen = req.headers;
      res.setHeader('Set-Cookie', ['a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT', 'b=2']);
      res.setHeader('X-Multi', ['one', 'two']);
      res.setHeader('Content-Type', 'text/plain');
      res.end('body');
    });
    const c = client({ acceptLanguage: 'en-GB,en;q=0.8' });
    const result = await c.fetch(`${server.base}/page#frag`, { headers: { 'X-Extra': 'yes' } });
    expect(seen['user-agent']).toBe('test-crawler/1.0');
    expect(seen.accept).toBe('text/html,application/xhtml+xml;q=0.9,*/*;q=0.8');
    expect(seen['accept-encoding']).toBe('gzip, deflate, br');
    expect(seen['accept-language']).toBe('en-GB,en;q=0.8');
    expect(seen['x-extra']).toBe('yes');
    expect(result.requestHeaders).toMatchObject({ 'user-agent': 'test-crawler/1.0', 'x-extra': 'yes', host: `127.0.0.1:${server.port}` });
    expect(result.headers['set-cookie']).toBe('a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT\nb=2');
    expect(result.headers['x-multi']).toBe('one, two');
    expect(result.headers['content-type']).toBe('text/plain');
    expect(result).toMatchObject({
      url: `${server.base}/page#frag`,
      finalUrl: `${server.base}/page`,
      status: 200,
      statusText: 'OK',
      rawBytes: 4,
      truncated: null,
      contentEncoding: null,
      redirects: [],
      remoteAddress: '127.0.0.1',
      httpVersion: '1.1',
    });
    expect(result.stoppedRedirect).toBeUndefined();
    expect(result.endedAt).toBeGreaterThanOrEqual(result.startedAt);
  });

  it('honours a custom Accept and returns error statuses as results', async () => {
    let accept: string | undefined;
    const server = await startServer((req, res) => {
      accept = req.headers.accept;
      res.writeHead(404, 'Nope').end('missing');
    });
    const result = await client().fetch(`${server.base}/x`, { accept: 'application/xml' });
    expect(accept).toBe('application/xml');
    expect(result.status).toBe(404);
    expect(result.statusText).toBe('Nope');
    expect(result.body.toString()).toBe('missing');
  });

  it('reuses the keep-alive connection across fetches', async () => {
    const server = await startServer((_req, res) => res.end('ok'));
    const c = client();
    await c.fetch(`${server.base}/1`);
    await c.fetch(`${server.base}/2`);
    expect(server.connections()).toBe(1);
  });

  it("lets a released host's idle connection go at once, and opens a new one for a later request", async () => {
    const server = await startServer((_req, res) => res.end('ok'));
    const closed: number[] = [];
    const srv = await new Promise<http.Server>((resolve) => {
      const h = http.createServer((_req, res) => res.end('ok'));
      h.keepAliveTimeout = 60_000; // the server would keep it a minute: the client lets it go
      h.on('connection', (socket) => socket.on('close', () => closed.push(Date.now())));
      h.listen(0, '127.0.0.1', () => resolve(h));
    });
    const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    const c = client();
    await c.fetch(`${base}/1`);
    await c.fetch(`${base}/2`);
    expect(closed).toEqual([]); // kept alive between a host's pages
    c.releaseHost!(new URL(base).host);
    const t0 = Date.now();
    while (closed.length === 0 && Date.now() - t0 < 3_000) await new Promise((r) => setTimeout(r, 20));
    expect(closed).toHaveLength(1);
    // Another host's connection is not touched; the released host is fetched again on a new one.
    await c.fetch(`${server.base}/a`);
    c.releaseHost!('127.0.0.1:1');
    await c.fetch(`${server.base}/b`);
    expect(server.connections()).toBe(1);
    expect((await c.fetch(`${base}/3`)).status).toBe(200);
    await new Promise<void>((resolve) => {
      srv.closeAllConnections();
      srv.close(() => resolve());
    });
  });

  it('answers a request in flight when its host is released meanwhile', async () => {
    let answer: (() => void) | null = null;
    const server = await startServer((_req, res) => {
      answer = () => res.end('late');
    });
    const c = client();
    const pending = c.fetch(`${server.base}/slow`);
    while (!answer) await new Promise((r) => setTimeout(r, 10));
    c.releaseHost!(new URL(server.base).host);
    (answer as () => void)();
    const result = await pending;
    expect(result.status).toBe(200);
    expect(result.body.toString()).toBe('late');
  });

  it('rejects non-http URLs', async () => {
    const err = await fetchError(client().fetch('ftp://127.0.0.1/file'));
    expect(err.code).toBe('INVALID_URL');
    expect(err.retryable).toBe(false);
    expect((await fetchError(client().fetch('not a url'))).code).toBe('INVALID_URL');
  });
});

describe('content decoding', () => {
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(200);
  const encoded: Record<string, Buffer> = {
    gzip: zlib.gzipSync(text),
    br: zlib.brotliCompressSync(text),
    deflate: zlib.deflateSync(text),
  };

  it.each(['gzip', 'br', 'deflate'])('decodes %s', async (encoding) => {
    const payload = encoded[encoding];
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-encoding': encoding });
      // Split the payload so the decoder sees more than one chunk.
      res.write(payload.subarray(0, 10));
      setTimeout(() => res.end(payload.subarray(10)), 10);
    });
    const result = await client().fetch(server.base);
    expect(result.body.toString()).toBe(text);
    expect(result.rawBytes).toBe(payload.length);
    expect(result.contentEncoding).toBe(encoding);
    expect(result.truncated).toBeNull();
  });

  it('decodes raw (unwrapped) deflate as browsers do', async () => {
    const raw = zlib.deflateRawSync(text);
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'deflate' });
      res.end(raw);
    });
    const result = await client().fetch(server.base);
    expect(result.body.toString()).toBe(text);
  });

  it('decodes stacked codings in reverse order', async () => {
    const payload = zlib.brotliCompressSync(zlib.gzipSync(text));
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip, br' });
      res.end(payload);
    });
    const result = await client().fetch(server.base);
    expect(result.body.toString()).toBe(text);
  });

  it('handles an empty gzip-labelled body (e.g. 204)', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(204, { 'content-encoding': 'gzip' });
      res.end();
    });
    const result = await client().fetch(server.base);
    expect(result.status).toBe(204);
    expect(result.body.length).toBe(0);
  });

  it('fails on corrupt compressed data', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end(Buffer.from('definitely not gzip'));
    });
    const err = await fetchError(client().fetch(server.base));
    expect(err.code).toBe('DECOMPRESSION_FAILED');
    expect(err.retryable).toBe(false);
  });

  it('refuses an unsupported content encoding', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'zstd' });
      res.end('whatever');
    });
    const err = await fetchError(client().fetch(server.base));
    expect(err.code).toBe('UNSUPPORTED_CONTENT_ENCODING');
    expect(err.message).toContain('zstd');
  });
});

describe('body limits', () => {
  it('truncates a huge streamed response and closes the connection early', async () => {
    const total = 1024 * 1024 * 1024; // 1 GiB: far more than the test would ever send
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let serverSide!: Promise<{ written: number; finished: boolean }>;
    const server = await startServer((_req, res) => {
      serverSide = new Promise((resolve) => {
        let written = 0;
        res.on('close', () => resolve({ written, finished: res.writableFinished }));
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const pump = (): void => {
          while (written < total && !res.destroyed) {
            written += chunk.length;
            if (!res.write(chunk)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end();
        };
        pump();
      });
    });
    const limit = 1024 * 1024;
    const result = await client({ maxBodyBytes: limit }).fetch(server.base);
    expect(result.truncated).toBe('length');
    expect(result.body.length).toBe(limit);
    expect(result.rawBytes).toBeGreaterThan(limit);
    const { written, finished } = await serverSide;
    expect(finished).toBe(false);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('cuts a gzip bomb after decoding', async () => {
    const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024)); // ~64 KiB on the wire
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': bomb.length });
      res.end(bomb);
    });
    const limit = 256 * 1024;
    const result = await client({ maxBodyBytes: limit }).fetch(server.base);
    expect(result.truncated).toBe('length');
    expect(result.body.length).toBe(limit);
    expect(result.rawBytes).toBeLessThanOrEqual(bomb.length);
  });

  it('caps the compressed bytes on the wire too, when they decode to almost nothing', async () => {
    // A valid gzip stream: a block with the page, then empty stored blocks
    // (5 bytes each, decoding to nothing) for as long as the client reads.
    // Under the decoded cap alone only the total timeout would end it.
    const deflate = zlib.deflateRawSync(Buffer.from('<a href="/kept">kept</a>'), { finishFlush: zlib.constants.Z_SYNC_FLUSH });
    const header = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    const emptyBlocks = Buffer.alloc(5 * 13_000);
    for (let i = 0; i < emptyBlocks.length; i += 5) emptyBlocks.set([0, 0, 0, 0xff, 0xff], i);
    const total = 1024 * 1024 * 1024;
    let serverSide!: Promise<{ written: number; finished: boolean }>;
    const server = await startServer((_req, res) => {
      serverSide = new Promise((resolve) => {
        let written = 0;
        res.on('close', () => resolve({ written, finished: res.writableFinished }));
        res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
        res.write(header);
        res.write(deflate);
        const pump = (): void => {
          while (written < total && !res.destroyed) {
            written += emptyBlocks.length;
            if (!res.write(emptyBlocks)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end();
        };
        pump();
      });
    });
    const limit = 256 * 1024;
    // A total timeout far beyond what reading 256 KiB takes: the cut must come from the cap.
    const result = await client({ maxBodyBytes: limit, totalTimeoutMs: 60_000, bodyTimeoutMs: 60_000 }).fetch(server.base);
    expect(result.truncated).toBe('length');
    expect(result.body.toString()).toBe('<a href="/kept">kept</a>');
    expect(result.rawBytes).toBeGreaterThan(limit);
    const { written, finished } = await serverSide;
    expect(finished).toBe(false);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('keeps what the wire bytes before the cap decode to, for an ordinary compressed body', async () => {
    // Incompressible bytes: compression makes them slightly larger, so the wire cap is reached first.
    const text = Buffer.from(pseudoRandomBytes(200_000, 7));
    for (const [coding, encoded] of [
      ['gzip', zlib.gzipSync(text)],
      ['br', zlib.brotliCompressSync(text)],
    ] as const) {
      const server = await startServer((_req, res) => {
        res.writeHead(200, { 'content-encoding': coding, 'content-length': encoded.length });
        res.end(encoded);
      });
      const limit = 100_000;
      const result = await client({ maxBodyBytes: limit }).fetch(server.base);
      expect([coding, result.truncated]).toEqual([coding, 'length']);
      expect(result.rawBytes).toBeGreaterThan(limit);
      // Fewer than `limit` decoded bytes: the cut came from the wire count.
      expect(result.body.length).toBeGreaterThan(limit / 2);
      expect(result.body.length).toBeLessThan(limit);
      // A prefix of the page, byte for byte.
      expect(result.body.equals(text.subarray(0, result.body.length))).toBe(true);
    }
  });

  it('does not mark a body of exactly the limit as truncated', async () => {
    const server = await startServer((_req, res) => res.end(Buffer.alloc(1000, 'x')));
    const result = await client({ maxBodyBytes: 1000 }).fetch(server.base);
    expect(result.truncated).toBeNull();
    expect(result.body.length).toBe(1000);
  });
});

describe('timeouts and network errors', () => {
  it('times out waiting for headers', async () => {
    const server = await startServer(() => {
      /* never answers */
    });
    const err = await fetchError(client({ headersTimeoutMs: 200 }).fetch(server.base));
    expect(err.code).toBe('HEADERS_TIMEOUT');
    expect(err.retryable).toBe(true);
    expect(err.url).toBe(`${server.base}/`);
  });

  it('times out when the body stalls', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
    });
    const err = await fetchError(client({ bodyTimeoutMs: 200 }).fetch(server.base));
    expect(err.code).toBe('BODY_TIMEOUT');
    expect(err.retryable).toBe(true);
  });

  it('returns a slow-drip body cut at the total timeout', async () => {
    // The drip never idles long enough for the body timeout and never ends:
    // only the total timeout can end this fetch (else the test times out).
    let written = 0;
    let serverClosed!: Promise<boolean>;
    const server = await startServer((_req, res) => {
      serverClosed = new Promise((resolve) => res.on('close', () => resolve(res.writableFinished)));
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => {
        res.write('.');
        written += 1;
      }, 20);
      res.on('close', () => clearInterval(timer));
    });
    const result = await client({ bodyTimeoutMs: 60_000, totalTimeoutMs: 300 }).fetch(server.base);
    expect(result.status).toBe(200);
    expect(result.truncated).toBe('time');
    expect(result.body.length).toBeGreaterThan(0);
    expect(/^\.+$/.test(result.body.toString())).toBe(true);
    // What was read is what had been sent, and the client hung up on an unfinished response.
    expect(result.body.length).toBeLessThanOrEqual(written);
    expect(await serverClosed).toBe(false);
  });

  it('throws TOTAL_TIMEOUT when the deadline passes before headers', async () => {
    const server = await startServer(() => {
      /* never answers */
    });
    const err = await fetchError(client({ headersTimeoutMs: 2000, totalTimeoutMs: 200 }).fetch(server.base));
    expect(err.code).toBe('TOTAL_TIMEOUT');
    expect(err.retryable).toBe(true);
  });

  it('reports a refused connection', async () => {
    const port = await closedPort();
    const err = await fetchError(client().fetch(`http://127.0.0.1:${port}/`));
    expect(err.code).toBe('CONNECTION_REFUSED');
    expect(err.retryable).toBe(true);
    expect(err.url).toBe(`http://127.0.0.1:${port}/`);
    expect(err.cause).toBeDefined();
  });

  it('reports a connection reset mid-response', async () => {
    const server = await startServer((req) => req.socket.destroy());
    const err = await fetchError(client().fetch(server.base));
    expect(err.code).toBe('CONNECTION_RESET');
    expect(err.retryable).toBe(true);
  });

  it('passes the caller abort signal through', async () => {
    const server = await startServer(() => {
      /* never answers */
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const err = await fetchError(client().fetch(server.base, { signal: controller.signal }));
    expect(err.code).toBe('ABORTED');
    expect(err.retryable).toBe(false);
    const pre = new AbortController();
    pre.abort();
    expect((await fetchError(client().fetch(server.base, { signal: pre.signal }))).code).toBe('ABORTED');
  });

  it('aborts mid-body on the caller signal instead of returning a partial body', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('.'), 20);
      res.on('close', () => clearInterval(timer));
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    const err = await fetchError(client().fetch(server.base, { signal: controller.signal }));
    expect(err.code).toBe('ABORTED');
  });
});

// DNS, TLS and connect failures from real sockets, all on loopback: the
// unresolvable name is refused by the resolver before any query is sent.
describe('failure taxonomy against real listeners', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startTestWeb();
  });
  afterAll(async () => {
    await web.close();
  });

  it('types a name that cannot resolve as a DNS failure not worth retrying', async () => {
    // A 69-character label under .invalid: longer than DNS allows, so getaddrinfo fails without a query.
    const url = `http://nxdomain-${'x'.repeat(60)}.invalid/`;
    const err = await fetchError(guardedClient().fetch(url));
    expect(err.code).toBe('DNS_FAILURE');
    expect(err.retryable).toBe(false);
    expect(err.url).toBe(url);
  });

  it('types an untrusted (self-signed) certificate as a TLS error, and the same server works once trusted', async () => {
    const host = 'tls.unit.test';
    const credentials = await selfSignedCertificate([host]);
    web.addSite({ host, pages: 1, fanOut: 0 });
    const port = await web.startHttps(credentials);
    const url = `https://${host}:${port}/`;
    const err = await fetchError(guardedClient({ resolve: [`${host}:${port}:127.0.0.1`] }).fetch(url));
    expect(err.code).toBe('TLS_ERROR');
    expect(err.retryable).toBe(false);
    // The server hears of the failed handshake a moment after the client gave up.
    for (let i = 0; i < 100 && web.tlsFailures().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(web.tlsFailures().map((f) => f.servername)).toContain(host);
    // The listener itself is sound: what failed was trust in the certificate.
    const trusting = new Agent({ connect: { ca: credentials.cert, lookup: web.lookup } });
    try {
      const res = await undiciRequest(url, { dispatcher: trusting });
      expect(res.statusCode).toBe(200);
      await res.body.dump();
    } finally {
      await trusting.close();
    }
  });

  it('types a TCP handshake that never completes as a retryable connect timeout', async () => {
    const port = await web.startUnacceptingListener();
    const started = Date.now();
    const err = await fetchError(guardedClient({ resolve: [`blackhole.test:${port}:127.0.0.1`], connectTimeoutMs: 300 }).fetch(`http://blackhole.test:${port}/`));
    expect(err.code).toBe('CONNECT_TIMEOUT');
    expect(err.retryable).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });
});

describe('redirects', () => {
  async function redirectServer(routes: Record<string, [number, string | undefined]>): Promise<TestServer> {
    return startServer((req, res) => {
      const route = routes[req.url ?? ''];
      if (!route) {
        res.end(`final ${req.url}`);
        return;
      }
      const [status, location] = route;
      res.writeHead(status, location === undefined ? {} : { location });
      res.end(`redirect body ${req.url}`);
    });
  }

  it('follows a chain and records it', async () => {
    const server = await redirectServer({ '/a': [301, '/b'], '/b': [302, '/c'], '/c': [307, '/done'] });
    const result = await client().fetch(`${server.base}/a`);
    expect(result.status).toBe(200);
    expect(result.body.toString()).toBe('final /done');
    expect(result.url).toBe(`${server.base}/a`);
    expect(result.finalUrl).toBe(`${server.base}/done`);
    expect(result.redirects).toEqual([
      { url: `${server.base}/a`, status: 301, location: `${server.base}/b` },
      { url: `${server.base}/b`, status: 302, location: `${server.base}/c` },
      { url: `${server.base}/c`, status: 307, location: `${server.base}/done` },
    ]);
    // Redirect bodies are drained, so one keep-alive connection serves the chain.
    expect(server.connections()).toBe(1);
  });

  it('reads a Location sent as raw UTF-8 bytes as UTF-8, as browsers do; bytes that are not UTF-8 stay Latin-1', async () => {
    // Node writes header strings as Latin-1: these are the UTF-8 bytes of the paths.
    const raw = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
    const server = await redirectServer({ '/from': [301, raw('/café/日本')], '/latin': [302, '/caf\xe9'] });
    const result = await client().fetch(`${server.base}/from`);
    expect(result.finalUrl).toBe(`${server.base}/caf%C3%A9/%E6%97%A5%E6%9C%AC`);
    expect(result.body.toString()).toBe('final /caf%C3%A9/%E6%97%A5%E6%9C%AC');
    // A lone 0xE9 is not UTF-8: it stays the Latin-1 é (percent-encoded as its UTF-8, as the URL parser does).
    expect((await client().fetch(`${server.base}/latin`)).finalUrl).toBe(`${server.base}/caf%C3%A9`);
  });

  it('resolves relative Location against the current URL', async () => {
    const server = await redirectServer({ '/dir/sub/page': [302, '../other?q=1#frag'], '/dir/other?q=1': [303, 'final'] });
    const result = await client().fetch(`${server.base}/dir/sub/page`);
    expect(result.redirects.map((r) => r.location)).toEqual([`${server.base}/dir/other?q=1`, `${server.base}/dir/final`]);
    expect(result.finalUrl).toBe(`${server.base}/dir/final`);
  });

  it('follows redirects across hosts pinned by resolve overrides', async () => {
    const server = await startServer((req, res) => {
      if (req.headers.host?.startsWith('one.test')) {
        res.writeHead(301, { location: `http://two.test:${server.port}/landing` }).end();
      } else {
        res.end(`host ${req.headers.host}`);
      }
    });
    const c = client({ resolve: [`one.test:${server.port}:127.0.0.1`, `two.test:${server.port}:127.0.0.1`] });
    const result = await c.fetch(`http://one.test:${server.port}/`);
    expect(result.body.toString()).toBe(`host two.test:${server.port}`);
    expect(result.requestHeaders.host).toBe(`two.test:${server.port}`);
  });

  it('detects loops', async () => {
    const server = await redirectServer({ '/a': [301, '/b'], '/b': [302, '/a'] });
    const err = await fetchError(client().fetch(`${server.base}/a`));
    expect(err.code).toBe('REDIRECT_LOOP');
    expect(err.retryable).toBe(false);
  });

  it('detects a self-redirect as a loop', async () => {
    const server = await redirectServer({ '/self': [302, '/self'] });
    expect((await fetchError(client().fetch(`${server.base}/self`))).code).toBe('REDIRECT_LOOP');
  });

  it('stops after maxRedirects', async () => {
    const server = await startServer((req, res) => {
      const n = Number((req.url ?? '/0').slice(1));
      res.writeHead(302, { location: `/${n + 1}` }).end();
    });
    const err = await fetchError(client({ maxRedirects: 3 }).fetch(`${server.base}/0`));
    expect(err.code).toBe('TOO_MANY_REDIRECTS');
    expect(err.retryable).toBe(false);
    expect(err.url).toBe(`${server.base}/3`);
  });

  it('allows exactly maxRedirects', async () => {
    const server = await redirectServer({ '/0': [302, '/1'], '/1': [302, '/2'] });
    const result = await client({ maxRedirects: 2 }).fetch(`${server.base}/0`);
    expect(result.redirects).toHaveLength(2);
    expect(result.status).toBe(200);
  });

  it('returns the 3xx when followRedirect declines', async () => {
    const server = await redirectServer({ '/a': [301, '/b'], '/b': [302, 'http://elsewhere.test/x'] });
    const calls: [string, string][] = [];
    const result = await client().fetch(`${server.base}/a`, {
      followRedirect: (from, to) => {
        calls.push([from, to]);
        return new URL(to).host === new URL(from).host;
      },
    });
    expect(calls).toEqual([
      [`${server.base}/a`, `${server.base}/b`],
      [`${server.base}/b`, 'http://elsewhere.test/x'],
    ]);
    expect(result.status).toBe(302);
    expect(result.finalUrl).toBe(`${server.base}/b`);
    expect(result.headers.location).toBe('http://elsewhere.test/x');
    expect(result.body.toString()).toBe('redirect body /b');
    expect(result.redirects).toEqual([{ url: `${server.base}/a`, status: 301, location: `${server.base}/b` }]);
    expect(result.stoppedRedirect).toEqual({ from: `${server.base}/b`, to: 'http://elsewhere.test/x', status: 302 });
  });

  describe('POST (a login form)', () => {
    /** Answers what it received: method, content type and body; /form redirects with `status`. */
    async function echoServer(status: number) {
      const seen: { method: string; path: string; type: string | undefined; length: string | undefined; body: string }[] = [];
      const server = await startServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          seen.push({ method: req.method!, path: req.url!, type: req.headers['content-type'], length: req.headers['content-length'], body: Buffer.concat(chunks).toString() });
          if (req.url === '/form') res.writeHead(status, { location: '/done' }).end();
          else res.end(`${req.method} ${req.url}`);
        });
      });
      return { server, seen };
    }

    it('sends the body with its content type and length, and says so in the result', async () => {
      const { server, seen } = await echoServer(200);
      const body = Buffer.from('user=alice&password=s3cret');
      const result = await client().fetch(`${server.base}/login`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(seen).toEqual([{ method: 'POST', path: '/login', type: 'application/x-www-form-urlencoded', length: String(body.length), body: body.toString() }]);
      expect(result.method).toBe('POST');
      expect(result.requestBody?.toString()).toBe(body.toString());
      expect(result.requestHeaders['content-length']).toBe(String(body.length));
      expect(result.body.toString()).toBe('POST /login');
    });

    it.each([301, 302, 303])('a POST answered %i and followed goes on as a GET without the body', async (status) => {
      const { server, seen } = await echoServer(status);
      const result = await client().fetch(`${server.base}/form`, { method: 'POST', body: Buffer.from('a=1'), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(seen.map((s) => [s.method, s.path, s.type, s.body])).toEqual([
        ['POST', '/form', 'application/x-www-form-urlencoded', 'a=1'],
        ['GET', '/done', undefined, ''],
      ]);
      expect(result.method).toBe('GET');
      expect(result.requestBody).toBeUndefined();
    });

    it.each([307, 308])('a POST answered %i and followed is sent again with its body', async (status) => {
      const { server, seen } = await echoServer(status);
      const result = await client().fetch(`${server.base}/form`, { method: 'POST', body: Buffer.from('a=1') });
      expect(seen.map((s) => [s.method, s.path, s.body])).toEqual([
        ['POST', '/form', 'a=1'],
        ['POST', '/done', 'a=1'],
      ]);
      expect(result.method).toBe('POST');
    });

    it('a GET has neither a body nor a Content-Length', async () => {
      const { server, seen } = await echoServer(200);
      const result = await client().fetch(`${server.base}/page`);
      expect(seen[0]).toMatchObject({ method: 'GET', length: undefined, body: '' });
      expect(result.requestBody).toBeUndefined();
      expect(result.requestHeaders['content-length']).toBeUndefined();
    });
  });

  it('returns the 3xx when followRedirect always says no', async () => {
    const server = await redirectServer({ '/a': [308, '/b'] });
    const result = await client().fetch(`${server.base}/a`, { followRedirect: () => false });
    expect(result.status).toBe(308);
    expect(result.redirects).toEqual([]);
    expect(result.stoppedRedirect).toEqual({ from: `${server.base}/a`, to: `${server.base}/b`, status: 308 });
  });

  it.each([
    ['missing', undefined],
    ['unparseable', 'http://[bad'],
    ['non-http scheme', 'mailto:someone@example.com'],
  ])('rejects a %s Location', async (_label, location) => {
    const server = await redirectServer({ '/a': [302, location] });
    const err = await fetchError(client().fetch(`${server.base}/a`));
    expect(err.code).toBe('INVALID_REDIRECT');
    expect(err.retryable).toBe(false);
  });

  it('returns non-redirect 3xx statuses as they are', async () => {
    const server = await redirectServer({ '/a': [300, '/b'] });
    const result = await client().fetch(`${server.base}/a`);
    expect(result.status).toBe(300);
    expect(result.redirects).toEqual([]);
  });
});

describe('address policy', () => {
  /** A lookup answering from `answer(hostname, call)`; honours options.all like dns.lookup. */
  function fakeLookup(answer: (hostname: string, call: number) => string[]): { lookup: LookupFunction; calls: string[] } {
    const calls: string[] = [];
    const lookup: LookupFunction = (hostname, options, callback) => {
      calls.push(hostname);
      const addresses: LookupAddress[] = answer(hostname, calls.length).map((address) => ({ address, family: net.isIP(address) }));
      process.nextTick(() => {
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      });
    };
    return { lookup, calls };
  }

  function expectRefused(err: FetchError, host: string, address: string, cls: string): void {
    expect(err.code).toBe('ADDRESS_REFUSED');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(`host ${host} `);
    expect(err.message).toContain(address);
    expect(err.message).toContain(`address class ${cls}`);
  }

  it('refuses loopback by default without connecting', async () => {
    const server = await startServer((_req, res) => res.end('secret'));
    const err = await fetchError(guardedClient().fetch(`${server.base}/admin`));
    expectRefused(err, '127.0.0.1', '127.0.0.1', 'loopback');
    expect(err.url).toBe(`${server.base}/admin`);
    expect(err.message).toContain(`Address refused (${server.base}/admin)`);
    expect(server.connections()).toBe(0);
  });

  it.each([
    ['http://10.0.0.1/', '10.0.0.1', 'private'],
    ['http://192.168.1.1:8080/router', '192.168.1.1', 'private'],
    ['http://[::1]/', '::1', 'loopback'],
    ['http://[fd00::1]/', 'fd00::1', 'uniqueLocal'],
    ['http://[fe80::1]/', 'fe80::1', 'linkLocal'],
    ['http://100.64.0.1/', '100.64.0.1', 'carrierGradeNat'],
    ['http://0.0.0.0/', '0.0.0.0', 'unspecified'],
    // WHATWG URL parsing turns these into 127.0.0.1 / ::ffff:7f00:1 first.
    ['http://0x7f.1/', '127.0.0.1', 'loopback'],
    ['http://2130706433/', '127.0.0.1', 'loopback'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1', 'loopback'],
    ['https://169.254.169.254/latest/meta-data/', '169.254.169.254', 'cloudMetadata'],
  ])('refuses the literal-address URL %s', async (url, address, cls) => {
    const err = await fetchError(guardedClient().fetch(url));
    expectRefused(err, address, address, cls);
  });

  it('refuses a hostname the system resolver maps to loopback (localhost)', async () => {
    const server = await startServer((_req, res) => res.end('secret'));
    // The connect timeout covers the name lookup, here getaddrinfo on libuv's thread pool: 1 s
    // was once not enough on a machine busy with the whole suite (CONNECT_TIMEOUT instead).
    const err = await fetchError(guardedClient({ connectTimeoutMs: 15_000 }).fetch(`http://localhost:${server.port}/`));
    expect(err.code).toBe('ADDRESS_REFUSED');
    expect(err.message).toContain('host localhost ');
    expect(err.message).toMatch(/127\.0\.0\.1|::1/);
    expect(err.message).toContain('address class loopback');
    expect(server.connections()).toBe(0);
  });

  it('refuses a hostname whose lookup returns a private address', async () => {
    const { lookup, calls } = fakeLookup(() => ['10.20.30.40']);
    const err = await fetchError(guardedClient({ lookup }).fetch('http://intranet.test/'));
    expectRefused(err, 'intranet.test', '10.20.30.40', 'private');
    expect(calls).toEqual(['intranet.test']);
  });

  it('connects only to the allowed answers when a lookup mixes refused and allowed ones', async () => {
    const server = await startServer((_req, res) => res.end('ok'));
    const { lookup } = fakeLookup(() => ['10.0.0.1', '169.254.169.254', '127.0.0.1']);
    const result = await guardedClient({ lookup, allowAddresses: ['127.0.0.1/32'] }).fetch(`http://mixed.test:${server.port}/`);
    expect(result.status).toBe(200);
    expect(result.remoteAddress).toBe('127.0.0.1');
  });

  it('refuses a redirect from an allowed host to the metadata address', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/iam/' }).end();
    });
    const c = guardedClient({ resolve: [`public.test:${server.port}:127.0.0.1`] });
    const err = await fetchError(c.fetch(`http://public.test:${server.port}/`));
    expectRefused(err, '169.254.169.254', '169.254.169.254', 'cloudMetadata');
    expect(err.url).toBe('http://169.254.169.254/latest/meta-data/iam/');
  });

  it('refuses a redirect to a name that resolves to loopback', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(301, { location: `http://internal.test:${server.port}/` }).end();
    });
    const { lookup } = fakeLookup(() => ['127.0.0.1']);
    const c = guardedClient({ lookup, resolve: [`public.test:${server.port}:127.0.0.1`] });
    const err = await fetchError(c.fetch(`http://public.test:${server.port}/`));
    expectRefused(err, 'internal.test', '127.0.0.1', 'loopback');
    expect(server.connections()).toBe(1);
  });

  it('checks every connection, so a name rebinding to a refused address fails (DNS rebinding)', async () => {
    const server = await startServer((_req, res) => {
      // Force a new connection (and so a new lookup) for the next fetch.
      res.setHeader('connection', 'close');
      res.end('ok');
    });
    const { lookup, calls } = fakeLookup((_host, call) => (call === 1 ? ['127.0.0.1'] : ['127.0.0.2']));
    const c = guardedClient({ lookup, allowAddresses: ['127.0.0.1/32'] });
    const url = `http://rebind.test:${server.port}/`;
    expect((await c.fetch(url)).status).toBe(200);
    const err = await fetchError(c.fetch(url));
    expectRefused(err, 'rebind.test', '127.0.0.2', 'loopback');
    expect(calls).toEqual(['rebind.test', 'rebind.test']);
    expect(server.connections()).toBe(1);
  });

  it('trusts --resolve pins', async () => {
    const server = await startServer((_req, res) => res.end('pinned'));
    const c = guardedClient({ resolve: [`staging.test:${server.port}:127.0.0.1`] });
    const result = await c.fetch(`http://staging.test:${server.port}/`);
    expect(result.body.toString()).toBe('pinned');
    expect(result.remoteAddress).toBe('127.0.0.1');
    // The pin covers that host and port only: the bare address is still refused.
    expect((await fetchError(c.fetch(`${server.base}/`))).code).toBe('ADDRESS_REFUSED');
  });

  it('allows addresses inside allowAddresses CIDRs', async () => {
    const server = await startServer((_req, res) => res.end('ok'));
    expect((await guardedClient({ allowAddresses: ['127.0.0.1/32'] }).fetch(server.base)).status).toBe(200);
    expect((await guardedClient({ allowAddresses: ['127.0.0.0/8'] }).fetch(server.base)).status).toBe(200);
    const err = await fetchError(guardedClient({ allowAddresses: ['127.0.0.2/32', '::1/128'] }).fetch(server.base));
    expectRefused(err, '127.0.0.1', '127.0.0.1', 'loopback');
    const { lookup } = fakeLookup(() => ['127.0.0.1']);
    const named = await guardedClient({ lookup, allowAddresses: ['127.0.0.0/8'] }).fetch(`http://lab.test:${server.port}/`);
    expect(named.status).toBe(200);
  });

  it('connects anywhere with refusePrivateAddresses: false', async () => {
    const server = await startServer((_req, res) => res.end('ok'));
    expect((await guardedClient({ refusePrivateAddresses: false }).fetch(server.base)).status).toBe(200);
  });

  it('fails construction on a bad allowAddresses entry', () => {
    expect(() => createHttpClient({ userAgent: 'x', allowAddresses: ['10.0.0.0'] })).toThrow(AddressPolicyError);
    expect(() => createHttpClient({ userAgent: 'x', allowAddresses: ['10.0.0.0/40'] })).toThrow(/Invalid allowAddresses entry/);
  });
});

describe('DNS resolution (a DNS server on loopback answering the names)', () => {
  let dns: TestDnsServer;
  beforeEach(async () => {
    dns = await startDnsServer();
  });
  afterEach(() => dns.close());

  /** A server that closes every connection, so each fetch dials (and resolves) anew. */
  const closingServer = () =>
    startServer((_req, res) => {
      res.setHeader('connection', 'close');
      res.end('ok');
    });

  it('resolves a host once within its TTL, however many connections it takes', async () => {
    const server = await closingServer();
    dns.records.set('www.site.test', { addresses: ['127.0.0.1'], ttlSeconds: 300 });
    const dnsCache = new DnsCache({ resolver: dns.resolver() });
    const c = client({ dnsCache });
    for (let i = 0; i < 5; i++) {
      const result = await c.fetch(`http://www.site.test:${server.port}/${i}`);
      expect(result.status).toBe(200);
      expect(result.remoteAddress).toBe('127.0.0.1');
    }
    expect(server.connections()).toBe(5);
    // One A and one AAAA query, for five connections.
    expect(dns.queries.sort()).toEqual(['www.site.test/A', 'www.site.test/AAAA']);
    // Another client (another campaign) sharing the cache asks nothing either.
    await client({ dnsCache }).fetch(`http://www.site.test:${server.port}/`);
    expect(dns.queries).toHaveLength(2);
  });

  it('resolves again once the TTL is over', async () => {
    const server = await closingServer();
    dns.records.set('short.test', { addresses: ['127.0.0.1'], ttlSeconds: 0 });
    const c = client({ dnsCache: new DnsCache({ resolver: dns.resolver() }) });
    await c.fetch(`http://short.test:${server.port}/`);
    await c.fetch(`http://short.test:${server.port}/`);
    expect(dns.queriesFor('short.test')).toBe(4);
  });

  it('refuses a private or metadata address the resolver returns, from the cache too, without connecting', async () => {
    dns.records.set('intranet.test', { addresses: ['10.1.2.3'], ttlSeconds: 300 });
    dns.records.set('meta.test', { addresses: ['169.254.169.254', 'fd00:ec2::254'], ttlSeconds: 300 });
    const c = guardedClient({ dnsCache: new DnsCache({ resolver: dns.resolver() }) });
    for (let i = 0; i < 2; i++) {
      const err = await fetchError(c.fetch('http://intranet.test/'));
      expect(err.code).toBe('ADDRESS_REFUSED');
      expect(err.message).toContain('host intranet.test is at 10.1.2.3, address class private');
    }
    expect(dns.queriesFor('intranet.test')).toBe(2);
    const meta = await fetchError(c.fetch('http://meta.test/latest/'));
    expect(meta.code).toBe('ADDRESS_REFUSED');
    expect(meta.message).toContain('address class cloudMetadata');
  });

  it('refuses loopback from the resolver unless allowed, and then dials only the allowed answers', async () => {
    const server = await startServer((_req, res) => res.end('ok'));
    dns.records.set('mixed.test', { addresses: ['10.0.0.1', '127.0.0.1', '169.254.169.254'], ttlSeconds: 300 });
    const dnsCache = new DnsCache({ resolver: dns.resolver() });
    const refused = await fetchError(guardedClient({ dnsCache }).fetch(`http://mixed.test:${server.port}/`));
    expect(refused.code).toBe('ADDRESS_REFUSED');
    expect(server.connections()).toBe(0);
    const result = await guardedClient({ dnsCache, allowAddresses: ['127.0.0.1/32'] }).fetch(`http://mixed.test:${server.port}/`);
    expect(result.status).toBe(200);
    expect(result.remoteAddress).toBe('127.0.0.1');
    expect(dns.queriesFor('mixed.test')).toBe(2);
  });

  it('lets a --resolve pin win over the DNS answer, which is never asked for', async () => {
    const server = await startServer((_req, res) => res.end('pinned'));
    // The DNS would send the crawler elsewhere (and be refused).
    dns.records.set('pinned.test', { addresses: ['10.9.9.9'], ttlSeconds: 300 });
    const c = guardedClient({ dnsCache: new DnsCache({ resolver: dns.resolver() }), resolve: [`pinned.test:${server.port}:127.0.0.1`] });
    const result = await c.fetch(`http://pinned.test:${server.port}/`);
    expect(result.body.toString()).toBe('pinned');
    expect(result.remoteAddress).toBe('127.0.0.1');
    expect(dns.queries).toEqual([]);
    // The pin is per port: the same name on another port goes to the DNS (and its answer is refused).
    const other = await fetchError(c.fetch(`http://pinned.test:${server.port + 1}/`));
    expect(other.code).toBe('ADDRESS_REFUSED');
    expect(dns.queriesFor('pinned.test')).toBe(2);
  });

  it('reports a name the DNS does not know as a non-retryable DNS failure', async () => {
    const c = client({ dnsCache: new DnsCache({ resolver: dns.resolver() }) });
    const err = await fetchError(c.fetch('http://nowhere.test/'));
    expect(err.code).toBe('DNS_FAILURE');
    expect(err.retryable).toBe(false);
  });
});

describe('classifyError', () => {
  const url = 'http://example.test/';
  const withCode = (code: string, extra: Record<string, unknown> = {}): Error => Object.assign(new Error(`error ${code}`), { code, ...extra });

  it.each([
    ['UND_ERR_CONNECT_TIMEOUT', 'CONNECT_TIMEOUT', true],
    ['UND_ERR_HEADERS_TIMEOUT', 'HEADERS_TIMEOUT', true],
    ['UND_ERR_BODY_TIMEOUT', 'BODY_TIMEOUT', true],
    ['UND_ERR_SOCKET', 'CONNECTION_RESET', true],
    ['ECONNREFUSED', 'CONNECTION_REFUSED', true],
    ['ECONNRESET', 'CONNECTION_RESET', true],
    ['EPIPE', 'CONNECTION_RESET', true],
    ['ENOTFOUND', 'DNS_FAILURE', false],
    ['EAI_AGAIN', 'DNS_FAILURE', true],
    ['CERT_HAS_EXPIRED', 'TLS_ERROR', false],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'TLS_ERROR', false],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'TLS_ERROR', false],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'TLS_ERROR', false],
    ['EHOSTUNREACH', 'NETWORK_ERROR', true],
    ['HPE_INVALID_CONSTANT', 'PROTOCOL_ERROR', false],
    ['UND_ERR_ABORTED', 'ABORTED', false],
    ['UND_ERR_DESTROYED', 'CLIENT_CLOSED', true],
    ['ERR_ADDRESS_REFUSED', 'ADDRESS_REFUSED', false],
    ['Z_DATA_ERROR', 'DECOMPRESSION_FAILED', false],
    ['ERR__ERROR_FORMAT_PADDING_1', 'DECOMPRESSION_FAILED', false],
    ['SOMETHING_NEW', 'NETWORK_ERROR', true],
  ])('maps %s to %s (retryable %s)', (code, expected, retryable) => {
    const cause = withCode(code);
    const err = classifyError(cause, url);
    expect(err).toBeInstanceOf(FetchError);
    expect(err.code).toBe(expected);
    expect(err.retryable).toBe(retryable);
    expect(err.url).toBe(url);
    expect(err.cause).toBe(cause);
    expect(err.message).toContain(url);
  });

  it('maps ETIMEDOUT by syscall', () => {
    expect(classifyError(withCode('ETIMEDOUT', { syscall: 'connect' }), url).code).toBe('CONNECT_TIMEOUT');
    expect(classifyError(withCode('ETIMEDOUT', { syscall: 'read' }), url).code).toBe('NETWORK_ERROR');
  });

  it('recognises AbortError by name', () => {
    const abort = new Error('This operation was aborted');
    abort.name = 'AbortError';
    expect(classifyError(abort, url).code).toBe('ABORTED');
  });

  it('looks through cause chains and AggregateErrors', () => {
    const wrapped = new TypeError('fetch failed', { cause: withCode('ECONNRESET') });
    expect(classifyError(wrapped, url).code).toBe('CONNECTION_RESET');
    const aggregate = new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], 'all failed');
    expect(classifyError(aggregate, url).code).toBe('CONNECTION_REFUSED');
  });

  it('passes FetchErrors through and handles non-errors', () => {
    const original = new FetchError('REDIRECT_LOOP', url);
    expect(classifyError(original, 'http://other.test/')).toBe(original);
    const fromString = classifyError('boom', url);
    expect(fromString.code).toBe('NETWORK_ERROR');
    expect(fromString.message).toContain('boom');
  });

  it('exposes a stable shape', () => {
    const err = new FetchError('TLS_ERROR', url, { cause: withCode('CERT_HAS_EXPIRED'), retryable: true });
    expect(err.name).toBe('FetchError');
    expect(err.retryable).toBe(true);
    expect(err).toBeInstanceOf(Error);
  });
});

describe('requests in flight per address (addressGate) and idle connections per address', () => {
  /** An in-memory stand-in for the Redis semaphore (src/redis/address-slots.ts): `limit` slots per address. */
  function memoryGate(limit: number) {
    const held = new Map<string, number>();
    const asked: string[] = [];
    const gate: AddressGate = {
      async acquire(address, signal) {
        asked.push(address);
        while ((held.get(address) ?? 0) >= limit) {
          signal.throwIfAborted();
          await new Promise((r) => setTimeout(r, 5));
        }
        const othersInFlight = held.get(address) ?? 0;
        held.set(address, othersInFlight + 1);
        let done = false;
        const release = async () => {
          if (done) return;
          done = true;
          held.set(address, held.get(address)! - 1);
        };
        return Object.assign(release, { othersInFlight });
      },
    };
    return { gate, asked, held: (address: string) => held.get(address) ?? 0 };
  }

  /** A slow server counting the requests it is answering at once, and the sockets open to it. */
  async function countingServer(delayMs: number, handle?: (req: http.IncomingMessage, res: http.ServerResponse) => boolean) {
    let inFlight = 0;
    let most = 0;
    const server = await startServer((req, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      res.on('close', () => inFlight--);
      if (handle?.(req, res)) return;
      setTimeout(() => res.end(`page of ${req.headers.host}`), delayMs);
    });
    return { server, most: () => most, inFlight: () => inFlight };
  }

  const pins = (port: number, n: number) => Array.from({ length: n }, (_, i) => `h${i}.gate.test:${port}:127.0.0.1`);

  test('never more than the limit in flight at one address, whatever the host names; every slot given back', async () => {
    const counting = await countingServer(40);
    const { gate, asked, held } = memoryGate(3);
    const c = client({ addressGate: gate, resolve: pins(counting.server.port, 12) });
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => c.fetch(`http://h${i}.gate.test:${counting.server.port}/`)));
    expect(results.map((r) => r.body.toString())).toEqual(Array.from({ length: 12 }, (_, i) => `page of h${i}.gate.test:${counting.server.port}`));
    expect(counting.most()).toBe(3);
    expect(new Set(asked)).toEqual(new Set(['127.0.0.1']));
    expect(asked).toHaveLength(12);
    expect(held('127.0.0.1')).toBe(0);
  });

  test('a slot is given back when the response fails or the caller aborts, and each redirect hop takes its own', async () => {
    const counting = await countingServer(0, (req, res) => {
      if (req.url === '/reset') req.socket.destroy();
      else if (req.url === '/hang') return true;
      else if (req.url === '/moved') res.writeHead(301, { location: '/' }).end();
      else return false;
      return true;
    });
    const { gate, asked, held } = memoryGate(1);
    const c = client({ addressGate: gate });
    expect((await fetchError(c.fetch(`${counting.server.base}/reset`))).code).toBe('CONNECTION_RESET');
    expect(held('127.0.0.1')).toBe(0);
    const abort = new AbortController();
    const hanging = fetchError(c.fetch(`${counting.server.base}/hang`, { signal: abort.signal }));
    while (counting.inFlight() === 0) await new Promise((r) => setTimeout(r, 5));
    abort.abort();
    expect((await hanging).code).toBe('ABORTED');
    expect(held('127.0.0.1')).toBe(0);
    asked.length = 0;
    const moved = await c.fetch(`${counting.server.base}/moved`);
    expect(moved.status).toBe(200);
    expect(asked).toEqual(['127.0.0.1', '127.0.0.1']);
    expect(held('127.0.0.1')).toBe(0);
  });

  test('an address full for the whole total timeout fails the fetch with the retryable ADDRESS_BUSY; an abort while waiting is ABORTED', async () => {
    const server = await startServer((_req, res) => res.end('ok'));
    const { gate } = memoryGate(1);
    const taken = await gate.acquire('127.0.0.1', new AbortController().signal);
    const c = client({ addressGate: gate, totalTimeoutMs: 300 });
    const busy = await fetchError(c.fetch(`${server.base}/`));
    expect(busy.code).toBe('ADDRESS_BUSY');
    expect(busy.retryable).toBe(true);
    const abort = new AbortController();
    const waiting = fetchError(client({ addressGate: gate }).fetch(`${server.base}/`, { signal: abort.signal }));
    setTimeout(() => abort.abort(), 50);
    expect((await waiting).code).toBe('ABORTED');
    await taken();
    expect((await c.fetch(`${server.base}/`)).status).toBe(200);
  });

  test("beforeSend is the caller's last word once the slot is held: what it throws ends the fetch as it is, nothing sent, the slot given back", async () => {
    let requests = 0;
    const server = await startServer((_req, res) => {
      requests++;
      res.end('ok');
    });
    const { gate, held } = memoryGate(1);
    const c = client({ addressGate: gate });
    const order: string[] = [];
    const refused = new Error('superseded');
    const beforeSend = async () => {
      order.push(`before send: ${held('127.0.0.1')} slot held`);
      throw refused;
    };
    await expect(c.fetch(`${server.base}/`, { beforeSend })).rejects.toBe(refused);
    expect([order, requests, held('127.0.0.1')]).toEqual([['before send: 1 slot held'], 0, 0]);
    // Said yes: sent, once per request.
    const ok = await c.fetch(`${server.base}/`, { beforeSend: async () => void order.push('yes') });
    expect([ok.status, requests, order.slice(1)]).toEqual([200, 1, ['yes']]);
  });

  test('maxSlotWaitMs bounds the wait for a slot below half the total timeout: past it ADDRESS_BUSY, nothing sent', async () => {
    let requests = 0;
    const server = await startServer((_req, res) => {
      requests++;
      res.end('ok');
    });
    const { gate } = memoryGate(1);
    const taken = await gate.acquire('127.0.0.1', new AbortController().signal);
    // Half the total timeout is a minute: the caller's 100 ms is what ends the wait.
    const c = client({ addressGate: gate, totalTimeoutMs: 120_000 });
    const busy = await fetchError(c.fetch(`${server.base}/`, { maxSlotWaitMs: 100 }));
    expect([busy.code, busy.retryable, requests]).toEqual(['ADDRESS_BUSY', true, 0]);
    expect(busy.message).toMatch(/the 100 ms the caller could wait/);
    await taken();
    expect((await c.fetch(`${server.base}/`, { maxSlotWaitMs: 100 })).status).toBe(200);
  });

  test('the gate is asked for the address the connection dials: the first DNS answer the address policy allows', async () => {
    const server = await startServer((_req, res) => res.end('ok'));
    const lookup: LookupFunction = (_hostname, _options, callback) =>
      callback(null, [
        { address: '10.0.0.1', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ]);
    const { gate, asked } = memoryGate(2);
    const c = guardedClient({ addressGate: gate, lookup, allowAddresses: ['127.0.0.1/32'] });
    expect((await c.fetch(`http://named.gate.test:${server.port}/`)).status).toBe(200);
    expect(asked).toEqual(['127.0.0.1']);
  });

  test('a request that shares its address with others in flight keeps no idle connection; one alone at its address keeps it', async () => {
    const seen = http.createServer((req, res) => res.end(`page of ${req.headers.host}`));
    let open = 0;
    seen.on('connection', (s: net.Socket) => {
      open++;
      s.on('close', () => open--);
    });
    seen.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => seen.listen(0, '127.0.0.1', resolve));
    const port = (seen.address() as AddressInfo).port;
    /** A gate that grants at once and says how many other requests held a slot at the address then. */
    const sayingGate = (othersInFlight: number): AddressGate => ({ acquire: async () => Object.assign(async () => undefined, { othersInFlight }) });
    try {
      // Plenty of idle connections allowed per address: only the gate's word on sharing closes them.
      const shared = client({ addressGate: sayingGate(2), keepAliveOriginsPerAddress: 100, resolve: pins(port, 6) });
      for (let i = 0; i < 6; i++) expect((await shared.fetch(`http://h${i}.gate.test:${port}/`)).status).toBe(200);
      for (let i = 0; i < 100 && open > 0; i++) await new Promise((r) => setTimeout(r, 20));
      // Without the rule each of the six origins keeps its socket idle: 6 open.
      expect(open).toBe(0);
      const alone = client({ addressGate: sayingGate(0), keepAliveOriginsPerAddress: 100, resolve: pins(port, 6) });
      for (let i = 0; i < 6; i++) expect((await alone.fetch(`http://h${i}.gate.test:${port}/`)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 100));
      expect(open).toBe(6);
    } finally {
      seen.closeAllConnections();
      await new Promise<void>((resolve) => seen.close(() => resolve()));
    }
  });

  test('keepAliveOriginsPerAddress: idle connections to one address stay within the limit however many hosts it serves', async () => {
    // Its own server: the test counts the sockets open to it, not only those ever opened.
    const seen = http.createServer((req, res) => res.end(`page of ${req.headers.host}`));
    let open = 0;
    let opened = 0;
    seen.on('connection', (s: net.Socket) => {
      open++;
      opened++;
      s.on('close', () => open--);
    });
    seen.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => seen.listen(0, '127.0.0.1', resolve));
    const port = (seen.address() as AddressInfo).port;
    try {
      const c = client({ keepAliveOriginsPerAddress: 2, resolve: pins(port, 8) });
      for (let i = 0; i < 8; i++) expect((await c.fetch(`http://h${i}.gate.test:${port}/`)).status).toBe(200);
      // The two kept-alive origins reuse their connections.
      const before = opened;
      for (let i = 0; i < 2; i++) expect((await c.fetch(`http://h${i}.gate.test:${port}/again`)).status).toBe(200);
      expect(opened).toBe(before);
      // The others' connections closed with their responses.
      for (let i = 0; i < 100 && open > 2; i++) await new Promise((r) => setTimeout(r, 20));
      expect(open).toBe(2);
      expect(opened).toBe(8);
    } finally {
      seen.closeAllConnections();
      await new Promise<void>((resolve) => seen.close(() => resolve()));
    }
  });
});
