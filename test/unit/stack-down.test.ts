// `crawler stack down` signals the pids stack.json recorded. After a reboot
// or a crash those pids may belong to anything, so a pid is signalled only
// if procfs still shows the server that `stack up` started there: the same
// command line and start time (older stack.json files, without either, by
// the server's program name). The check runs here against a fake procfs,
// then the real command against real processes. `stack up` after one server
// died runs against a real redis-server and a stand-in for Temporal.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { freePort } from '../../src/stack/ports';
import { redisReachable } from '../../src/stack/redis-server';
import { StackError } from '../../src/stack/stack-error';
import { ownsServer, processIdentity, readStackState, stackDown, stackUp } from '../../src/stack/stack';

jest.setTimeout(60_000);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-down-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A procfs with one process: `stat` as the kernel writes it, `cmdline` NUL-separated. */
function fakeProc(pid: number, p: { argv: string[]; state?: string; startTime?: number; comm?: string }): string {
  const root = fs.mkdtempSync(path.join(tmp, 'proc-'));
  fs.mkdirSync(path.join(root, String(pid)));
  // Fields 3…: state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt, cmajflt, utime, stime, cutime, cstime, priority, nice, threads, itrealvalue, starttime, …
  const after = [p.state ?? 'S', 1, pid, pid, 0, -1, 4194560, 100, 0, 0, 0, 5, 3, 0, 0, 20, 0, 4, 0, p.startTime ?? 123456, 1000000, 300];
  fs.writeFileSync(path.join(root, String(pid), 'stat'), `${pid} (${p.comm ?? 'server'}) ${after.join(' ')}\n`);
  fs.writeFileSync(path.join(root, String(pid), 'cmdline'), p.argv.join('\0') + '\0');
  return root;
}

describe('which pid stack down may signal', () => {
  const redisArgv = ['redis-server 127.0.0.1:6379', '', '', ''];
  const temporalArgv = ['/home/u/.crawler/tools/venv/bin/temporal', 'server', 'start-dev', '--port', '7233'];

  test('procfs reads the command line (a retitled one too) and the start time', () => {
    const root = fakeProc(4242, { argv: redisArgv, startTime: 987654 });
    expect(processIdentity(4242, root)).toEqual({ cmdline: 'redis-server 127.0.0.1:6379', startTime: '987654' });
    // A command name with ") " in it does not shift the fields.
    const odd = fakeProc(4243, { argv: ['x'], startTime: 55, comm: 'a) S 1 (b' });
    expect(processIdentity(4243, odd)?.startTime).toBe('55');
  });

  test('the recorded server: same command line and start time', () => {
    const root = fakeProc(4242, { argv: redisArgv, startTime: 987654 });
    expect(ownsServer('redis', { pid: 4242, identity: { cmdline: 'redis-server 127.0.0.1:6379', startTime: '987654' } }, root).ours).toBe(true);
  });

  test('a pid reused by another process is not ours, even one running the same program', () => {
    const identity = { cmdline: 'redis-server 127.0.0.1:6379', startTime: '987654' };
    const later = fakeProc(4242, { argv: redisArgv, startTime: 999999 });
    expect(ownsServer('redis', { pid: 4242, identity }, later)).toEqual({ ours: false, why: expect.stringMatching(/started at another time/) });
    const other = fakeProc(4242, { argv: ['vim', 'notes.txt'], startTime: 987654 });
    expect(ownsServer('redis', { pid: 4242, identity }, other)).toEqual({ ours: false, why: expect.stringMatching(/now runs "vim notes.txt"/) });
  });

  test('a pid that is gone or a zombie is not running', () => {
    const root = fakeProc(4242, { argv: redisArgv });
    expect(ownsServer('redis', { pid: 4343 }, root)).toEqual({ ours: false, why: 'not running' });
    const zombie = fakeProc(4242, { argv: [], state: 'Z' });
    expect(ownsServer('redis', { pid: 4242, identity: { cmdline: '', startTime: '123456' } }, zombie)).toEqual({ ours: false, why: 'not running' });
  });

  test('stack.json from before identities: the server program must be what runs there', () => {
    expect(ownsServer('redis', { pid: 4242 }, fakeProc(4242, { argv: redisArgv })).ours).toBe(true);
    expect(ownsServer('temporal', { pid: 4242 }, fakeProc(4242, { argv: temporalArgv })).ours).toBe(true);
    expect(ownsServer('redis', { pid: 4242 }, fakeProc(4242, { argv: temporalArgv })).ours).toBe(false);
    expect(ownsServer('temporal', { pid: 4242 }, fakeProc(4242, { argv: ['/usr/bin/temporal', 'workflow', 'list'] })).ours).toBe(false);
    expect(ownsServer('temporal', { pid: 4242 }, fakeProc(4242, { argv: ['node', 'app.js'] })).ours).toBe(false);
  });

  test('without procfs a live pid is all there is to go on', () => {
    const none = path.join(tmp, 'no-proc-here');
    expect(ownsServer('redis', { pid: process.pid }, none).ours).toBe(true);
    expect(ownsServer('redis', { pid: 2 ** 22 + 1 }, none).ours).toBe(false);
  });
});

