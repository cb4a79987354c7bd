// The HTTP client through forward proxies (src/http/proxy-router.ts,
// src/http/proxy-connect.ts), against the loopback test proxies of
// test/web/forward-proxy.ts and the test web. The client is given a DNS
// lookup that fails every name: whatever it fetches, it fetches through a
// proxy, which alone knows where the sites are.
import type { LookupFunction } from 'node:net';
import { FetchError } from '../../src/http/fetch-error';
import { createHttpClient } from '../../src/http/http-client';
import type { HttpClient, HttpClientOptions } from '../../src/http/http-types';
import { MemoryProxyHealth, parseProxyUrl, rankProxies, withIds, type ProxyEndpoint } from '../../src/http/proxies';
import { selfSignedCertificate, startTestWeb, type TestWeb } from '../web/test-web';
import { startHttpProxy, startSocksProxy, type TestProxy } from '../web/forward-proxy';

jest.setTimeout(15_000);

const SITE = 'site.proxied.test';
const AUTH = { user: 'crawler', password: 'pr0xy-s3cret' };

let web: TestWeb;
const proxies: TestProxy[] = [];
const clients: HttpClient[] = [];

const noDns: LookupFunction = (hostname, _options, callback) =>
  process.nextTick(() => callback(Object.assign(new Error(`no DNS in this test (${hostname})`), { code: 'ENOTFOUND' }), ''));

