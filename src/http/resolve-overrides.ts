// curl-style `--resolve HOST:PORT:ADDR` overrides: pin a (host, port) pair to
// an address without touching DNS, e.g. to crawl a staging box under its
// production name or to point made-up hostnames at a local test server.
//
// Why the override is applied in the undici connector rather than through
// net.connect's `lookup` option: a lookup function only receives the hostname,
// never the port, so it cannot honour per-port entries (`a.test:80` and
// `a.test:8443` pointing at different boxes). undici's connector, on the other
// hand, is called with `{ hostname, port, protocol, servername }` for every new
// socket. Wrapping `buildConnector` lets us swap `hostname` for the pinned
// address there while the Host header (built by undici from the request
// origin, not from the connector) and TLS SNI (`servername`) keep the
// original name. An IP literal as `host` also makes net skip DNS entirely.
// The alternative, one connector per port each with a port-bound lookup,
// would fragment undici's TLS session cache for no gain. `createLookup` is
// still exported for code that drives net/tls directly.
//
// The connector is also where the address policy (address-policy.ts) is
// enforced, because it is the one place every new socket passes through:
// first requests, every redirect hop, reconnects after keep-alive ends. A
// pinned address is trusted (the operator typed it); an IP-literal host is
// checked before dialling; any other name is resolved by a guarded lookup
// that drops refused answers before net.connect sees them, so the address
// checked is the address dialled and a DNS answer that changes between two
// connections (rebinding) is checked again each time. The peer address of
// every socket is checked once more after connecting as a backstop.
import * as dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { buildConnector } from 'undici';
import { AddressRefusedError, createGuardedLookup, type AddressPolicy } from './address-policy';
import { CrawlerError } from '../errors';

export interface ResolveTarget {
  /** Lower-cased hostname without trailing dot or IPv6 brackets. */
  host: string;
  port: number;
  /** IP literal without brackets. */
  address: string;
  family: 4 | 6;
}

/** Keyed by `${host}:${port}`; build it with parseResolveEntries. */
export type ResolveOverrides = ReadonlyMap<string, ResolveTarget>;

export class ResolveOverrideError extends CrawlerError<'INVALID_RESOLVE_ENTRY'> {
  readonly entry: string;

  constructor(entry: string, reason: string) {
    super('INVALID_RESOLVE_ENTRY', `Invalid resolve entry ${JSON.stringify(entry)}: ${reason} (expected HOST:PORT:ADDR, e.g. example.com:443:127.0.0.1 or example.com:443:[::1])`);
    this.name = 'ResolveOverrideError';
    this.entry = entry;
  }
}

const HOSTNAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

function normaliseHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

function overrideKey(host: string, port: number): string {
  return `${normaliseHost(host)}:${port}`;
}

export function parseResolveEntry(entry: string): ResolveTarget {
  const text = entry.trim();
  if (text === '') throw new ResolveOverrideError(entry, 'empty entry');

  // An IPv6 HOST must be bracketed, otherwise its colons would be ambiguous.
  let host: string;
  let rest: string;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0 || text[close + 1] !== ':') throw new ResolveOverrideError(entry, 'unterminated [IPv6] host');
    host = text.slice(1, close);
    rest = text.slice(close + 2);
  } else {
    const colon = text.indexOf(':');
    if (colon < 0) throw new ResolveOverrideError(entry, 'missing PORT and ADDR');
    host = text.slice(0, colon);
    rest = text.slice(colon + 1);
  }

  const colon = rest.indexOf(':');
  if (colon < 0) throw new ResolveOverrideError(entry, 'missing ADDR');
  const portText = rest.slice(0, colon);
  let address = rest.slice(colon + 1);

  host = normaliseHost(host);
  if (host === '') throw new ResolveOverrideError(entry, 'empty HOST');
  if (host === '*') throw new ResolveOverrideError(entry, 'wildcard HOST is not supported');
  if (isIP(host) === 0 && !HOSTNAME.test(host)) throw new ResolveOverrideError(entry, `invalid HOST ${JSON.stringify(host)}`);

  if (!/^\d{1,5}$/.test(portText)) throw new ResolveOverrideError(entry, `invalid PORT ${JSON.stringify(portText)}`);
  const port = Number(portText);
  if (port < 1 || port > 65535) throw new ResolveOverrideError(entry, `PORT ${port} out of range 1-65535`);

  if (address.includes(',')) throw new ResolveOverrideError(entry, 'only one ADDR per entry is supported');
  if (address.startsWith('[') && address.endsWith(']')) address = address.slice(1, -1);
  const family = isIP(address);
  if (family === 0) throw new ResolveOverrideError(entry, `ADDR ${JSON.stringify(address)} is not an IPv4 or [IPv6] address`);

  return { host, port, address, family: family as 4 | 6 };
}

