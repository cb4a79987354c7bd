// What `crawler cluster up` recorded (.crawler/cluster/cluster.json), readable
// without loading the cluster machinery: `crawl` and the client commands look
// here for a running cluster as they look in stack.json for `stack up`.
import fs from 'node:fs';
import path from 'node:path';
import { LOCAL_DIR } from './paths';
import type { RedisClusterNode } from './redis-cluster';
import { processIdentity, type ProcessIdentity } from './process-identity';
import type { TemporalPortVar } from './topology';

export const CLUSTER_DIR = path.join(LOCAL_DIR, 'cluster');

export type ClusterRole = 'postgres' | 'temporal' | 'redis' | 'object-store' | 'worker';

/**
 * How to tell a process of the cluster is up and serving. The object store
 * serves when its bucket answers a signed request, with the credentials of
 * the cluster's credentials file (its path here, never its contents).
 */
export type Readiness =
  | { kind: 'postgres'; port: number }
  | { kind: 'temporal'; address: string }
  | { kind: 'redis'; port: number }
  | { kind: 'http'; url: string }
  | { kind: 's3'; endpoint: string; bucket: string; credentialsDir: string };

/** One process `up` started, and how to start it again. */
export interface ClusterProcess {
  name: string;
  role: ClusterRole;
  pid: number;
  identity?: ProcessIdentity;
  command: string;
  args: string[];
  /** Variables set on top of the starting process's environment. */
  env: Record<string, string>;
  cwd?: string;
  logFile: string;
  ready: Readiness;
  /** PostgreSQL's "fast" shutdown is SIGINT (SIGTERM waits for every client to leave). */
  stopSignal: 'SIGTERM' | 'SIGINT';
}

export interface ClusterState {
  temporalAddress: string;
  redisUrl: string;
  postgresPort: number;
  temporalPorts: Record<TemporalPortVar, number>;
  redisNodes: RedisClusterNode[];
  /** The object store's S3 endpoint (path-style) and the bucket campaigns write to; absent in a cluster made before it had one. */
  objectStore?: { endpoint: string; bucket: string };
  processes: ClusterProcess[];
  /** Seconds each step of the first `up` took (the build only when it ran). */
  timings: Record<string, number>;
  /** The first `up` got to the end (else only `down` may follow). */
  complete: boolean;
}

export const clusterStateFile = (dir: string) => path.join(dir, 'cluster.json');

export function readClusterState(dir = CLUSTER_DIR): ClusterState | null {
  try {
    return JSON.parse(fs.readFileSync(clusterStateFile(dir), 'utf8')) as ClusterState;
  } catch {
    return null;
  }
}

/**
 * Whether the recorded pid is still that process (same start time and command
 * line), not a reused pid. A process that is exiting reads an empty command
 * line once its memory is gone, before it becomes a zombie: with its start
 * time unchanged it is still that process, still running (`cluster down`
 * waits for it, and PostgreSQL's postmaster can take a while there).
 */
export function stillRunning(p: Pick<ClusterProcess, 'pid' | 'identity'>, procRoot = '/proc'): boolean {
  const now = processIdentity(p.pid, procRoot);
  if (!now) return false;
  if (!p.identity) return true;
  return now.startTime === p.identity.startTime && (now.cmdline === p.identity.cmdline || now.cmdline === '');
}

/**
 * The endpoints of the cluster `cluster up` started in `dir`, when its
 * Temporal server and at least one Redis node still run; null otherwise.
 */
export function runningClusterEndpoints(dir = CLUSTER_DIR): { temporalAddress: string; redisUrl: string } | null {
  const state = readClusterState(dir);
  if (!state?.complete) return null;
  const alive = (role: ClusterRole) => state.processes.some((p) => p.role === role && stillRunning(p));
  return alive('temporal') && alive('redis') ? { temporalAddress: state.temporalAddress, redisUrl: state.redisUrl } : null;
}

/**
 * The bucket of the cluster `cluster up` started in `dir` whose Temporal
 * server is at `temporalAddress`, when it runs with its object store: where
 * a campaign started on that cluster writes unless told otherwise.
 */
export function runningClusterBucket(temporalAddress: string, dir = CLUSTER_DIR): { endpoint: string; bucket: string } | null {
  const state = readClusterState(dir);
  if (!state?.complete || !state.objectStore || state.temporalAddress !== temporalAddress) return null;
  return state.processes.some((p) => p.role === 'object-store' && stillRunning(p)) ? state.objectStore : null;
}
