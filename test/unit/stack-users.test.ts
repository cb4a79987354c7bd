// One embedded stack per project folder, shared by the crawls running in it:
// each crawl records itself as a user (a file named by its pid), a user that
// died is told apart by its pid and start time, and the last live user to
// leave stops the servers a crawl started, never those of `stack up`. Here
// with stand-in processes (`sleep`) for the users and the servers; the real
// servers are in test/integration/shared-stack.test.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { processIdentity } from '../../src/stack/process-identity';
import { leaveStack, readStackState, stackUp } from '../../src/stack/stack';
import { addStackUser, liveStackUsers, removeStackUser, usersDir } from '../../src/stack/stack-users';
import { tempDirs } from '../support/temp-dirs';

jest.setTimeout(30_000);
const tempDir = tempDirs('stack-users-');

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A process with a pid of its own, once procfs shows it running `sleep`. */
async function standIn(): Promise<ChildProcess> {
  const c = spawn('sleep', ['300'], { stdio: 'ignore' });
  children.push(c);
  while (processIdentity(c.pid!)?.cmdline !== 'sleep 300') await new Promise((r) => setTimeout(r, 20));
  return c;
}
const gone = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));
async function deadPid(): Promise<number> {
  const c = spawn('true', { stdio: 'ignore' });
  await gone(c);
  return c.pid!;
}
const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

describe('the users of a stack', () => {
  test('live users are counted; the records of exited ones and of reused pids are dropped', async () => {
    const dir = tempDir();
    const a = await standIn();
    const b = await standIn();
    addStackUser(dir, a.pid);
    addStackUser(dir, b.pid);
    const dead = await deadPid();
    addStackUser(dir, dead);
    // This pid runs, but it is not the process that was recorded under it (another start time).
    fs.writeFileSync(path.join(usersDir(dir), `${process.pid}.json`), JSON.stringify({ pid: process.pid, identity: { cmdline: 'node crawl', startTime: '1' } }));
    // Not a user record: left alone.
    fs.writeFileSync(path.join(usersDir(dir), 'notes.txt'), 'x');

    expect(liveStackUsers(dir)).toEqual([a.pid!, b.pid!].sort((x, y) => x - y));
    expect(fs.readdirSync(usersDir(dir)).sort()).toEqual([`${a.pid}.json`, `${b.pid}.json`, 'notes.txt'].sort());

    removeStackUser(dir, a.pid);
    expect(liveStackUsers(dir)).toEqual([b.pid]);
    b.kill('SIGKILL');
    await gone(b);
    expect(liveStackUsers(dir)).toEqual([]);
  });

  test('no users folder: no users', () => {
    expect(liveStackUsers(path.join(tempDir(), 'nothing-here'))).toEqual([]);
  });
});

describe('leaving the stack', () => {
  /** stack.json with stand-ins: Temporal started by a crawl, Redis by `stack up` unless `bothByCrawl`. */
  async function stack(bothByCrawl: boolean) {
    const dir = tempDir();
    const temporal = await standIn();
    const redis = await standIn();
    fs.writeFileSync(
      path.join(dir, 'stack.json'),
      JSON.stringify({
        temporal: { pid: temporal.pid, address: '127.0.0.1:1', uiUrl: null, identity: processIdentity(temporal.pid!), stopsWithLastCrawl: true },
        redis: { pid: redis.pid, url: 'redis://127.0.0.1:1', identity: processIdentity(redis.pid!), ...(bothByCrawl ? { stopsWithLastCrawl: true } : {}) },
      }),
    );
    return { dir, temporal, redis };
  }

  test('the servers stay while another user runs; the last user stops those a crawl started, not those of stack up', async () => {
    const { dir, temporal, redis } = await stack(false);
    const other = await standIn();
    addStackUser(dir, other.pid);
    addStackUser(dir, process.pid);
    addStackUser(dir, await deadPid());

    expect(await leaveStack({ dataDir: dir, pid: process.pid })).toEqual([]);
    expect(running(temporal) && running(redis)).toBe(true);
    expect(readStackState(dir).temporal?.pid).toBe(temporal.pid);

    // The other user dies without leaving: the next to leave is the last.
    other.kill('SIGKILL');
    await gone(other);
    expect(await leaveStack({ dataDir: dir, pid: other.pid })).toEqual(['temporal']);
    await gone(temporal);
    expect(temporal.signalCode).toBe('SIGTERM');
    expect(running(redis)).toBe(true);
    // What is gone is no longer recorded; what runs on is.
    expect(readStackState(dir)).toEqual({ redis: expect.objectContaining({ pid: redis.pid }) });
    expect(liveStackUsers(dir)).toEqual([]);
  });

  test('`stack up` keeps the servers a crawl started running after the last crawl leaves', async () => {
    const { dir, temporal, redis } = await stack(true);
    addStackUser(dir, process.pid);
    await stackUp({ dataDir: dir });
    expect(await leaveStack({ dataDir: dir, pid: process.pid })).toEqual([]);
    expect(running(temporal) && running(redis)).toBe(true);
    expect(readStackState(dir)).toEqual({ temporal: expect.objectContaining({ pid: temporal.pid }), redis: expect.objectContaining({ pid: redis.pid }) });
  });
});
