// The S3 object store against a real S3-compatible server (SeaweedFS, test/support/object-store.ts):
// single and multipart puts, whole and ranged reads, sizes, paged listings, the never-overwrite rule,
// and the typed errors of a missing object, refused credentials and a store that does not answer.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { freePort } from '../../src/stack/ports';
import { openObjectStore, parseOutputLocation, type S3Location } from '../../src/storage/output-location';
import { newS3Client } from '../../src/storage/s3-client';
import type { S3ObjectStore, S3Tuning } from '../../src/storage/s3-object-store';
import { StorageError } from '../../src/storage/storage-error';
import { startTestObjectStore, type TestObjectStore } from '../support/object-store';
import { tempDirs } from '../support/temp-dirs';

const MIB = 1024 * 1024;
// Generous: the retries and timeouts below take seconds, and the machine is shared. No test asserts a duration.
jest.setTimeout(60_000);
const newDir = tempDirs('s3-store-');
let server: TestObjectStore;
let dir: string;
const opened: S3ObjectStore[] = [];
const savedEnv = { ...process.env };

beforeAll(async () => {
  server = await startTestObjectStore('crawl');
  dir = newDir();
  // Credentials reach the store as they reach a worker's: the AWS SDK's default chain, from the environment.
  Object.assign(process.env, server.env);
  for (const v of ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_PROFILE']) delete process.env[v];
}, 600_000);

afterAll(async () => {
  for (const s of opened) s.destroy();
  process.env = savedEnv;
  await server?.stop();
});

/** A store on its own prefix of the test bucket. */
function storeAt(prefix: string, tuning: S3Tuning = {}, endpoint = server.endpoint): S3ObjectStore {
  const store = openObjectStore(parseOutputLocation(`s3://${server.bucket}/${prefix}`) as S3Location, { endpoint, pathStyle: true }, { tuning });
  opened.push(store);
  return store;
}

function fileOf(name: string, bytes: Buffer): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, bytes);
  return file;
}

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** The ETag the store gives the object: a multipart upload's ends in `-<parts>`. */
async function etagOf(objectKey: string): Promise<string> {
  const client = newS3Client({ endpoint: server.endpoint, region: 'us-east-1', forcePathStyle: true });
  try {
    return (await client.send(new HeadObjectCommand({ Bucket: server.bucket, Key: objectKey }))).ETag ?? '';
  } finally {
    client.destroy();
  }
}

async function failure(p: Promise<unknown>): Promise<StorageError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StorageError);
  return err as StorageError;
}

