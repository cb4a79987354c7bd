// Which addresses the crawler may connect to. A crawler follows URLs that
// strangers wrote (links, redirects, sitemaps), so without a policy any page
// could make it fetch http://169.254.169.254/ (cloud credentials), an admin
// port on 127.0.0.1 or a box on the operator's LAN (SSRF). The default is
// deny-by-default: only globally routable unicast is allowed; everything else
// is refused unless an operator allows its range explicitly.
//
// Classification uses ipaddr.js's range tables rather than our own CIDR math.
// The policy is enforced where connections are made (resolve-overrides.ts
// wires `createGuardedLookup` and a literal-address check into the undici
// connector), never on URLs, so it holds for every redirect hop and for a name
// whose DNS answer changes between a check and a connect (rebinding).
import * as dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import * as ipaddr from 'ipaddr.js';
import { CrawlerError } from '../errors';

type IP = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [IP, number];

/** How an IPv6 address carries an IPv4 destination. */
export type EmbeddingForm = 'ipv4Mapped' | 'rfc6145' | 'nat64' | '6to4';

export interface AddressClassification {
  /**
   * ipaddr.js's range name ('loopback', 'private', 'linkLocal',
   * 'uniqueLocal', 'carrierGradeNat', 'reserved', ...), 'cloudMetadata' for
   * well-known metadata endpoints, 'unicast' for public addresses, 'invalid'
   * for something that is not an IP address. For an IPv6 address embedding an
   * IPv4 one, the class of the embedded address.
   */
  class: string;
  /** Globally routable: fetched without an allow entry. */
  public: boolean;
  embedded?: { form: EmbeddingForm; ipv4: string };
}

export type AddressVerdict = { allowed: true } | { allowed: false; class: string; embedded?: { form: EmbeddingForm; ipv4: string } };

export interface AddressPolicy {
  /** `address` is an IP literal without brackets (a zone suffix is accepted). */
  check(address: string): AddressVerdict;
}

export interface AddressPolicyOptions {
  /** CIDRs to allow although their class is refused, e.g. '10.0.0.0/8', '::1/128'. */
  allow?: readonly string[];
}

/** A bad `allowAddresses` entry; thrown when the client is built. */
export class AddressPolicyError extends CrawlerError<'INVALID_ALLOW_ADDRESS'> {
  readonly entry: string;

  constructor(entry: string, reason: string) {
    super('INVALID_ALLOW_ADDRESS', `Invalid allowAddresses entry ${JSON.stringify(entry)}: ${reason} (expected a CIDR such as 10.0.0.0/8, 127.0.0.1/32 or ::1/128)`);
    this.name = 'AddressPolicyError';
    this.entry = entry;
  }
}

/**
 * Raised inside the connector when a connection would reach a refused
 * address. It does not know the URL; classifyError (fetch-error.ts) turns it
 * into a non-retryable FetchError 'ADDRESS_REFUSED' by its code.
 */
export class AddressRefusedError extends CrawlerError<'ERR_ADDRESS_REFUSED'> {
  readonly host: string;
  readonly address: string;
  readonly addressClass: string;

  constructor(host: string, address: string, verdict: { class: string; embedded?: { form: EmbeddingForm; ipv4: string } }) {
    const shown = verdict.embedded ? `${address} (${verdict.embedded.form} ${verdict.embedded.ipv4})` : address;
    super(
      'ERR_ADDRESS_REFUSED',
      `host ${host} is at ${shown}, address class ${verdict.class}: refused by the address policy ` + '(allow the range with allowAddresses or pin the host with --resolve)',
    );
    this.name = 'AddressRefusedError';
    this.host = host;
    this.address = address;
    this.addressClass = verdict.class;
  }
}

// Range names from ipaddr.js that are globally reachable unicast. AS112 (DNS
// sink) and AMT relays are anycast services on the public internet.
const PUBLIC_RANGES = new Set(['unicast', 'as112', 'amt', 'as112v6']);

// Metadata services answer with credentials to anyone who can reach them.
// Most also fall in a refused class (link-local, CGNAT, ULA); naming them
// makes the refusal message say what was at stake. 168.63.129.16 (Azure
// WireServer) is otherwise a public address, so it must be listed.
const CLOUD_METADATA: readonly Cidr[] = [
  '169.254.169.254/32', // AWS, GCP, Azure, OpenStack, DigitalOcean, ...
  '100.100.100.200/32', // Alibaba Cloud
  '168.63.129.16/32', // Azure WireServer
  'fd00:ec2::254/128', // AWS IMDS over IPv6
].map((cidr) => ipaddr.parseCIDR(cidr));

// All IPv6 global unicast is allocated from 2000::/3; ipaddr.js calls anything
// outside its special ranges 'unicast', including unassigned space such as the
// deprecated IPv4-compatible ::a.b.c.d form.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
// RFC 6052's well-known NAT64 prefix puts the IPv4 address in the last 32
// bits. The local-use 64:ff9b:1::/48 (RFC 8215) lets operators choose the
// layout, so it stays refused as a whole.
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

function inRange(ip: IP, [network, bits]: Cidr): boolean {
  return ip.kind() === network.kind() && ip.match(network, bits);
}

function ipv4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

