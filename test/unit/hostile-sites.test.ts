// The hostile sites over real HTTP and raw sockets: each misbehaviour is
// checked from the client's side (status, headers, bytes, failures) and in
// the test web's request log, since integration tests rely on both.
import net from 'node:net';
import zlib from 'node:zlib';
import { createHash } from 'node:crypto';
import * as cheerio from 'cheerio';
import iconv from 'iconv-lite';
import { Agent, fetch, request } from 'undici';
import { selfSignedCertificate, startTestWeb, type TestWeb } from '../web/test-web';
import {
  BOMB_MEMBERS,
  BOMB_MEMBER_BYTES,
  CHARSET_CASES,
  METADATA_URL,
  MiB,
  PRIVATE_ADMIN_URL,
  allHostileSites,
  calendarTrapSite,
  canonicalTarget,
  charsetSite,
  checkRequestLog,
  contentSite,
  duplicateSite,
  faultSite,
  httpErrorSite,
  longLinkSite,
  rateLimitSite,
  redirectSite,
  redirectTargetSite,
  robotsErrorSite,
  robotsGarbageSite,
  robotsHugeSite,
  sitemapSite,
  unavailableSite,
} from '../web/hostile-sites';

let web: TestWeb;
let agent: Agent;

beforeEach(async () => {
  web = await startTestWeb();
  agent = new Agent({ connect: { lookup: web.lookup } });
});

afterEach(async () => {
  await agent.close();
  await web.close();
});

interface Got {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

async function get(host: string, target: string, opts: { headersTimeout?: number; bodyTimeout?: number; method?: 'GET' | 'HEAD' } = {}): Promise<Got> {
  const res = await request(web.url(host, target), { dispatcher: agent, ...opts });
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
  return { status: res.statusCode, headers, body: Buffer.from(await res.body.arrayBuffer()) };
}

async function text(host: string, target: string): Promise<string> {
  return (await get(host, target)).body.toString('utf8');
}

function hrefs(html: string): string[] {
  const $ = cheerio.load(html);
  return $('a[href]')
    .toArray()
    .map((a) => $(a).attr('href')!);
}

/** A raw HTTP/1.1 exchange: everything the server sent until it closed, or the socket error. */
function raw(host: string, target: string, opts: { waitMs?: number } = {}): Promise<{ data: Buffer; error?: NodeJS.ErrnoException; ended: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: web.address, port: web.port });
    let ended = false;
    let timer: NodeJS.Timeout | undefined;
    const done = (error?: NodeJS.ErrnoException): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ data: Buffer.concat(chunks), error, ended });
    };
    socket.on('data', (c) => chunks.push(c));
    socket.on('end', () => {
      ended = true;
      done();
    });
    socket.on('error', (e) => done(e));
    socket.write(`GET ${target} HTTP/1.1\r\nHost: ${host}:${web.port}\r\nConnection: close\r\n\r\n`);
    if (opts.waitMs !== undefined) timer = setTimeout(() => done(), opts.waitMs);
  });
}

