// Process settings → what reaches the Temporal SDK and ioredis. Nothing here
// connects: the point is that each variable lands in the right option (a
// certificate that silently stays unused looks exactly like a working setup
// until the server refuses the worker) and that bad combinations and
// malformed URLs stop the process with a message naming the culprit.
import type { ClusterOptions } from 'ioredis';
import { parseRedisUrl, processSettings, redactRedisUrl, RedisUrlError, temporalTlsEnabled } from '../../src/config/env';
import { redisClientOptions } from '../../src/redis/client';
import { temporalConnectionOptions } from '../../src/temporal/connect';

const files: Record<string, string> = {
  '/certs/client.pem': 'CLIENT CERT',
  '/certs/client.key': 'CLIENT KEY',
  '/certs/ca.pem': 'CA CERT',
};
const readFile = (p: string) => {
  if (!(p in files)) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
  return Buffer.from(files[p]);
};
const optionsFor = (env: Record<string, string>) => temporalConnectionOptions(processSettings(env), undefined, readFile);
const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : Buffer.from(b).toString());

describe('Temporal connection options', () => {
  test('no TLS variable: plaintext, as against the embedded dev server', () => {
    expect(optionsFor({})).toEqual({ address: '127.0.0.1:7233', tls: false });
  });

  test('mTLS: client pair, CA and server name all reach the TLS config', () => {
    const o = optionsFor({
      TEMPORAL_ADDRESS: 'my-ns.a1b2c.tmprl.cloud:7233',
      TEMPORAL_TLS_CLIENT_CERT_PATH: '/certs/client.pem',
      TEMPORAL_TLS_CLIENT_KEY_PATH: '/certs/client.key',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/certs/ca.pem',
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    });
    expect(o.address).toBe('my-ns.a1b2c.tmprl.cloud:7233');
    expect(o.apiKey).toBeUndefined();
    if (!o.tls) throw new Error('expected TLS');
    expect(text(o.tls.clientCertPair?.crt)).toBe('CLIENT CERT');
    expect(text(o.tls.clientCertPair?.key)).toBe('CLIENT KEY');
    expect(text(o.tls.serverRootCACertificate)).toBe('CA CERT');
    expect(o.tls.serverNameOverride).toBe('temporal.internal');
  });

  test('an API key alone turns TLS on with the system roots, as Temporal Cloud expects', () => {
    expect(optionsFor({ TEMPORAL_API_KEY: 'secret-key' })).toEqual({ address: '127.0.0.1:7233', tls: {}, apiKey: 'secret-key' });
  });

  test('TEMPORAL_TLS=false keeps an API key on a plaintext connection (e.g. a local proxy)', () => {
    expect(optionsFor({ TEMPORAL_API_KEY: 'k', TEMPORAL_TLS: 'false' })).toEqual({ address: '127.0.0.1:7233', tls: false, apiKey: 'k' });
  });

  test('TEMPORAL_TLS=true alone: TLS with no customisation', () => {
    expect(optionsFor({ TEMPORAL_TLS: 'true' }).tls).toEqual({});
    expect(temporalTlsEnabled(processSettings({ TEMPORAL_TLS: '1' }))).toBe(true);
  });

  test('the address argument wins over TEMPORAL_ADDRESS (clients of a stack found on disk)', () => {
    const o = temporalConnectionOptions(processSettings({ TEMPORAL_API_KEY: 'k' }), '10.0.0.5:7233', readFile);
    expect(o.address).toBe('10.0.0.5:7233');
    expect(o.apiKey).toBe('k');
  });

  test('an unreadable certificate names its variable and path', () => {
    expect(() => optionsFor({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/certs/missing.pem' })).toThrow(/TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read \/certs\/missing\.pem/);
  });

  test('half an mTLS pair, TLS paths with TLS off and a non-boolean TEMPORAL_TLS are refused', () => {
    expect(() => processSettings({ TEMPORAL_TLS_CLIENT_CERT_PATH: '/certs/client.pem' })).toThrow(/TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH go together/);
    expect(() => processSettings({ TEMPORAL_TLS_CLIENT_KEY_PATH: '/certs/client.key' })).toThrow(/go together/);
    expect(() => processSettings({ TEMPORAL_TLS: 'false', TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/certs/ca.pem' })).toThrow(
      /TEMPORAL_TLS is false, but TEMPORAL_TLS_SERVER_CA_CERT_PATH/,
    );
    expect(() => processSettings({ TEMPORAL_TLS: 'maybe' })).toThrow(/TEMPORAL_TLS must be true or false/);
  });
});

describe('REDIS_URL', () => {
  test('single servers: host, port, database, credentials, TLS', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379')).toEqual({ kind: 'single', tls: false, node: { host: '127.0.0.1', port: 6379 }, db: 0 });
    expect(parseRedisUrl('redis://cache')).toEqual({ kind: 'single', tls: false, node: { host: 'cache', port: 6379 }, db: 0 });
    expect(parseRedisUrl('rediss://:s3cret@redis.example.com:6380/2')).toEqual({
      kind: 'single',
      tls: true,
      node: { host: 'redis.example.com', port: 6380 },
      db: 2,
      password: 's3cret',
    });
    expect(parseRedisUrl('redis://crawler:p%40ss%3Aw%2Frd@[::1]:7000/')).toEqual({
      kind: 'single',
      tls: false,
      node: { host: '::1', port: 7000 },
      db: 0,
      username: 'crawler',
      password: 'p@ss:w/rd',
    });
  });

  test('clusters: every seed node, credentials, TLS', () => {
    expect(parseRedisUrl('redis+cluster://10.0.0.1:7000,10.0.0.2,[fd00::3]:7002')).toEqual({
      kind: 'cluster',
      tls: false,
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 6379 },
        { host: 'fd00::3', port: 7002 },
      ],
    });
    expect(parseRedisUrl('rediss+cluster://crawler:pw@n1.example:7000,n2.example:7001')).toEqual({
      kind: 'cluster',
      tls: true,
      nodes: [
        { host: 'n1.example', port: 7000 },
        { host: 'n2.example', port: 7001 },
      ],
      username: 'crawler',
      password: 'pw',
    });
  });

  test.each([
    ['localhost:6379', /expected redis:\/\/host:port/],
    ['http://localhost:6379', /unsupported scheme http:\/\//],
    ['redis://', /a host is missing/],
    ['redis://:pw@', /a host is missing/],
    ['redis://host:port', /port "port" of host is not a number/],
    ['redis://host:70000', /port "70000" of host is not a number 1–65535/],
    ['redis://host:6379/cache', /the path must be a database number/],
    ['redis://a:1,b:2', /for a Redis Cluster use redis\+cluster:\/\//],
    ['redis+cluster://a:1,,b:2', /a host is missing/],
    ['redis+cluster://a:1,b:2/0', /a Redis Cluster has no databases/],
    ['redis://host:6379?family=6', /query strings/],
    ['redis://user@host', /a user name needs a password/],
    ['redis://:%zz@host', /the password has a malformed %-escape/],
    ['redis://fe80::1:6379', /write an IPv6 address in brackets/],
    ['redis://[::1:6379', /unclosed \[/],
    ['redis://ho st:6379', /"ho st" is not a host name/],
  ])('%s is refused with a reason', (url, reason) => {
    expect(() => parseRedisUrl(url)).toThrow(RedisUrlError);
    expect(() => parseRedisUrl(url)).toThrow(reason);
  });

  test('errors name the setting and never print the password', () => {
    let message = '';
    try {
      processSettings({ REDIS_URL: 'redis://crawler:hunter2@host:notaport' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^REDIS_URL "redis:\/\/crawler:\*\*\*@host:notaport": port "notaport"/);
    expect(message).not.toContain('hunter2');
  });

  test('a password with an unencoded @ or / is hidden whole, as the parser reads it', () => {
    expect(redactRedisUrl('redis://crawler:pa@ss/w0rd@cache:6379/2')).toBe('redis://crawler:***@cache:6379/2');
    expect(redactRedisUrl('rediss+cluster://:s3cr/et@a:1,b:2')).toBe('rediss+cluster://:***@a:1,b:2');
    expect(redactRedisUrl('redis://cache:6379')).toBe('redis://cache:6379');
    expect(parseRedisUrl('redis://crawler:pa@ss/w0rd@cache:6379/2')).toMatchObject({ password: 'pa@ss/w0rd', node: { host: 'cache', port: 6379 }, db: 2 });
  });

  test('host names may hold underscores, as container and compose service names do', () => {
    expect(parseRedisUrl('redis://redis_cache:6379')).toMatchObject({ node: { host: 'redis_cache', port: 6379 } });
    expect(() => parseRedisUrl('redis://bad host:6379')).toThrow(RedisUrlError);
  });

  test('single server → ioredis options', () => {
    const o = redisClientOptions(parseRedisUrl('rediss://crawler:pw@redis.example.com:6380/3'));
    if (o.kind !== 'single') throw new Error('expected a single server');
    expect(o.options).toMatchObject({ host: 'redis.example.com', port: 6380, db: 3, username: 'crawler', password: 'pw', tls: {} });
    const plain = redisClientOptions(parseRedisUrl('redis://127.0.0.1:6379'));
    if (plain.kind !== 'single') throw new Error('expected a single server');
    expect(plain.options.tls).toBeUndefined();
    expect(plain.options.password).toBeUndefined();
  });

  test('cluster → seed nodes, and credentials and TLS on every node connection', () => {
    const o = redisClientOptions(parseRedisUrl('rediss+cluster://:pw@n1.example:7000,n2.example:7001'));
    if (o.kind !== 'cluster') throw new Error('expected a cluster');
    expect(o.nodes).toEqual([
      { host: 'n1.example', port: 7000 },
      { host: 'n2.example', port: 7001 },
    ]);
    expect(o.options.redisOptions).toMatchObject({ password: 'pw', tls: {} });
    // Seed names are kept (not resolved to addresses), so their certificates verify.
    const looked: string[] = [];
    (o.options as ClusterOptions).dnsLookup!('n1.example', (_err, address) => looked.push(address));
    expect(looked).toEqual(['n1.example']);

    const plain = redisClientOptions(parseRedisUrl('redis+cluster://127.0.0.1:7000'));
    if (plain.kind !== 'cluster') throw new Error('expected a cluster');
    expect(plain.options.redisOptions?.tls).toBeUndefined();
    expect(plain.options.redisOptions?.password).toBeUndefined();
    expect(plain.options.dnsLookup).toBeUndefined();
  });
});
