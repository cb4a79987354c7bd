// The real Temporal server for `crawler cluster up`: `temporal-server` and
// `temporal-sql-tool` built from the Go module proxy at the pinned release
// (src/stack/topology.ts) and cached under .crawler/tools, then run with the
// same environment the `temporalio/server` image gets in docker-compose.yml.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { ManagedProcess } from './managed-process';
import { TOOLS_DIR } from './paths';
import { portOpen, waitFor } from './ports';
import { StackError } from './stack-error';
import { temporalReachable } from './temporal-dev-server';
import { withInstallLock, executable } from './tools';
import { NAMESPACE, TEMPORAL_SCHEMA_ENV, TEMPORAL_SCHEMA_SCRIPT, TEMPORAL_SERVER_MODULE, TEMPORAL_SERVER_VERSION, temporalServerEnv, type TemporalPlace } from './topology';

export interface TemporalBinaries {
  server: string;
  sqlTool: string;
  /** Seconds the build took, when this call built them; null when they were cached. */
  builtInSeconds: number | null;
}

export const TEMPORAL_BUILD_DIR = path.join(TOOLS_DIR, `temporal-server-${TEMPORAL_SERVER_VERSION}`);

/**
 * The two binaries, built once per pinned release with the installed Go
 * toolchain (never a downloaded one: GOTOOLCHAIN=local), at low CPU priority
 * since the build takes minutes of both cores.
 */
export async function ensureTemporalBinaries(log: (msg: string) => void = () => {}): Promise<TemporalBinaries> {
  const server = path.join(TEMPORAL_BUILD_DIR, 'temporal-server');
  const sqlTool = path.join(TEMPORAL_BUILD_DIR, 'temporal-sql-tool');
  if (executable(server) && executable(sqlTool)) return { server, sqlTool, builtInSeconds: null };
  return withInstallLock(async () => {
    if (executable(server) && executable(sqlTool)) return { server, sqlTool, builtInSeconds: null };
    if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) {
      throw new StackError(
        'TOOL_MISSING',
        `Go is not installed; \`crawler cluster up\` builds the Temporal server ${TEMPORAL_SERVER_VERSION} from source with it (go.mod of that release names the minimum Go).`,
      );
    }
    const gobin = path.join(TEMPORAL_BUILD_DIR, `gobin-${process.pid}`);
    fs.mkdirSync(gobin, { recursive: true });
    const logFile = path.join(TEMPORAL_BUILD_DIR, 'build.log');
    const started = Date.now();
    log(`building temporal-server and temporal-sql-tool ${TEMPORAL_SERVER_VERSION} with Go (several minutes the first time; log: ${logFile})…`);
    const pkgs = ['cmd/server', 'cmd/tools/sql'].map((p) => `${TEMPORAL_SERVER_MODULE}/${p}@v${TEMPORAL_SERVER_VERSION}`);
    const nice = spawnSync('nice', ['--version'], { stdio: 'ignore' }).status === 0;
    const [cmd, args] = nice ? ['nice', ['-n', '10', 'go', 'install', ...pkgs]] : ['go', ['install', ...pkgs]];
    const fd = fs.openSync(logFile, 'w');
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(cmd, args, {
        // Outside any module: `go install pkg@version` builds the release as its own go.mod pins it.
        cwd: TEMPORAL_BUILD_DIR,
        env: { ...process.env, GOBIN: gobin, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' },
        stdio: ['ignore', fd, fd],
      });
      child.on('error', () => resolve(null));
      child.on('exit', (c) => resolve(c));
    });
    fs.closeSync(fd);
    if (code !== 0) {
      const tail = fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-15).join('\n');
      fs.rmSync(gobin, { recursive: true, force: true });
      throw new StackError('BUILD_FAILED', `building the Temporal server ${TEMPORAL_SERVER_VERSION} failed (${logFile}):\n${tail}`);
    }
    fs.renameSync(path.join(gobin, 'sql'), sqlTool);
    fs.renameSync(path.join(gobin, 'server'), server);
    fs.rmSync(gobin, { recursive: true, force: true });
    const builtInSeconds = Math.round((Date.now() - started) / 1000);
    fs.writeFileSync(path.join(TEMPORAL_BUILD_DIR, 'build-seconds'), `${builtInSeconds}\n`);
    log(`built the Temporal server in ${builtInSeconds} s`);
    return { server, sqlTool, builtInSeconds };
  });
}

