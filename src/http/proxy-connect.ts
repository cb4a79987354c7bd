// How a request goes through a forward proxy (src/http/proxies.ts says which
// one). Three ways, on undici's own Agent, Pool and connector:
//   - an http target through an HTTP(S) proxy: a plain forward request, the
//     absolute URL as the request target, sent on a Pool to the proxy;
//   - an https target through an HTTP(S) proxy: a CONNECT tunnel, then TLS
//     with the target inside it (SNI and certificate checks are the target's);
//   - any target through a SOCKS5 proxy: a SOCKS5 CONNECT naming the target
//     by host name (the proxy resolves it), then TLS inside for https.
//
// Why not undici's ProxyAgent and Socks5ProxyAgent: they dial the proxy with
// their own connector (so --resolve pins and the DNS cache would not apply to
// the proxy's name), report the proxy's own failures as untyped errors (a
// 407 as InvalidArgumentError, a refused CONNECT as RequestAbortedError with
// the status in its message), and Socks5ProxyAgent builds its pools without
// our timeouts and connection probe. The crawler must tell a proxy's failure
// (set it aside, move its hosts) from the target's (the URL's), so the two
// handshakes are done here, where every failure becomes a ProxyFailure with
// a kind; TLS inside the tunnel is still undici's connector (`httpSocket`),
// as ProxyAgent does it.
//
// The address policy: the crawler never resolves a target it sends through a
// proxy (the proxy does, and polices it), and the proxy's own address is
// operator configuration, so it is dialled whatever its class.
import { isIP, type Socket } from 'node:net';
import { Agent, Pool, buildConnector, type Dispatcher } from 'undici';
import { CrawlerError } from '../errors';
import type { ProxyEndpoint } from './proxies';

/**
 * unreachable: the proxy could not be reached or did not speak its protocol;
 * auth: it refused our credentials (407, SOCKS5 authentication);
 * gateway: it answered, but could not (or would not) reach the target.
 * The first two set the proxy aside; a gateway failure is the URL's, since a
 * target that is down would otherwise knock out one proxy after another.
 */
export type ProxyFailureKind = 'unreachable' | 'auth' | 'gateway';

/** A failure of the proxy rather than of the target; fetch-error.ts makes it FetchError 'PROXY_ERROR'. Never names credentials. */
export class ProxyFailure extends CrawlerError<'ERR_PROXY_FAILED'> {
  constructor(
    readonly proxyId: string,
    readonly kind: ProxyFailureKind,
    what: string,
    options?: { cause?: unknown },
  ) {
    super('ERR_PROXY_FAILED', `proxy ${proxyId} ${what}`, options);
    this.name = 'ProxyFailure';
  }
}

/** The ProxyFailure anywhere in `err`'s cause chain, if any. */
export function findProxyFailure(err: unknown): ProxyFailure | null {
  for (let e = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) if (e instanceof ProxyFailure) return e;
  return null;
}

/** The longest CONNECT answer head we read; a proxy sending more is not one. */
const MAX_CONNECT_HEAD = 16 * 1024;

function basic(proxy: ProxyEndpoint): string | null {
  return proxy.username === null ? null : `Basic ${Buffer.from(`${proxy.username}:${proxy.password ?? ''}`).toString('base64')}`;
}

/** Connects to the proxy itself (TLS for an https proxy); every failure is the proxy's. */
function dialProxy(proxy: ProxyEndpoint, dial: buildConnector.connector): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const tls = proxy.protocol === 'https';
    dial(
      {
        hostname: proxy.host,
        host: proxy.host,
        port: String(proxy.port),
        protocol: tls ? 'https:' : 'http:',
        servername: tls && isIP(proxy.host) === 0 ? proxy.host : undefined,
      } as buildConnector.Options,
      (err, socket) => {
        if (err || !socket) reject(new ProxyFailure(proxy.id, 'unreachable', `could not be reached: ${err?.message ?? 'no socket'}`, { cause: err }));
        else resolve(socket as Socket);
      },
    );
  });
}

