// The DNS cache behind every crawler connection, against a real DNS server on
// loopback (test/support/dns-server.ts) through node's own resolver. Time is
// a clock the tests move, so TTLs expire without waiting.
import type { LookupAddress } from 'node:dns';
import fs from 'node:fs';
import path from 'node:path';
import type { LookupFunction } from 'node:net';
import { DnsCache, SYSTEM_HOSTS_FILE, sharedDnsCache, type DnsCacheOptions } from '../../src/http/dns-cache';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { tempDirs } from '../support/temp-dirs';

let dns: TestDnsServer;
let now = 1_000_000;
const clock = () => now;

beforeEach(async () => {
  now = 1_000_000;
  dns = await startDnsServer({
    'site.test': { addresses: ['192.0.2.10', '192.0.2.11', '2001:db8::10'], ttlSeconds: 30 },
    'zero.test': { addresses: ['192.0.2.20'], ttlSeconds: 0 },
    'long.test': { addresses: ['192.0.2.30'], ttlSeconds: 86_400 },
    'v6only.test': { addresses: ['2001:db8::40'], ttlSeconds: 30 },
    'refused.test': { addresses: [], ttlSeconds: 30, rcode: 5 },
  });
});
afterEach(() => dns.close());

const cacheWith = (opts: DnsCacheOptions = {}) => new DnsCache({ resolver: dns.resolver(), now: clock, ...opts });

function lookup(fn: LookupFunction, host: string, options: { all?: boolean; family?: number } = {}) {
  return new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((resolve) =>
    fn(host, options, (err, address, family) => resolve({ err, address, family })),
  );
}

test('a name is resolved once per TTL: A and AAAA, IPv4 first, with the TTL the server gave', async () => {
  const cache = cacheWith();
  const first = await cache.resolve('site.test');
  expect(first).toEqual([
    { address: '192.0.2.10', family: 4 },
    { address: '192.0.2.11', family: 4 },
    { address: '2001:db8::10', family: 6 },
  ]);
  expect(dns.queries.sort()).toEqual(['site.test/A', 'site.test/AAAA']);

  now += 29_000;
  expect(await cache.resolve('SITE.test.')).toEqual(first);
  expect(dns.queriesFor('site.test')).toBe(2);

  now += 2_000; // past the 30 s TTL
  await cache.resolve('site.test');
  expect(dns.queriesFor('site.test')).toBe(4);
  expect(cache.resolutions).toBe(2);
});

test('connections to one host at the same moment share one query', async () => {
  const cache = cacheWith();
  const answers = await Promise.all(Array.from({ length: 10 }, () => cache.resolve('site.test')));
  expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
  expect(dns.queriesFor('site.test')).toBe(2);
});

test('a TTL of 0 is not cached; a long TTL is cut to maxTtlMs', async () => {
  const cache = cacheWith({ maxTtlMs: 60_000 });
  await cache.resolve('zero.test');
  await cache.resolve('zero.test');
  expect(dns.queriesFor('zero.test')).toBe(4);

  await cache.resolve('long.test');
  now += 59_000;
  await cache.resolve('long.test');
  expect(dns.queriesFor('long.test')).toBe(2);
  now += 2_000;
  await cache.resolve('long.test');
  expect(dns.queriesFor('long.test')).toBe(4);
});

