// The embedded stack: one Temporal dev server and one Redis on loopback,
// with their data under .crawler/stack so crawls survive restarts. Whatever
// the user already runs (TEMPORAL_ADDRESS / REDIS_URL, or a running
// `cluster up`) is used as is and never stopped by us.
//
// One stack per project folder (CRAWLER_HOME moves it): every server it runs
// is recorded in stack.json, and whoever starts or joins it does so under
// one lock, so two `crawl`s at once share one Temporal and one Redis instead
// of starting a second redis-server on the same data folder. Servers a
// `crawl` started stop when the last crawl using them leaves (the users are
// recorded by src/stack/stack-users.ts); those of `crawler stack up` run
// until `crawler stack down`.
import fs from 'node:fs';
import path from 'node:path';
import { explicitSetting, processSettings, temporalIsRemote } from '../config/env';
import { runningClusterBucket, runningClusterEndpoints } from './cluster-state';
import { withFileLock } from './file-lock';
import { ManagedProcess } from './managed-process';
import { STACK_DIR } from './paths';
import { freePort, portOpen, waitFor } from './ports';
import { pidAlive, processIdentity, processRunning, type ProcessIdentity } from './process-identity';
import { redisReachable, startRedisServer } from './redis-server';
import { StackError } from './stack-error';
import { addStackUser, liveStackUsers, removeStackUser } from './stack-users';
import { temporalReachable, startTemporalDevServer, type DynamicConfigValue } from './temporal-dev-server';

export { processIdentity, type ProcessIdentity };

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
  /** Names of the servers this call started. */
  started: string[];
  /**
   * Names of the project's embedded servers this caller uses (started or
   * joined): stop() leaves them, and stops those a crawl started once no
   * other crawl uses them.
   */
  embedded: string[];
  /** The servers attached to this process (startStack). */
  processes: ManagedProcess[];
  stop(): Promise<void>;
}

type ServerName = 'temporal' | 'redis';
const SERVERS: ServerName[] = ['temporal', 'redis'];

interface ServerEntry {
  pid: number;
  identity?: ProcessIdentity;
  /** A `crawl` started it: the last crawl to leave stops it. Absent: `stack up` did (or adopted it), and only `stack down` stops it. */
  stopsWithLastCrawl?: true;
}

interface StackStateFile {
  temporal?: ServerEntry & { address: string; uiUrl: string | null };
  redis?: ServerEntry & { url: string };
}

const stateFile = (dir: string) => path.join(dir, 'stack.json');

/** Starting, joining, leaving and stopping the stack of `dir` take turns: each reads stack.json and the users, and may change them. */
function withStackLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  return withFileLock(path.join(dir, 'stack.lock'), fn);
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

