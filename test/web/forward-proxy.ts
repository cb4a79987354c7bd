// Forward proxies for tests, on loopback: an HTTP proxy (absolute-form
// requests forwarded, CONNECT tunnels) and a SOCKS5 proxy (RFC 1928 CONNECT,
// RFC 1929 user/password), each optionally requiring credentials. Each
// resolves target names from its own table only, so a test can name sites
// that the crawler cannot reach but through a proxy, and each connects to
// targets from its own loopback address (`localAddress`, e.g. 127.0.0.2), so
// a site can tell a request that came through a proxy from one that did not,
// whatever the scheme. Every request is recorded; kill() stops a proxy the
// way a crash would (listener closed, every connection reset).
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';

export interface ProxyRecord {
  kind: 'forward' | 'connect' | 'socks';
  /** `host:port` asked for (forward: of the absolute URL). */
  target: string;
  /** Forward requests: the path and query. */
  path?: string;
  /** Whether the client's credentials were right (true when none are required). */
  authorized: boolean;
  /** Whether a Proxy-Authorization header reached the proxy at all (HTTP proxies). */
  sentCredentials: boolean;
}

export interface TestProxyOptions {
  /** Target names the proxy knows, each to an address (the port is the one asked for). Unknown names: 502 / SOCKS host unreachable. */
  hosts: Record<string, string>;
  /** Required credentials; none: every client is accepted. */
  auth?: { user: string; password: string };
  /** Source address of the proxy's connections to targets. */
  localAddress?: string;
  /** Added to forwarded requests (never to tunnels: they are opaque). */
  via?: string;
}

export interface TestProxy {
  port: number;
  /** `http://127.0.0.1:port` or `socks5://127.0.0.1:port`, without credentials. */
  url: string;
  /** The URL with the required credentials (or `url` when none are required). */
  urlWithAuth: string;
  records(): ProxyRecord[];
  /** A crash: the port stops answering, every connection is reset. */
  kill(): Promise<void>;
  close(): Promise<void>;
}

function lookupIn(hosts: Record<string, string>, host: string): string | null {
  return hosts[host.toLowerCase().replace(/^\[|\]$/g, '')] ?? null;
}

function track(server: net.Server, sockets: Set<Socket>): void {
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
}

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

function stopper(server: net.Server, sockets: Set<Socket>): () => Promise<void> {
  let closed: Promise<void> | null = null;
  return () => {
    closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.resetAndDestroy();
    });
    return closed;
  };
}

function withAuth(base: string, auth: TestProxyOptions['auth']): string {
  return auth ? base.replace('://', `://${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.password)}@`) : base;
}

