// The campaign's forward proxies: what a proxy list says (`--proxy URL`,
// `--proxy-file FILE`), which proxy a host goes through, and how a proxy
// that fails is set aside.
//
// A proxy URL may carry a password, so this module is careful about what it
// lets out: a proxy is named everywhere by its `id` (scheme, host and port,
// never the credentials), and a line that does not parse is named by its
// file and line number, never echoed. The campaign input carries only the
// paths of proxy files (docs/operations.md, "Proxies"); workers read them.
//
// A host sticks to one proxy, so a site sees one client per host session:
// the proxy is chosen by rendezvous (highest-random-weight) hashing of the
// host over the list, which spreads hosts evenly, needs no shared table, and
// when one proxy is set aside moves only that proxy's hosts (each to its own
// next-ranked proxy), leaving every other host where it was.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { CrawlerError } from '../errors';

export const PROXY_PROTOCOLS = ['http', 'https', 'socks5', 'socks5h'] as const;
export type ProxyProtocol = (typeof PROXY_PROTOCOLS)[number];

export interface ProxyEndpoint {
  /** `scheme://host:port` (plus `#n` for the n-th entry of a repeated one): safe to log, never holds credentials. */
  id: string;
  protocol: ProxyProtocol;
  /** Host name or IP literal (without IPv6 brackets). */
  host: string;
  port: number;
  /** Decoded; null when the URL has none. Secret: never logged, stored or put in an error message. */
  username: string | null;
  password: string | null;
}

/** A proxy list that cannot be used: the campaign is refused before anything starts. */
export class ProxyConfigError extends CrawlerError<'INVALID_PROXY'> {
  constructor(message: string) {
    super('INVALID_PROXY', message);
    this.name = 'ProxyConfigError';
  }
}

const DEFAULT_PORTS: Record<ProxyProtocol, number> = { http: 80, https: 443, socks5: 1080, socks5h: 1080 };
/** A proxy list is operator configuration, not a seed list: a few thousand entries at most. */
export const MAX_PROXIES = 10_000;

/**
 * One proxy URL: `http://`, `https://` (TLS to the proxy), `socks5://` or
 * `socks5h://` (both let the proxy resolve the target), an optional
 * `user:password@` (percent-encoded), host and port. Problems are described
 * without quoting the URL, which may hold a password; `where` says where it
 * came from ("--proxy", "proxies.txt line 3").
 */
export function parseProxyUrl(text: string, where: string): Omit<ProxyEndpoint, 'id'> {
  const raw = text.trim();
  const shape = 'expected scheme://[user:password@]host[:port] with scheme http, https, socks5 or socks5h';
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(raw)?.[1]?.toLowerCase();
  if (!scheme) throw new ProxyConfigError(`${where}: not a proxy URL (${shape})`);
  if (!(PROXY_PROTOCOLS as readonly string[]).includes(scheme)) throw new ProxyConfigError(`${where}: unsupported proxy scheme ${JSON.stringify(scheme)} (${shape})`);
  let url: URL;
  try {
    // WHATWG URL parses special schemes (http, https) strictly and the rest as opaque; swap in
    // http for parsing so socks URLs get the same host, port and credential rules.
    url = new URL(`http${raw.slice(scheme.length)}`);
  } catch {
    throw new ProxyConfigError(`${where}: not a proxy URL (${shape})`);
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) throw new ProxyConfigError(`${where}: a proxy URL has no path, query or fragment (${shape})`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!host) throw new ProxyConfigError(`${where}: the proxy URL has no host (${shape})`);
  // `new URL('http://h:80')` drops the default port of http; the port as written is what counts.
  const written = /^[^/]*\/\/(?:[^@/]*@)?(?:\[[^\]]*\]|[^:/]*)(?::(\d+))?/.exec(raw)?.[1];
  const port = written !== undefined ? Number(written) : DEFAULT_PORTS[scheme as ProxyProtocol];
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new ProxyConfigError(`${where}: proxy port out of range 1-65535`);
  let username: string | null;
  let password: string | null;
  try {
    username = url.username ? decodeURIComponent(url.username) : null;
    password = url.password ? decodeURIComponent(url.password) : null;
  } catch {
    throw new ProxyConfigError(`${where}: the proxy credentials are not valid percent-encoding`);
  }
  if (password !== null && username === null) throw new ProxyConfigError(`${where}: a proxy password needs a user name`);
  // RFC 1929 carries each in one length byte.
  if (scheme.startsWith('socks') && ((username?.length ?? 0) > 255 || (password?.length ?? 0) > 255))
    throw new ProxyConfigError(`${where}: SOCKS5 user names and passwords are at most 255 bytes`);
  return { protocol: scheme as ProxyProtocol, host: host.toLowerCase(), port, username, password };
}

/** The proxy URL as it may be shown: no credentials. */
export function proxyLabel(p: Pick<ProxyEndpoint, 'protocol' | 'host' | 'port'>): string {
  return `${p.protocol}://${p.host.includes(':') ? `[${p.host}]` : p.host}:${p.port}`;
}

