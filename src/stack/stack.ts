// The embedded stack: one Temporal dev server and one Redis on loopback,
// with their data under .crawler/stack so crawls survive restarts. Whatever
// the user already runs (TEMPORAL_ADDRESS / REDIS_URL, or a stack started
// with `crawler stack up`) is used as is and never stopped by us.
import fs from 'node:fs';
import path from 'node:path';
import { explicitSetting, processSettings, temporalIsRemote } from '../config/env';
import { ManagedProcess } from './managed-process';
import { freePort, portOpen } from './ports';
import { STACK_DIR } from './paths';
import { redisReachable, startRedisServer } from './redis-server';
import { temporalReachable, startTemporalDevServer, type DynamicConfigValue } from './temporal-dev-server';
import { runningClusterEndpoints } from './cluster-state';

export const DEFAULT_TEMPORAL_PORT = 7233;
export const DEFAULT_UI_PORT = 8233;
export const DEFAULT_REDIS_PORT = 6379;

export interface StackEndpoints {
  temporalAddress: string;
  redisUrl: string;
  /** Web UI base URL, when we know one. */
  uiUrl: string | null;
}

export interface RunningStack extends StackEndpoints {
  /** Names of the servers this call started (and stop() will stop). */
  started: string[];
  processes: ManagedProcess[];
  stop(): Promise<void>;
}

/**
 * How to tell, later, that a pid is still the server `stack up` started and
 * not an unrelated process that got the pid after a reboot or a crash: its
 * command line as /proc showed it once the server was up (redis-server
 * rewrites its own), and its start time in clock ticks after boot.
 */
export interface ProcessIdentity {
  cmdline: string;
  startTime: string;
}

type ServerName = 'temporal' | 'redis';

interface StackStateFile {
  temporal?: { pid: number; address: string; uiUrl: string | null; identity?: ProcessIdentity };
  redis?: { pid: number; url: string; identity?: ProcessIdentity };
}

const stateFile = (dir: string) => path.join(dir, 'stack.json');

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A running process's identity from procfs; null when it is gone (or a zombie) or there is no procfs. */
export function processIdentity(pid: number, procRoot = '/proc'): ProcessIdentity | null {
  try {
    const stat = fs.readFileSync(path.join(procRoot, String(pid), 'stat'), 'utf8');
    // Fields after the command name, which is in parentheses and may itself contain ") ".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return null;
    const raw = fs.readFileSync(path.join(procRoot, String(pid), 'cmdline'), 'utf8');
    // NUL-separated argv; a retitled process (redis-server) pads with NULs.
    const cmdline = raw.split('\0').filter(Boolean).join(' ').trim();
    return { cmdline, startTime: fields[19] };
  } catch {
    return null;
  }
}

/** Programs of stack.json entries written before identities were recorded. */
const LEGACY_PROGRAM: Record<ServerName, RegExp> = {
  temporal: /(^|\/)temporal(\s.*)?\sserver\s+start-dev(\s|$)/,
  redis: /(^|\/)redis-server(\s|$)/,
};

/**
 * Whether `entry.pid` is still the server this stack started, so signalling
 * it cannot hit an unrelated process that reused the pid. Without procfs
 * (macOS) a live pid is all there is to go on.
 */
export function ownsServer(name: ServerName, entry: { pid: number; identity?: ProcessIdentity }, procRoot = '/proc'): { ours: boolean; why: string } {
  if (!fs.existsSync(procRoot)) return pidAlive(entry.pid) ? { ours: true, why: 'alive (no procfs to check more)' } : { ours: false, why: 'not running' };
  const now = processIdentity(entry.pid, procRoot);
  if (!now) return { ours: false, why: 'not running' };
  if (entry.identity) {
    if (now.startTime !== entry.identity.startTime) return { ours: false, why: `pid ${entry.pid} was started at another time: another process has it now (${now.cmdline})` };
    if (now.cmdline !== entry.identity.cmdline)
      return { ours: false, why: `pid ${entry.pid} now runs ${JSON.stringify(now.cmdline)}, not ${JSON.stringify(entry.identity.cmdline)}` };
    return { ours: true, why: 'same command line and start time' };
  }
  return LEGACY_PROGRAM[name].test(now.cmdline)
    ? { ours: true, why: `runs ${name === 'redis' ? 'redis-server' : 'temporal server start-dev'}` }
    : { ours: false, why: `pid ${entry.pid} now runs ${JSON.stringify(now.cmdline)}, not the ${name} server` };
}

export function readStackState(dir = STACK_DIR): StackStateFile {
  try {
    return JSON.parse(fs.readFileSync(stateFile(dir), 'utf8')) as StackStateFile;
  } catch {
    return {};
  }
}

/** Where a client command should look for Temporal: env, then a running embedded stack, then a running `cluster up`, then the default port. */
export function clientEndpoints(): { temporalAddress: string; redisUrl: string; uiUrl: string | null } {
  const cfg = processSettings();
  const state = readStackState();
  const named = explicitSetting('temporalAddress');
  const namedRedis = explicitSetting('redisUrl');
  const cluster = named || namedRedis || state.temporal ? null : runningClusterEndpoints();
  return {
    temporalAddress: named ?? state.temporal?.address ?? cluster?.temporalAddress ?? cfg.temporalAddress,
    redisUrl: namedRedis ?? state.redis?.url ?? cluster?.redisUrl ?? cfg.redisUrl,
    uiUrl: named ? null : (state.temporal?.uiUrl ?? null),
  };
}