/** Parses all entries; a repeated HOST:PORT is an error rather than a silent last-wins. */
export function parseResolveEntries(entries: readonly string[] | undefined): ResolveOverrides {
  const map = new Map<string, ResolveTarget>();
  for (const entry of entries ?? []) {
    const target = parseResolveEntry(entry);
    const key = overrideKey(target.host, target.port);
    if (map.has(key)) throw new ResolveOverrideError(entry, `duplicate entry for ${key}`);
    map.set(key, target);
  }
  return map;
}

export function findOverride(overrides: ResolveOverrides, host: string, port: number): ResolveTarget | undefined {
  return overrides.get(overrideKey(host, port));
}

/**
 * A net.connect-compatible `lookup` bound to one port (the lookup contract has
 * no port argument). Handles `options.all`, which Node 20's net uses when
 * autoSelectFamily (happy eyeballs) is on. Non-overridden names go to
 * `fallback` (dns.lookup unless given) unchanged; pass
 * `createGuardedLookup(policy)` there to apply the address policy.
 */
export function createLookup(overrides: ResolveOverrides, port: number, fallback: LookupFunction = dns.lookup as LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    const target = findOverride(overrides, hostname, port);
    if (!target) {
      fallback(hostname, options, callback);
      return;
    }
    // The pin wins even if `options.family` asks for the other family, as
    // with curl: the user said exactly where this name lives.
    process.nextTick(() => {
      if (options.all) callback(null, [{ address: target.address, family: target.family }]);
      else callback(null, target.address, target.family);
    });
  };
}

export function defaultPort(protocol: string): number {
  return protocol === 'https:' ? 443 : 80;
}

export interface ConnectorGuard {
  /** null: connect anywhere (the policy is off). */
  policy: AddressPolicy | null;
  /** DNS lookup for names without a pin; default dns.lookup. Must honour options.all. */
  lookup?: LookupFunction;
}

/**
 * An undici connector (for Agent/Pool/Client `connect`) that dials the pinned
 * address for overridden (host, port) pairs, enforces `guard.policy` on every
 * other connection and otherwise behaves exactly like `buildConnector(options)`.
 */
export function createResolvingConnector(
  overrides: ResolveOverrides,
  options: buildConnector.BuildOptions = {},
  guard: ConnectorGuard = { policy: null },
): buildConnector.connector {
  const { policy } = guard;
  const lookup = policy ? createGuardedLookup(policy, guard.lookup) : guard.lookup;
  // A pinned address is an IP literal, for which net skips `lookup` entirely,
  // so the guarded lookup never second-guesses a pin.
  const connect = buildConnector(lookup ? { ...options, lookup } : options);
  if (overrides.size === 0 && !policy) return connect;
  return (opts, callback) => {
    // undici passes the URL's port, which is '' for the scheme's default.
    const port = opts.port ? Number(opts.port) : defaultPort(opts.protocol);
    const target = findOverride(overrides, opts.hostname, port);
    const originalHost = normaliseHost(opts.hostname);
    if (target) {
      // undici derives SNI from `host` when servername is unset, but be explicit
      // so the TLS name can never become the pinned IP. SNI must not carry an
      // IP literal, hence undefined for IP hosts.
      const servername = opts.servername || (isIP(originalHost) === 0 ? originalHost : undefined);
      connect({ ...opts, hostname: target.address, servername }, callback);
      return;
    }
    if (!policy) {
      connect(opts, callback);
      return;
    }
    // Literal hosts (http://10.0.0.1/, http://[::1]/, and http://0x7f.1/ which
    // the WHATWG URL parser has already turned into 127.0.0.1) skip DNS, so
    // the lookup cannot see them: check them here, before dialling.
    if (isIP(originalHost) !== 0) {
      const verdict = policy.check(originalHost);
      if (!verdict.allowed) {
        const error = new AddressRefusedError(originalHost, originalHost, verdict);
        process.nextTick(() => callback(error, null));
        return;
      }
    }
    connect(opts, (err, socket) => {
      if (err || !socket) {
        callback(err ?? new Error('connector returned no socket'), null);
        return;
      }
      // Backstop: whatever path net took, the peer we are connected to must
      // pass too. No request byte has been written yet.
      const remote = socket.remoteAddress;
      const verdict = remote ? policy.check(remote) : { allowed: true as const };
      if (!verdict.allowed && remote) {
        socket.destroy();
        callback(new AddressRefusedError(originalHost, remote, verdict), null);
        return;
      }
      callback(null, socket);
    });
  };
}
