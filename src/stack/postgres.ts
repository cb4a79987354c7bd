// PostgreSQL for `crawler cluster up`: one server on loopback with a data
// folder of its own, its superuser the one Temporal connects as. PostgreSQL
// refuses to run as root, so as root it runs as the `postgres` system user
// (Debian's package creates it), through setpriv, which execs in place: the
// recorded pid is the postmaster itself.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ManagedProcess } from './managed-process';
import { portOpen, waitFor } from './ports';
import { StackError } from './stack-error';
import { findOrInstallPostgres } from './tools';

export interface PostgresOptions {
  dataDir: string;
  port: number;
  user: string;
  password: string;
  detached?: boolean;
  log?: (msg: string) => void;
}

/** uid/gid of the system user the server runs as when we are root; null when we are not. */
function serverAccount(): { uid: number; gid: number; name: string } | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  const res = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (res.status !== 0 || gid.status !== 0) {
    throw new StackError(
      'TOOL_MISSING',
      "running as root, PostgreSQL needs a non-root account to run as, and there is no `postgres` user (Debian's postgresql package creates it)",
    );
  }
  return { uid: Number(res.stdout.trim()), gid: Number(gid.stdout.trim()), name: 'postgres' };
}

/** The command line that runs `bin args` as the server account (as is, when we are not root). */
function asServerAccount(account: ReturnType<typeof serverAccount>, bin: string, args: string[]): [string, string[]] {
  if (!account) return [bin, args];
  return ['setpriv', ['--reuid', String(account.uid), '--regid', String(account.gid), '--init-groups', '--', bin, ...args]];
}

/** True once the server accepts connections (not just TCP: also past recovery and start-up). */
function accepting(pgIsready: string, port: number): boolean {
  return spawnSync(pgIsready, ['-q', '-h', '127.0.0.1', '-p', String(port), '-t', '2'], { stdio: 'ignore' }).status === 0;
}

/**
 * Initialises `dataDir` on first use (superuser `user` with a SCRAM password,
 * password auth for every connection) and starts the server on
 * 127.0.0.1:`port`, without a Unix socket.
 */
export async function startPostgres(opts: PostgresOptions): Promise<ManagedProcess> {
  if (await portOpen(opts.port)) throw new StackError('PORT_IN_USE', `cannot start PostgreSQL on 127.0.0.1:${opts.port}: another process already listens there`);
  const log = opts.log ?? (() => {});
  const bins = await findOrInstallPostgres(log);
  const account = serverAccount();
  const pgdata = path.join(opts.dataDir, 'pgdata');
  fs.mkdirSync(opts.dataDir, { recursive: true });
  if (account) {
    fs.chownSync(opts.dataDir, account.uid, account.gid);
    // Its own folder is no use if a parent is closed to it (a 0700 temporary folder, a home directory).
    const [cmd, args] = asServerAccount(account, 'test', ['-w', opts.dataDir]);
    if (spawnSync(cmd, args).status !== 0) {
      throw new StackError(
        'START_FAILED',
        `PostgreSQL runs as the ${account.name} user, which cannot reach ${opts.dataDir}: make its parent folders searchable by others (chmod o+x)`,
      );
    }
  }
  if (!fs.existsSync(path.join(pgdata, 'PG_VERSION'))) {
    log(`initialising PostgreSQL data in ${pgdata}…`);
    fs.rmSync(pgdata, { recursive: true, force: true });
    const pwfile = path.join(opts.dataDir, 'pwfile');
    fs.writeFileSync(pwfile, `${opts.password}\n`, { mode: 0o600 });
    if (account) fs.chownSync(pwfile, account.uid, account.gid);
    try {
      const [cmd, args] = asServerAccount(account, bins.initdb, [
        '-D',
        pgdata,
        '-U',
        opts.user,
        `--pwfile=${pwfile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        // The C locale: nothing to install, and Temporal compares IDs bytewise anyway.
        '--locale=C',
      ]);
      const res = spawnSync(cmd, args, { encoding: 'utf8' });
      if (res.status !== 0) throw new StackError('START_FAILED', `initdb failed:\n${`${res.stdout}${res.stderr}`.trim().split('\n').slice(-10).join('\n')}`);
    } finally {
      fs.rmSync(pwfile, { force: true });
    }
  }
  const [cmd, args] = asServerAccount(account, bins.postgres, [
    '-D',
    pgdata,
    '-p',
    String(opts.port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    // Temporal's default pools: 20 connections for history data and 10 for visibility per server process.
    '-c',
    'max_connections=200',
  ]);
  const proc = ManagedProcess.start('postgres', cmd, args, { logFile: path.join(opts.dataDir, 'postgres.log'), detached: opts.detached });
  try {
    await waitFor(
      `PostgreSQL on 127.0.0.1:${opts.port}`,
      async () => accepting(bins.pgIsready, opts.port),
      60_000,
      () => proc.deadReason(),
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}