test('no such name: ENOTFOUND, remembered for negativeTtlMs', async () => {
  const cache = cacheWith({ negativeTtlMs: 10_000 });
  await expect(cache.resolve('missing.test')).rejects.toMatchObject({ code: 'ENOTFOUND', hostname: 'missing.test' });
  await expect(cache.resolve('missing.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  expect(dns.queriesFor('missing.test')).toBe(2);
  now += 10_001;
  dns.records.set('missing.test', { addresses: ['192.0.2.50'], ttlSeconds: 30 });
  expect(await cache.resolve('missing.test')).toEqual([{ address: '192.0.2.50', family: 4 }]);
});

test('a name DNS cannot hold (a label over 63 octets) is ENOTFOUND without a query or the system lookup', async () => {
  const calls: string[] = [];
  const cache = cacheWith({ systemLookup: (hostname, _o, callback) => (calls.push(hostname), callback(null, '192.0.2.1', 4)) });
  await expect(cache.resolve(`nx-${'x'.repeat(64)}.test`)).rejects.toMatchObject({ code: 'ENOTFOUND' });
  expect(dns.queries).toEqual([]);
  expect(calls).toEqual([]);
});

test('as net.connect lookup: options.all, options.family, and ENODATA for a family the name lacks', async () => {
  const cache = cacheWith();
  expect(await lookup(cache.lookup, 'site.test')).toEqual({ err: null, address: '192.0.2.10', family: 4 });
  expect((await lookup(cache.lookup, 'site.test', { all: true })).address).toHaveLength(3);
  expect(await lookup(cache.lookup, 'site.test', { family: 6 })).toEqual({ err: null, address: '2001:db8::10', family: 6 });
  expect(await lookup(cache.lookup, 'v6only.test', { all: true })).toEqual({ err: null, address: [{ address: '2001:db8::40', family: 6 }], family: undefined });
  const { err } = await lookup(cache.lookup, 'v6only.test', { family: 4 });
  expect(err?.code).toBe('ENODATA');
  // The family filter works on the cached answer: one resolution per name.
  expect(cache.resolutions).toBe(2);
});

describe('the system lookup', () => {
  function systemLookup(answer: string[] | NodeJS.ErrnoException) {
    const calls: string[] = [];
    const fn: LookupFunction = (hostname, options, callback) => {
      calls.push(hostname);
      process.nextTick(() => {
        if (!Array.isArray(answer)) callback(answer, '');
        else
          callback(
            null,
            answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
          );
      });
    };
    return { fn, calls };
  }

  test('answers single-label names and localhost, cached for systemTtlMs, never asking the DNS', async () => {
    const sys = systemLookup(['::1', '127.0.0.1']);
    const cache = cacheWith({ systemLookup: sys.fn, systemTtlMs: 5_000 });
    expect(await cache.resolve('redis')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    await cache.resolve('redis');
    await cache.resolve('localhost');
    await cache.resolve('app.localhost');
    expect(sys.calls).toEqual(['redis', 'localhost', 'app.localhost']);
    now += 5_001;
    await cache.resolve('redis');
    expect(sys.calls).toEqual(['redis', 'localhost', 'app.localhost', 'redis']);
    expect(dns.queries).toEqual([]);
  });

  test('takes over when the name servers refuse; its failures are remembered for failureTtlMs', async () => {
    const sys = systemLookup(['192.0.2.60']);
    const cache = cacheWith({ systemLookup: sys.fn });
    expect(await cache.resolve('refused.test')).toEqual([{ address: '192.0.2.60', family: 4 }]);
    expect(dns.queriesFor('refused.test')).toBe(2);
    expect(sys.calls).toEqual(['refused.test']);

    const failing = systemLookup(Object.assign(new Error('getaddrinfo EAI_AGAIN x'), { code: 'EAI_AGAIN' }));
    const cache2 = cacheWith({ systemLookup: failing.fn, failureTtlMs: 2_000 });
    await expect(cache2.resolve('refused.test')).rejects.toMatchObject({ code: 'EAI_AGAIN' });
    await expect(cache2.resolve('refused.test')).rejects.toMatchObject({ code: 'EAI_AGAIN' });
    expect(failing.calls).toHaveLength(1);
    now += 2_001;
    await expect(cache2.resolve('refused.test')).rejects.toMatchObject({ code: 'EAI_AGAIN' });
    expect(failing.calls).toHaveLength(2);
  });

  test('at most systemConcurrency lookups at once (each holds a libuv thread), the others queued', async () => {
    let running = 0;
    let most = 0;
    const slow: LookupFunction = (_hostname, _options, callback) => {
      running++;
      most = Math.max(most, running);
      setTimeout(() => {
        running--;
        callback(null, [{ address: '192.0.2.61', family: 4 }]);
      }, 5);
    };
    const cache = cacheWith({ systemLookup: slow, systemConcurrency: 2 });
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => cache.resolve(`box${i}`)));
    expect(answers.every((a) => a[0].address === '192.0.2.61')).toBe(true);
    expect(most).toBe(2);
  });
});

describe('the hosts file', () => {
  const dirs = tempDirs('dns-hosts-');
  function hostsFile(text: string): string {
    const file = path.join(dirs(), 'hosts');
    fs.writeFileSync(file, text);
    return file;
  }

  test('answers the names it lists before the DNS is asked (the DNS would say NXDOMAIN), and follows changes', async () => {
    const file = hostsFile('# comment\n127.0.0.1 localhost\n192.0.2.90  listed.test  Alias.test. # trailing\n::1 listed.test\n\n');
    const sys = { calls: [] as string[] };
    const cache = cacheWith({ hostsFile: file, systemTtlMs: 1_000, hostsRecheckMs: 500, systemLookup: (h, _o, cb) => (sys.calls.push(h), cb(null, '192.0.2.1', 4)) });
    expect(await cache.resolve('listed.test')).toEqual([
      { address: '192.0.2.90', family: 4 },
      { address: '::1', family: 6 },
    ]);
    expect(await cache.resolve('alias.test')).toEqual([{ address: '192.0.2.90', family: 4 }]);
    expect(await cache.resolve('localhost')).toEqual([{ address: '127.0.0.1', family: 4 }]);
    expect(dns.queries).toEqual([]);
    expect(sys.calls).toEqual([]);
    // Not listed: the DNS's NXDOMAIN stands.
    await expect(cache.resolve('unlisted.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });

    fs.writeFileSync(file, '192.0.2.91 listed.test\n');
    now += 1_001;
    expect(await cache.resolve('listed.test')).toEqual([{ address: '192.0.2.91', family: 4 }]);
    await expect(cache.resolve('alias.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  test('names asked while the file is first read wait for it', async () => {
    const file = hostsFile(Array.from({ length: 50 }, (_, i) => `192.0.2.${i + 1} n${i}.test`).join('\n'));
    const cache = cacheWith({ hostsFile: file });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => cache.resolve(`n${i}.test`)));
    expect(answers.map((a) => a[0].address)).toEqual(Array.from({ length: 50 }, (_, i) => `192.0.2.${i + 1}`));
    expect(dns.queries).toEqual([]);
  });

  test('a missing hosts file lists nothing', async () => {
    const cache = cacheWith({ hostsFile: path.join(dirs(), 'absent') });
    expect(await cache.resolve('site.test')).toHaveLength(3);
  });

  test("the process's shared cache reads the hosts file its builder names, one cache per file", async () => {
    const file = hostsFile('192.0.2.95 shared-listed.test\n');
    const cache = sharedDnsCache(file);
    expect(await cache.resolve('shared-listed.test')).toEqual([{ address: '192.0.2.95', family: 4 }]);
    expect(sharedDnsCache(file)).toBe(cache);
    // Another file (or the system's, the default) is another cache: the first to ask does not choose for the rest.
    const other = hostsFile('192.0.2.96 shared-listed.test\n');
    expect(await sharedDnsCache(other).resolve('shared-listed.test')).toEqual([{ address: '192.0.2.96', family: 4 }]);
    expect(sharedDnsCache()).not.toBe(cache);
    expect(sharedDnsCache()).toBe(sharedDnsCache(SYSTEM_HOSTS_FILE));
  });
});

test('IP literals are answered without a query', async () => {
  const cache = cacheWith();
  expect(await cache.resolve('192.0.2.1')).toEqual([{ address: '192.0.2.1', family: 4 }]);
  expect(await cache.resolve('2001:db8::1')).toEqual([{ address: '2001:db8::1', family: 6 }]);
  expect(dns.queries).toEqual([]);
});

test('holds at most maxEntries names, dropping the least recently used', async () => {
  for (const n of ['a', 'b', 'c']) dns.records.set(`${n}.test`, { addresses: ['192.0.2.70'], ttlSeconds: 300 });
  const cache = cacheWith({ maxEntries: 2 });
  await cache.resolve('a.test');
  await cache.resolve('b.test');
  await cache.resolve('a.test'); // a is now the most recent
  await cache.resolve('c.test'); // evicts b
  expect(cache.size).toBe(2);
  await cache.resolve('a.test');
  expect(dns.queriesFor('a.test')).toBe(2);
  await cache.resolve('b.test');
  expect(dns.queriesFor('b.test')).toBe(4);
});