function splitHead(data: Buffer): { head: string; body: Buffer } {
  const i = data.indexOf('\r\n\r\n');
  return { head: data.subarray(0, i).toString('latin1'), body: data.subarray(i + 4) };
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('handler hook', () => {
  test('runs after statusFor, falls through on false, sees the request and is logged', async () => {
    const seen: { target: string; path: string; search: string; attempt: number; siteRequest: number; origin: string }[] = [];
    web.addSite({
      host: 'hook.test',
      pages: 3,
      fanOut: 1,
      statusFor: (p) => (p === '/page/2' ? 503 : undefined),
      handler: (ctx) => {
        seen.push({ target: ctx.target, path: ctx.path, search: ctx.search, attempt: ctx.attempt, siteRequest: ctx.siteRequest, origin: ctx.origin });
        if (ctx.path !== '/custom') return false;
        ctx.send(201, 'text/plain', 'mine', { 'x-hostile': 'yes' });
        return true;
      },
    });
    const custom = await get('hook.test', '/custom?a=1');
    expect(custom).toMatchObject({ status: 201, headers: { 'x-hostile': 'yes', 'content-length': '4' } });
    expect(custom.body.toString()).toBe('mine');
    expect((await get('hook.test', '/custom', { method: 'HEAD' })).body.length).toBe(0);
    expect((await get('hook.test', '/page/1')).status).toBe(200); // fell through to the generated page
    expect((await get('hook.test', '/page/2')).status).toBe(503); // statusFor wins, handler not asked
    expect(seen).toEqual([
      { target: '/custom?a=1', path: '/custom', search: '?a=1', attempt: 1, siteRequest: 1, origin: `http://hook.test:${web.port}` },
      { target: '/custom', path: '/custom', search: '', attempt: 2, siteRequest: 2, origin: `http://hook.test:${web.port}` },
      { target: '/page/1', path: '/page/1', search: '', attempt: 1, siteRequest: 3, origin: `http://hook.test:${web.port}` },
    ]);
    expect(web.requests().map((r) => [r.method, r.path])).toEqual([
      ['GET', '/custom?a=1'],
      ['HEAD', '/custom'],
      ['GET', '/page/1'],
      ['GET', '/page/2'],
    ]);
  });

  test('later() timers die with the response and with close()', async () => {
    let fired = 0;
    web.addSite({
      host: 'timer.test',
      pages: 1,
      fanOut: 0,
      handler: (ctx) => {
        // 600 ms: the hang-up at 50 ms must reach the server first even on a machine loaded to 15 (150 ms did not).
        ctx.later(600, () => fired++);
        return true; // never answers
      },
    });
    // The client hangs up after 50 ms, before the handler's timer is due.
    expect((await raw('timer.test', '/', { waitMs: 50 })).data.length).toBe(0);
    await sleep(700);
    expect(fired).toBe(0);
    void get('timer.test', '/x').catch(() => undefined);
    await sleep(30);
    await web.close();
    await sleep(700);
    expect(fired).toBe(0);
  });

  test('long request targets reach the log instead of dying as 431', async () => {
    web.addSite(longLinkSite('long.test'));
    const target = `/long?x=${'a'.repeat(100 * 1024)}`;
    const res = await get('long.test', target);
    expect(res.status).toBe(414);
    expect(web.requests().at(-1)!.path).toBe(target);
  });
});

describe('redirects', () => {
  test('loop, 10-hop chain, other host, metadata and private-network targets', async () => {
    const site = redirectSite('redir.test', { otherHost: 'Other.test' });
    web.addSite(site);
    const loc = async (target: string): Promise<{ status: number; location: string }> => {
      const r = await get('redir.test', target);
      return { status: r.status, location: r.headers.location };
    };

    expect(await loc('/loop/a')).toEqual({ status: 302, location: '/loop/b' });
    expect(await loc('/loop/b')).toEqual({ status: 302, location: `http://redir.test:${web.port}/loop/a` });

    const hops: number[] = [];
    let url = web.url('redir.test', '/chain/0');
    for (;;) {
      const r = await request(url, { dispatcher: agent });
      await r.body.dump();
      if (r.statusCode < 300 || r.statusCode >= 400) break;
      hops.push(r.statusCode);
      url = new URL(String(r.headers.location), url).href;
    }
    expect(hops).toHaveLength(10);
    expect(new Set(hops)).toEqual(new Set([301, 302, 303, 307, 308]));
    expect(url).toBe(web.url('redir.test', '/chain/10'));
    expect(await text('redir.test', '/chain/10')).toContain('end of chain after 10 hops');
    expect((await get('redir.test', '/chain/11')).status).toBe(404);
    const locations = web
      .requests()
      .filter((r) => r.path.startsWith('/chain/'))
      .map((r) => r.path);
    expect(locations.slice(0, 11)).toEqual(site.expected.groups.chain);

    expect(await loc('/away')).toEqual({ status: 301, location: `http://other.test:${web.port}/` });
    expect(await loc('/metadata')).toEqual({ status: 302, location: METADATA_URL });
    expect(await loc('/private-net')).toEqual({ status: 307, location: PRIVATE_ADMIN_URL });
    const links = hrefs(await text('redir.test', '/'));
    expect(links).toEqual(expect.arrayContaining([PRIVATE_ADMIN_URL, METADATA_URL, '/loop/a', '/chain/0', '/short/0']));

    // The short chain: three hops, each Location spelled differently, ending in a page.
    expect(await loc('/short/0')).toEqual({ status: 301, location: `http://redir.test:${web.port}/short/1` });
    expect(await loc('/short/1')).toEqual({ status: 302, location: '/short/2' });
    expect(await loc('/short/2')).toEqual({ status: 303, location: '3' });
    expect(await text('redir.test', '/short/3')).toContain('end of short chain after 3 hops');
    expect((await get('redir.test', '/short/4')).status).toBe(404);
    expect(site.expected.groups.shortChain).toEqual(['/short/0', '/short/1', '/short/2', '/short/3']);
    expect(site.expected.index['/short/0']).toMatchObject({ outcomes: ['redirect'] });
    expect(site.expected.index['/short/3']).toMatchObject({ outcomes: ['fetched'], status: 200 });
    expect(new URL('http://2852039166/latest/meta-data/').hostname).toBe('169.254.169.254');
    expect(site.expected.forbiddenHosts).toEqual(['169.254.169.254', '10.0.0.1']);
  });
});

describe('redirect target and HTTP errors', () => {
  test('the redirect target is a plain page no crawl is seeded with', async () => {
    const site = redirectTargetSite('target.test');
    web.addSite(site);
    const home = await get('target.test', '/');
    expect(home.status).toBe(200);
    expect(home.body.toString()).toContain('reached through a redirect');
    expect(hrefs(home.body.toString())).toEqual(['/']);
    expect(site.expected.seeds).toEqual([]);
  });

  test('404 and 410 every time, 503 every time, all linked from /', async () => {
    const site = httpErrorSite('err.test');
    web.addSite(site);
    expect(hrefs(await text('err.test', '/'))).toEqual(expect.arrayContaining(['/missing', '/gone', '/down']));
    for (let i = 0; i < 2; i++) {
      expect((await get('err.test', '/missing')).status).toBe(404);
      expect((await get('err.test', '/gone')).status).toBe(410);
      expect((await get('err.test', '/down')).status).toBe(503);
    }
    expect((await get('err.test', '/robots.txt')).status).toBe(200);
    expect(site.expected.index['/gone']).toEqual({ outcomes: ['http-error'], errorCodes: ['HTTP_410'], status: 410 });
  });
});

describe('failure taxonomy listeners', () => {
  test('HTTPS with a fresh self-signed certificate: served to a client that trusts it, a logged handshake failure otherwise', async () => {
    web.addSite({ host: 'tls.test', pages: 1, fanOut: 0 });
    const credentials = await selfSignedCertificate(['tls.test']);
    expect(credentials.key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const port = await web.startHttps(credentials);
    const url = `https://tls.test:${port}/`;
    await expect(request(url, { dispatcher: agent })).rejects.toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    // The server hears of the failed handshake a moment after the client gave up.
    for (let i = 0; i < 100 && web.tlsFailures().length === 0; i++) await sleep(20);
    expect(web.tlsFailures().map((f) => f.servername)).toEqual(['tls.test']);
    expect(web.requests()).toEqual([]);
    const trusting = new Agent({ connect: { ca: credentials.cert, lookup: web.lookup } });
    try {
      const res = await request(url, { dispatcher: trusting });
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toContain('tls.test /');
    } finally {
      await trusting.close();
    }
    expect(web.requests().map((r) => [r.host, r.port, r.path])).toEqual([['tls.test', port, '/']]);
    // A second certificate is a new key, not one kept anywhere.
    expect((await selfSignedCertificate(['tls.test'])).key).not.toBe(credentials.key);
  });

  test('the unaccepting listener never completes a TCP handshake', async () => {
    const port = await web.startUnacceptingListener();
    const started = Date.now();
    const outcome = await new Promise<string>((resolve) => {
      const socket = net.connect({ host: web.address, port });
      socket.once('connect', () => resolve('connected'));
      socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
      setTimeout(() => {
        socket.destroy();
        resolve('still connecting');
      }, 1_500);
    });
    expect(outcome).toBe('still connecting');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
  });
});

describe('traps', () => {
  test('calendar, growing query and repeated segments go on forever', async () => {
    const site = calendarTrapSite('trap.test');
    web.addSite(site);
    expect(hrefs(await text('trap.test', '/calendar/2026/11'))).toEqual(['/calendar/2026/10', '/calendar/2026/12', '/']);
    expect(hrefs(await text('trap.test', '/calendar/2026/12'))).toContain('/calendar/2027/1');
    expect(hrefs(await text('trap.test', '/calendar/98765/1'))).toContain('/calendar/98764/12');
    expect((await get('trap.test', '/calendar/2026/13')).status).toBe(404);

    const q = hrefs(await text('trap.test', '/search?q=trap&z001=a'));
    expect(q.slice(0, 2)).toEqual(['/search?q=trap&z001=a&z002=a', '/search?q=trap&z001=a&z002=b']);
    expect(canonicalTarget(q[0])).toBe(q[0]); // sorting normalisers keep the spelling

    expect(hrefs(await text('trap.test', '/a/a/a/'))[0]).toBe('a/');
    expect((await get('trap.test', '/a/a/a/a/a/a/a/a/')).status).toBe(200);

    expect(site.reachable(0)).toEqual(new Set(['/']));
    expect(site.reachable(1).size).toBe(5);
    // Depth 2: /about adds nothing; calendar +2, search +2, /a/ +1.
    expect(site.reachable(2).size).toBe(10);
    expect(site.reachable(12).size).toBeGreaterThan(2 ** 11);
    expect(site.isTrap('/calendar/2026/11')).toBe(false);
    expect(site.isTrap('/calendar/2026/12')).toBe(true);
    expect(site.isTrap('/a/a/')).toBe(true);
    for (const t of site.reachable(3)) expect((await get('trap.test', t)).status).toBe(200);
  });
});

describe('transport faults', () => {
  test('slow drip keeps an idle body timeout from firing and takes its full time', async () => {
    web.addSite(faultSite('f.test', { dripIntervalMs: 20, dripTotalMs: 400 }));
    const t0 = performance.now();
    const res = await get('f.test', '/slow-drip', { bodyTimeout: 150 });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(380);
    expect(res.headers['content-length']).toBeUndefined();
    expect(res.body.toString()).toMatch(/<p>\.{15,}<\/p>.*\/after-drip/);
  });

  test('stall and missing headers trip client timeouts; hangMs drops the connection', async () => {
    web.addSite(faultSite('f.test'));
    web.addSite(faultSite('h.test', { hangMs: 100 }));
    await expect(get('f.test', '/no-headers', { headersTimeout: 200 })).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
    await expect(get('f.test', '/stall', { bodyTimeout: 200 })).rejects.toMatchObject({ code: 'UND_ERR_BODY_TIMEOUT' });
    const stalled = await raw('f.test', '/stall', { waitMs: 300 });
    expect(stalled.ended).toBe(false);
    expect(splitHead(stalled.data).body.toString()).toContain('stalled');

    const t0 = performance.now();
    const hung = await raw('h.test', '/no-headers');
    expect(hung.data.length).toBe(0);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(90);
    expect(
      web
        .requests()
        .filter((r) => r.path === '/no-headers')
        .map((r) => r.host),
    ).toEqual(['f.test', 'h.test']);
  });

  test('truncated body: fewer bytes than Content-Length, then the connection closes', async () => {
    web.addSite(faultSite('f.test'));
    const r = await raw('f.test', '/truncated');
    const { head, body } = splitHead(r.data);
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(head).toMatch(/content-length: 100000/i);
    expect(body.length).toBe(1_000);
    expect(r.ended || r.error).toBeTruthy();
    await expect(get('f.test', '/truncated')).rejects.toThrow();
    await expect(fetch(web.url('f.test', '/truncated'), { dispatcher: agent }).then((x) => x.text())).rejects.toThrow();
  });

  test('reset before any response byte, and mid-body', async () => {
    web.addSite(faultSite('f.test'));
    const r = await raw('f.test', '/reset');
    expect(r.data.length).toBe(0);
    expect(r.error?.code).toBe('ECONNRESET');
    await expect(get('f.test', '/reset')).rejects.toMatchObject({ code: expect.stringMatching(/ECONNRESET|UND_ERR_SOCKET/) });
    await expect(get('f.test', '/reset-mid-body')).rejects.toThrow();
    expect(web.requests().map((x) => x.path)).toEqual(['/reset', '/reset', '/reset-mid-body']);
    expect(web.requests().every((x) => x.t > 0)).toBe(true);
    expect((await get('f.test', '/ok')).status).toBe(200); // the server is fine
  });

  test('50 MiB page streams with an exact Content-Length; aborting mid-way is harmless', async () => {
    web.addSite(faultSite('f.test'));
    const res = await request(web.url('f.test', '/huge'), { dispatcher: agent });
    expect(res.headers['content-length']).toBe(String(50 * MiB));
    let n = 0;
    let first = '';
    for await (const c of res.body) {
      if (first.length < 1024) first += (c as Buffer).subarray(0, 1024).toString();
      n += (c as Buffer).length;
    }
    expect(n).toBe(50 * MiB);
    expect(first).toContain('/huge-link');

    const chunked = await request(web.url('f.test', '/huge-chunked'), { dispatcher: agent });
    expect(chunked.headers['content-length']).toBeUndefined();
    expect(chunked.headers['transfer-encoding']).toBe('chunked');
    let m = 0;
    for await (const c of chunked.body) {
      m += (c as Buffer).length;
      if (m > MiB) break; // leaves the stream mid-body: undici destroys the socket
    }
    await sleep(50);
    expect((await get('f.test', '/ok')).status).toBe(200);
  });

  test('gzip bomb: about a MiB on the wire, over a GiB decoded', async () => {
    web.addSite(faultSite('f.test'));
    const res = await get('f.test', '/gzip-bomb');
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.body.length).toBeLessThan(2 * MiB);
    let decoded = 0;
    let head = '';
    await new Promise<void>((resolve, reject) => {
      const gunzip = zlib.createGunzip({ chunkSize: MiB });
      gunzip.on('data', (c: Buffer) => {
        if (head.length < 100) head += c.subarray(0, 100).toString();
        decoded += c.length;
      });
      gunzip.on('end', resolve);
      gunzip.on('error', reject);
      gunzip.end(res.body);
    });
    expect(head).toContain('/after-bomb');
    expect(decoded).toBeGreaterThan(BOMB_MEMBERS * BOMB_MEMBER_BYTES - 1);
    expect(decoded).toBeGreaterThan(2 ** 30);
    // Decoding a GiB is seconds of CPU: on a loaded 2-core machine it passed Jest's default 5 s.
  }, 60_000);
});

describe('content types and malformed HTML', () => {
  test('PDF and PNG come with their types; malformed HTML still yields links', async () => {
    const site = contentSite('c.test');
    web.addSite(site);
    expect(hrefs(await text('c.test', '/'))).toEqual(expect.arrayContaining(['/doc.pdf', '/image.png', '/malformed']));
    const pdf = await get('c.test', '/doc.pdf');
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(pdf.body.subarray(0, 5).toString()).toBe('%PDF-');
    expect(pdf.body.toString('latin1')).toContain('/from-pdf');
    const png = await get('c.test', '/image.png');
    expect(png.headers['content-type']).toBe('image/png');
    expect(png.body.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const broken = await get('c.test', '/malformed');
    expect(broken.body.includes(Buffer.from([0x00, 0xff, 0xfe]))).toBe(true);
    // HTML tree building re-opens the unclosed <a> (active formatting elements) and
    // foster-parents the list out of the table, so /malformed/3 comes twice and early.
    expect([...new Set(hrefs(broken.body.toString('utf8')))].sort()).toEqual(site.expected.groups.fromMalformed);
    expect(broken.body.toString('utf8')).toContain('/malformed/hidden');
    for (const p of site.expected.groups.fromMalformed) expect((await get('c.test', p)).status).toBe(200);
    expect(site.expected.index['/doc.pdf'].outcomes).toEqual(['fetched']);
    expect(contentSite('c.test', { nonHtml: 'skip' }).expected.index['/image.png'].outcomes).toEqual(['skipped-content-type']);
  });
});

describe('robots.txt variants', () => {
  test('binary garbage without a single rule', async () => {
    web.addSite(robotsGarbageSite('g.test'));
    const r = await get('g.test', '/robots.txt');
    expect(r.status).toBe(200);
    expect(r.body.length).toBe(8 * 1024);
    expect(r.body.includes(0x3a)).toBe(false);
    expect(r.body.includes(0)).toBe(true);
    expect(r.body).toEqual((await get('g.test', '/robots.txt')).body);
    expect((await get('g.test', '/page/1')).status).toBe(200);
  });

  test('10 MiB robots.txt is streamed with the real group first', async () => {
    web.addSite(robotsHugeSite('big.test'));
    const res = await request(web.url('big.test', '/robots.txt'), { dispatcher: agent });
    expect(res.headers['content-length']).toBeUndefined();
    let n = 0;
    let head = '';
    for await (const c of res.body) {
      if (head.length < 1024) head += (c as Buffer).subarray(0, 1024).toString();
      n += (c as Buffer).length;
    }
    expect(n).toBe(10 * MiB);
    expect(head.startsWith('User-agent: *\nDisallow: /private/\n# filler')).toBe(true);
    expect([...web.expectedPages([web.url('big.test')])].some((u) => u.includes('/private/'))).toBe(false);
  });

  test('500 forever, or a few times then allow-all', async () => {
    web.addSite(robotsErrorSite('e.test'));
    web.addSite(robotsErrorSite('e2.test', { failures: 2, status: 503 }));
    for (let i = 0; i < 3; i++) expect((await get('e.test', '/robots.txt')).status).toBe(500);
    expect((await get('e2.test', '/robots.txt')).status).toBe(503);
    expect((await get('e2.test', '/robots.txt')).status).toBe(503);
    const ok = await get('e2.test', '/robots.txt');
    expect(ok.status).toBe(200);
    expect(ok.body.toString()).toBe('User-agent: *\nDisallow:\n');
  });

  test('expectations follow RFC 9309: 4xx means no restrictions, 5xx and 429 mean crawl nothing', async () => {
    const missing = robotsErrorSite('e404.test', { status: 404, pages: 3 });
    const throttled = robotsErrorSite('e429.test', { status: 429 });
    web.addSite(missing);
    web.addSite(throttled);
    expect((await get('e404.test', '/robots.txt')).status).toBe(404);
    expect((await get('e429.test', '/robots.txt')).status).toBe(429);
    expect((await get('e429.test', '/')).status).toBe(200);
    expect(missing.expected.mustFetch).toEqual(['/robots.txt', '/', '/page/1', '/page/2']);
    expect(missing.expected.mustNotFetch).toEqual([]);
    expect(Object.keys(missing.expected.index)).toEqual(['/', '/page/1', '/page/2']);
    expect(throttled.expected.mustFetch).toEqual(['/robots.txt']);
    expect(checkRequestLog(throttled, web.requests())).toEqual(['requested forbidden /']);
    expect(robotsErrorSite('e500.test').expected.mustNotFetch).toHaveLength(1);
  });
});

describe('sitemaps', () => {
  test('robots Sitemap lines, urlset, index, gzipped urlset and sitemap-only pages', async () => {
    const site = sitemapSite('sm.test');
    web.addSite(site);
    const origin = `http://sm.test:${web.port}`;
    const robots = await text('sm.test', '/robots.txt');
    expect(robots).toContain(`Sitemap: ${origin}/sitemap.xml\n`);
    expect(robots).toContain(`Sitemap: ${origin}/sitemap_index.xml\n`);

    const locs = (xml: string): string[] => [...xml.matchAll(/<loc>([^<]*)<\/loc>/g)].map((m) => m[1].replace(/&amp;/g, '&'));
    const urlset = await get('sm.test', '/sitemap.xml');
    expect(urlset.headers['content-type']).toBe('application/xml');
    expect(urlset.body.toString()).toContain('&amp;b=2');
    expect(locs(urlset.body.toString())).toEqual([
      ...site.expected.groups.sitemapOnly.filter((p) => p.startsWith('/from-sitemap/')).map((p) => origin + p),
      `${origin}/private/from-sitemap`,
    ]);
    const index = await text('sm.test', '/sitemap_index.xml');
    expect(index).toContain('<sitemapindex');
    expect(locs(index)).toEqual([`${origin}/sitemaps/pages.xml.gz`, `${origin}/sitemaps/bomb.xml.gz`]);

    const gz = await get('sm.test', '/sitemaps/pages.xml.gz');
    expect(gz.headers['content-encoding']).toBeUndefined();
    expect(locs(zlib.gunzipSync(gz.body).toString())).toEqual(['/from-gz/1', '/from-gz/2', '/from-gz/3'].map((p) => origin + p));

    const home = hrefs(await text('sm.test', '/'));
    for (const p of site.expected.groups.sitemapOnly) {
      expect(home).not.toContain(p);
      expect((await get('sm.test', p)).status).toBe(200);
    }
    expect(site.expected.mustNotFetch).toEqual(['/private/from-sitemap']);
  });

  test('sitemap bomb: small on the wire, a valid urlset head, then over a GiB of whitespace', async () => {
    web.addSite(sitemapSite('sm.test'));
    const res = await get('sm.test', '/sitemaps/bomb.xml.gz');
    expect(res.body.length).toBeLessThan(2 * MiB);
    // Only the first few MiB: the full size is checked on /gzip-bomb, same generator.
    const gunzip = zlib.createGunzip();
    let out = '';
    let bytes = 0;
    await new Promise<void>((resolve) => {
      gunzip.on('data', (c: Buffer) => {
        if (out.length < 400) out += c.toString();
        bytes += c.length;
        if (bytes > 4 * MiB) {
          gunzip.destroy();
          resolve();
        }
      });
      gunzip.write(res.body);
    });
    expect(out).toMatch(/^<\?xml[^]*<urlset[^]*\/from-bomb\/1<\/loc><\/url>\n {20}/);
    const again = await get('sm.test', '/sitemaps/bomb.xml.gz');
    expect(sha(again.body)).toBe(sha(res.body));
  });
});

describe('charsets', () => {
  test('Shift_JIS by header, windows-1251 by meta, UTF-8 by BOM', async () => {
    web.addSite(charsetSite('cs.test'));
    const known: Record<string, number[]> = {
      '/sjis': [0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea], // 日本語
      '/cp1251': [0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2], // Привет
      '/bom': [0x47, 0x72, 0xc3, 0xbc, 0xc3, 0x9f, 0x65], // Grüße
    };
    for (const c of CHARSET_CASES) {
      const r = await get('cs.test', c.path);
      expect(r.body.includes(Buffer.from(known[c.path]))).toBe(true);
      const decoded = iconv.decode(r.body, c.encoding);
      expect(decoded).toContain(c.word);
      expect(hrefs(decoded)).toContain(c.href);
      // Not valid as UTF-8 unless it is UTF-8.
      expect(r.body.toString('utf8').includes(c.word)).toBe(c.declared === 'bom');
      if (c.declared === 'header') expect(r.headers['content-type']).toBe('text/html; charset=Shift_JIS');
      else expect(r.headers['content-type']).toBe('text/html');
      if (c.declared === 'meta') expect(decoded).toContain('<meta charset="windows-1251">');
      if (c.declared === 'bom') expect([...r.body.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
      if (c.declared !== 'meta') expect(decoded).not.toMatch(/<meta/);
      expect(c.target).toMatch(/^[\x21-\x7e]+$/);
      expect(decodeURIComponent(c.target)).toBe(c.href);
      const target = await get('cs.test', c.target);
      expect(target.status).toBe(200);
      expect(target.body.toString()).toContain(c.word);
    }
    // The Shift_JIS href read as UTF-8 is mojibake, and that URL does not exist.
    const sjis = (await get('cs.test', '/sjis')).body.toString('utf8');
    const wrong = new URL(hrefs(sjis)[0], 'http://x.invalid').pathname;
    expect((await get('cs.test', wrong)).status).toBe(404);
  });
});

describe('throttling', () => {
  test('throttling can start after some pages, with a Retry-After per 429; robots.txt and /sitemap.xml are never throttled', async () => {
    const site = rateLimitSite('rl2.test', { after: 1, limited: 3, retryAfterSec: [6, 1] });
    web.addSite(site);
    expect((await get('rl2.test', '/')).status).toBe(200);
    expect((await get('rl2.test', '/sitemap.xml')).status).toBe(404);
    expect((await get('rl2.test', '/robots.txt')).status).toBe(200);
    const answers: [number, string][] = [];
    for (const p of ['/page/1', '/page/1', '/page/2', '/page/1']) {
      const r = await get('rl2.test', p);
      answers.push([r.status, r.headers['retry-after']]);
    }
    expect(answers).toEqual([
      [429, '6'],
      [429, '1'],
      [429, '1'],
      [200, undefined],
    ]);
    expect(site.expected.groups).toMatchObject({ retryAfterMs: ['6000', '1000', '1000'], servedBeforeThrottling: ['1'], throttledRequests: ['3'] });
  });

  test('429 with Retry-After for the first N requests to any path, robots.txt exempt', async () => {
    web.addSite(rateLimitSite('rl.test', { limited: 3, retryAfterSec: 7 }));
    expect((await get('rl.test', '/robots.txt')).status).toBe(200);
    for (const p of ['/', '/page/1', '/']) {
      const r = await get('rl.test', p);
      expect(r.status).toBe(429);
      expect(r.headers['retry-after']).toBe('7');
    }
    expect((await get('rl.test', '/')).status).toBe(200);
    expect((await get('rl.test', '/page/1')).status).toBe(200);
  });

  test('503 twice then success, per path', async () => {
    web.addSite(unavailableSite('un.test'));
    expect((await get('un.test', '/robots.txt')).status).toBe(200);
    expect((await get('un.test', '/')).status).toBe(503);
    expect((await get('un.test', '/page/1')).status).toBe(503);
    expect((await get('un.test', '/')).status).toBe(503);
    expect((await get('un.test', '/')).status).toBe(200);
    expect((await get('un.test', '/page/1')).status).toBe(503);
    expect((await get('un.test', '/page/1')).status).toBe(200);
  });
});

describe('duplicates', () => {
  test('session-id variants, near duplicates and exact duplicates', async () => {
    const site = duplicateSite('dup.test', { seed: 4 });
    web.addSite(site);
    const home = hrefs(await text('dup.test', '/'));
    const variants = site.expected.groups.sessionVariants;
    expect(variants).toHaveLength(12);
    expect(home).toEqual(expect.arrayContaining(variants));
    expect(variants.some((v) => /;jsessionid=[0-9A-F]{16}\?id=1$/.test(v))).toBe(true);
    expect(variants.some((v) => /^\/item\?sid=[0-9a-f]{16}&id=2$/.test(v))).toBe(true);
    expect(variants.some((v) => /PHPSESSID=/.test(v))).toBe(true);
    expect(duplicateSite('dup.test', { seed: 4 }).expected.groups.sessionVariants).toEqual(variants);
    expect(duplicateSite('dup.test', { seed: 5 }).expected.groups.sessionVariants).not.toEqual(variants);

    for (const id of [1, 2, 3]) {
      const forms = [...variants.filter((v) => new URL(v, 'http://x.invalid').searchParams.get('id') === String(id)), `/item?id=${id}`];
      expect(forms).toHaveLength(5);
      const hashes = new Set(await Promise.all(forms.map(async (f) => sha((await get('dup.test', f)).body))));
      expect(hashes.size).toBe(1);
    }
    expect((await get('dup.test', '/item?id=9')).status).toBe(404);

    // The session trap: each session brought to /cart gets links under a session of its own, never seen before.
    const [trap] = site.expected.groups.sessionTrap;
    const cart = (await text('dup.test', '/')).match(/href="(\/cart[^"]*)"/)![1];
    const hops: string[] = [cart];
    for (let i = 0; i < 4; i++) hops.push(hrefs(await text('dup.test', hops[hops.length - 1]!)).find((h) => h.startsWith(trap))!);
    expect(new Set(hops).size).toBe(hops.length);
    expect(hops.every((h) => /^\/cart(;jsessionid=[0-9A-F]{16}|\?sid=[0-9a-f]{16})$/.test(h))).toBe(true);

    const news = await Promise.all(site.expected.groups.nearDuplicates.map((p) => text('dup.test', p)));
    expect(new Set(news).size).toBe(5);
    const stripped = new Set(news.map((n) => n.replace(/<p class="meta">[^<]*<\/p>/, '')));
    expect(stripped.size).toBe(1);

    const copies = await Promise.all(site.expected.groups.exactDuplicates.map((p) => get('dup.test', p)));
    expect(copies.map((c) => c.status)).toEqual([200, 200, 200]);
    expect(new Set(copies.map((c) => sha(c.body))).size).toBe(1);

    // Only the copies link to /from-copies, with a link that adds no visible text.
    const [fromCopies] = site.expected.groups.onlyFromDuplicates;
    const $ = cheerio.load(copies[0].body.toString());
    const visible = (): string => $('body').text().replace(/\s+/g, ' ').trim();
    const withLink = visible();
    expect($(`a[href="${fromCopies}"]`).remove().length).toBe(1);
    expect(visible()).toBe(withLink);
    for (const p of ['/', ...site.expected.groups.nearDuplicates, ...site.expected.groups.canonicalItems]) expect(hrefs(await text('dup.test', p))).not.toContain(fromCopies);
    expect((await get('dup.test', fromCopies)).status).toBe(200);
    // Reachable only through duplicates, and required all the same: dedup never costs coverage.
    expect(site.expected.mustFetch).toContain(fromCopies);
    expect(site.expected.mustNotFetch).toEqual([]);
  });
});

describe('URL size and canonical', () => {
  test('100 KiB link, 100-parameter link, rel=canonical', async () => {
    const site = longLinkSite('ll.test');
    web.addSite(site);
    const long = hrefs(await text('ll.test', '/long-link'));
    expect(long[0].length).toBe(100 * 1024);
    expect(long).toContain('/after-long');
    const many = hrefs(await text('ll.test', '/many-params'));
    expect([...new URL(many[0], 'http://x.invalid').searchParams.keys()]).toHaveLength(100);
    expect((await get('ll.test', many[0])).status).toBe(200);
    const $ = cheerio.load(await text('ll.test', '/canonical/variant?ref=a'));
    expect($('link[rel=canonical]').attr('href')).toBe(`http://ll.test:${web.port}/canonical/main`);
    expect(await text('ll.test', '/canonical/variant?ref=b')).toBe(await text('ll.test', '/canonical/main'));
  });
});

describe('expectations', () => {
  test('checkRequestLog reports missing and forbidden requests', async () => {
    const site = contentSite('c.test');
    web.addSite(site);
    for (const t of site.expected.mustFetch) await get('c.test', t);
    expect(checkRequestLog(site, web.requests())).toEqual([]);
    await get('c.test', '/from-pdf');
    expect(checkRequestLog(site, web.requests())).toEqual(['requested forbidden /from-pdf']);
    expect(checkRequestLog(site, [])).toHaveLength(site.expected.mustFetch.length);
    expect(canonicalTarget('/x?b=2&a=1#f')).toBe('/x?a=1&b=2');
  });

  test('allHostileSites: distinct hosts, all served, nothing crashes under abrupt clients', async () => {
    const sites = allHostileSites();
    expect(new Set(sites.map((s) => s.host)).size).toBe(sites.length);
    for (const s of sites) web.addSite(s);
    for (const s of sites) {
      for (const seed of s.expected.seeds) {
        const status = (await get(s.host, seed)).status;
        expect([200, 429, 503]).toContain(status);
      }
    }
    // Clients that hang up at every stage.
    const paths = ['/slow-drip', '/stall', '/no-headers', '/huge', '/gzip-bomb', '/truncated', '/reset'];
    await Promise.all(paths.map((p) => raw('faults.hostile.test', p, { waitMs: 30 })));
    await Promise.all(
      paths.map((p) =>
        request(web.url('faults.hostile.test', p), { dispatcher: agent, signal: AbortSignal.timeout(100) })
          .then((r) => r.body.dump())
          .catch(() => undefined),
      ),
    );
    await sleep(100);
    expect((await get('faults.hostile.test', '/ok')).status).toBe(200);
  });
});