/**
 * Reads the handshake answer from `socket` until `complete` says how many
 * bytes it is (or throws on a bad one); bytes after it are put back for
 * whoever reads next. Bounded by `timeoutMs`.
 */
function readAnswer(socket: Socket, proxy: ProxyEndpoint, timeoutMs: number, complete: (buf: Buffer) => number | null): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const done = (err: Error | null, answer?: Buffer): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      if (err) {
        socket.destroy();
        reject(err);
        return;
      }
      socket.pause();
      resolve(answer!);
    };
    const onData = (chunk: Buffer): void => {
      buf = Buffer.concat([buf, chunk]);
      let n: number | null;
      try {
        n = complete(buf);
      } catch (err) {
        done(err as Error);
        return;
      }
      if (n === null) return;
      const rest = buf.subarray(n);
      done(null, buf.subarray(0, n));
      if (rest.length > 0) socket.unshift(rest);
    };
    const onError = (err: Error): void => done(new ProxyFailure(proxy.id, 'unreachable', `failed during its handshake: ${err.message}`, { cause: err }));
    const onClose = (): void => done(new ProxyFailure(proxy.id, 'unreachable', 'closed the connection during its handshake'));
    const timer = setTimeout(() => done(new ProxyFailure(proxy.id, 'unreachable', `did not answer its handshake within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
    // The previous answer's read left the socket paused, and a new 'data' listener does not undo an explicit pause.
    socket.resume();
  });
}

/** HTTP CONNECT host:port through `socket`; resolves once the tunnel is open. */
async function httpConnect(socket: Socket, proxy: ProxyEndpoint, host: string, port: number, timeoutMs: number): Promise<void> {
  const authority = `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
  const auth = basic(proxy);
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth ? `Proxy-Authorization: ${auth}\r\n` : ''}\r\n`);
  const head = await readAnswer(socket, proxy, timeoutMs, (buf) => {
    const end = buf.indexOf('\r\n\r\n');
    if (end >= 0) return end + 4;
    if (buf.length > MAX_CONNECT_HEAD) throw new ProxyFailure(proxy.id, 'unreachable', `answered CONNECT with more than ${MAX_CONNECT_HEAD} bytes of head`);
    return null;
  });
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.toString('latin1'));
  if (!status) {
    socket.destroy();
    throw new ProxyFailure(proxy.id, 'unreachable', 'answered CONNECT with something that is not HTTP');
  }
  const code = Number(status[1]);
  if (code >= 200 && code < 300) return;
  socket.destroy();
  if (code === 407) throw new ProxyFailure(proxy.id, 'auth', `refused the proxy credentials (407 to CONNECT ${authority})`);
  throw new ProxyFailure(proxy.id, 'gateway', `answered ${code} to CONNECT ${authority}`);
}

const SOCKS_REPLIES: Record<number, string> = {
  1: 'general SOCKS server failure',
  2: 'connection not allowed by ruleset',
  3: 'network unreachable',
  4: 'host unreachable',
  5: 'connection refused',
  6: 'TTL expired',
  7: 'command not supported',
  8: 'address type not supported',
};

/** RFC 1928 CONNECT (with RFC 1929 user/password when the URL has credentials), naming the target by host name. */
async function socks5Connect(socket: Socket, proxy: ProxyEndpoint, host: string, port: number, timeoutMs: number): Promise<void> {
  const withAuth = proxy.username !== null;
  socket.write(Buffer.from(withAuth ? [5, 2, 0, 2] : [5, 1, 0]));
  const choice = await readAnswer(socket, proxy, timeoutMs, (b) => (b.length >= 2 ? 2 : null));
  if (choice[0] !== 5) {
    socket.destroy();
    throw new ProxyFailure(proxy.id, 'unreachable', 'does not speak SOCKS5');
  }
  if (choice[1] === 0xff) {
    socket.destroy();
    throw new ProxyFailure(proxy.id, 'auth', withAuth ? 'accepted no authentication method we offered' : 'wants credentials the proxy URL does not have');
  }
  if (choice[1] === 2) {
    if (!withAuth) {
      socket.destroy();
      throw new ProxyFailure(proxy.id, 'auth', 'wants credentials the proxy URL does not have');
    }
    const user = Buffer.from(proxy.username!, 'utf8');
    const pass = Buffer.from(proxy.password ?? '', 'utf8');
    socket.write(Buffer.concat([Buffer.from([1, user.length]), user, Buffer.from([pass.length]), pass]));
    const status = await readAnswer(socket, proxy, timeoutMs, (b) => (b.length >= 2 ? 2 : null));
    if (status[1] !== 0) {
      socket.destroy();
      throw new ProxyFailure(proxy.id, 'auth', 'refused the proxy credentials');
    }
  } else if (choice[1] !== 0) {
    socket.destroy();
    throw new ProxyFailure(proxy.id, 'unreachable', `chose SOCKS5 method ${choice[1]}, which we did not offer`);
  }
  const family = isIP(host);
  const address =
    family === 4
      ? Buffer.from([1, ...host.split('.').map(Number)])
      : family === 6
        ? Buffer.concat([Buffer.from([4]), ipv6Bytes(host)])
        : Buffer.concat([Buffer.from([3, Buffer.byteLength(host)]), Buffer.from(host)]);
  socket.write(Buffer.concat([Buffer.from([5, 1, 0]), address, Buffer.from([port >> 8, port & 0xff])]));
  const reply = await readAnswer(socket, proxy, timeoutMs, (b) => {
    if (b.length < 5) return null;
    const len = b[3] === 1 ? 4 : b[3] === 4 ? 16 : b[3] === 3 ? 1 + b[4] : -1;
    if (len < 0) throw new ProxyFailure(proxy.id, 'unreachable', 'sent a SOCKS5 reply with an unknown address type');
    return b.length >= 4 + len + 2 ? 4 + len + 2 : null;
  });
  if (reply[0] !== 5) {
    socket.destroy();
    throw new ProxyFailure(proxy.id, 'unreachable', 'does not speak SOCKS5');
  }
  if (reply[1] !== 0) {
    socket.destroy();
    throw new ProxyFailure(proxy.id, 'gateway', `could not connect to ${host}:${port}: ${SOCKS_REPLIES[reply[1]] ?? `SOCKS5 reply ${reply[1]}`}`);
  }
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail = ''] = address.split('::');
  const parts = (s: string) => (s ? s.split(':') : []);
  const h = parts(head);
  const t = parts(tail);
  const groups = address.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/**
 * An undici connector that opens each connection through `proxy`: dials it,
 * asks it for the target (CONNECT or SOCKS5), then hands the tunnel to
 * undici's connector for TLS with the target when the target is https.
 */
export function tunnelConnector(proxy: ProxyEndpoint, dial: buildConnector.connector, tls: buildConnector.connector, timeoutMs: number): buildConnector.connector {
  return (opts, callback) => {
    const host = opts.hostname.replace(/^\[|\]$/g, '');
    const port = opts.port ? Number(opts.port) : opts.protocol === 'https:' ? 443 : 80;
    const open = async (): Promise<Socket> => {
      const socket = await dialProxy(proxy, dial);
      if (proxy.protocol === 'socks5' || proxy.protocol === 'socks5h') await socks5Connect(socket, proxy, host, port, timeoutMs);
      else await httpConnect(socket, proxy, host, port, timeoutMs);
      return socket;
    };
    open().then(
      (socket) => {
        if (opts.protocol !== 'https:') {
          socket.resume();
          callback(null, socket);
          return;
        }
        // SNI must not carry an IP literal.
        const servername = opts.servername || (isIP(host) === 0 ? host : undefined);
        tls({ ...opts, servername, httpSocket: socket } as buildConnector.Options, callback);
      },
      (err: Error) => callback(err, null),
    );
  };
}

/** How one request goes through one proxy: the dispatcher, and the origin, path and extra headers to give it. */
export interface ProxyRoute {
  dispatcher: Dispatcher;
  origin: string;
  path: string;
  /** Hop-by-hop headers for the proxy (Proxy-Authorization): sent, never recorded as the target's request. */
  proxyHeaders: Record<string, string>;
  /** A plain forward request: the proxy's own answers (407, errors it names) come back as responses. */
  forward: boolean;
}

export interface ProxyDispatchersOptions {
  /** Connects to a proxy by its name or address: --resolve pins and the DNS cache, no address policy. */
  dial: buildConnector.connector;
  /** The proxy handshake's deadline (the connect timeout: dialling and handshake are one connect). */
  connectTimeoutMs: number;
  /** Options of the tunnelled Agents (timeouts, keep-alive, the connection probe's factory). */
  agent: Omit<Agent.Options, 'connect'>;
  /** Options of the Pools that carry forward requests to a proxy. */
  pool: Omit<Pool.Options, 'connect' | 'factory'>;
}

/** The undici dispatchers of each proxy, made on first use and closed together. */
export class ProxyDispatchers {
  readonly #tunnels = new Map<string, Agent>();
  readonly #forwards = new Map<string, Pool>();
  readonly #tls: buildConnector.connector;

  constructor(private readonly opts: ProxyDispatchersOptions) {
    this.#tls = buildConnector({ timeout: opts.connectTimeoutMs });
  }

  route(proxy: ProxyEndpoint, target: URL): ProxyRoute {
    const auth = basic(proxy);
    const viaHttp = proxy.protocol === 'http' || proxy.protocol === 'https';
    if (viaHttp && target.protocol === 'http:') {
      let pool = this.#forwards.get(proxy.id);
      if (!pool) {
        const dial = this.opts.dial;
        const connect: buildConnector.connector = (o, cb) =>
          dial(o, (err, socket) =>
            err || !socket ? cb(new ProxyFailure(proxy.id, 'unreachable', `could not be reached: ${err?.message ?? 'no socket'}`, { cause: err }), null) : cb(null, socket),
          );
        pool = new Pool(`${proxy.protocol}://${proxy.host.includes(':') ? `[${proxy.host}]` : proxy.host}:${proxy.port}`, { ...this.opts.pool, connect });
        this.#forwards.set(proxy.id, pool);
      }
      const origin = `${proxy.protocol}://${proxy.host.includes(':') ? `[${proxy.host}]` : proxy.host}:${proxy.port}`;
      return { dispatcher: pool, origin, path: target.href, proxyHeaders: auth ? { 'proxy-authorization': auth } : {}, forward: true };
    }
    let agent = this.#tunnels.get(proxy.id);
    if (!agent) {
      agent = new Agent({ ...this.opts.agent, connect: tunnelConnector(proxy, this.opts.dial, this.#tls, this.opts.connectTimeoutMs) });
      this.#tunnels.set(proxy.id, agent);
    }
    return { dispatcher: agent, origin: target.origin, path: target.pathname + target.search, proxyHeaders: {}, forward: false };
  }

  async close(): Promise<void> {
    const all: Dispatcher[] = [...this.#tunnels.values(), ...this.#forwards.values()];
    this.#tunnels.clear();
    this.#forwards.clear();
    await Promise.all(all.map((d) => d.close().catch(() => undefined)));
  }
}

/**
 * Whether a forward request's response is the proxy's own failure rather
 * than the target's answer: 407 (only a proxy asks for proxy credentials),
 * or a 5xx that carries an RFC 9209 Proxy-Status naming an error (the proxy
 * says it could not get the target's answer). Any other response, 502s
 * without Proxy-Status included, is taken as the target's.
 */
export function forwardFailure(proxy: ProxyEndpoint, status: number, headers: Record<string, string | string[] | undefined>): ProxyFailure | null {
  if (status === 407) return new ProxyFailure(proxy.id, 'auth', 'refused the proxy credentials (407)');
  const ps = headers['proxy-status'];
  const text = Array.isArray(ps) ? ps.join(', ') : ps;
  if (status >= 500 && text && /;\s*error=/i.test(text)) {
    const error = /;\s*error=("?)([A-Za-z0-9_.-]+)\1/i.exec(text)?.[2] ?? 'error';
    return new ProxyFailure(proxy.id, 'gateway', `answered ${status} for the target (Proxy-Status error=${error})`);
  }
  return null;
}
