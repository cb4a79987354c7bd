// A local "test web": one loopback HTTP server that impersonates many sites,
// picked by the Host header, each a deterministic generated link graph. It
// records every request so tests can assert what a crawler did (and did not)
// fetch, and it can compute the exact set of pages a correct crawler must
// fetch, so integration tests and benchmarks never depend on the real web.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import dns from 'node:dns';
import net, { type AddressInfo, type LookupFunction, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { hashString, mix, mulberry32, type Rng } from './seeded';
import { findOrInstallOpenssl } from '../../src/stack/tools';

export interface RobotsSpec {
  disallow?: string[];
  allow?: string[];
  crawlDelaySec?: number;
  /** User-agent line of the single generated group; default `*`. */
  agent?: string;
  /** Served verbatim instead of the generated text (and parsed for expectedPages). */
  raw?: string;
}

export interface SiteSpec {
  host: string;
  pages: number;
  fanOut: number;
  crossLinks?: { hosts: string[]; perPage: number };
  /** undefined → an allow-all robots.txt; null → /robots.txt answers 404. */
  robots?: RobotsSpec | null;
  nofollowLinks?: boolean;
  /** Added to every response of this site, on top of the web's LatencySpec. */
  latencyMs?: number;
  seed?: number;
  /**
   * A paragraph of this many words on every page, drawn from a fixed
   * vocabulary by a generator seeded with the host and path: text enough
   * for a SimHash (the crawler takes none under 50 words) and each page's
   * own, so the content index holds what distinct real pages put in it
   * (the memory bench, scenario m). Absent: one line of boilerplate.
   */
  words?: number;
  /**
   * Fault injection: return a status to answer with instead of the page.
   * `attempt` counts requests for this path on this site, starting at 1, so
   * "fail twice then succeed" is `(p, n) => (n <= 2 ? 503 : undefined)`.
   * Also consulted for /robots.txt, so robots fetch failures can be injected.
   */
  statusFor?: (path: string, attempt: number) => number | undefined;
  /**
   * Misbehaviour hook: consulted after the request is logged, after the latency,
   * the 405 check and statusFor, and before robots.txt and generated pages.
   * Return true once it has taken the response over (it may also finish it
   * later, or never); false or nothing falls through to the generated site.
   * A handler that has already written headers or closed the connection
   * counts as having handled the request whatever it returns.
   */
  handler?: (ctx: SiteRequest) => boolean | void;
  /**
   * Methods besides GET and HEAD the site takes (a login form's POST): they
   * go to `handler`, which reads the body from `req`; any other gets a 405.
   */
  methods?: string[];
  /**
   * Holds a response: when this returns a promise, the request (already
   * logged, after latencyMs) is answered as usual only once it settles. For
   * tests that need one request in flight while something else happens;
   * `res` tells whether the client is still waiting. Read at request time.
   */
  holdUntil?: (path: string, res: http.ServerResponse) => Promise<unknown> | undefined;
}

/** What a SiteSpec.handler gets: the request, the response and the raw connection. */
export interface SiteRequest {
  readonly web: TestWeb;
  readonly site: SiteSpec;
  readonly req: http.IncomingMessage;
  readonly res: http.ServerResponse;
  /** The connection itself, for resets (`resetAndDestroy`), truncation and bytes that are not HTTP. */
  readonly socket: Socket;
  /** Normalised site host (lower case, no port). */
  readonly host: string;
  /** Port from the Host header, else the local port. */
  readonly port: number;
  /** `http://host:port` of this site, for absolute links and Location headers. */
  readonly origin: string;
  readonly method: string;
  /** Request target as sent: path plus query. */
  readonly target: string;
  /** Target without query. */
  readonly path: string;
  /** Query including its `?`, or ''. */
  readonly search: string;
  /** Handler calls for this path (query ignored) on this site, from 1. */
  readonly attempt: number;
  /** Handler calls on this site, any path, from 1. */
  readonly siteRequest: number;
  /** A timer that close() cancels and that is dropped when the response closes. */
  later(ms: number, fn: () => void): void;
  /** A complete response with Content-Length (no body for HEAD); ignored once the client is gone. */
  send(status: number, contentType: string, body: Buffer | string, headers?: http.OutgoingHttpHeaders): void;
}

export interface RequestRecord {
  host: string;
  port: number;
  method: string;
  /** Request target as sent: path plus query. */
  path: string;
  userAgent: string;
  /** Arrival time in ms: performance.timeOrigin + performance.now(). */
  t: number;
}

/**
 * What one local address of the test web has had open at once: requests in
 * flight (arrived, response not yet finished or aborted) and TCP connections.
 * Every site host is served from the same address, as wildcard subdomains of
 * one machine are, so this is what a per-address cap must keep small.
 */
export interface AddressLoad {
  inFlight: number;
  maxInFlight: number;
  connections: number;
  maxConnections: number;
  /** TCP connections accepted since the start (or resetLoad()). */
  accepted: number;
}

/** A TLS handshake that failed on the HTTPS listener, as the server saw it. */
export interface TlsFailure {
  /** SNI name the client asked for, or null. */
  servername: string | null;
  code: string;
  /** Same clock as RequestRecord.t. */
  t: number;
}

export interface ExpectedPagesOptions {
  /** Hosts a crawler may visit; default: every site of this test web. */
  hosts?: string[];
  /** default true */
  respectRobots?: boolean;
  /** default false */
  followNofollow?: boolean;
  /** Seeds are depth 0; pages at depth maxDepth are fetched but not expanded. */
  maxDepth?: number;
  /** Which page gets cut by a page budget depends on crawl order, so it has no exact answer. */
  maxPages?: never;
  /**
   * Crawler User-Agent used to pick the robots.txt group. Without it the
   * site's own group applies (the generated group, or for raw text the `*`
   * group, else the first group), i.e. the crawler is assumed to be targeted.
   */
  userAgent?: string;
}

/**
 * Server latency for every response of a test web, on top of a site's own
 * latencyMs: what a crawler meets on the real web, where pages take hundreds
 * of milliseconds and a few take seconds. The random parts are drawn from
 * the seed, host, request target and how often that target was asked for
 * before, so a run is reproducible whatever order requests arrive in, and a
 * retried page gets a fresh draw.
 */
export interface LatencySpec {
  /** Added to every response, in ms. */
  fixedMs?: number;
  /** A uniform random extra delay of 0..randomMs ms (whole ms, both ends included). */
  randomMs?: number;
  /** Share (0..1) of responses that are slow: they take slowMs more. */
  slowShare?: number;
  slowMs?: number;
  /** Seed of the random and slow draws; default 0. */
  seed?: number;
}

export interface StartTestWebOptions {
  port?: number;
  host?: string;
  /** Latency of every response (request log times stay arrival times). */
  latency?: LatencySpec;
  /**
   * Largest request head accepted, in bytes. Default 256 KiB instead of
   * Node's 16 KiB, so absurdly long URLs reach the request log (and a site
   * handler) rather than dying as a 431 that no test could see.
   */
  maxHeaderSize?: number;
}

/** Query parameters that carry no page identity; links add them, normalisation drops them. */
const TRACKING_PARAM = /^utm_/i;

export async function startTestWeb(opts: StartTestWebOptions = {}): Promise<TestWeb> {
  // Checked before listening, so a bad spec leaves no server behind.
  const latency = checkLatency(opts.latency ?? {});
  // Without a Host header there is no site to pick; answer "no such site"
  // like any unknown host instead of Node's bare 400.
  const server = http.createServer({ requireHostHeader: false, maxHeaderSize: opts.maxHeaderSize ?? 256 * 1024 });
  // Long keep-alive so a crawler's connection pool is actually reused across
  // a benchmark instead of reconnecting after Node's 5 s default.
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;
  const address = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: opts.port ?? 0, host: address, backlog: 4096 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return new TestWeb(server, address, latency);
}

interface PageLink {
  host: string;
  /** Normalised target path (no fragment, no tracking params). */
  path: string;
  href: string;
  nofollow: boolean;
  rel?: string;
}

type Route = { kind: 'page'; index: number } | { kind: 'nofollow'; n: number } | { kind: 'trap' };

interface SiteState {
  spec: SiteSpec;
  seedHash: number;
  robotsText: string | null;
  /** Rules for the default view (no crawler UA given); compiled lazily. */
  rules?: RobotsRules;
  attempts?: Map<string, number>;
  /** Handler calls per path, and in all. */
  handlerAttempts?: Map<string, number>;
  handlerCalls?: number;
}

export class TestWeb {
  readonly port: number;
  /** Address the server is bound to, i.e. what every site host resolves to. */
  readonly address: string;
  private readonly sites = new Map<string, SiteState>();
  private readonly log: RequestRecord[] = [];
  private readonly sockets = new Set<Socket>();
  /** The host a connection's last request was for. */
  private readonly socketHosts = new WeakMap<Socket, string>();
  /** By the server's local address of the connection (IPv4-mapped IPv6 unwrapped). */
  private readonly loads = new Map<string, AddressLoad>();
  private readonly timers = new Set<NodeJS.Timeout>();
  // Keyed by `${host} ${path}`; cleared on addSite because cross links pick
  // target pages from the other sites' specs.
  private readonly linkCache = new Map<string, PageLink[]>();
  private readonly htmlCache = new Map<string, Buffer>();
  private readonly tlsLog: TlsFailure[] = [];
  /** Listeners opened after construction (HTTPS, unaccepting); closed with the web. */
  private readonly extras: (() => Promise<void>)[] = [];
  private closing?: Promise<void>;
  private readonly latency: Required<LatencySpec>;
  /** Requests so far per `${host} ${target}`, so a repeated request gets its own draw; only kept when something is drawn. */
  private readonly latencyDraws = new Map<string, number>();

  constructor(
    private readonly server: http.Server,
    address: string,
    latency: LatencySpec = {},
  ) {
    this.port = (server.address() as AddressInfo).port;
    this.address = address;
    this.latency = checkLatency(latency);
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      this.countConnection(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.on('request', (req, res) => this.handle(req, res));
  }

  url(host: string, path = '/'): string {
    return `http://${host.toLowerCase()}:${this.port}${path.startsWith('/') ? path : `/${path}`}`;
  }

  addSite(spec: SiteSpec): void {
    const host = normaliseHost(spec.host);
    if (!host) throw new Error('site host must not be empty');
    if (this.sites.has(host)) throw new Error(`site ${host} already exists`);
    const pages = Math.max(1, Math.floor(spec.pages));
    const fanOut = Math.max(0, Math.floor(spec.fanOut));
    const normalised: SiteSpec = { ...spec, host, pages, fanOut };
    this.sites.set(host, {
      spec: normalised,
      seedHash: hashString(`${spec.seed ?? 0}|${host}`),
      robotsText: robotsTextFor(spec.robots),
    });
    this.linkCache.clear();
    this.htmlCache.clear();
  }

  hosts(): string[] {
    return [...this.sites.keys()];
  }

  site(host: string): SiteSpec | undefined {
    return this.sites.get(normaliseHost(host))?.spec;
  }

  /** curl `--resolve` arguments pinning every site host to this server. */
  resolveArgs(): string[] {
    const addr = this.address.includes(':') ? `[${this.address}]` : this.address;
    return this.hosts().map((h) => `${h}:${this.port}:${addr}`);
  }

  /**
   * A `net.connect` lookup that sends site hosts here and anything else to
   * DNS, e.g. `new Agent({ connect: { lookup: web.lookup } })` for undici.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    if (!this.sites.has(normaliseHost(hostname))) {
      // dns.lookup's overloads cannot be named for options only known at runtime.
      (dns.lookup as unknown as LookupFunction)(hostname, options, callback);
      return;
    }
    const family = this.address.includes(':') ? 6 : 4;
    // Node's happy-eyeballs connect asks for `all`; plain connect does not.
    if (options.all) callback(null, [{ address: this.address, family }]);
    else callback(null, this.address, family);
  };

  /**
   * The web-wide latency in ms of the `nth` request (from 1) for `target`
   * (path plus query, as sent) on `host`: what the server adds to that
   * response, on top of the site's latencyMs. Pure, so tests and benchmarks
   * can predict which responses are slow.
   */
  latencyFor(host: string, target: string, nth = 1): number {
    const { fixedMs, randomMs, slowShare, slowMs, seed } = this.latency;
    if (randomMs === 0 && (slowShare === 0 || slowMs === 0)) return fixedMs;
    const rng = mulberry32(mix(hashString(`${seed}|${normaliseHost(host)}|${target}`), nth));
    // Two draws in a fixed order, so changing randomMs does not change which responses are slow.
    const slow = rng.int(1_000_000) < Math.round(slowShare * 1_000_000);
    const extra = rng.int(randomMs + 1);
    return fixedMs + extra + (slow ? slowMs : 0);
  }

  /** Mean web-wide latency per response in ms, for ideal times in benchmarks. */
  meanLatencyMs(): number {
    const { fixedMs, randomMs, slowShare, slowMs } = this.latency;
    return fixedMs + randomMs / 2 + slowShare * slowMs;
  }

  /** Connections open to the web now (a crawler's idle keep-alive ones included); `host`: those whose last request was for it. */
  openConnections(host?: string): number {
    if (host === undefined) return this.sockets.size;
    let n = 0;
    for (const s of this.sockets) if (this.socketHosts.get(s) === host) n++;
    return n;
  }

  requests(): RequestRecord[] {
    return this.log.map((r) => ({ ...r }));
  }

  clearRequests(): void {
    this.log.length = 0;
  }

  /**
   * Requests in flight and open connections per local address, now and at
   * most since the start (or resetLoad()). Counted at every arrival and
   * close, so a peak between two samples is never missed.
   */
  load(): Map<string, AddressLoad> {
    return new Map([...this.loads].map(([a, l]) => [a, { ...l }]));
  }

  /** Forgets the maxima (what is open now stays counted). */
  resetLoad(): void {
    for (const l of this.loads.values()) {
      l.maxInFlight = l.inFlight;
      l.maxConnections = l.connections;
      l.accepted = 0;
    }
  }

  /** The served robots.txt body for a host, or null when it answers 404. */
  robotsTxt(host: string): string | null {
    return this.sites.get(normaliseHost(host))?.robotsText ?? null;
  }

  /**
   * Serves the same sites over HTTPS on another loopback port, with the given
   * certificate; returns the port. Requests land in the same log. Handshakes
   * that fail (a client that does not trust the certificate) are in
   * tlsFailures(), since they never become requests.
   */
  async startHttps(credentials: { key: string; cert: string }): Promise<number> {
    const server = https.createServer({ ...credentials, requireHostHeader: false });
    const sockets = new Set<Socket>();
    server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      this.countConnection(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    server.on('request', (req, res) => this.handle(req, res));
    server.on('tlsClientError', (err: NodeJS.ErrnoException, socket) => {
      const servername = (socket as { servername?: string | false }).servername;
      this.tlsLog.push({ servername: servername || null, code: err.code ?? err.message, t: performance.timeOrigin + performance.now() });
    });
    await listen(server, this.address);
    this.extras.push(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
          for (const s of sockets) s.destroy();
        }),
    );
    return (server.address() as AddressInfo).port;
  }

  tlsFailures(): TlsFailure[] {
    return this.tlsLog.map((f) => ({ ...f }));
  }

  /**
   * A loopback port where TCP connects never complete, for connect timeouts
   * without leaving the machine: a listener with backlog 0 that never
   * accepts, whose one queue slot a connection of ours holds, so the kernel
   * drops every further SYN. Node's servers always accept, so a python3
   * child owns the listening socket. Returns the port.
   */
  async startUnacceptingListener(): Promise<number> {
    const script = [
      'import socket, sys',
      `s = socket.socket(socket.AF_INET6 if ':' in ${JSON.stringify(this.address)} else socket.AF_INET)`,
      `s.bind((${JSON.stringify(this.address)}, 0))`,
      's.listen(0)',
      'print(s.getsockname()[1], flush=True)',
      'sys.stdin.read()',
    ].join('\n');
    const child = spawn('python3', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const port = await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`python3 listener exited with ${code}`)));
      child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    });
    const holder = net.connect({ port, host: this.address });
    await new Promise<void>((resolve, reject) => {
      holder.once('connect', resolve);
      holder.once('error', reject);
    });
    this.extras.push(async () => {
      holder.destroy();
      child.stdin.end();
      await exited;
    });
    return port;
  }

  close(): Promise<void> {
    if (this.closing) return this.closing;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    const main = new Promise<void>((resolve) => {
      // close() alone waits for idle keep-alive sockets to time out; tests
      // need the port released now.
      this.server.close(() => resolve());
      this.server.closeAllConnections();
      for (const s of this.sockets) s.destroy();
    });
    this.closing = Promise.all([main, ...this.extras.map((close) => close())]).then(() => undefined);
    return this.closing;
  }

  expectedPages(seeds: string[], opts: ExpectedPagesOptions = {}): Set<string> {
    const allowed = opts.hosts ? new Set(opts.hosts.map(normaliseHost)) : new Set(this.sites.keys());
    const respectRobots = opts.respectRobots ?? true;
    const followNofollow = opts.followNofollow ?? false;
    const maxDepth = opts.maxDepth ?? Infinity;
    const rulesByHost = new Map<string, RobotsRules | null>();
    const robotsAllow = (host: string, path: string): boolean => {
      if (!respectRobots) return true;
      let rules = rulesByHost.get(host);
      if (rules === undefined) {
        const site = this.sites.get(host);
        rules = site ? this.rulesFor(site, opts.userAgent) : null;
        rulesByHost.set(host, rules);
      }
      return rules ? rules.allows(path) : true;
    };

    const out = new Set<string>();
    const queue: { host: string; path: string; depth: number }[] = [];
    const admit = (host: string, path: string, depth: number): void => {
      if (!allowed.has(host)) return;
      const key = `http://${host}:${this.port}${path}`;
      if (out.has(key)) return;
      if (!robotsAllow(host, path)) return;
      out.add(key);
      queue.push({ host, path, depth });
    };
    for (const seed of seeds) {
      const u = new URL(seed);
      admit(normaliseHost(u.hostname), normalisedPath(u), 0);
    }
    // Index walk instead of shift(): shift is O(n) and the benchmark graph has 40k nodes.
    for (let i = 0; i < queue.length; i++) {
      const { host, path, depth } = queue[i];
      if (depth >= maxDepth) continue;
      const links = this.linksFor(host, path);
      if (!links) continue;
      for (const link of links) {
        if (link.nofollow && !followNofollow) continue;
        admit(link.host, link.path, depth + 1);
      }
    }
    return out;
  }

  // ---- serving ---------------------------------------------------------------

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const t = performance.timeOrigin + performance.now();
    // In flight from arrival until the response is finished or the client is
    // gone ('close' fires once either way), latency and held responses included.
    const load = this.loadOf(req.socket);
    load.inFlight++;
    load.maxInFlight = Math.max(load.maxInFlight, load.inFlight);
    res.once('close', () => load.inFlight--);
    const target = req.url ?? '/';
    const { host, port } = parseHostHeader(req.headers.host, req.socket.localPort ?? this.port);
    this.socketHosts.set(req.socket, host);
    this.log.push({
      host,
      port,
      method: req.method ?? 'GET',
      path: target,
      userAgent: req.headers['user-agent'] ?? '',
      t,
    });
    const site = this.sites.get(host);
    const answer = (): void => {
      const hold = site?.spec.holdUntil?.(targetPath(target), res);
      if (!hold) this.respond(site, req, res, target);
      else
        void hold.then(
          () => this.respond(site, req, res, target),
          () => this.respond(site, req, res, target),
        );
    };
    const delay = (site?.spec.latencyMs ?? 0) + this.drawLatency(host, target);
    if (delay <= 0) {
      answer();
      return;
    }
    // The log entry above keeps the arrival time: politeness is judged on
    // when requests arrive, not on when the (slow) server answers them.
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      answer();
    }, delay);
    this.timers.add(timer);
  }

  private loadOf(socket: Socket): AddressLoad {
    const address = (socket.localAddress ?? this.address).replace(/^::ffff:/, '');
    let load = this.loads.get(address);
    if (!load) {
      load = { inFlight: 0, maxInFlight: 0, connections: 0, maxConnections: 0, accepted: 0 };
      this.loads.set(address, load);
    }
    return load;
  }

  private countConnection(socket: Socket): void {
    const load = this.loadOf(socket);
    load.connections++;
    load.accepted++;
    load.maxConnections = Math.max(load.maxConnections, load.connections);
    socket.once('close', () => load.connections--);
  }

  private drawLatency(host: string, target: string): number {
    const { fixedMs, randomMs, slowShare, slowMs } = this.latency;
    if (randomMs === 0 && (slowShare === 0 || slowMs === 0)) return fixedMs;
    const key = `${host} ${target}`;
    const nth = (this.latencyDraws.get(key) ?? 0) + 1;
    this.latencyDraws.set(key, nth);
    return this.latencyFor(host, target, nth);
  }

  private respond(site: SiteState | undefined, req: http.IncomingMessage, res: http.ServerResponse, target: string): void {
    if (res.destroyed) return;
    if (!site) {
      send(res, req, 404, 'text/plain; charset=utf-8', Buffer.from('no such site\n'));
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD' && !(site.spec.handler && site.spec.methods?.includes(req.method ?? ''))) {
      res.setHeader('allow', 'GET, HEAD');
      send(res, req, 405, 'text/plain; charset=utf-8', Buffer.from('method not allowed\n'));
      return;
    }
    const path = targetPath(target);
    if (site.spec.statusFor) {
      site.attempts ??= new Map();
      const attempt = (site.attempts.get(path) ?? 0) + 1;
      site.attempts.set(path, attempt);
      const status = site.spec.statusFor(path, attempt);
      if (status !== undefined) {
        send(res, req, status, 'text/plain; charset=utf-8', Buffer.from(`status ${status}\n`));
        return;
      }
    }
    if (site.spec.handler && this.runHandler(site, req, res, target, path)) return;
    if (path === '/robots.txt') {
      if (site.robotsText === null) send(res, req, 404, 'text/plain; charset=utf-8', Buffer.from('not found\n'));
      else send(res, req, 200, 'text/plain; charset=utf-8', Buffer.from(site.robotsText));
      return;
    }
    const html = this.htmlFor(site.spec.host, path);
    if (!html) {
      send(res, req, 404, 'text/plain; charset=utf-8', Buffer.from('not found\n'));
      return;
    }
    send(res, req, 200, 'text/html; charset=utf-8', html);
  }

  private runHandler(site: SiteState, req: http.IncomingMessage, res: http.ServerResponse, target: string, path: string): boolean {
    site.handlerAttempts ??= new Map();
    const attempt = (site.handlerAttempts.get(path) ?? 0) + 1;
    site.handlerAttempts.set(path, attempt);
    site.handlerCalls = (site.handlerCalls ?? 0) + 1;
    const { host, port } = parseHostHeader(req.headers.host, req.socket.localPort ?? this.port);
    // Hostile handlers write to connections the client may already have
    // dropped; such errors are expected and must never reach the process.
    // (Socket errors already go to the server's clientError handling.)
    res.on('error', () => {});
    const q = target.search(/[?#]/);
    const timers = this.timers;
    const pending = new Set<NodeJS.Timeout>();
    res.once('close', () => {
      for (const t of pending) {
        clearTimeout(t);
        timers.delete(t);
      }
      pending.clear();
    });
    const ctx: SiteRequest = {
      web: this,
      site: site.spec,
      req,
      res,
      socket: req.socket,
      host,
      port,
      origin: `http://${site.spec.host}:${port}`,
      method: req.method ?? 'GET',
      target,
      path,
      search: q >= 0 && target[q] === '?' ? target.slice(q).replace(/#.*/, '') : '',
      attempt,
      siteRequest: site.handlerCalls,
      later(ms, fn) {
        if (res.destroyed) return;
        const t = setTimeout(() => {
          pending.delete(t);
          timers.delete(t);
          if (!res.destroyed) fn();
        }, ms);
        pending.add(t);
        timers.add(t);
      },
      send(status, contentType, body, headers = {}) {
        if (res.destroyed || res.headersSent) return;
        const buf = typeof body === 'string' ? Buffer.from(body) : body;
        res.writeHead(status, { ...headers, 'content-type': contentType, 'content-length': buf.length });
        res.end(req.method === 'HEAD' ? undefined : buf);
      },
    };
    const handled = site.spec.handler!(ctx);
    return handled === true || res.headersSent || res.writableEnded || res.destroyed;
  }

  private htmlFor(host: string, path: string): Buffer | undefined {
    const key = `${host} ${path}`;
    const cached = this.htmlCache.get(key);
    if (cached) return cached;
    const links = this.linksFor(host, path);
    if (!links) return undefined;
    const html = Buffer.from(renderPage(host, path, links, this.sites.get(host)?.spec.words));
    this.htmlCache.set(key, html);
    return html;
  }

  // ---- link graph ------------------------------------------------------------

  private route(site: SiteState, path: string): Route | undefined {
    const { pages, nofollowLinks } = site.spec;
    if (path === '/') return { kind: 'page', index: 0 };
    let m = /^\/page\/([1-9]\d*)$/.exec(path);
    if (m) {
      const index = Number(m[1]);
      return index < pages ? { kind: 'page', index } : undefined;
    }
    m = /^\/nofollow\/(0|[1-9]\d*)$/.exec(path);
    if (m) {
      const n = Number(m[1]);
      return nofollowLinks && n < nofollowCount(pages) ? { kind: 'nofollow', n } : undefined;
    }
    if (path.startsWith('/private/') || !this.defaultRules(site).allows(path)) return { kind: 'trap' };
    return undefined;
  }

  /** Links on a page, or undefined when the path is not a page of a known site. */
  private linksFor(host: string, path: string): PageLink[] | undefined {
    const key = `${host} ${path}`;
    const cached = this.linkCache.get(key);
    if (cached) return cached;
    const site = this.sites.get(host);
    if (!site) return undefined;
    const route = this.route(site, path);
    if (!route) return undefined;
    let links: PageLink[];
    if (route.kind === 'page') links = this.pageLinks(site, route.index);
    else {
      // Dead ends on purpose: a crawler that wrongly enters them must not
      // discover anything new there, which keeps failures easy to read.
      const back = route.kind === 'nofollow' ? '../' : '/';
      links = [{ host, path: '/', href: back, nofollow: false }];
    }
    this.linkCache.set(key, links);
    return links;
  }

  private pageLinks(site: SiteState, index: number): PageLink[] {
    const { host, pages, fanOut, crossLinks, nofollowLinks } = site.spec;
    const rng = mulberry32(mix(site.seedHash, index));
    const self = index === 0 ? '/' : `/page/${index}`;
    const links: PageLink[] = [];

    // A tree over page indices guarantees reachability from `/` with
    // logarithmic depth; the remaining fan-out is random extra edges.
    const want = Math.min(Math.max(fanOut, pages > 1 ? 1 : 0), pages - 1);
    const branching = Math.max(1, Math.ceil(fanOut / 2));
    const targets: number[] = [];
    const chosen = new Set<number>();
    for (let c = index * branching + 1; c <= index * branching + branching && c < pages; c++) {
      targets.push(c);
      chosen.add(c);
    }
    for (let tries = 0; targets.length < want && tries < want * 8; tries++) {
      const j = rng.int(pages);
      if (j === index || chosen.has(j)) continue;
      targets.push(j);
      chosen.add(j);
    }
    shuffle(targets, rng);
    for (const j of targets) {
      links.push({ host, path: pagePath(j), href: this.sameSiteHref(host, self, j, rng), nofollow: false });
    }
    // Same target again in another spelling, so deduplication is exercised.
    if (targets.length > 0) {
      links.push({ host, path: pagePath(targets[0]), href: this.sameSiteHref(host, self, targets[0], rng), nofollow: false });
    }
    links.push({ host, path: self, href: '#top', nofollow: false });

    if (crossLinks && crossLinks.perPage > 0 && crossLinks.hosts.length > 0) {
      const others = crossLinks.hosts;
      for (let k = 0; k < crossLinks.perPage; k++) {
        let target: string | undefined;
        const ring = index === 0 && k === 0;
        if (ring) {
          // Home pages form a ring over the host list, so every site of a
          // generated web is reachable from any one seed.
          const pos = hostIndex(others).get(host);
          target = normaliseHost(others[pos === undefined ? 0 : (pos + 1) % others.length]);
        } else {
          const pos = rng.int(others.length);
          target = normaliseHost(others[pos]);
          if (target === host) target = normaliseHost(others[(pos + 1) % others.length]);
        }
        if (target === host) continue;
        const targetSite = this.sites.get(target);
        const j = targetSite && !ring ? rng.int(targetSite.spec.pages) : 0;
        links.push({ host: target, path: pagePath(j), href: this.absoluteHref(target, pagePath(j), rng), nofollow: false });
      }
    }

    const trap = this.trapPath(site, rng);
    if (trap) {
      const href = rng.int(2) === 0 ? trap : `http://${host}:${this.port}${trap}`;
      links.push({ host, path: trap, href, nofollow: false });
    }

    if (nofollowLinks && index % 5 === 0) {
      const n = index / 5;
      const rel = rng.int(2) === 0 ? 'nofollow' : 'noopener nofollow';
      links.push({ host, path: `/nofollow/${n}`, href: `/nofollow/${n}`, nofollow: true, rel });
    }
    return links;
  }

  /** A path the site's robots rules disallow, derived from a Disallow pattern. */
  private trapPath(site: SiteState, rng: Rng): string | undefined {
    const rules = this.defaultRules(site);
    const patterns = rules.disallowPatterns;
    if (patterns.length === 0) return undefined;
    const n = rng.int(10);
    const start = rng.int(patterns.length);
    for (let k = 0; k < patterns.length; k++) {
      let p = patterns[(start + k) % patterns.length].replace(/\*/g, `x${n}`);
      if (p.endsWith('$')) p = p.slice(0, -1);
      else p = p.endsWith('/') ? `${p}${n}` : `${p}/${n}`;
      if (p.startsWith('/') && p !== '/robots.txt' && !rules.allows(p)) return p;
    }
    return undefined;
  }

  private sameSiteHref(host: string, from: string, j: number, rng: Rng): string {
    const target = pagePath(j);
    const form = rng.int(4);
    if (form === 0) return this.absoluteHref(host, target, rng);
    let href: string;
    if (form === 1) href = target;
    else if (from === '/') href = j === 0 ? './' : rng.int(2) === 0 ? `page/${j}` : `./page/${j}`;
    else if (j === 0) href = '../';
    else href = [`${j}`, `./${j}`, `../page/${j}`][rng.int(3)];
    return decorate(href, rng);
  }

  private absoluteHref(host: string, path: string, rng: Rng): string {
    // Host names are case-insensitive; an upper-case spelling now and then
    // checks that the crawler normalises rather than string-compares.
    const h = rng.int(8) === 0 ? host.toUpperCase() : host;
    return decorate(`http://${h}:${this.port}${path}`, rng);
  }

  private defaultRules(site: SiteState): RobotsRules {
    site.rules ??= this.rulesFor(site, undefined);
    return site.rules;
  }

  private rulesFor(site: SiteState, userAgent: string | undefined): RobotsRules {
    if (site.robotsText === null) return RobotsRules.allowAll;
    if (userAgent === undefined && site.rules) return site.rules;
    return RobotsRules.parse(site.robotsText, userAgent);
  }
}

/**
 * A fresh self-signed certificate (P-256, valid a day) for `hosts`, made by
 * openssl in a temporary folder that is removed again: the names match, so
 * the only thing wrong with it is that nobody trusts its issuer.
 */
export async function selfSignedCertificate(hosts: string[]): Promise<{ key: string; cert: string }> {
  const openssl = await findOrInstallOpenssl();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'test-web-tls-'));
  try {
    const keyFile = path.join(dir, 'key.pem');
    const certFile = path.join(dir, 'cert.pem');
    const res = spawnSync(
      openssl,
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${hosts[0]}`,
        '-addext',
        `subjectAltName=${hosts.map((h) => `DNS:${h}`).join(',')}`,
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { encoding: 'utf8' },
    );
    if (res.error || res.status !== 0) throw new Error(`openssl could not make a test certificate: ${res.error?.message ?? res.stderr}`);
    return { key: fs.readFileSync(keyFile, 'utf8'), cert: fs.readFileSync(certFile, 'utf8') };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export interface GenerateSitesOptions {
  count: number;
  pages: number;
  fanOut: number;
  /** Cross-site links per page; default 1, 0 disables. */
  crossPerPage?: number;
  hostPattern?: (i: number) => string;
  robots?: SiteSpec['robots'];
  seed?: number;
  nofollowLinks?: boolean;
  latencyMs?: number;
  words?: number;
}

/** N sites that cross-link to each other; home pages form a ring, so one seed reaches all. */
export function generateSites(opts: GenerateSitesOptions): SiteSpec[] {
  const hostOf = opts.hostPattern ?? ((i: number) => `site${i}.test`);
  const hosts = Array.from({ length: opts.count }, (_, i) => normaliseHost(hostOf(i)));
  const perPage = opts.crossPerPage ?? 1;
  // One shared hosts array: 2,000 sites must not mean 2,000 copies of 2,000 names.
  const crossLinks = perPage > 0 && hosts.length > 1 ? { hosts, perPage } : undefined;
  return hosts.map((host) => ({
    host,
    pages: opts.pages,
    fanOut: opts.fanOut,
    crossLinks,
    robots: opts.robots,
    nofollowLinks: opts.nofollowLinks,
    latencyMs: opts.latencyMs,
    seed: opts.seed,
    ...(opts.words ? { words: opts.words } : {}),
  }));
}

function checkLatency(spec: LatencySpec): Required<LatencySpec> {
  const out = { fixedMs: spec.fixedMs ?? 0, randomMs: spec.randomMs ?? 0, slowShare: spec.slowShare ?? 0, slowMs: spec.slowMs ?? 0, seed: spec.seed ?? 0 };
  for (const k of ['fixedMs', 'randomMs', 'slowMs'] as const) {
    if (!Number.isInteger(out[k]) || out[k] < 0) throw new Error(`latency.${k} must be a whole number of ms ≥ 0, got ${out[k]}`);
  }
  if (!(out.slowShare >= 0 && out.slowShare <= 1)) throw new Error(`latency.slowShare must be from 0 to 1, got ${out.slowShare}`);
  if (!Number.isInteger(out.seed)) throw new Error(`latency.seed must be an integer, got ${out.seed}`);
  return out;
}

// ---- robots.txt ---------------------------------------------------------------

export function robotsTextFor(robots: RobotsSpec | null | undefined): string | null {
  if (robots === null) return null;
  if (robots === undefined) return 'User-agent: *\nDisallow:\n';
  if (robots.raw !== undefined) return robots.raw;
  const lines = [`User-agent: ${robots.agent ?? '*'}`];
  for (const p of robots.allow ?? []) lines.push(`Allow: ${p}`);
  for (const p of robots.disallow ?? []) lines.push(`Disallow: ${p}`);
  if (lines.length === 1) lines.push('Disallow:');
  if (robots.crawlDelaySec !== undefined) lines.push(`Crawl-delay: ${robots.crawlDelaySec}`);
  return `${lines.join('\n')}\n`;
}

interface CompiledRule {
  allow: boolean;
  pattern: string;
  length: number;
  re: RegExp;
}

/** RFC 9309 matching: longest pattern wins, Allow wins ties, `*` and `$` supported. */
class RobotsRules {
  static readonly allowAll = new RobotsRules([]);

  constructor(private readonly rules: CompiledRule[]) {}

  get disallowPatterns(): string[] {
    return this.rules.filter((r) => !r.allow).map((r) => r.pattern);
  }

  allows(path: string): boolean {
    if (path === '/robots.txt') return true;
    let best: CompiledRule | undefined;
    for (const r of this.rules) {
      if (!r.re.test(path)) continue;
      if (!best || r.length > best.length || (r.length === best.length && r.allow)) best = r;
    }
    return best ? best.allow : true;
  }

  static parse(text: string, userAgent: string | undefined): RobotsRules {
    const groups: { agents: string[]; rules: { allow: boolean; pattern: string }[] }[] = [];
    let current: (typeof groups)[number] | undefined;
    let lastWasAgent = false;
    for (const rawLine of text.split(/\r?\n|\r/)) {
      const line = rawLine.replace(/#.*/, '').trim();
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const key = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (key === 'user-agent') {
        if (!current || !lastWasAgent) {
          current = { agents: [], rules: [] };
          groups.push(current);
        }
        current.agents.push(value.toLowerCase());
        lastWasAgent = true;
        continue;
      }
      lastWasAgent = false;
      if (!current) continue;
      if ((key === 'allow' || key === 'disallow') && value !== '') {
        current.rules.push({ allow: key === 'allow', pattern: value });
      }
    }
    let selected: typeof groups = [];
    if (userAgent !== undefined) {
      const ua = userAgent.toLowerCase();
      let bestLen = 0;
      for (const g of groups) {
        for (const a of g.agents) {
          if (a === '*' || !ua.includes(a)) continue;
          if (a.length > bestLen) {
            bestLen = a.length;
            selected = [g];
          } else if (a.length === bestLen && !selected.includes(g)) selected.push(g);
        }
      }
    }
    if (selected.length === 0) selected = groups.filter((g) => g.agents.includes('*'));
    if (selected.length === 0 && userAgent === undefined && groups.length > 0) selected = [groups[0]];
    return new RobotsRules(selected.flatMap((g) => g.rules.map((r) => compileRule(r.allow, r.pattern))));
  }
}

function compileRule(allow: boolean, pattern: string): CompiledRule {
  const anchored = pattern.endsWith('$');
  const body = anchored ? pattern.slice(0, -1) : pattern;
  const source = body
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return { allow, pattern, length: pattern.length, re: new RegExp(`^${source}${anchored ? '$' : ''}`) };
}

// ---- HTML ---------------------------------------------------------------------

/** 512 made-up words of two or three syllables: a vocabulary with the spread of a real text's. */
const SYLLABLES = ['ka', 'lo', 'mi', 'ter', 'an', 'sul', 've', 'dor', 'pi', 'nem', 'ra', 'tu', 'bel', 'os', 'gri', 'fen'];
const VOCABULARY = Array.from({ length: 512 }, (_, i) => SYLLABLES[i % 16] + SYLLABLES[(i >> 4) % 16] + (i >= 256 ? SYLLABLES[(i * 7) % 16] : ''));

/** `n` words of the vocabulary, the same for the same host and path on every run. */
function pageWords(host: string, path: string, n: number): string {
  const rng = mulberry32(hashString(`${host} ${path}`));
  return Array.from({ length: n }, () => VOCABULARY[rng.int(VOCABULARY.length)]).join(' ');
}

function renderPage(host: string, path: string, links: PageLink[], words?: number): string {
  const items = links
    .map((l, i) => {
      const rel = l.rel ? ` rel="${escapeHtml(l.rel)}"` : '';
      return `<li><a href="${escapeHtml(l.href)}"${rel}>link ${i}</a></li>`;
    })
    .join('\n');
  const title = `${escapeHtml(host)} ${escapeHtml(path)}`;
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>\n` +
    `<body id="top">\n<h1>${title}</h1>\n<p>Generated page for crawler tests.</p>\n${words ? `<p>${pageWords(host, path, words)}</p>\n` : ''}<ul>\n${items}\n</ul>\n</body></html>\n`
  );
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function decorate(href: string, rng: Rng): string {
  const roll = rng.int(8);
  // Tracking params and fragments never change the page; a correct crawler strips them.
  const query = roll === 1 || roll === 3 ? ['?utm_source=x', '?utm_source=news&utm_medium=email', '?utm_campaign=spring'][rng.int(3)] : '';
  const fragment = roll === 2 || roll === 3 ? `#section-${rng.int(5)}` : '';
  return `${href}${query}${fragment}`;
}

// ---- helpers ------------------------------------------------------------------

function listen(server: net.Server, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function send(res: http.ServerResponse, req: http.IncomingMessage, status: number, type: string, body: Buffer): void {
  res.writeHead(status, { 'content-type': type, 'content-length': body.length });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function pagePath(index: number): string {
  return index === 0 ? '/' : `/page/${index}`;
}

function nofollowCount(pages: number): number {
  return Math.ceil(pages / 5);
}

function normaliseHost(host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, '');
}

function parseHostHeader(header: string | undefined, fallbackPort: number): { host: string; port: number } {
  if (!header) return { host: '', port: fallbackPort };
  let host = header;
  let port = fallbackPort;
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(header.trim());
  if (m) {
    host = m[1];
    if (m[2]) port = Number(m[2]);
  }
  return { host: normaliseHost(host), port };
}

function targetPath(target: string): string {
  // Absolute-form targets come from clients that talk to us as a proxy.
  if (/^https?:\/\//i.test(target)) target = new URL(target).pathname;
  const end = target.search(/[?#]/);
  return end < 0 ? target : target.slice(0, end);
}

function normalisedPath(u: URL): string {
  const kept = [...u.searchParams].filter(([k]) => !TRACKING_PARAM.test(k));
  if (kept.length === 0) return u.pathname;
  return `${u.pathname}?${new URLSearchParams(kept).toString()}`;
}

const hostIndexCache = new WeakMap<string[], Map<string, number>>();
function hostIndex(hosts: string[]): Map<string, number> {
  let index = hostIndexCache.get(hosts);
  if (!index) {
    index = new Map(hosts.map((h, i) => [normaliseHost(h), i]));
    hostIndexCache.set(hosts, index);
  }
  return index;
}

function shuffle<T>(items: T[], rng: Rng): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [items[i], items[j]] = [items[j], items[i]];
  }
}