export interface StartStackOptions {
  dataDir?: string;
  temporalPort?: number;
  uiPort?: number;
  redisPort?: number;
  headless?: boolean;
  /** Servers outlive this process (crawler stack up). */
  detached?: boolean;
  log?: (msg: string) => void;
  /** Temporal server dynamic config (e.g. a low continue-as-new suggestion for the replay fixtures). */
  temporalDynamicConfig?: Record<string, DynamicConfigValue>;
}

/** Starts both servers unconditionally (tests use free ports; `stack up` uses the defaults). */
export async function startStack(opts: StartStackOptions = {}): Promise<RunningStack> {
  const dataDir = opts.dataDir ?? STACK_DIR;
  const temporalPort = opts.temporalPort ?? (await freePort());
  const redisPort = opts.redisPort ?? (await freePort());
  const uiPort = opts.headless ? undefined : (opts.uiPort ?? temporalPort + 1000);
  const starts = await Promise.allSettled([
    startTemporalDevServer({
      port: temporalPort,
      uiPort,
      headless: opts.headless,
      dataDir: path.join(dataDir, 'temporal'),
      detached: opts.detached,
      log: opts.log,
      dynamicConfig: opts.temporalDynamicConfig,
    }),
    startRedisServer({ port: redisPort, dataDir: path.join(dataDir, 'redis'), detached: opts.detached, log: opts.log }),
  ]);
  // One that failed to start must not leave the other running with nobody to stop it.
  const failed = starts.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(starts.map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
    throw failed.reason;
  }
  const [temporal, redis] = starts.map((r) => (r as PromiseFulfilledResult<ManagedProcess>).value) as [ManagedProcess, ManagedProcess];
  const endpoints: StackEndpoints = {
    temporalAddress: `127.0.0.1:${temporalPort}`,
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    uiUrl: uiPort ? `http://127.0.0.1:${uiPort}` : null,
  };
  return {
    ...endpoints,
    started: ['temporal', 'redis'],
    processes: [temporal, redis],
    stop: async () => {
      await Promise.all([temporal.stop(), redis.stop()]);
    },
  };
}

/**
 * What `crawler crawl` uses: explicit env first, then a running embedded
 * stack, then a running `cluster up` (both of its endpoints, never one of
 * them beside an embedded server), then whatever answers on the default
 * ports; only what is still missing is started, attached to this process, on
 * the default ports when they are free.
 */
export async function connectOrStartStack(opts: { log?: (msg: string) => void; dataDir?: string } = {}): Promise<RunningStack> {
  const dataDir = opts.dataDir ?? STACK_DIR;
  const state = readStackState(dataDir);
  const processes: ManagedProcess[] = [];
  const started: string[] = [];

  let temporalAddress = explicitSetting('temporalAddress');
  let uiUrl: string | null = null;
  const cfg = processSettings();
  if (!temporalAddress && temporalIsRemote(cfg)) {
    throw new Error('Temporal TLS / API key settings are set, but TEMPORAL_ADDRESS is not: set it to the server they are for (the embedded dev server speaks plaintext)');
  }
  if (!temporalAddress && state.temporal && ownsServer('temporal', state.temporal).ours && (await temporalReachable(state.temporal.address))) {
    temporalAddress = state.temporal.address;
    uiUrl = state.temporal.uiUrl;
  }
  if (!temporalAddress && !explicitSetting('redisUrl')) {
    // Loaded here, not at the top: cluster-state imports this module.
    const cluster = (await import('./cluster-state')).runningClusterEndpoints();
    if (cluster && (await temporalReachable(cluster.temporalAddress))) return { ...cluster, uiUrl: null, started: [], processes: [], stop: async () => {} };
  }
  if (!temporalAddress && (await temporalReachable(`127.0.0.1:${DEFAULT_TEMPORAL_PORT}`))) {
    temporalAddress = `127.0.0.1:${DEFAULT_TEMPORAL_PORT}`;
    uiUrl = `http://127.0.0.1:${DEFAULT_UI_PORT}`;
  }
  if (!temporalAddress) {
    const port = (await portOpen(DEFAULT_TEMPORAL_PORT)) ? await freePort() : DEFAULT_TEMPORAL_PORT;
    const ui = port === DEFAULT_TEMPORAL_PORT && !(await portOpen(DEFAULT_UI_PORT)) ? DEFAULT_UI_PORT : await freePort();
    opts.log?.(`starting Temporal dev server on 127.0.0.1:${port} (Web UI http://127.0.0.1:${ui})…`);
    processes.push(await startTemporalDevServer({ port, uiPort: ui, dataDir: path.join(dataDir, 'temporal'), log: opts.log }));
    started.push('temporal');
    temporalAddress = `127.0.0.1:${port}`;
    uiUrl = `http://127.0.0.1:${ui}`;
  }

  let redisUrl = explicitSetting('redisUrl');
  if (!redisUrl && state.redis && ownsServer('redis', state.redis).ours && (await redisReachable(state.redis.url))) redisUrl = state.redis.url;
  if (!redisUrl) {
    const port = (await portOpen(DEFAULT_REDIS_PORT)) ? await freePort() : DEFAULT_REDIS_PORT;
    opts.log?.(`starting redis-server on 127.0.0.1:${port}…`);
    try {
      processes.push(await startRedisServer({ port, dataDir: path.join(dataDir, 'redis'), log: opts.log }));
    } catch (err) {
      await Promise.all(processes.map((p) => p.stop()));
      throw err;
    }
    started.push('redis');
    redisUrl = `redis://127.0.0.1:${port}`;
  }

  return {
    temporalAddress,
    redisUrl,
    uiUrl,
    started,
    processes,
    stop: async () => {
      await Promise.all(processes.map((p) => p.stop()));
    },
  };
}

