// The object store identity of a `cluster up` cluster: made once, kept in a
// file only its owner may read, the same on every later read.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clusterCredentialsFile, credentialsEnv, ensureClusterCredentials, readClusterCredentials } from '../../src/stack/cluster-credentials';
import { StackError } from '../../src/stack/stack-error';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-credentials-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => path.join(root, `c${n++}`);

test('the first call makes random credentials in a file of mode 600; later calls read the same ones', () => {
  const dir = fresh();
  expect(readClusterCredentials(dir)).toBeNull();
  const made = ensureClusterCredentials(dir);
  expect(fs.statSync(clusterCredentialsFile(dir)).mode & 0o777).toBe(0o600);
  expect(made.accessKey).toMatch(/^[A-Z0-9]{16,}$/);
  expect(made.secretKey.length).toBeGreaterThanOrEqual(40);
  expect(ensureClusterCredentials(dir)).toEqual(made);
  expect(readClusterCredentials(dir)).toEqual(made);
  // Another cluster gets other ones.
  expect(ensureClusterCredentials(fresh()).secretKey).not.toBe(made.secretKey);
});

test('the file is in the form a shell reads with `set -a; . file`: the AWS SDK variables', () => {
  const dir = fresh();
  const c = ensureClusterCredentials(dir);
  expect(fs.readFileSync(clusterCredentialsFile(dir), 'utf8')).toBe(`AWS_ACCESS_KEY_ID=${c.accessKey}\nAWS_SECRET_ACCESS_KEY=${c.secretKey}\n`);
  expect(credentialsEnv(c)).toEqual({ AWS_ACCESS_KEY_ID: c.accessKey, AWS_SECRET_ACCESS_KEY: c.secretKey });
});

test('a file other users may read is refused, without showing what is in it', () => {
  const dir = fresh();
  const c = ensureClusterCredentials(dir);
  fs.chmodSync(clusterCredentialsFile(dir), 0o644);
  let caught: unknown;
  try {
    readClusterCredentials(dir);
  } catch (err) {
    caught = err;
  }
  expect(caught instanceof StackError && caught.code).toBe('CREDENTIALS_EXPOSED');
  expect((caught as Error).message).not.toContain(c.secretKey);
});