/** Runs deploy/temporal-schema.sh against PostgreSQL at 127.0.0.1:port: creates and migrates both databases. */
export async function migrateTemporalSchema(sqlTool: string, pg: { host: string; port: number }, logFile: string): Promise<void> {
  const fd = fs.openSync(logFile, 'a');
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn('sh', [TEMPORAL_SCHEMA_SCRIPT], {
      env: { ...process.env, ...TEMPORAL_SCHEMA_ENV, SQL_HOST: pg.host, SQL_PORT: String(pg.port), TEMPORAL_SQL_TOOL: sqlTool },
      stdio: ['ignore', fd, fd],
    });
    child.on('error', () => resolve(null));
    child.on('exit', (c) => resolve(c));
  });
  fs.closeSync(fd);
  if (code !== 0) {
    const tail = fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-10).join('\n');
    throw new StackError('START_FAILED', `the Temporal schema migration failed (${logFile}):\n${tail}`);
  }
}

/** Starts the server (every service in one process) and waits until its frontend answers. */
export async function startTemporalServer(opts: { binary: string; place: TemporalPlace; dataDir: string; detached?: boolean }): Promise<ManagedProcess> {
  for (const [name, port] of Object.entries(opts.place.ports)) {
    if (await portOpen(port, opts.place.bindIp))
      throw new StackError('PORT_IN_USE', `cannot start the Temporal server: its ${name} ${opts.place.bindIp}:${port} is taken by another process`);
  }
  fs.mkdirSync(opts.dataDir, { recursive: true });
  // No --config-file: the binary renders its built-in template from this environment, as in the image.
  // No authorizer, said explicitly (the server warns otherwise): loopback here, a private network in a deployment.
  const env = temporalServerEnv(opts.place);
  const proc = ManagedProcess.start('temporal-server', opts.binary, ['--allow-no-auth', 'start'], {
    logFile: path.join(opts.dataDir, 'temporal-server.log'),
    detached: opts.detached,
    env: { ...process.env, ...env },
    cwd: opts.dataDir,
  });
  const address = `${opts.place.bindIp}:${opts.place.ports.FRONTEND_GRPC_PORT}`;
  try {
    await waitFor(
      `Temporal server on ${address}`,
      () => temporalReachable(address),
      120_000,
      () => proc.deadReason(),
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}

/**
 * Registers the namespace the workers use, then waits until the frontend
 * serves it (namespaces reach the frontend's cache within about 10 s).
 * An existing namespace is kept as it is.
 */
export async function ensureNamespace(address: string, timeoutMs = 60_000): Promise<void> {
  const conn = await Connection.connect({ address, connectTimeout: 5000 });
  try {
    try {
      await conn.workflowService.registerNamespace({
        namespace: NAMESPACE.name,
        workflowExecutionRetentionPeriod: msToTs(`${NAMESPACE.retentionDays} days`),
      });
    } catch (err) {
      if (!/already exists|AlreadyExists/i.test((err as Error).message)) throw err;
    }
    await waitFor(
      `namespace ${NAMESPACE.name} on ${address}`,
      async () => {
        try {
          await conn.workflowService.listWorkflowExecutions({ namespace: NAMESPACE.name, pageSize: 1 });
          return true;
        } catch {
          return false;
        }
      },
      timeoutMs,
    );
  } finally {
    await conn.close();
  }
}