/** Where `stack up` puts its servers; the defaults are what `crawler stack up` uses (tests place it elsewhere). */
export interface StackUpOptions {
  log?: (msg: string) => void;
  dataDir?: string;
  temporalPort?: number;
  uiPort?: number;
  redisPort?: number;
}

/**
 * `crawler stack up`: detached servers on the default ports, remembered in
 * stack.json. A recorded server that still runs is kept; only what is down
 * is started, so after one server died (kill -9) `up` starts that one alone
 * instead of a second copy of the other on its busy port. stack.json lists
 * only servers that run: those kept and those started, also when starting
 * another failed (so `stack down` can still stop them).
 */
export async function stackUp(opts: StackUpOptions = {}): Promise<StackEndpoints> {
  const dataDir = opts.dataDir ?? STACK_DIR;
  const log = opts.log ?? (() => {});
  const state = readStackState(dataDir);
  const next: StackStateFile = {};
  const running = (name: ServerName, entry: { pid: number; identity?: ProcessIdentity } | undefined): boolean => {
    if (!entry) return false;
    const check = ownsServer(name, entry);
    log(check.ours ? `${name}: already running (pid ${entry.pid})` : `${name}: the recorded server is gone (${check.why}); starting it again`);
    return check.ours;
  };
  if (running('temporal', state.temporal)) next.temporal = state.temporal;
  if (running('redis', state.redis)) next.redis = state.redis;
  // Read once the server answers: by then redis-server has retitled itself.
  const identity = (pid: number) => {
    const id = processIdentity(pid);
    return id ? { identity: id } : {};
  };
  const temporalPort = opts.temporalPort ?? DEFAULT_TEMPORAL_PORT;
  const uiPort = opts.uiPort ?? DEFAULT_UI_PORT;
  const redisPort = opts.redisPort ?? DEFAULT_REDIS_PORT;
  const starts: Promise<void>[] = [];
  if (!next.temporal) {
    starts.push(
      startTemporalDevServer({ port: temporalPort, uiPort, dataDir: path.join(dataDir, 'temporal'), detached: true, log }).then((p) => {
        next.temporal = { pid: p.pid, address: `127.0.0.1:${temporalPort}`, uiUrl: `http://127.0.0.1:${uiPort}`, ...identity(p.pid) };
      }),
    );
  }
  if (!next.redis) {
    starts.push(
      startRedisServer({ port: redisPort, dataDir: path.join(dataDir, 'redis'), detached: true, log }).then((p) => {
        next.redis = { pid: p.pid, url: `redis://127.0.0.1:${redisPort}`, ...identity(p.pid) };
      }),
    );
  }
  const results = await Promise.allSettled(starts);
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(stateFile(dataDir), JSON.stringify(next, null, 2));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return { temporalAddress: next.temporal!.address, redisUrl: next.redis!.url, uiUrl: next.temporal!.uiUrl };
}

/**
 * `crawler stack down`: stops what `stack up` started and waits until the
 * processes are gone. A pid that no longer belongs to that server (stale
 * stack.json) is left alone and reported through `log`.
 */
export async function stackDown(opts: { dataDir?: string; log?: (msg: string) => void } = {}): Promise<string[]> {
  const dataDir = opts.dataDir ?? STACK_DIR;
  const log = opts.log ?? ((m: string) => process.stderr.write(`${m}\n`));
  const state = readStackState(dataDir);
  const stopped: string[] = [];
  for (const [name, entry] of Object.entries(state) as [ServerName, { pid: number; identity?: ProcessIdentity }][]) {
    if (!entry || !pidAlive(entry.pid)) continue;
    const check = ownsServer(name, entry);
    if (!check.ours) {
      log(`${name}: not stopped, ${check.why} (stale ${stateFile(dataDir)})`);
      continue;
    }
    process.kill(entry.pid, 'SIGTERM');
    const deadline = Date.now() + 15_000;
    while (pidAlive(entry.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (pidAlive(entry.pid)) process.kill(entry.pid, 'SIGKILL');
    stopped.push(name);
  }
  fs.rmSync(stateFile(dataDir), { force: true });
  return stopped;
}