/**
 * The lines of a proxy list: one URL a line, blank lines and `#` comments
 * (whole-line or after the URL) ignored. `source` names the list in errors
 * ("proxies.txt"), each with its line number.
 */
export function parseProxyList(text: string, source: string): Omit<ProxyEndpoint, 'id'>[] {
  const out: Omit<ProxyEndpoint, 'id'>[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    // A comment starts at a `#` that begins the line or follows a blank: a password may contain `#` (percent-encoded or not).
    const line = lines[i].replace(/(^|\s)#.*$/, '').trim();
    if (line === '') continue;
    if (/\s/.test(line)) throw new ProxyConfigError(`${source} line ${i + 1}: one proxy URL a line, without spaces`);
    out.push(parseProxyUrl(line, `${source} line ${i + 1}`));
    if (out.length > MAX_PROXIES) throw new ProxyConfigError(`${source}: more than ${MAX_PROXIES} proxies`);
  }
  return out;
}

/** Ids for a list: `scheme://host:port`, with `#2`, `#3`… for the later entries of one host and port (other credentials). */
export function withIds(list: Omit<ProxyEndpoint, 'id'>[]): ProxyEndpoint[] {
  const seen = new Map<string, number>();
  const out: ProxyEndpoint[] = [];
  const exact = new Set<string>();
  for (const p of list) {
    // The same URL twice would give its hosts twice the share: once is enough.
    const whole = JSON.stringify([p.protocol, p.host, p.port, p.username, p.password]);
    if (exact.has(whole)) continue;
    exact.add(whole);
    const label = proxyLabel(p);
    const n = (seen.get(label) ?? 0) + 1;
    seen.set(label, n);
    out.push({ ...p, id: n === 1 ? label : `${label}#${n}` });
  }
  return out;
}

/**
 * Reads one proxy file. Refused: a file that cannot be read, one that every
 * user may read (it may hold passwords; `chmod 600` it), one without any
 * proxy, and one with a malformed line (named by its number).
 */
export async function readProxyFile(file: string): Promise<Omit<ProxyEndpoint, 'id'>[]> {
  let text: string;
  try {
    const st = await stat(file);
    if (!st.isFile()) throw new ProxyConfigError(`proxy file ${file} is not a file`);
    // Windows has no such mode bits: its ACLs are the operator's to set.
    if (process.platform !== 'win32' && (st.mode & 0o004) !== 0)
      throw new ProxyConfigError(`proxy file ${file} is readable by every user (mode ${(st.mode & 0o777).toString(8)}); it may hold proxy passwords: chmod 600 it`);
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (err instanceof ProxyConfigError) throw err;
    throw new ProxyConfigError(`proxy file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const list = parseProxyList(text, `proxy file ${file}`);
  if (list.length === 0) throw new ProxyConfigError(`proxy file ${file} names no proxy`);
  return list;
}

/** Every proxy of the campaign's files, in order, with ids. */
export async function loadProxyFiles(files: readonly string[]): Promise<ProxyEndpoint[]> {
  const all: Omit<ProxyEndpoint, 'id'>[] = [];
  for (const f of files) all.push(...(await readProxyFile(f)));
  if (all.length > MAX_PROXIES) throw new ProxyConfigError(`more than ${MAX_PROXIES} proxies in ${files.length} files`);
  return withIds(all);
}

/** A host's weight at a proxy: 48 bits of SHA-256, plenty to spread hosts evenly and never tie in practice. */
function weight(proxyId: string, host: string): number {
  return createHash('sha256').update(proxyId).update('\n').update(host).digest().readUIntBE(0, 6);
}

/**
 * The proxies in the order `host` tries them (rendezvous hashing): its own
 * proxy first, then the one it moves to when that is set aside, and so on.
 * The same on every worker, whatever order the list is in.
 */
export function rankProxies<P extends { id: string }>(host: string, proxies: readonly P[]): P[] {
  return proxies
    .map((p) => ({ p, w: weight(p.id, host) }))
    .sort((a, b) => b.w - a.w || (a.p.id < b.p.id ? -1 : 1))
    .map((x) => x.p);
}

/**
 * Which proxies are set aside now, shared by every worker of a campaign
 * (src/redis/proxy-health.ts keeps it in Redis, under the campaign's keys).
 */
export interface ProxyHealth {
  /** Ids of the proxies set aside now. */
  setAside(): Promise<ReadonlySet<string>>;
  /** Sets `id` aside for `ms`, for every worker. */
  markFailed(id: string, ms: number): Promise<void>;
}

/** One process's health table: for tests and for the library without Redis. */
export class MemoryProxyHealth implements ProxyHealth {
  readonly #until = new Map<string, number>();

  async setAside(): Promise<ReadonlySet<string>> {
    const now = Date.now();
    for (const [id, until] of this.#until) if (until <= now) this.#until.delete(id);
    return new Set(this.#until.keys());
  }

  async markFailed(id: string, ms: number): Promise<void> {
    this.#until.set(id, Math.max(this.#until.get(id) ?? 0, Date.now() + ms));
  }
}
