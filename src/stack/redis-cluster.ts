// A Redis Cluster on loopback: the tests' throwaway one (N masters, no
// replicas) and `crawler cluster up`'s (masters with a replica each, on fixed
// ports, outliving the CLI). Formed over plain ioredis connections (CLUSTER
// MEET, ADDSLOTSRANGE, REPLICATE) so nothing but redis-server itself is needed.
import fs from 'node:fs';
import path from 'node:path';
import Redis from 'ioredis';
import { ManagedProcess } from './managed-process';
import { freePort, portOpen, waitFor } from './ports';
import { REDIS_PERSISTENCE_ARGS, redisReachable } from './redis-server';
import { StackError } from './stack-error';
import { findOrInstallRedisServer } from './tools';

const SLOTS = 16384;

export interface RedisClusterOptions {
  dataDir: string;
  /** Master nodes, each owning an even share of the 16384 slots. Default 3. */
  masters?: number;
  log?: (msg: string) => void;
  /** How long the nodes get to start and agree on cluster_state:ok. Default 60 s. */
  readyTimeoutMs?: number;
  /** Replicas of each master, which take over its slots when it fails. Default 0. */
  replicasPerMaster?: number;
  /** Client ports, masters first (masters × (1 + replicas) of them; bus port = client port + 10000). Default: free ports. */
  ports?: number[];
  /** Milliseconds without an answer before a node counts as failed (redis default 15000). */
  nodeTimeoutMs?: number;
  /** Nodes outlive this process (`crawler cluster up`). */
  detached?: boolean;
}

export interface RedisClusterNode {
  port: number;
  /** Its role when the cluster was formed (a failover swaps them later). */
  role: 'master' | 'replica';
  /** A replica's master's client port. */
  of?: number;
}

export interface RunningRedisCluster {
  /** redis+cluster://127.0.0.1:p1,127.0.0.1:p2,… as createRedis understands it. */
  url: string;
  nodes: ManagedProcess[];
  /** Client port of each node, in the order of `nodes`. */
  ports: number[];
  /** Each node's role as formed, in the order of `nodes`. */
  layout: RedisClusterNode[];
  /** Stops every node; safe to call twice. */
  stop(): Promise<void>;
}

/** Node i's slots: [first, last], contiguous, the shares differing by at most one slot. */
export function slotRanges(masters: number): [number, number][] {
  return Array.from({ length: masters }, (_, i) => [Math.floor((i * SLOTS) / masters), Math.floor(((i + 1) * SLOTS) / masters) - 1]);
}

/** 2n distinct free loopback ports: a client port and a cluster-bus port per node. */
async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

async function clusterInfo(client: Redis): Promise<Record<string, string>> {
  const text = (await client.call('CLUSTER', 'INFO')) as string;
  return Object.fromEntries(
    text
      .split(/\r?\n/)
      .filter((l) => l.includes(':'))
      .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]),
  );
}

async function addSlots(client: Redis, first: number, last: number): Promise<void> {
  try {
    await client.call('CLUSTER', 'ADDSLOTSRANGE', first, last);
  } catch (err) {
    // ADDSLOTSRANGE is Redis 7.0+; older servers take the slots one by one.
    if (!/unknown subcommand|wrong number/i.test((err as Error).message)) throw err;
    for (let s = first; s <= last; s += 1000) {
      const chunk = Array.from({ length: Math.min(1000, last - s + 1) }, (_, j) => s + j);
      await client.call('CLUSTER', 'ADDSLOTS', ...chunk);
    }
  }
}

