// `crawl` and the client commands find a running `cluster up` through its
// state file: both endpoints when its Temporal server and a Redis node still
// run (checked by pid and start time), nothing otherwise.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clusterStateFile, runningClusterBucket, runningClusterEndpoints, stillRunning, type ClusterProcess, type ClusterState } from '../../src/stack/cluster-state';
import { processIdentity } from '../../src/stack/stack';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-state-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** This very process stands in for a recorded server: it is certainly running. */
const alive = (role: ClusterProcess['role'], name: string): ClusterProcess => ({
  name,
  role,
  pid: process.pid,
  identity: processIdentity(process.pid)!,
  command: process.execPath,
  args: [],
  env: {},
  logFile: '/dev/null',
  ready: { kind: 'redis', port: 1 },
  stopSignal: 'SIGTERM',
});
/** The same pid with another start time: what a pid reused after a reboot looks like. */
const gone = (p: ClusterProcess): ClusterProcess => ({ ...p, identity: { ...p.identity!, startTime: '1' } });

const STORE = { endpoint: 'http://127.0.0.1:18333', bucket: 'crawls' };
const write = (processes: ClusterProcess[], complete = true, objectStore: ClusterState['objectStore'] = STORE) => {
  const state: ClusterState = {
    ...(objectStore ? { objectStore } : {}),
    temporalAddress: '127.0.0.1:17233',
    redisUrl: 'redis+cluster://127.0.0.1:17001,127.0.0.1:17002',
    postgresPort: 15432,
    temporalPorts: {} as ClusterState['temporalPorts'],
    redisNodes: [],
    processes,
    timings: {},
    complete,
  };
  fs.writeFileSync(clusterStateFile(dir), JSON.stringify(state));
};

test('a cluster whose server and a Redis node run: both of its endpoints', () => {
  write([alive('temporal', 'temporal-server'), gone(alive('redis', 'redis-cluster-17001')), alive('redis', 'redis-cluster-17002')]);
  expect(runningClusterEndpoints(dir)).toEqual({ temporalAddress: '127.0.0.1:17233', redisUrl: 'redis+cluster://127.0.0.1:17001,127.0.0.1:17002' });
});

test('the Temporal server gone (its pid now another process): none', () => {
  write([gone(alive('temporal', 'temporal-server')), alive('redis', 'redis-cluster-17001')]);
  expect(runningClusterEndpoints(dir)).toBeNull();
});

test('every Redis node gone: none, rather than Temporal beside some other Redis', () => {
  write([alive('temporal', 'temporal-server'), gone(alive('redis', 'redis-cluster-17001'))]);
  expect(runningClusterEndpoints(dir)).toBeNull();
});

test('an `up` that stopped half-way, or no cluster at all: none', () => {
  write([alive('temporal', 'temporal-server'), alive('redis', 'redis-cluster-17001')], false);
  expect(runningClusterEndpoints(dir)).toBeNull();
  expect(runningClusterEndpoints(path.join(dir, 'nothing-here'))).toBeNull();
});

describe('stillRunning', () => {
  // A /proc of one process, as the kernel shows it at each step of its life.
  const proc = fs.mkdtempSync(path.join(os.tmpdir(), 'proc-'));
  afterAll(() => fs.rmSync(proc, { recursive: true, force: true }));
  const pid = 4242;
  const recorded = { pid, identity: { cmdline: '/usr/lib/postgresql/15/bin/postgres -D /data -p 15432', startTime: '777' } };
  const show = (state: string, startTime: string, cmdline: string | null) => {
    fs.rmSync(path.join(proc, String(pid)), { recursive: true, force: true });
    if (cmdline === null) return;
    fs.mkdirSync(path.join(proc, String(pid)), { recursive: true });
    // Fields after "(comm) ": state is the first, start time the 20th.
    const after = [state, ...Array.from({ length: 18 }, () => '0'), startTime, '0'].join(' ');
    fs.writeFileSync(path.join(proc, String(pid), 'stat'), `${pid} (postgres) ${after}`);
    fs.writeFileSync(path.join(proc, String(pid), 'cmdline'), cmdline.split(' ').join('\0'));
  };

  test('the recorded process, running: yes', () => {
    show('S', '777', recorded.identity.cmdline);
    expect(stillRunning(recorded, proc)).toBe(true);
  });

  test('exiting, its memory gone so its command line reads empty, not yet a zombie: still running', () => {
    // What `cluster down` saw of PostgreSQL's postmaster while it shut down: taking it for gone
    // reported it stopped while it still ran.
    show('R', '777', '');
    expect(stillRunning(recorded, proc)).toBe(true);
  });

  test('a zombie, or gone: no', () => {
    show('Z', '777', '');
    expect(stillRunning(recorded, proc)).toBe(false);
    show('S', '777', null);
    expect(stillRunning(recorded, proc)).toBe(false);
  });

  test('the pid reused by another process (another start time, or another command line): no', () => {
    show('S', '778', recorded.identity.cmdline);
    expect(stillRunning(recorded, proc)).toBe(false);
    show('S', '777', '/usr/bin/something-else');
    expect(stillRunning(recorded, proc)).toBe(false);
  });
});

describe("a campaign on the cluster goes to the cluster's bucket", () => {
  const running = () => [alive('temporal', 'temporal-server'), alive('redis', 'redis-cluster-17001'), alive('object-store', 'seaweedfs')];

  test('its Temporal address and a running object store: the endpoint and bucket', () => {
    write(running());
    expect(runningClusterBucket('127.0.0.1:17233', dir)).toEqual(STORE);
  });

  test('another Temporal address: none, whatever runs here', () => {
    write(running());
    expect(runningClusterBucket('127.0.0.1:7233', dir)).toBeNull();
  });

  test('the object store gone, a cluster made before it had one, or half an `up`: none', () => {
    write([...running().slice(0, 2), gone(alive('object-store', 'seaweedfs'))]);
    expect(runningClusterBucket('127.0.0.1:17233', dir)).toBeNull();
    write(running().slice(0, 2), true, undefined);
    expect(runningClusterBucket('127.0.0.1:17233', dir)).toBeNull();
    write(running(), false);
    expect(runningClusterBucket('127.0.0.1:17233', dir)).toBeNull();
  });
});