beforeAll(async () => {
  web = await startTestWeb();
  web.addSite({ host: SITE, pages: 3, fanOut: 2 });
  web.addSite({ host: 'other.proxied.test', pages: 1, fanOut: 0 });
});
afterAll(async () => {
  await web.close();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

function list(...urls: string[]): ProxyEndpoint[] {
  return withIds(urls.map((u, i) => parseProxyUrl(u, `proxy ${i + 1}`)));
}

function client(proxyList: ProxyEndpoint[], extra: Partial<HttpClientOptions> = {}): HttpClient {
  const c = createHttpClient({
    userAgent: 'test-crawler/1.0',
    lookup: noDns,
    connectTimeoutMs: 1000,
    headersTimeoutMs: 2000,
    totalTimeoutMs: 5000,
    proxies: { list: proxyList, health: new MemoryProxyHealth() },
    ...extra,
  });
  clients.push(c);
  return c;
}

async function httpProxy(opts: Partial<Parameters<typeof startHttpProxy>[0]> = {}): Promise<TestProxy> {
  const p = await startHttpProxy({ hosts: { [SITE]: '127.0.0.1', 'other.proxied.test': '127.0.0.1' }, via: 'unit', ...opts });
  proxies.push(p);
  return p;
}

async function socksProxy(opts: Partial<Parameters<typeof startSocksProxy>[0]> = {}): Promise<TestProxy> {
  const p = await startSocksProxy({ hosts: { [SITE]: '127.0.0.1' }, ...opts });
  proxies.push(p);
  return p;
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

describe('through an HTTP proxy', () => {
  it('forwards an http request in absolute form, with the credentials on the proxy hop only', async () => {
    const proxy = await httpProxy({ auth: AUTH });
    const res = await client(list(proxy.urlWithAuth)).fetch(web.url(SITE, '/'));
    expect(res.status).toBe(200);
    expect(res.proxy).toBe(`http://127.0.0.1:${proxy.port}`);
    // The peer was the proxy: no address of the target is known or recorded.
    expect(res.remoteAddress).toBeNull();
    // What the target got is recorded; what only the proxy got is not.
    expect(Object.keys(res.requestHeaders)).not.toContain('proxy-authorization');
    expect(JSON.stringify(res)).not.toContain(AUTH.password);
    expect(proxy.records()).toEqual([{ kind: 'forward', target: `${SITE}:${web.port}`, path: '/', authorized: true, sentCredentials: true }]);
  });

  it('tunnels an https request with CONNECT and speaks TLS with the target inside it', async () => {
    const host = 'tls.proxied.test';
    web.addSite({ host, pages: 1, fanOut: 0 });
    const port = await web.startHttps(await selfSignedCertificate([host]));
    const proxy = await httpProxy({ hosts: { [host]: '127.0.0.1' } });
    // The certificate is untrusted: the handshake got to the target (with its name as SNI), so the tunnel worked.
    const err = await fetchError(client(list(proxy.url)).fetch(`https://${host}:${port}/`));
    expect(err.code).toBe('TLS_ERROR');
    expect(proxy.records()).toEqual([{ kind: 'connect', target: `${host}:${port}`, authorized: true, sentCredentials: false }]);
    for (let i = 0; i < 100 && web.tlsFailures().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(web.tlsFailures().map((f) => f.servername)).toContain(host);
  });

  it('types a 407 as PROXY_ERROR and sets the proxy aside', async () => {
    const proxy = await httpProxy({ auth: AUTH });
    const health = new MemoryProxyHealth();
    const wrong = proxy.url.replace('://', '://crawler:wrong@');
    const err = await fetchError(client(list(wrong), { proxies: { list: list(wrong), health } }).fetch(web.url(SITE, '/')));
    expect(err.code).toBe('PROXY_ERROR');
    expect(err.retryable).toBe(true);
    expect(err.message).not.toContain('wrong');
    expect([...(await health.setAside())]).toEqual([`http://127.0.0.1:${proxy.port}`]);
  });

  it("types the proxy's own answer for a target it cannot reach as PROXY_ERROR, without setting it aside", async () => {
    const proxy = await httpProxy({ hosts: {} });
    const health = new MemoryProxyHealth();
    const c = client(list(proxy.url), { proxies: { list: list(proxy.url), health } });
    // Forward: a 502 with an RFC 9209 Proxy-Status error is the proxy's, not the site's.
    expect((await fetchError(c.fetch(web.url(SITE, '/')))).code).toBe('PROXY_ERROR');
    // CONNECT: any answer but 2xx is the proxy's.
    expect((await fetchError(c.fetch(`https://${SITE}:${web.port}/`))).code).toBe('PROXY_ERROR');
    expect((await health.setAside()).size).toBe(0);
  });

  it('still refuses an IP-literal target the address policy refuses', async () => {
    const proxy = await httpProxy();
    const err = await fetchError(client(list(proxy.url)).fetch('http://169.254.169.254/latest/meta-data/'));
    expect(err.code).toBe('ADDRESS_REFUSED');
    expect(proxy.records()).toEqual([]);
  });
});

describe('through a SOCKS5 proxy', () => {
  it('fetches http and names the target by host name, with user/password', async () => {
    const proxy = await socksProxy({ auth: AUTH });
    const res = await client(list(proxy.urlWithAuth)).fetch(web.url(SITE, '/'));
    expect(res.status).toBe(200);
    expect(res.remoteAddress).toBeNull();
    expect(proxy.records()).toEqual([{ kind: 'socks', target: `${SITE}:${web.port}`, authorized: true, sentCredentials: true }]);
  });

  it('types refused credentials and an unknown target apart', async () => {
    const proxy = await socksProxy({ auth: AUTH });
    const health = new MemoryProxyHealth();
    const wrong = list(proxy.url.replace('://', '://crawler:wrong@'));
    expect((await fetchError(client(wrong, { proxies: { list: wrong, health } }).fetch(web.url(SITE, '/')))).code).toBe('PROXY_ERROR');
    expect(await health.setAside()).toEqual(new Set([wrong[0].id]));

    const good = list(proxy.urlWithAuth);
    const health2 = new MemoryProxyHealth();
    const err = await fetchError(client(good, { proxies: { list: good, health: health2 } }).fetch('http://nowhere.proxied.test/'));
    expect(err.code).toBe('PROXY_ERROR');
    expect(err.message).toContain('host unreachable');
    expect((await health2.setAside()).size).toBe(0);
  });
});

describe('failover', () => {
  it("moves a host from a dead proxy to its next one within the fetch, and sets the dead one aside for everyone's next fetch", async () => {
    const a = await httpProxy();
    const b = await httpProxy();
    const all = list(a.url, b.url);
    const [first, second] = rankProxies(SITE, all);
    const dead = first.id === `http://127.0.0.1:${a.port}` ? a : b;
    await dead.kill();
    const health = new MemoryProxyHealth();
    const c = client(all, { proxies: { list: all, health } });
    const res = await c.fetch(web.url(SITE, '/'));
    expect(res.status).toBe(200);
    expect(res.proxy).toBe(second.id);
    expect(await health.setAside()).toEqual(new Set([first.id]));
    // Set aside: the next fetch goes straight to the other one.
    const again = await c.fetch(web.url(SITE, '/'));
    expect(again.proxy).toBe(second.id);
  });

  it('ends with a retryable PROXY_ERROR when no proxy works', async () => {
    const a = await httpProxy();
    await a.kill();
    const health = new MemoryProxyHealth();
    const one = list(a.url);
    const c = client(one, { proxies: { list: one, health } });
    const err = await fetchError(c.fetch(web.url(SITE, '/')));
    expect(err.code).toBe('PROXY_ERROR');
    expect(err.retryable).toBe(true);
    // Every proxy set aside: the fetch fails at once, saying so.
    const next = await fetchError(c.fetch(web.url(SITE, '/')));
    expect(next.code).toBe('PROXY_ERROR');
    expect(next.message).toContain('every proxy set aside');
  });
});
