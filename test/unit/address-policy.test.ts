// The address policy on its own: classification tables, allow-list CIDRs and
// the guarded DNS lookup. No sockets; the lookups here are fakes.
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { AddressPolicyError, AddressRefusedError, classifyAddress, createAddressPolicy, createGuardedLookup } from '../../src/http/address-policy';

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['169.254.1.1', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['169.254.169.254', 'cloudMetadata'],
    ['100.100.100.200', 'cloudMetadata'],
    ['168.63.129.16', 'cloudMetadata'],
    ['fd00:ec2::254', 'cloudMetadata'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.254', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['::7f00:1', 'reserved'], // deprecated IPv4-compatible form, outside 2000::/3
    ['64:ff9b:1::a00:1', 'rfc6052'], // local-use NAT64, layout unknown
    ['fec0::1', 'deprecatedSiteLocal'],
    ['100::1', 'discard'],
    ['not-an-ip', 'invalid'],
  ])('refuses %s as %s', (address, cls) => {
    const c = classifyAddress(address);
    expect(c.class).toBe(cls);
    expect(c.public).toBe(false);
  });

  it.each([
    ['::ffff:127.0.0.1', 'ipv4Mapped', '127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'ipv4Mapped', '127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'ipv4Mapped', '169.254.169.254', 'cloudMetadata'],
    ['::ffff:0:10.0.0.1', 'rfc6145', '10.0.0.1', 'private'],
    ['64:ff9b::10.0.0.1', 'nat64', '10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'nat64', '169.254.169.254', 'cloudMetadata'],
    ['2002:c0a8:0101::1', '6to4', '192.168.1.1', 'private'],
  ])('classifies %s by its embedded IPv4 (%s %s: %s)', (address, form, ipv4, cls) => {
    expect(classifyAddress(address)).toEqual({ class: cls, public: false, embedded: { form, ipv4 } });
  });

  it.each(['93.184.215.14', '8.8.8.8', '1.1.1.1', '2606:4700::1111', '2a00:1450:4001::200e', '192.175.48.1'])('allows public %s', (address) => {
    expect(classifyAddress(address).public).toBe(true);
  });

  it('allows embedded forms of public addresses', () => {
    expect(classifyAddress('::ffff:8.8.8.8')).toMatchObject({ public: true, embedded: { form: 'ipv4Mapped', ipv4: '8.8.8.8' } });
    expect(classifyAddress('64:ff9b::808:808')).toMatchObject({ public: true, embedded: { form: 'nat64', ipv4: '8.8.8.8' } });
  });
});