/** An HTTP forward proxy: absolute-form GET forwarded (with `x-test-proxy: <via>`), CONNECT tunnelled. */
export async function startHttpProxy(opts: TestProxyOptions): Promise<TestProxy> {
  const log: ProxyRecord[] = [];
  const sockets = new Set<Socket>();
  const expected = opts.auth ? `Basic ${Buffer.from(`${opts.auth.user}:${opts.auth.password}`).toString('base64')}` : null;
  const authorized = (header: string | undefined) => expected === null || header === expected;
  const server = http.createServer((req, res) => {
    const sentCredentials = req.headers['proxy-authorization'] !== undefined;
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end('absolute-form requests only');
      return;
    }
    const port = Number(url.port || 80);
    const ok = authorized(req.headers['proxy-authorization']);
    log.push({ kind: 'forward', target: `${url.hostname}:${port}`, path: url.pathname + url.search, authorized: ok, sentCredentials });
    if (!ok) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test proxy"', 'content-length': '0' }).end();
      return;
    }
    const address = lookupIn(opts.hosts, url.hostname);
    if (!address) {
      res.writeHead(502, { 'proxy-status': 'testproxy; error=dns_error', 'content-length': '0' }).end();
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    if (opts.via) headers['x-test-proxy'] = opts.via;
    const upstream = http.request({ host: address, port, localAddress: opts.localAddress, method: req.method, path: url.pathname + url.search, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'proxy-status': 'testproxy; error=connection_refused', 'content-length': '0' }).end();
      else res.destroy();
    });
    req.pipe(upstream);
  });
  server.on('connect', (req: http.IncomingMessage, client: Socket, head: Buffer) => {
    const [host, portText] = splitAuthority(req.url ?? '');
    const ok = authorized(req.headers['proxy-authorization']);
    log.push({ kind: 'connect', target: `${host}:${portText}`, authorized: ok, sentCredentials: req.headers['proxy-authorization'] !== undefined });
    client.on('error', () => undefined);
    if (!ok) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test proxy"\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const address = lookupIn(opts.hosts, host);
    if (!address) {
      client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const upstream = net.connect({ host: address, port: Number(portText), localAddress: opts.localAddress });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    let connected = false;
    upstream.on('error', () => {
      if (!connected) client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
      else client.destroy();
    });
    upstream.on('connect', () => {
      connected = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    client.on('close', () => upstream.destroy());
  });
  track(server, sockets);
  const port = await listen(server);
  const stop = stopper(server, sockets);
  const url = `http://127.0.0.1:${port}`;
  return { port, url, urlWithAuth: withAuth(url, opts.auth), records: () => log.map((r) => ({ ...r })), kill: stop, close: stop };
}

function splitAuthority(authority: string): [string, string] {
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(authority);
  return m ? [m[1].replace(/^\[|\]$/g, ''), m[2]] : [authority, '443'];
}

/** A SOCKS5 proxy: CONNECT by domain name or IPv4 address, no-auth or user/password. */
export async function startSocksProxy(opts: TestProxyOptions): Promise<TestProxy> {
  const log: ProxyRecord[] = [];
  const sockets = new Set<Socket>();
  const server = net.createServer((client) => {
    client.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let stage: 'greeting' | 'auth' | 'request' | 'done' = 'greeting';
    let ok = opts.auth === undefined;
    const onData = (chunk: Buffer): void => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        if (stage === 'greeting') {
          if (buf.length < 2 || buf.length < 2 + buf[1]) return;
          const methods = [...buf.subarray(2, 2 + buf[1])];
          buf = buf.subarray(2 + buf[1]);
          const want = opts.auth ? 2 : 0;
          if (!methods.includes(want)) {
            log.push({ kind: 'socks', target: '', authorized: false, sentCredentials: methods.includes(2) });
            client.end(Buffer.from([5, 0xff]));
            return;
          }
          client.write(Buffer.from([5, want]));
          stage = want === 2 ? 'auth' : 'request';
        } else if (stage === 'auth') {
          if (buf.length < 2 || buf.length < 3 + buf[1] || buf.length < 3 + buf[1] + buf[2 + buf[1]]) return;
          const ulen = buf[1];
          const user = buf.subarray(2, 2 + ulen).toString();
          const plen = buf[2 + ulen];
          const password = buf.subarray(3 + ulen, 3 + ulen + plen).toString();
          buf = buf.subarray(3 + ulen + plen);
          ok = user === opts.auth!.user && password === opts.auth!.password;
          if (!ok) {
            log.push({ kind: 'socks', target: '', authorized: false, sentCredentials: true });
            client.end(Buffer.from([1, 1]));
            return;
          }
          client.write(Buffer.from([1, 0]));
          stage = 'request';
        } else if (stage === 'request') {
          if (buf.length < 5) return;
          const atyp = buf[3];
          const len = atyp === 1 ? 4 : atyp === 3 ? 1 + buf[4] : 16;
          if (buf.length < 4 + len + 2) return;
          const host = atyp === 1 ? [...buf.subarray(4, 8)].join('.') : atyp === 3 ? buf.subarray(5, 5 + buf[4]).toString() : '';
          const port = buf.readUInt16BE(4 + len);
          buf = buf.subarray(4 + len + 2);
          stage = 'done';
          client.off('data', onData);
          log.push({ kind: 'socks', target: `${host}:${port}`, authorized: ok, sentCredentials: opts.auth !== undefined });
          const reply = (rep: number) => Buffer.from([5, rep, 0, 1, 0, 0, 0, 0, 0, 0]);
          const address = lookupIn(opts.hosts, host);
          if (!address) {
            client.end(reply(4));
            return;
          }
          const upstream = net.connect({ host: address, port, localAddress: opts.localAddress });
          sockets.add(upstream);
          upstream.on('close', () => sockets.delete(upstream));
          let connected = false;
          upstream.on('error', () => (connected ? client.destroy() : client.end(reply(5))));
          upstream.on('connect', () => {
            connected = true;
            client.write(reply(0));
            if (buf.length > 0) upstream.write(buf);
            upstream.pipe(client);
            client.pipe(upstream);
          });
          client.on('close', () => upstream.destroy());
          return;
        } else return;
      }
    };
    client.on('data', onData);
  });
  track(server, sockets);
  const port = await listen(server);
  const stop = stopper(server, sockets);
  const url = `socks5://127.0.0.1:${port}`;
  return { port, url, urlWithAuth: withAuth(url, opts.auth), records: () => log.map((r) => ({ ...r })), kill: stop, close: stop };
}