export async function startRedisCluster(opts: RedisClusterOptions): Promise<RunningRedisCluster> {
  const masters = opts.masters ?? 3;
  if (!Number.isInteger(masters) || masters < 1) throw new RangeError(`masters must be a positive integer, got ${masters}`);
  const replicas = opts.replicasPerMaster ?? 0;
  if (!Number.isInteger(replicas) || replicas < 0) throw new RangeError(`replicasPerMaster must be a whole number, got ${replicas}`);
  const total = masters * (1 + replicas);
  if (opts.ports && opts.ports.length !== total) throw new RangeError(`${total} ports needed (${masters} masters × ${1 + replicas} nodes), got ${opts.ports.length}`);
  const log = opts.log ?? (() => {});
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  const bin = await findOrInstallRedisServer(log);

  // The bus port is set explicitly: the default (client port + 10000) may
  // be above 65535 or taken when the client port is an ephemeral one.
  const all = opts.ports ? [...opts.ports, ...opts.ports.map((p) => p + 10000)] : await distinctFreePorts(total * 2);
  const ports = all.slice(0, total);
  const busPorts = all.slice(total);
  // Replica r of master m is node masters + m * replicas + r.
  const layout: RedisClusterNode[] = ports.map((port, i) => (i < masters ? { port, role: 'master' } : { port, role: 'replica', of: ports[Math.floor((i - masters) / replicas)] }));
  if (opts.ports) {
    for (const p of all) if (await portOpen(p)) throw new StackError('PORT_IN_USE', `cannot start the Redis Cluster: 127.0.0.1:${p} is taken by another process`);
  }

  const nodes: ManagedProcess[] = [];
  const clients: Redis[] = [];
  let stopped: Promise<void> | null = null;
  const stop = () => {
    stopped ??= (async () => {
      for (const c of clients) c.disconnect();
      await Promise.all(nodes.map((n) => n.stop()));
    })();
    return stopped;
  };
  const deadNode = () => {
    for (const n of nodes) {
      const why = n.deadReason();
      if (why) return `${n.name}: ${why}`;
    }
    return null;
  };

  try {
    for (const [i, port] of ports.entries()) {
      const dir = path.join(opts.dataDir, String(port));
      fs.mkdirSync(dir, { recursive: true });
      const args = [
        '--port',
        String(port),
        '--cluster-port',
        String(busPorts[i]),
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        path.join(opts.dataDir, `nodes-${port}.conf`),
        ...(opts.nodeTimeoutMs ? ['--cluster-node-timeout', String(opts.nodeTimeoutMs)] : []),
        ...REDIS_PERSISTENCE_ARGS,
        '--dir',
        dir,
        '--bind',
        '127.0.0.1',
        '--protected-mode',
        'no',
        '--daemonize',
        'no',
      ];
      nodes.push(ManagedProcess.start(`redis-cluster-${port}`, bin, args, { logFile: path.join(dir, 'redis.log'), detached: opts.detached }));
    }
    await Promise.all(ports.map((p) => waitFor(`redis-server on 127.0.0.1:${p}`, () => redisReachable(`redis://127.0.0.1:${p}`), timeoutMs, deadNode)));

    for (const port of ports) {
      const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
      c.on('error', () => undefined);
      clients.push(c);
    }
    const ranges = slotRanges(masters);
    for (const [i, c] of clients.slice(0, masters).entries()) {
      // Distinct config epochs up front, as redis-cli does, so the nodes need
      // no epoch-collision round before they agree on who owns which slot.
      await c.call('CLUSTER', 'SET-CONFIG-EPOCH', i + 1);
      await addSlots(c, ranges[i][0], ranges[i][1]);
    }
    // Meeting the first node is enough: gossip introduces the rest to each other.
    for (let i = 1; i < total; i++) await clients[0].call('CLUSTER', 'MEET', '127.0.0.1', ports[i], busPorts[i]);
    if (replicas > 0) {
      // A node replicates a master it knows of: wait until gossip has told every node about every other.
      await waitFor(
        `redis cluster nodes on ports ${ports.join(',')} meeting`,
        async () => (await Promise.all(clients.map(clusterInfo))).every((info) => Number(info.cluster_known_nodes) === total),
        timeoutMs,
        deadNode,
      );
      const ids = await Promise.all(clients.slice(0, masters).map((c) => c.call('CLUSTER', 'MYID') as Promise<string>));
      for (const [i, node] of layout.entries()) {
        if (node.role === 'replica') await clients[i].call('CLUSTER', 'REPLICATE', ids[ports.indexOf(node.of!)]);
      }
    }

    const allOk = async () => {
      for (const c of clients) {
        const info = await clusterInfo(c);
        if (info.cluster_state !== 'ok' || Number(info.cluster_known_nodes) !== total || Number(info.cluster_slots_ok) !== SLOTS) return false;
      }
      // Each replica has its master's data flowing (a failover before that would lose what it missed).
      for (const [i, node] of layout.entries()) {
        if (node.role !== 'replica') continue;
        const repl = (await clients[i].call('INFO', 'replication')) as string;
        if (!/^master_link_status:up\s*$/m.test(repl)) return false;
      }
      return true;
    };
    await waitFor(`redis cluster on ports ${ports.join(',')}`, allOk, timeoutMs, deadNode);
    for (const c of clients) c.disconnect();
    clients.length = 0;
  } catch (err) {
    await stop();
    throw err;
  }

  const url = `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`;
  log(`redis cluster ready: ${url}`);
  return { url, nodes, ports, layout, stop };
}
