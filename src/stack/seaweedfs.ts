// The S3-compatible object store the project starts itself (for its tests and
// `crawler cluster up`), as it starts PostgreSQL and the Temporal server:
// SeaweedFS (Apache-2.0), its `weed` binary built from the Go module proxy at a
// pinned version and cached under .crawler/tools, run as `weed mini` (master,
// volume, filer and S3 gateway in one process) on loopback ports.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { HeadBucketCommand } from '@aws-sdk/client-s3';
import { newS3Client } from '../storage/s3-client';
import { ManagedProcess } from './managed-process';
import { TOOLS_DIR } from './paths';
import { freePort, portOpen, waitFor } from './ports';
import { StackError } from './stack-error';
import { executable, withInstallLock } from './tools';

export const SEAWEEDFS_MODULE = 'github.com/seaweedfs/seaweedfs';
/** The SeaweedFS release: docker-compose.yml's `chrislusf/seaweedfs` image tag, and the source SEAWEEDFS_VERSION names. */
export const SEAWEEDFS_RELEASE = '4.53';
/** The release built (the module proxy's pseudo-version of SeaweedFS 4.53). */
export const SEAWEEDFS_VERSION = 'v0.0.0-20261109003541-7506e5f91cd6';
export const SEAWEEDFS_BUILD_DIR = path.join(TOOLS_DIR, `seaweedfs-${SEAWEEDFS_VERSION}`);

const goEnv = () => ({ ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' });

/** Runs `cmd args` in `cwd`, its output to `logFile`; its exit code (null if it could not start). */
function runLogged(cmd: string, args: string[], cwd: string, logFile: string): Promise<number | null> {
  const fd = fs.openSync(logFile, 'a');
  return new Promise<number | null>((resolve) => {
    const child = spawn(cmd, args, { cwd, env: goEnv(), stdio: ['ignore', fd, fd] });
    child.on('error', () => resolve(null));
    child.on('exit', (c) => resolve(c));
  }).finally(() => fs.closeSync(fd));
}

/**
 * The `weed` binary, built once per pinned version with the installed Go
 * toolchain (GOTOOLCHAIN=local), at low CPU priority: about four minutes of
 * both cores the first time. Not `go install module@version`: SeaweedFS's
 * go.mod has a replace directive, which Go honours only in the main module,
 * so the build runs inside a copy of the module's source.
 */
export async function ensureWeedBinary(log: (msg: string) => void = () => {}): Promise<{ weed: string; builtInSeconds: number | null }> {
  const weed = path.join(SEAWEEDFS_BUILD_DIR, 'weed');
  if (executable(weed)) return { weed, builtInSeconds: null };
  return withInstallLock(async () => {
    if (executable(weed)) return { weed, builtInSeconds: null };
    if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) {
      throw new StackError('TOOL_MISSING', `Go is not installed; the object store (SeaweedFS ${SEAWEEDFS_VERSION}) is built from source with it.`);
    }
    fs.mkdirSync(SEAWEEDFS_BUILD_DIR, { recursive: true });
    const logFile = path.join(SEAWEEDFS_BUILD_DIR, 'build.log');
    fs.writeFileSync(logFile, '');
    const started = Date.now();
    log(`building SeaweedFS (weed) ${SEAWEEDFS_VERSION} with Go (several minutes the first time; log: ${logFile})…`);
    const fail = (what: string) => {
      const tail = fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-15).join('\n');
      return new StackError('BUILD_FAILED', `building SeaweedFS ${SEAWEEDFS_VERSION} failed at ${what} (${logFile}):\n${tail}`);
    };
    const download = spawnSync('go', ['mod', 'download', '-json', `${SEAWEEDFS_MODULE}@${SEAWEEDFS_VERSION}`], { cwd: SEAWEEDFS_BUILD_DIR, env: goEnv(), encoding: 'utf8' });
    fs.appendFileSync(logFile, `${download.stdout ?? ''}${download.stderr ?? ''}`);
    const moduleDir = download.status === 0 ? (JSON.parse(download.stdout) as { Dir?: string }).Dir : undefined;
    if (!moduleDir) throw fail('the module download');
    const src = path.join(SEAWEEDFS_BUILD_DIR, `src-${process.pid}`);
    try {
      // The module cache is read-only; the build writes nothing into the source, but Go wants it writable as a main module.
      fs.cpSync(moduleDir, src, { recursive: true });
      spawnSync('chmod', ['-R', 'u+w', src]);
      const nice = spawnSync('nice', ['--version'], { stdio: 'ignore' }).status === 0;
      const build = ['go', 'build', '-o', `${weed}.${process.pid}`, './weed'];
      const code = await runLogged(nice ? 'nice' : build[0], nice ? ['-n', '10', ...build] : build.slice(1), src, logFile);
      if (code !== 0) throw fail('go build');
      fs.renameSync(`${weed}.${process.pid}`, weed);
    } finally {
      fs.rmSync(src, { recursive: true, force: true });
      fs.rmSync(`${weed}.${process.pid}`, { force: true });
    }
    const builtInSeconds = Math.round((Date.now() - started) / 1000);
    log(`built SeaweedFS in ${builtInSeconds} s`);
    return { weed, builtInSeconds };
  });
}