/** Writes stack.json whole (readers see the old or the new file), or removes it when no server is left to record. */
function writeStackState(dir: string, state: StackStateFile): void {
  if (!state.temporal && !state.redis) {
    fs.rmSync(stateFile(dir), { force: true });
    return;
  }
  fs.mkdirSync(dir, { recursive: true });
  const tmp = `${stateFile(dir)}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(state, null, 2));
  fs.renameSync(tmp, stateFile(dir));
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

/**
 * The object store of the running `cluster up` cluster a crawl started now
 * would run on (as connectOrStartStack picks: TEMPORAL_ADDRESS when it is the
 * cluster's, else the cluster unless an embedded stack runs or only
 * REDIS_URL is named), or null: campaigns on the cluster write to its bucket
 * unless `--out` says otherwise.
 */
export function clusterBucketForCrawl(): { endpoint: string; bucket: string } | null {
  const named = explicitSetting('temporalAddress');
  if (named) return runningClusterBucket(named);
  if (explicitSetting('redisUrl')) return null;
  const state = readStackState();
  if (state.temporal && ownsServer('temporal', state.temporal).ours) return null;
  const cluster = runningClusterEndpoints();
  return cluster ? runningClusterBucket(cluster.temporalAddress) : null;
}

/**
 * The Redis a client command reads when it needs one (`status`'s host table):
 * REDIS_URL, else the embedded stack's or a running `cluster up`'s; null when
 * none is named or running, rather than guessing the default port.
 */
export function clientRedisUrl(dirs: { stack?: string; cluster?: string } = {}): string | null {
  const named = explicitSetting('redisUrl');
  if (named) return named;
  const state = readStackState(dirs.stack);
  return state.redis?.url ?? runningClusterEndpoints(dirs.cluster)?.redisUrl ?? null;
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
    embedded: [],
    processes: [temporal, redis],
    stop: async () => {
      await Promise.all([temporal.stop(), redis.stop()]);
    },
  };
}

/** Read once the server answers: by then redis-server has retitled itself. */
function identityOf(pid: number): { identity?: ProcessIdentity } {
  const id = processIdentity(pid);
  return id ? { identity: id } : {};
}

/**
 * The servers outlive the process that starts them (detached, in a process
 * group of their own, so a Ctrl-C in its terminal does not reach them
 * either): a `crawl` that started them may finish while another still uses
 * them.
 */
async function startTemporalEntry(dataDir: string, port: number, uiPort: number, log: (m: string) => void): Promise<NonNullable<StackStateFile['temporal']>> {
  const p = await startTemporalDevServer({ port, uiPort, dataDir: path.join(dataDir, 'temporal'), detached: true, log });
  return { pid: p.pid, address: `127.0.0.1:${port}`, uiUrl: `http://127.0.0.1:${uiPort}`, ...identityOf(p.pid) };
}

async function startRedisEntry(dataDir: string, port: number, log: (m: string) => void): Promise<NonNullable<StackStateFile['redis']>> {
  const p = await startRedisServer({ port, dataDir: path.join(dataDir, 'redis'), detached: true, log });
  return { pid: p.pid, url: `redis://127.0.0.1:${port}`, ...identityOf(p.pid) };
}

