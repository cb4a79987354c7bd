import path from 'node:path';
import { Connection } from '@temporalio/client';
import { CRAWL_SEARCH_ATTRIBUTES } from '../temporal/search-attributes';
import { ManagedProcess } from './managed-process';
import { portOpen, waitFor } from './ports';
import { StackError } from './stack-error';
import { findOrInstallTemporalCli } from './tools';

export interface TemporalDevServerOptions {
  port: number;
  uiPort?: number;
  headless?: boolean;
  dataDir: string;
  detached?: boolean;
  log?: (msg: string) => void;
  /**
   * Server dynamic config, passed as `--dynamic-config-value key=<JSON>`.
   * The replay fixtures lower `limit.historyCount.suggestContinueAsNew` so
   * both workflows continue as new within a short recording run.
   */
  dynamicConfig?: Record<string, DynamicConfigValue>;
}

export type DynamicConfigValue = string | number | boolean | null | DynamicConfigValue[] | { [key: string]: DynamicConfigValue };

/** The CLI flags for `dynamicConfig`: values are JSON (the CLI rejects anything else). */
export function dynamicConfigArgs(config: Record<string, DynamicConfigValue> = {}): string[] {
  return Object.entries(config).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]);
}

/** True when a Temporal frontend answers on this address. */
export async function temporalReachable(address: string, timeoutMs = 1500): Promise<boolean> {
  let conn: Connection | undefined;
  try {
    conn = await Connection.connect({ address, connectTimeout: timeoutMs });
    await conn.workflowService.getSystemInfo({});
    return true;
  } catch {
    return false;
  } finally {
    await conn?.close().catch(() => undefined);
  }
}

/** Dynamic config that turns task queue fairness on (a deployment sets the same on its server: docs/operations.md). */
export const FAIRNESS_DYNAMIC_CONFIG = [
  'matching.useNewMatcher=true',
  'matching.enableFairness=true',
  'matching.numTaskqueueReadPartitions=1',
  'matching.numTaskqueueWritePartitions=1',
];

/**
 * A worker stopped gracefully (SIGTERM) lost activity tasks: when its SDK
 * cancelled its open long polls, the server could hand one of them a session
 * at that same instant; the server recorded it started, no worker ran it, and
 * its host waited for the 5-minute heartbeat timeout (a CI run of
 * crash-and-sleep.test.ts, then caught live in a fresh clone: the host's
 * session started by the stopping worker 1 ms before its shutdown, never run,
 * no session record to hand over). With this the server advertises
 * `workerPollCompleteOnShutdown`, and the SDK asks the server to end its polls
 * (ShutdownWorker) instead of cutting them: a task is either handed to a
 * worker that runs it or not handed at all. A deployment's server gets the
 * same (deploy/temporal-dynamic-config.yaml).
 */
export const SHUTDOWN_DYNAMIC_CONFIG = ['frontend.enableCancelWorkerPollsOnShutdown=true'];

/**
 * A worker that stops answering (SIGSTOP, a paused VM) keeps its connection to
 * the server, and the server kept handing its open long polls tasks: each
 * workflow task one took waited for the task's 10 s timeout, each session was
 * lost again (issue 38: a frozen worker's hosts went on after 13–20 s). With
 * these the server pings a connection silent for a second and closes it when
 * the ping is not answered within another, its polls with it, before the
 * worker's lease in Redis (3 s) runs out and its hosts are told. A live
 * worker's SDK answers pings from its own threads, however busy its event
 * loop. A deployment's server gets the same (deploy/temporal-dynamic-config.yaml).
 */
export const LIVENESS_DYNAMIC_CONFIG = ['frontend.keepAliveTime="1s"', 'frontend.keepAliveTimeout="1s"', ...SHUTDOWN_DYNAMIC_CONFIG];

