// The object store's one identity for a `crawler cluster up` cluster:
// generated at random on the first `up`, kept in a file of mode 0600 in the
// cluster's folder (in the env-file form `set -a; . <file>` reads, so an
// operator on this machine can hand it to `crawler report` and the like), and
// read again by every later `up`. Never printed, never in cluster.json (which
// any local user may read), never in a worker's recorded environment.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { StackError } from './stack-error';

export interface ObjectStoreCredentials {
  accessKey: string;
  secretKey: string;
}

export const clusterCredentialsFile = (dir: string) => path.join(dir, 'object-store-credentials.env');

/** The credentials as the AWS SDK's variables (what workers and the CLI read). */
export const credentialsEnv = (c: ObjectStoreCredentials): Record<string, string> => ({ AWS_ACCESS_KEY_ID: c.accessKey, AWS_SECRET_ACCESS_KEY: c.secretKey });

/** The file's credentials, or null when it has none; a file others may read is refused rather than used. */
export function readClusterCredentials(dir: string): ObjectStoreCredentials | null {
  const file = clusterCredentialsFile(dir);
  let text: string;
  try {
    if ((fs.statSync(file).mode & 0o077) !== 0)
      throw new StackError('CREDENTIALS_EXPOSED', `${file} may be read by other users: chmod 600 it (or delete it with the cluster's data)`);
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const vars = Object.fromEntries(
    text
      .split('\n')
      .map((l) => /^([A-Z_]+)=(.*)$/.exec(l.trim()))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1], m[2]]),
  );
  if (!vars.AWS_ACCESS_KEY_ID || !vars.AWS_SECRET_ACCESS_KEY) throw new StackError('CREDENTIALS_UNREADABLE', `${file} lacks AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY`);
  return { accessKey: vars.AWS_ACCESS_KEY_ID, secretKey: vars.AWS_SECRET_ACCESS_KEY };
}

/** The cluster's credentials: the file's, or new random ones written to it (mode 0600 from its creation, never wider). */
export function ensureClusterCredentials(dir: string): ObjectStoreCredentials {
  const found = readClusterCredentials(dir);
  if (found) return found;
  // Letters and digits only: the key is part of the signed Authorization header, and the file is read as shell.
  const c = { accessKey: `CRAWLER${randomBytes(8).toString('hex').toUpperCase()}`, secretKey: randomBytes(30).toString('hex') };
  fs.mkdirSync(dir, { recursive: true });
  const tmp = `${clusterCredentialsFile(dir)}.${process.pid}.tmp`;
  const body = Object.entries(credentialsEnv(c))
    .map(([k, v]) => `${k}=${v}\n`)
    .join('');
  fs.writeFileSync(tmp, body, { mode: 0o600, flag: 'wx' });
  fs.renameSync(tmp, clusterCredentialsFile(dir));
  return c;
}