test('a small file goes up in one PUT and reads back whole and by range', async () => {
  const store = storeAt('small/');
  const body = randomBytes(1000);
  await store.putFile('warc/a.warc.gz', fileOf('a', body));
  expect(store.location).toBe(`s3://${server.bucket}/small/`);
  expect(await store.size('warc/a.warc.gz')).toBe(1000);
  expect(await etagOf('small/warc/a.warc.gz')).not.toMatch(/-\d+"?$/);
  expect((await bytesOf(await store.read('warc/a.warc.gz'))).equals(body)).toBe(true);
  expect((await bytesOf(await store.read('warc/a.warc.gz', { start: 10, length: 20 }))).equals(body.subarray(10, 30))).toBe(true);
  expect((await bytesOf(await store.read('warc/a.warc.gz', { start: 990 }))).equals(body.subarray(990))).toBe(true);
  // At the end: nothing, as a file read there gives; a length past the end gives what there is.
  expect((await bytesOf(await store.read('warc/a.warc.gz', { start: 1000 }))).length).toBe(0);
  expect((await bytesOf(await store.read('warc/a.warc.gz', { start: 995, length: 50 }))).equals(body.subarray(995))).toBe(true);
  expect((await bytesOf(await store.read('warc/a.warc.gz', { start: 5, length: 0 }))).length).toBe(0);
});

test('a file above the threshold goes up in parts; the object is the whole file', async () => {
  const store = storeAt('multi/', { multipartThresholdBytes: MIB, partBytes: 5 * MIB });
  const body = randomBytes(11 * MIB + 123);
  const file = fileOf('big', body);
  await store.putFile('warc/big.warc.gz', file);
  // Three parts: 5 MiB, 5 MiB and the rest.
  expect(await etagOf('multi/warc/big.warc.gz')).toMatch(/-3"?$/);
  expect(await store.size('warc/big.warc.gz')).toBe(body.length);
  expect(sha(await bytesOf(await store.read('warc/big.warc.gz')))).toBe(sha(body));
  // Across the first part boundary.
  const across = await bytesOf(await store.read('warc/big.warc.gz', { start: 5 * MIB - 10, length: 20 }));
  expect(across.equals(body.subarray(5 * MIB - 10, 5 * MIB + 10))).toBe(true);
  // Again (a retry after a crash): fine. Another size under the key: refused, and the object stays.
  await store.putFile('warc/big.warc.gz', file);
  const other = await failure(store.putFile('warc/big.warc.gz', fileOf('big2', randomBytes(6 * MIB))));
  expect(other.code).toBe('OBJECT_EXISTS');
  expect(sha(await bytesOf(await store.read('warc/big.warc.gz')))).toBe(sha(body));
});

test('two uploads of one key at once, in parts and of two sizes: one object appears, whole, and the other upload is OBJECT_EXISTS', async () => {
  const store = storeAt('race/', { multipartThresholdBytes: MIB, partBytes: 5 * MIB });
  const bodies = [randomBytes(11 * MIB), randomBytes(12 * MIB)];
  const files = bodies.map((b, i) => fileOf(`race${i}`, b));
  // Both look for the key before sending; the store's If-None-Match on completing the upload is what decides.
  const results = await Promise.allSettled(files.map((f) => store.putFile('warc/r.warc.gz', f)));
  const won = results.findIndex((r) => r.status === 'fulfilled');
  expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  const lost = results[1 - won] as PromiseRejectedResult;
  expect(lost.reason).toBeInstanceOf(StorageError);
  expect((lost.reason as StorageError).code).toBe('OBJECT_EXISTS');
  expect(sha(await bytesOf(await store.read('warc/r.warc.gz')))).toBe(sha(bodies[won]));
});

test('a second put of a key: the same size is the same upload, another size is OBJECT_EXISTS and changes nothing', async () => {
  const store = storeAt('twice/');
  const body = randomBytes(300);
  const file = fileOf('t', body);
  await store.putFile('index/t.jsonl', file);
  await store.putFile('index/t.jsonl', file);
  const err = await failure(store.putFile('index/t.jsonl', fileOf('t2', randomBytes(301))));
  expect(err.code).toBe('OBJECT_EXISTS');
  expect(err.message).toContain(`s3://${server.bucket}/twice/index/t.jsonl`);
  expect(err.message).toMatch(/300 bytes, not 301/);
  expect((await bytesOf(await store.read('index/t.jsonl'))).equals(body)).toBe(true);
  // putBytes keeps the same rule.
  await store.putBytes('sealed/s.json', Buffer.from('{"a":1}'));
  await store.putBytes('sealed/s.json', Buffer.from('{"a":1}'));
  expect((await failure(store.putBytes('sealed/s.json', Buffer.from('{"a":12}')))).code).toBe('OBJECT_EXISTS');
  expect((await bytesOf(await store.read('sealed/s.json'))).toString()).toBe('{"a":1}');
});

test('a listing pages through every key under a prefix, in key order, relative to the store', async () => {
  const store = storeAt('listed/run-1/', { listPageSize: 2 });
  const names = ['index/e', 'index/a', 'index/c', 'index/g', 'index/b', 'index/f', 'index/d'];
  for (const [i, k] of names.entries()) await store.putBytes(k, Buffer.alloc(i + 1));
  await store.putBytes('warc/w1', Buffer.alloc(10));
  await store.putBytes('warc/w2', Buffer.alloc(11));
  // A neighbour prefix that starts the same is not this store's.
  await storeAt('listed/run-10/').putBytes('index/z', Buffer.alloc(1));
  const listed = async (prefix: string) => {
    const out: { key: string; size: number }[] = [];
    for await (const o of store.list(prefix)) out.push(o);
    return out;
  };
  const index = await listed('index/');
  expect(index.map((o) => o.key)).toEqual([...names].sort());
  expect(index.find((o) => o.key === 'index/g')?.size).toBe(4);
  expect((await listed('')).map((o) => o.key)).toEqual([...[...names].sort(), 'warc/w1', 'warc/w2']);
  expect(await listed('nothing/')).toEqual([]);
});

test('a missing object: read is OBJECT_MISSING, size is null', async () => {
  const store = storeAt('missing/');
  expect(await store.size('warc/none')).toBeNull();
  const whole = await failure(store.read('warc/none'));
  expect(whole.code).toBe('OBJECT_MISSING');
  expect(whole.message).toContain(`s3://${server.bucket}/missing/warc/none`);
  expect((await failure(store.read('warc/none', { start: 100, length: 10 }))).code).toBe('OBJECT_MISSING');
});

test('a wrong secret is STORE_DENIED, and the message holds no secret', async () => {
  const wrong = `wrong${randomBytes(12).toString('hex')}`;
  process.env.AWS_SECRET_ACCESS_KEY = wrong;
  try {
    const store = storeAt('denied/');
    for (const attempt of [() => store.putBytes('warc/x', Buffer.from('x')), () => store.size('warc/x'), () => store.read('warc/x')]) {
      const err = await failure(attempt());
      expect(err.code).toBe('STORE_DENIED');
      expect(err.message).toContain(`s3://${server.bucket}/denied/warc/x`);
      expect(err.message).not.toContain(wrong);
      expect(err.message).not.toContain(server.secretKey);
    }
  } finally {
    process.env.AWS_SECRET_ACCESS_KEY = server.secretKey;
  }
});

test('no credentials on the machine is STORE_DENIED, saying where the SDK looked', async () => {
  const saved = { ...process.env };
  for (const v of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_WEB_IDENTITY_TOKEN_FILE', 'AWS_CONTAINER_CREDENTIALS_FULL_URI'])
    delete process.env[v];
  // Nothing of this machine's: no shared files, no instance metadata service to wait for.
  Object.assign(process.env, { AWS_SHARED_CREDENTIALS_FILE: path.join(dir, 'none'), AWS_CONFIG_FILE: path.join(dir, 'none'), AWS_EC2_METADATA_DISABLED: 'true' });
  try {
    const err = await failure(storeAt('anonymous/').size('warc/x'));
    expect(err.code).toBe('STORE_DENIED');
    expect(err.message).toMatch(/no credentials found by the AWS SDK on this machine \(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/);
  } finally {
    process.env = saved;
  }
});

test('an endpoint where nothing listens is STORE_UNREACHABLE, after the bounded retries', async () => {
  const port = await freePort();
  const store = storeAt('dead/', { maxAttempts: 2 }, `http://127.0.0.1:${port}`);
  for (const attempt of [() => store.putBytes('warc/x', Buffer.from('x')), () => store.size('warc/x'), () => store.read('warc/x')]) {
    const err = await failure(attempt());
    expect(err.code).toBe('STORE_UNREACHABLE');
    expect(err.message).toContain(`http://127.0.0.1:${port}`);
  }
  expect((await failure(store.list('')[Symbol.asyncIterator]().next())).code).toBe('STORE_UNREACHABLE');
});

test('a body cut off half way fails its reader with STORE_UNREACHABLE', async () => {
  // Headers and the first bytes, then silence: a store that died mid-answer.
  const stalled = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-length': '1000', 'content-type': 'application/octet-stream' });
    res.write(Buffer.alloc(10));
  });
  await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = stalled.address() as net.AddressInfo;
    const store = storeAt('stalled/', { maxAttempts: 1, socketTimeoutMs: 1_000 }, `http://127.0.0.1:${port}`);
    const body = await store.read('warc/x', { start: 0, length: 1000 });
    const err = await failure(bytesOf(body));
    expect(err.code).toBe('STORE_UNREACHABLE');
    expect(err.message).toContain(`s3://${server.bucket}/stalled/warc/x`);
  } finally {
    stalled.closeAllConnections();
    await new Promise((resolve) => stalled.close(resolve));
  }
});

test('an endpoint that takes connections and never answers is STORE_UNREACHABLE once its timeouts pass, not a hang', async () => {
  const sockets: net.Socket[] = [];
  const silent = net.createServer((s) => void sockets.push(s));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = silent.address() as net.AddressInfo;
    const store = storeAt('silent/', { maxAttempts: 2, connectionTimeoutMs: 1_000, requestTimeoutMs: 1_000, socketTimeoutMs: 1_000 }, `http://127.0.0.1:${port}`);
    expect((await failure(store.size('warc/x'))).code).toBe('STORE_UNREACHABLE');
    expect((await failure(store.putBytes('warc/x', Buffer.from('x')))).code).toBe('STORE_UNREACHABLE');
    expect(sockets.length).toBeGreaterThan(0);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});
