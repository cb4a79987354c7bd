// The crawler on a Redis that demands a password: a redis-server started
// here with --requirepass and an ACL user, reached through REDIS_URL's
// credentials by our client and by real worker processes running a
// campaign. Without the credentials the same server refuses every command,
// so a password that never reached the connection fails this file.
import fs from 'node:fs';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { createRedis } from '../../src/redis/client';
import { Frontier } from '../../src/redis/frontier';
import { ManagedProcess } from '../../src/stack/managed-process';
import { freePort, waitFor } from '../../src/stack/ports';
import { redisReachable } from '../../src/stack/redis-server';
import { findOrInstallRedisServer } from '../../src/stack/tools';
import { urlFingerprint } from '../../src/url/fingerprint';
import { createHarness, fetchedUrls, launch, outputOf, type Harness } from '../support/harness';

jest.setTimeout(180_000);

// Characters that must be %-encoded in a URL's userinfo.
const PASSWORD = 'p@ss:w/rd,1';
const ENCODED = encodeURIComponent(PASSWORD);
const ACL_USER = 'crawler';
const ACL_PASSWORD = 'acl-secret';

let server: ManagedProcess | undefined;
let port = 0;
let h: Harness | undefined;
const clients: Redis[] = [];
const client = (url: string) => {
  const c = createRedis(url) as Redis;
  clients.push(c);
  return c;
};

beforeAll(async () => {
  const dataDir = path.join(process.env.CRAWLER_TEST_DATA_DIR!, `redis-auth-${process.pid}`);
  fs.mkdirSync(dataDir, { recursive: true });
  port = await freePort();
  server = ManagedProcess.start(
    'redis',
    await findOrInstallRedisServer(),
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dataDir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--requirepass',
      PASSWORD,
      // One argv element per ACL rule: redis-server quotes each element as one config argument.
      '--user',
      ACL_USER,
      'on',
      `>${ACL_PASSWORD}`,
      '~*',
      '&*',
      '+@all',
    ],
    { logFile: path.join(dataDir, 'redis.log') },
  );
  await waitFor(
    'password-protected redis-server',
    () => redisReachable(`redis://:${ENCODED}@127.0.0.1:${port}`),
    30_000,
    () => server!.deadReason(),
  );
});

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await h?.close();
  await server?.stop();
});

const item = (url: string) => ({ url, fp: urlFingerprint(url), depth: 0, referrer: null });

test('without credentials every command is refused', async () => {
  const anon = client(`redis://127.0.0.1:${port}`);
  await expect(anon.ping()).rejects.toThrow(/NOAUTH/);
});

test('the requirepass password (%-encoded in the URL) lets the frontier scripts run', async () => {
  const r = client(`redis://:${ENCODED}@127.0.0.1:${port}`);
  const f = new Frontier(r, `auth-${process.pid}`, 'a.auth.test');
  expect(await f.enqueue([item('http://a.auth.test/')])).toMatchObject({ added: 1 });
  expect((await f.claim())?.entry.url).toBe('http://a.auth.test/');
  expect(await r.acl('WHOAMI')).toBe('default');
});

test('an ACL user name and password authenticate as that user', async () => {
  const r = client(`redis://${ACL_USER}:${ACL_PASSWORD}@127.0.0.1:${port}/0`);
  expect(await r.acl('WHOAMI')).toBe(ACL_USER);
  const f = new Frontier(r, `auth-acl-${process.pid}`, 'b.auth.test');
  expect(await f.enqueue([item('http://b.auth.test/')])).toMatchObject({ added: 1 });
});

test('worker processes given the URL with credentials crawl a campaign through that Redis', async () => {
  const url = `redis://:${ENCODED}@127.0.0.1:${port}`;
  h = await createHarness('redis-auth', { workers: 1, redisUrl: url });
  h.web.addSite({ host: 'site.auth.test', pages: 4, fanOut: 2 });
  const handle = await launch(h, { seeds: [h.web.url('site.auth.test', '/')], politeness: { minDelayMs: 0 } });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.pages).toBeGreaterThanOrEqual(4);
  expect(fetchedUrls(await outputOf(h, result.campaignId).index())).toContain(h.web.url('site.auth.test', '/'));
  // The campaign's keys are on the protected server, not on the test stack's Redis.
  const campaignKey = `${result.campaignId}.${handle.firstExecutionRunId.slice(0, 8)}`;
  const r = client(url);
  expect((await r.keys(`crawl:{${campaignKey}*`)).length).toBeGreaterThan(0);
  expect(await h.redis.keys(`crawl:{${campaignKey}*`)).toEqual([]);
});