describe('createAddressPolicy', () => {
  it('refuses by default and names the class', () => {
    const policy = createAddressPolicy();
    expect(policy.check('8.8.8.8')).toEqual({ allowed: true });
    expect(policy.check('127.0.0.1')).toEqual({ allowed: false, class: 'loopback' });
    expect(policy.check('[::1]')).toEqual({ allowed: false, class: 'loopback' });
    expect(policy.check('::ffff:10.0.0.1')).toEqual({
      allowed: false,
      class: 'private',
      embedded: { form: 'ipv4Mapped', ipv4: '10.0.0.1' },
    });
  });

  it('allows configured CIDRs, including embedded forms of them', () => {
    const policy = createAddressPolicy({ allow: ['10.0.0.0/8', '127.0.0.1/32', '::1/128', 'fd00::/8'] });
    expect(policy.check('10.200.0.1')).toEqual({ allowed: true });
    expect(policy.check('::ffff:10.200.0.1')).toEqual({ allowed: true });
    expect(policy.check('127.0.0.1')).toEqual({ allowed: true });
    expect(policy.check('127.0.0.2')).toEqual({ allowed: false, class: 'loopback' });
    expect(policy.check('::1')).toEqual({ allowed: true });
    expect(policy.check('fd12::1')).toEqual({ allowed: true });
    expect(policy.check('fc00::1')).toEqual({ allowed: false, class: 'uniqueLocal' });
    expect(policy.check('192.168.0.1')).toEqual({ allowed: false, class: 'private' });
    // Metadata is refused unless its own range is allowed.
    expect(policy.check('169.254.169.254')).toEqual({ allowed: false, class: 'cloudMetadata' });
    expect(createAddressPolicy({ allow: ['169.254.0.0/16'] }).check('169.254.169.254')).toEqual({ allowed: true });
  });

  it.each([
    ['10.0.0.0', 'missing /PREFIX'],
    ['127.0.0.1/33', 'not an IPv4 or IPv6 CIDR'],
    ['::1/129', 'not an IPv4 or IPv6 CIDR'],
    ['10/8', 'not an IPv4 or IPv6 CIDR'],
    ['0x7f.0.0.1/32', 'not an IPv4 or IPv6 CIDR'],
    ['example.com/24', 'not an IPv4 or IPv6 CIDR'],
    ['10.0.0.0/', 'not an IPv4 or IPv6 CIDR'],
    ['', 'missing /PREFIX'],
  ])('rejects allow entry %j (%s)', (entry, reason) => {
    let caught: unknown;
    try {
      createAddressPolicy({ allow: [entry] });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AddressPolicyError);
    const err = caught as AddressPolicyError;
    expect(err.code).toBe('INVALID_ALLOW_ADDRESS');
    expect(err.entry).toBe(entry);
    expect(err.message).toContain(reason);
  });
});

describe('createGuardedLookup', () => {
  function fakeLookup(answers: LookupAddress[]): { lookup: LookupFunction; calls: unknown[] } {
    const calls: unknown[] = [];
    const lookup: LookupFunction = (hostname, options, callback) => {
      calls.push({ hostname, options });
      process.nextTick(() => callback(null, answers));
    };
    return { lookup, calls };
  }

  function run(lookup: LookupFunction, all: boolean): Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }> {
    return new Promise((resolve) => lookup('host.test', { all }, (err, address, family) => resolve({ err, address, family })));
  }

  it('drops refused answers and answers in the shape asked for', async () => {
    const { lookup, calls } = fakeLookup([
      { address: '10.0.0.1', family: 4 },
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ]);
    const guarded = createGuardedLookup(createAddressPolicy(), lookup);
    expect(await run(guarded, true)).toEqual({
      err: null,
      address: [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
      ],
      family: undefined,
    });
    expect(await run(guarded, false)).toEqual({ err: null, address: '93.184.215.14', family: 4 });
    // The inner lookup is always asked for every address.
    expect(calls).toEqual([
      { hostname: 'host.test', options: { all: true } },
      { hostname: 'host.test', options: { all: true } },
    ]);
  });

  it('fails with AddressRefusedError when every answer is refused', async () => {
    const { lookup } = fakeLookup([
      { address: '::1', family: 6 },
      { address: '127.0.0.1', family: 4 },
    ]);
    const { err } = await run(createGuardedLookup(createAddressPolicy(), lookup), true);
    expect(err).toBeInstanceOf(AddressRefusedError);
    const refused = err as AddressRefusedError;
    expect(refused.code).toBe('ERR_ADDRESS_REFUSED');
    expect(refused).toMatchObject({ host: 'host.test', address: '::1', addressClass: 'loopback' });
    expect(refused.message).toContain('host.test');
    expect(refused.message).toContain('::1');
    expect(refused.message).toContain('loopback');
  });

  it('passes DNS errors through', async () => {
    const failure = Object.assign(new Error('getaddrinfo ENOTFOUND host.test'), { code: 'ENOTFOUND' });
    const lookup: LookupFunction = (_h, _o, callback) => process.nextTick(() => callback(failure, ''));
    const { err } = await run(createGuardedLookup(createAddressPolicy(), lookup), false);
    expect(err).toBe(failure);
  });
});