export interface ObjectStoreServerOptions {
  dataDir: string;
  /** The S3 port; default a free one. */
  s3Port?: number;
  /** The one identity the gateway accepts (written to a file in dataDir, never to the command line). */
  accessKey: string;
  secretKey: string;
  /** Buckets created on start. */
  buckets: string[];
  detached?: boolean;
  log?: (msg: string) => void;
}

export interface RunningObjectStore {
  /** `http://127.0.0.1:<port>`: the S3 endpoint (path-style). */
  endpoint: string;
  proc: ManagedProcess;
  stop(): Promise<void>;
}

/** The ports `weed mini` listens on besides S3: all given, so none falls on a default another process holds. */
const OTHER_PORTS = [
  'master.port',
  'master.port.grpc',
  'volume.port',
  'volume.port.grpc',
  'filer.port',
  'filer.port.grpc',
  's3.port.grpc',
  'admin.port',
  'admin.port.grpc',
] as const;

/** Starts `weed mini` on loopback and waits until its S3 gateway answers. */
export async function startObjectStoreServer(opts: ObjectStoreServerOptions): Promise<RunningObjectStore> {
  const { weed } = await ensureWeedBinary(opts.log);
  const s3Port = opts.s3Port ?? (await freePort());
  if (await portOpen(s3Port)) throw new StackError('PORT_IN_USE', `cannot start the object store: 127.0.0.1:${s3Port} is taken by another process`);
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const config = path.join(opts.dataDir, 's3-identities.json');
  const identity = { name: 'crawler', credentials: [{ accessKey: opts.accessKey, secretKey: opts.secretKey }], actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'] };
  fs.writeFileSync(config, JSON.stringify({ identities: [identity] }), { mode: 0o600 });
  const ports: string[] = [];
  for (const name of OTHER_PORTS) ports.push(`-${name}=${await freePort()}`);
  const args = [
    'mini',
    `-dir=${opts.dataDir}`,
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-s3.port=${s3Port}`,
    ...ports,
    // Off: the admin UI's legacy port, WebDAV, and the Iceberg and Lance catalogs (each on a fixed default port).
    '-admin.ui=false',
    '-admin.port.legacy=0',
    '-webdav=false',
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    `-s3.config=${config}`,
    `-bucket=${opts.buckets.join(',')}`,
  ];
  const proc = ManagedProcess.start('seaweedfs', weed, args, { logFile: path.join(opts.dataDir, 'seaweedfs.log'), detached: opts.detached, cwd: opts.dataDir });
  const endpoint = `http://127.0.0.1:${s3Port}`;
  try {
    const credentials = { accessKeyId: opts.accessKey, secretAccessKey: opts.secretKey };
    await waitFor(
      `the object store's S3 gateway on ${endpoint}`,
      () => objectStoreServes(endpoint, opts.buckets, credentials),
      120_000,
      () => proc.deadReason(),
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { endpoint, proc, stop: () => proc.stop() };
}

/** Whether the gateway answers, signed with the identity, that every bucket exists. */
export async function objectStoreServes(endpoint: string, buckets: string[], credentials: { accessKeyId: string; secretAccessKey: string }): Promise<boolean> {
  const client = newS3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials, maxAttempts: 1 });
  try {
    for (const b of buckets) await client.send(new HeadBucketCommand({ Bucket: b }), { abortSignal: AbortSignal.timeout(2_000) });
    return true;
  } catch {
    return false;
  } finally {
    client.destroy();
  }
}
