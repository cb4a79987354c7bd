// The browser's memory as the worker reads it (src/browser/process-memory.ts):
// a process found among the worker's children by a switch of its command
// line, the processes under it, and what they hold, from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { childWithArg, processTree, treeMemory } from '../../src/browser/process-memory';

const MARKER = `--process-memory-test=${process.pid}`;
let child: ChildProcess;
let pids: number[] = [];

beforeAll(async () => {
  // A shell with two children of its own: a tree of three, like a browser and its helpers.
  child = spawn('sh', ['-c', 'sleep 60 & sleep 60 & wait', 'sh', MARKER], { stdio: 'ignore' });
  // The shell has started both once the tree holds three processes.
  while ((pids = await processTree(child.pid!)).length < 3) await new Promise((r) => setTimeout(r, 20));
});

afterAll(() => {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone already */
    }
  }
});

test('the child launched with a switch is found by it; another switch finds none', async () => {
  expect(await childWithArg(process.pid, MARKER)).toBe(child.pid);
  expect(await childWithArg(process.pid, `${MARKER}-other`)).toBeNull();
});

test("a tree's memory is every process of it, and nothing once it is gone", async () => {
  const tree = await processTree(child.pid!);
  expect(tree[0]).toBe(child.pid);
  expect(tree).toHaveLength(3);
  const held = await treeMemory(child.pid!);
  expect(held.processes).toBe(3);
  // The tree holds more than one of its processes alone.
  expect(held.bytes).toBeGreaterThan((await treeMemory(tree[2]!)).bytes);
  for (const pid of [...tree].reverse()) process.kill(pid, 'SIGKILL');
  await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // The sleeps were reparented and killed; the shell reaped: nothing is left under its pid.
  expect(await treeMemory(child.pid!)).toEqual({ bytes: 0, processes: 0 });
});