// A connection to one of these forms ends up at (or is translated to) the
// embedded IPv4 address, so that address is what gets classified:
// ::ffff:127.0.0.1 on a dual-stack socket *is* 127.0.0.1.
function embeddedIPv4(ip: ipaddr.IPv6): { form: EmbeddingForm; ipv4: ipaddr.IPv4 } | null {
  const p = ip.parts;
  switch (ip.range()) {
    case 'ipv4Mapped':
      return { form: 'ipv4Mapped', ipv4: ip.toIPv4Address() };
    case 'rfc6145': // ::ffff:0:a.b.c.d
      return { form: 'rfc6145', ipv4: ipv4FromParts(p[6], p[7]) };
    case 'rfc6052':
      return inRange(ip, NAT64_WELL_KNOWN) ? { form: 'nat64', ipv4: ipv4FromParts(p[6], p[7]) } : null;
    case '6to4': // 2002:AABB:CCDD::/48
      return { form: '6to4', ipv4: ipv4FromParts(p[1], p[2]) };
    default:
      return null;
  }
}

function classifyIp(ip: IP): AddressClassification {
  if (CLOUD_METADATA.some((cidr) => inRange(ip, cidr))) return { class: 'cloudMetadata', public: false };
  if (ip.kind() === 'ipv4') {
    const range = (ip as ipaddr.IPv4).range();
    return { class: range, public: PUBLIC_RANGES.has(range) };
  }
  const v6 = ip as ipaddr.IPv6;
  const embedded = embeddedIPv4(v6);
  if (embedded) {
    const inner = classifyIp(embedded.ipv4);
    return { class: inner.class, public: inner.public, embedded: { form: embedded.form, ipv4: embedded.ipv4.toString() } };
  }
  const range = v6.range();
  if (range === 'unicast' && !inRange(v6, GLOBAL_UNICAST_V6)) return { class: 'reserved', public: false };
  return { class: range, public: PUBLIC_RANGES.has(range) };
}

function parseIp(address: string): IP | null {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  try {
    return ipaddr.parse(text);
  } catch {
    return null;
  }
}

/** The class of an IP literal; not-an-address is { class: 'invalid', public: false }. */
export function classifyAddress(address: string): AddressClassification {
  const ip = parseIp(address);
  return ip ? classifyIp(ip) : { class: 'invalid', public: false };
}

function parseAllowEntry(entry: string): Cidr {
  const text = entry.trim();
  if (!text.includes('/')) throw new AddressPolicyError(entry, 'missing /PREFIX (use /32 or /128 for a single address)');
  // Four-part decimal only: ipaddr.js would also read inet_aton shorthands
  // such as '10/8', which are more likely typos than intent.
  const valid = text.includes(':') ? ipaddr.IPv6.isValidCIDR(text) : ipaddr.IPv4.isValidCIDRFourPartDecimal(text);
  if (!valid) throw new AddressPolicyError(entry, 'not an IPv4 or IPv6 CIDR');
  return ipaddr.parseCIDR(text);
}

export function createAddressPolicy(options: AddressPolicyOptions = {}): AddressPolicy {
  // Parsed up front so a bad entry fails at construction, not on a fetch.
  const allow = (options.allow ?? []).map(parseAllowEntry);
  return {
    check(address: string): AddressVerdict {
      const ip = parseIp(address);
      if (!ip) return { allowed: false, class: 'invalid' };
      const c = classifyIp(ip);
      if (c.public) return { allowed: true };
      // An allow entry may name either the address as seen or the IPv4
      // address it embeds ('10.0.0.0/8' covers ::ffff:10.0.0.1).
      const embedded = c.embedded ? ipaddr.parse(c.embedded.ipv4) : null;
      if (allow.some((cidr) => inRange(ip, cidr) || (embedded !== null && inRange(embedded, cidr)))) return { allowed: true };
      return c.embedded ? { allowed: false, class: c.class, embedded: c.embedded } : { allowed: false, class: c.class };
    },
  };
}

/**
 * Wraps a DNS lookup (default dns.lookup) so that refused addresses never
 * reach net.connect. It always asks the inner lookup for all addresses,
 * drops the refused ones and answers in the shape the caller asked for
 * (`options.all` or not; Node's happy eyeballs asks for all). Only when
 * every address is refused does it fail, with an AddressRefusedError naming
 * the first one. The inner lookup must honour `options.all`.
 */
export function createGuardedLookup(policy: AddressPolicy, lookup: LookupFunction = dns.lookup as LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (err, result, family) => {
      if (err) {
        callback(err, '');
        return;
      }
      const answers: dns.LookupAddress[] = typeof result === 'string' ? [{ address: result, family: family ?? (result.includes(':') ? 6 : 4) }] : result;
      const allowed: dns.LookupAddress[] = [];
      let refused: AddressRefusedError | null = null;
      for (const answer of answers) {
        const verdict = policy.check(answer.address);
        if (verdict.allowed) allowed.push(answer);
        else refused ??= new AddressRefusedError(hostname, answer.address, verdict);
      }
      if (allowed.length === 0) {
        const error: NodeJS.ErrnoException = refused ?? Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
        callback(error, '');
        return;
      }
      if (options.all) callback(null, allowed);
      else callback(null, allowed[0].address, allowed[0].family);
    });
  };
}