/**
 * The CLI's dev server re-reads the search attribute registry from SQLite on
 * every read of it, so that attributes added at run time show at once (a
 * testing aid that Temporal says not to use in production): once per workflow
 * start and per visibility record, 3–4 % of the server's CPU in
 * `npm run bench -- --only k` (a profile of a symbol-built dev server,
 * docs/benchmarks-history.md, session 17). Ours are on the command line, registered before the
 * server serves, so the registry it caches at start is already complete; a
 * server we did not start is waited on by `awaitSearchAttributesServed`.
 */
export const DEV_SERVER_CACHE_DYNAMIC_CONFIG = ['system.forceSearchAttributesCacheRefreshOnRead=false'];

/** The command line of `temporal server start-dev` for these options. */
export function devServerArgs(opts: TemporalDevServerOptions): string[] {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(opts.port),
    '--db-filename',
    path.join(opts.dataDir, 'temporal.sqlite'),
    '--log-level',
    'warn',
    // WAL keeps the single SQLite file from serialising every history write
    // behind fsync; a crash still recovers from the WAL.
    '--sqlite-pragma',
    'journal_mode=wal',
    '--sqlite-pragma',
    'synchronous=normal',
    // Campaigns sharing the workers share them fairly: each campaign's tasks
    // carry its ID as fairness key (src/temporal/campaign-client.ts,
    // activities/campaign-hosts.ts), and the matcher round-robins between keys
    // instead of serving one campaign's backlog first.
    ...FAIRNESS_DYNAMIC_CONFIG.flatMap((kv) => ['--dynamic-config-value', kv]),
    ...LIVENESS_DYNAMIC_CONFIG.flatMap((kv) => ['--dynamic-config-value', kv]),
    ...DEV_SERVER_CACHE_DYNAMIC_CONFIG.flatMap((kv) => ['--dynamic-config-value', kv]),
  ];
  if (opts.headless) args.push('--headless');
  else if (opts.uiPort) args.push('--ui-port', String(opts.uiPort));
  for (const sa of CRAWL_SEARCH_ATTRIBUTES) args.push('--search-attribute', `${sa.name}=${sa.cliType}`);
  args.push(...dynamicConfigArgs(opts.dynamicConfig));
  return args;
}

/**
 * `temporal server start-dev` with SQLite persistence under dataDir, so
 * workflows survive a restart, and our search attributes registered.
 */
export async function startTemporalDevServer(opts: TemporalDevServerOptions): Promise<ManagedProcess> {
  // Something else on the port would answer the readiness probe below while
  // our server dies on the busy port, and we would take it for ours.
  const ports: [number, string][] = [[opts.port, 'Temporal dev server']];
  if (!opts.headless && opts.uiPort) ports.push([opts.uiPort, 'Temporal Web UI']);
  for (const [port, what] of ports) {
    if (await portOpen(port)) throw new StackError('PORT_IN_USE', `cannot start the ${what} on 127.0.0.1:${port}: another process already listens there`);
  }
  const cli = await findOrInstallTemporalCli(opts.log);
  const address = `127.0.0.1:${opts.port}`;
  for (let attempt = 1; ; attempt++) {
    const proc = ManagedProcess.start('temporal', cli, devServerArgs(opts), {
      logFile: path.join(opts.dataDir, 'temporal.log'),
      detached: opts.detached,
    });
    try {
      await waitFor(
        `Temporal dev server on ${address}`,
        () => temporalReachable(address),
        90_000,
        () => proc.deadReason(),
      );
      return proc;
    } catch (err) {
      const died = proc.deadReason();
      await proc.stop();
      // The dev server picks its internal services' ports itself, and one taken between its pick
      // and its bind (another server starting beside it) kills it at start (a nil listener
      // panic): it exits before it is ready, and a second start picks other ports.
      if (attempt >= DEV_SERVER_STARTS || died === null) throw err;
      opts.log?.(`Temporal dev server on ${address} exited at start (${died}); starting it again`);
    }
  }
}

/** Starts of the dev server tried before its failure to start is reported. */
const DEV_SERVER_STARTS = 3;