/** SIGTERM, then SIGKILL if it is still there after `timeoutMs`; returns once it is gone. */
async function stopServerProcess(pid: number, timeoutMs = 15_000): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + timeoutMs;
  while (processRunning(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (processRunning(pid)) process.kill(pid, 'SIGKILL');
}

/**
 * A recorded server that still runs is the stack's, and nothing else may
 * use its data folder: one that does not answer (yet) is waited for, and
 * then reported, never replaced by a second one beside it.
 */
async function mustAnswer(name: ServerName, entry: ServerEntry, where: string): Promise<void> {
  const check = () => (name === 'temporal' ? temporalReachable(where) : redisReachable(where));
  try {
    await waitFor(`the ${name} server of the embedded stack (pid ${entry.pid}, ${where})`, check, 30_000, () => (processRunning(entry.pid) ? null : 'it exited'));
  } catch (err) {
    throw new StackError('STACK_SERVER_NOT_ANSWERING', `${(err as Error).message}. Stop the stack with \`npm run crawler -- stack down\` (its data is kept) and try again.`, {
      cause: err,
    });
  }
}

/** Endpoints crawl was pointed at, or found outside the embedded stack: nothing to join, nothing to stop. */
function outsideStack(endpoints: StackEndpoints): RunningStack {
  return { ...endpoints, started: [], embedded: [], processes: [], stop: async () => {} };
}

/**
 * What `crawler crawl` uses: explicit env first, then the project's embedded
 * stack when it runs (stack.json), then a running `cluster up` (both of its
 * endpoints, never one of them beside an embedded server); only what is
 * still missing is started, on the default ports when they are free, and
 * recorded in stack.json for the next crawl to join. All of it under the
 * stack lock, so two crawls starting at once cannot both start a server.
 * stop() leaves the stack (leaveStack).
 */
export async function connectOrStartStack(opts: { log?: (msg: string) => void; dataDir?: string } = {}): Promise<RunningStack> {
  const dataDir = opts.dataDir ?? STACK_DIR;
  const log = opts.log ?? (() => {});
  const namedTemporal = explicitSetting('temporalAddress');
  const namedRedis = explicitSetting('redisUrl');
  if (!namedTemporal && temporalIsRemote(processSettings())) {
    throw new Error('Temporal TLS / API key settings are set, but TEMPORAL_ADDRESS is not: set it to the server they are for (the embedded dev server speaks plaintext)');
  }
  if (namedTemporal && namedRedis) return outsideStack({ temporalAddress: namedTemporal, redisUrl: namedRedis, uiUrl: null });

  return withStackLock(dataDir, async () => {
    const state = readStackState(dataDir);
    // Servers that are gone (or whose pid another process has now) are dropped from the record.
    const next: StackStateFile = {};
    if (state.temporal && ownsServer('temporal', state.temporal).ours) next.temporal = state.temporal;
    if (state.redis && ownsServer('redis', state.redis).ours) next.redis = state.redis;
    const embedded: ServerName[] = [];
    const started: ServerName[] = [];

    let temporal: { address: string; uiUrl: string | null } | null = namedTemporal ? { address: namedTemporal, uiUrl: null } : null;
    if (!temporal && next.temporal) {
      await mustAnswer('temporal', next.temporal, next.temporal.address);
      temporal = next.temporal;
      embedded.push('temporal');
    }
    if (!temporal && !namedRedis) {
      const cluster = runningClusterEndpoints();
      if (cluster && (await temporalReachable(cluster.temporalAddress))) {
        writeStackState(dataDir, next);
        return outsideStack({ ...cluster, uiUrl: null });
      }
    }
    // A Temporal server that merely answers on the default port is not taken: it may be another
    // project folder's stack, which that folder's last crawl stops while this one would still use it.
    if (!temporal) {
      const port = (await portOpen(DEFAULT_TEMPORAL_PORT)) ? await freePort() : DEFAULT_TEMPORAL_PORT;
      const ui = port === DEFAULT_TEMPORAL_PORT && !(await portOpen(DEFAULT_UI_PORT)) ? DEFAULT_UI_PORT : await freePort();
      log(`starting Temporal dev server on 127.0.0.1:${port} (Web UI http://127.0.0.1:${ui})…`);
      next.temporal = { ...(await startTemporalEntry(dataDir, port, ui, log)), stopsWithLastCrawl: true };
      temporal = next.temporal;
      started.push('temporal');
      embedded.push('temporal');
    }

    let redisUrl = namedRedis;
    if (!redisUrl && next.redis) {
      await mustAnswer('redis', next.redis, next.redis.url);
      redisUrl = next.redis.url;
      embedded.push('redis');
    }
    if (!redisUrl) {
      const port = (await portOpen(DEFAULT_REDIS_PORT)) ? await freePort() : DEFAULT_REDIS_PORT;
      log(`starting redis-server on 127.0.0.1:${port}…`);
      try {
        next.redis = { ...(await startRedisEntry(dataDir, port, log)), stopsWithLastCrawl: true };
      } catch (err) {
        // Nobody would use (or stop) a Temporal server started for this crawl alone.
        if (started.includes('temporal') && next.temporal) {
          await stopServerProcess(next.temporal.pid);
          delete next.temporal;
        }
        writeStackState(dataDir, next);
        throw err;
      }
      redisUrl = next.redis.url;
      started.push('redis');
      embedded.push('redis');
    }

    writeStackState(dataDir, next);
    if (embedded.length > 0) addStackUser(dataDir);
    return {
      temporalAddress: temporal.address,
      redisUrl,
      uiUrl: temporal.uiUrl,
      started,
      embedded,
      processes: [],
      stop: async () => {
        if (embedded.length > 0) await leaveStack({ dataDir, log });
      },
    };
  });
}

/**
 * A crawl is done with the embedded stack of `dataDir`: its user record
 * goes, and when no live user is left, the servers a crawl started are
 * stopped (and dropped from stack.json). Returns the names of those stopped.
 */
export async function leaveStack(opts: { dataDir?: string; log?: (msg: string) => void; pid?: number } = {}): Promise<string[]> {
  const dataDir = opts.dataDir ?? STACK_DIR;
  return withStackLock(dataDir, async () => {
    removeStackUser(dataDir, opts.pid);
    if (liveStackUsers(dataDir).length > 0) return [];
    const state = readStackState(dataDir);
    const stopped: string[] = [];
    for (const name of SERVERS) {
      const entry = state[name];
      if (!entry?.stopsWithLastCrawl) continue;
      if (ownsServer(name, entry).ours) {
        opts.log?.(`stopping the ${name} server (pid ${entry.pid}): no other crawl uses it`);
        await stopServerProcess(entry.pid);
        stopped.push(name);
      }
      delete state[name];
    }
    writeStackState(dataDir, state);
    return stopped;
  });
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
 * instead of a second copy of the other on its busy port. Servers a running
 * crawl started are kept too, and from then on run until `stack down`.
 * stack.json lists only servers that run: those kept and those started, also
 * when starting another failed (so `stack down` can still stop them).
 */
export async function stackUp(opts: StackUpOptions = {}): Promise<StackEndpoints> {
  const dataDir = opts.dataDir ?? STACK_DIR;
  const log = opts.log ?? (() => {});
  return withStackLock(dataDir, async () => {
    const state = readStackState(dataDir);
    const next: StackStateFile = {};
    const running = (name: ServerName, entry: ServerEntry | undefined): boolean => {
      if (!entry) return false;
      const check = ownsServer(name, entry);
      if (!check.ours) log(`${name}: the recorded server is gone (${check.why}); starting it again`);
      else if (entry.stopsWithLastCrawl) log(`${name}: a crawl started it (pid ${entry.pid}); it now runs until \`stack down\``);
      else log(`${name}: already running (pid ${entry.pid})`);
      return check.ours;
    };
    // Kept without the crawl's mark: the last crawl to leave must not stop what `up` promised to keep running.
    if (state.temporal && running('temporal', state.temporal)) next.temporal = { ...state.temporal, stopsWithLastCrawl: undefined };
    if (state.redis && running('redis', state.redis)) next.redis = { ...state.redis, stopsWithLastCrawl: undefined };
    const temporalPort = opts.temporalPort ?? DEFAULT_TEMPORAL_PORT;
    const uiPort = opts.uiPort ?? DEFAULT_UI_PORT;
    const redisPort = opts.redisPort ?? DEFAULT_REDIS_PORT;
    const starts: Promise<void>[] = [];
    if (!next.temporal) starts.push(startTemporalEntry(dataDir, temporalPort, uiPort, log).then((e) => void (next.temporal = e)));
    if (!next.redis) starts.push(startRedisEntry(dataDir, redisPort, log).then((e) => void (next.redis = e)));
    const results = await Promise.allSettled(starts);
    writeStackState(dataDir, next);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return { temporalAddress: next.temporal!.address, redisUrl: next.redis!.url, uiUrl: next.temporal!.uiUrl };
  });
}

/**
 * `crawler stack down`: stops the servers of the embedded stack, whoever
 * started them, and waits until the processes are gone. A pid that no longer
 * belongs to that server (stale stack.json) is left alone and reported
 * through `log`, and so are crawls still using the stack.
 */
export async function stackDown(opts: { dataDir?: string; log?: (msg: string) => void } = {}): Promise<string[]> {
  const dataDir = opts.dataDir ?? STACK_DIR;
  const log = opts.log ?? ((m: string) => process.stderr.write(`${m}\n`));
  return withStackLock(dataDir, async () => {
    const state = readStackState(dataDir);
    const users = liveStackUsers(dataDir);
    if (users.length > 0 && (state.temporal || state.redis)) log(`stopping the stack under ${users.length} running crawl(s) (pid ${users.join(', ')}): they lose their servers`);
    const stopped: string[] = [];
    for (const name of SERVERS) {
      const entry = state[name];
      if (!entry || !pidAlive(entry.pid)) continue;
      const check = ownsServer(name, entry);
      if (!check.ours) {
        log(`${name}: not stopped, ${check.why} (stale ${stateFile(dataDir)})`);
        continue;
      }
      await stopServerProcess(entry.pid);
      stopped.push(name);
    }
    writeStackState(dataDir, {});
    return stopped;
  });
}