describe('crawler stack down (the command)', () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  /** A stand-in server: any long-running process with a pid of its own. */
  const standIn = () => {
    const c = spawn('sleep', ['300'], { stdio: 'ignore' });
    children.push(c);
    return c;
  };
  const exited = (c: ChildProcess) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve())));
  const crawler = (home: string, args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const cmd = crawlerCommand(args);
      // Asynchronous on purpose: this process must keep reaping the stand-ins the command stops.
      const p = spawn(cmd.command, cmd.args, { env: { ...process.env, CRAWLER_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.on('exit', (code) => resolve({ code, stdout, stderr }));
    });

  test('stops the recorded server and leaves a process that took over a recorded pid alone', async () => {
    const ours = standIn();
    const stranger = standIn();
    // Let both exec so procfs shows `sleep 300`, not the forking node.
    await new Promise((r) => setTimeout(r, 200));
    const home = fs.mkdtempSync(path.join(tmp, 'home-'));
    const stackDir = path.join(home, 'stack');
    fs.mkdirSync(stackDir, { recursive: true });
    const oursId = processIdentity(ours.pid!);
    const strangerId = processIdentity(stranger.pid!);
    expect(oursId?.cmdline).toBe('sleep 300');
    fs.writeFileSync(
      path.join(stackDir, 'stack.json'),
      JSON.stringify({
        temporal: { pid: ours.pid, address: '127.0.0.1:7233', uiUrl: null, identity: oursId },
        // As if the recorded redis-server died and `sleep` got its pid.
        redis: { pid: stranger.pid, url: 'redis://127.0.0.1:6379', identity: { cmdline: 'redis-server 127.0.0.1:6379', startTime: strangerId!.startTime } },
      }),
    );

    const r = await crawler(home, ['stack', 'down']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('stopped temporal');
    expect(r.stderr).toMatch(new RegExp(`redis: not stopped, pid ${stranger.pid} now runs "sleep 300"`));
    await exited(ours);
    expect(ours.signalCode).toBe('SIGTERM');
    expect(stranger.exitCode === null && stranger.signalCode === null).toBe(true);
    // The file described servers that are gone either way.
    expect(fs.existsSync(path.join(stackDir, 'stack.json'))).toBe(false);

    // Nothing recorded any more: a second run touches nothing.
    const again = await crawler(home, ['stack', 'down']);
    expect(again.stdout.trim()).toBe('nothing was running');
    expect(stranger.exitCode === null && stranger.signalCode === null).toBe(true);
  });
});

describe('crawler stack up after one server died', () => {
  const children: ChildProcess[] = [];
  const savedCli = process.env.TEMPORAL_CLI;
  let cliCalls: string;
  beforeAll(() => {
    // Temporal must not be started here: a stub CLI records any attempt.
    cliCalls = path.join(tmp, 'temporal-cli-calls');
    const stub = path.join(tmp, 'temporal-stub');
    fs.writeFileSync(stub, `#!/bin/sh\necho "$*" >> '${cliCalls}'\nexit 1\n`, { mode: 0o755 });
    process.env.TEMPORAL_CLI = stub;
  });
  afterAll(() => {
    if (savedCli === undefined) delete process.env.TEMPORAL_CLI;
    else process.env.TEMPORAL_CLI = savedCli;
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  /** A live stand-in for the recorded Temporal server, and a pid that has exited for the dead Redis. */
  async function stackWithDeadRedis(): Promise<{ dir: string; temporal: ChildProcess; ports: { temporalPort: number; uiPort: number; redisPort: number } }> {
    const temporal = spawn('sleep', ['300'], { stdio: 'ignore' });
    children.push(temporal);
    const dead = spawn('true', { stdio: 'ignore' });
    await new Promise((r) => dead.once('exit', r));
    await new Promise((r) => setTimeout(r, 200)); // let `sleep` exec, so procfs shows it
    const ports = { temporalPort: await freePort(), uiPort: await freePort(), redisPort: await freePort() };
    const dir = fs.mkdtempSync(path.join(tmp, 'stack-'));
    fs.writeFileSync(
      path.join(dir, 'stack.json'),
      JSON.stringify({
        temporal: { pid: temporal.pid, address: `127.0.0.1:${ports.temporalPort}`, uiUrl: `http://127.0.0.1:${ports.uiPort}`, identity: processIdentity(temporal.pid!) },
        redis: { pid: dead.pid, url: `redis://127.0.0.1:${ports.redisPort}`, identity: { cmdline: `redis-server 127.0.0.1:${ports.redisPort}`, startTime: '1' } },
      }),
    );
    return { dir, temporal, ports };
  }

  test('starts only the server that is down and records it; down then stops both', async () => {
    const { dir, temporal, ports } = await stackWithDeadRedis();
    const before = readStackState(dir);
    const up = await stackUp({ dataDir: dir, ...ports });
    try {
      expect(fs.existsSync(cliCalls)).toBe(false);
      const after = readStackState(dir);
      // The live one is kept as it was recorded.
      expect(after.temporal).toEqual(before.temporal);
      expect(up).toEqual({ temporalAddress: before.temporal!.address, redisUrl: `redis://127.0.0.1:${ports.redisPort}`, uiUrl: before.temporal!.uiUrl });
      // The new Redis is recorded with its own pid, and that pid is the server answering.
      expect(after.redis?.pid).not.toBe(before.redis?.pid);
      expect(ownsServer('redis', after.redis!).ours).toBe(true);
      expect(after.redis?.identity?.cmdline).toMatch(/redis-server/);
      expect(await redisReachable(after.redis!.url)).toBe(true);
    } finally {
      const stopped = await stackDown({ dataDir: dir, log: () => {} });
      expect(stopped.sort()).toEqual(['redis', 'temporal']);
    }
    await new Promise((r) => (temporal.exitCode !== null || temporal.signalCode !== null ? r(null) : temporal.once('exit', r)));
    expect(temporal.signalCode).toBe('SIGTERM');
    expect(await redisReachable(up.redisUrl)).toBe(false);
  });

  test('records only servers that run: a port taken by another process fails that server alone', async () => {
    const { dir, ports } = await stackWithDeadRedis();
    const before = readStackState(dir);
    // Something that is not our Redis listens on its port.
    const squatter = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => squatter.listen(ports.redisPort, '127.0.0.1', r));
    try {
      const err = await stackUp({ dataDir: dir, ...ports }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StackError);
      expect((err as StackError).code).toBe('PORT_IN_USE');
      expect((err as StackError).message).toContain(`127.0.0.1:${ports.redisPort}`);
      expect(readStackState(dir)).toEqual({ temporal: before.temporal });
      expect(fs.existsSync(cliCalls)).toBe(false);
    } finally {
      await new Promise((r) => squatter.close(r));
      await stackDown({ dataDir: dir, log: () => {} });
    }
  });
});
