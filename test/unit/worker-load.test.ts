// Where a session runs (issue 38): a worker takes new sessions while its
// thread has room, and past its floor of sessions refuses them while the
// thread is saturated, so that they go to another worker of the pool.
import type { SlotReserveContext } from '@temporalio/worker';
import { spawn } from 'node:child_process';
import { BROWSER_SATURATED_CORES, childProcessesTime, mainThreadTime, SATURATED_UTILIZATION, SESSION_FLOOR, WorkerLoad, type ThreadTime } from '../../src/worker/worker-load';
import { sessionSlotSupplier } from '../../src/worker/session-slot-supplier';

/** A thread whose busy share of each sample period is set by the test. */
function fakeThread() {
  let busyMs = 0;
  let t = 0;
  return {
    clock: () => t,
    elu: (): ThreadTime => ({ busy: busyMs, total: t }),
    /** `ms` pass, of which `busy` share ran code. */
    pass(ms: number, busy: number) {
      busyMs += ms * busy;
      t += ms;
    },
  };
}

function loadAt(busy: number, sessions: number) {
  const thread = fakeThread();
  const load = new WorkerLoad(thread.elu, thread.clock);
  // The sessions started a second ago: the figure covers them.
  for (let i = 0; i < sessions; i++) load.started();
  load.sample();
  for (let i = 0; i < 4; i++) {
    thread.pass(250, busy);
    load.sample();
  }
  return { load, thread };
}

const ctx = {} as SlotReserveContext;

test('full only with the floor of sessions running and the thread saturated', () => {
  expect(loadAt(0.95, SESSION_FLOOR).load.full()).toBe(true);
  // Saturated with fewer sessions: the figure may still show work that ended.
  expect(loadAt(0.95, SESSION_FLOOR - 1).load.full()).toBe(false);
  // Many sessions waiting on the network: room for more.
  expect(loadAt(SATURATED_UTILIZATION - 0.2, 50).load.full()).toBe(false);
  const { load } = loadAt(0.95, SESSION_FLOOR);
  load.ended();
  expect(load.full()).toBe(false);
});

test('a full worker asks the task queue for no session until its load falls; a shutdown ends the wait', async () => {
  const { load, thread } = loadAt(0.95, SESSION_FLOOR);
  const supplier = sessionSlotSupplier(load, 1000);
  expect(supplier.tryReserveSlot(ctx)).toBeNull();
  let granted = false;
  const reserved = supplier.reserveSlot(ctx, new AbortController().signal).then(() => (granted = true));
  await new Promise((r) => setTimeout(r, 250));
  expect(granted).toBe(false);
  // A second of light work: the window no longer reads saturated.
  for (let i = 0; i < 4; i++) {
    thread.pass(250, 0.3);
    load.sample();
  }
  await reserved;
  expect(supplier.issued).toBe(1);

  const abort = new AbortController();
  for (let i = 0; i < 4; i++) {
    thread.pass(250, 0.95);
    load.sample();
  }
  const waiting = supplier.reserveSlot(ctx, abort.signal);
  abort.abort();
  await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
  expect(supplier.issued).toBe(1);
});

test('slots: never more than the worker has, and a task in hand counts as load at once', () => {
  const { load } = loadAt(0.1, 0);
  const supplier = sessionSlotSupplier(load, 2);
  const a = supplier.tryReserveSlot(ctx)!;
  supplier.tryReserveSlot(ctx);
  expect(supplier.tryReserveSlot(ctx)).toBeNull();
  supplier.markSlotUsed({ permit: a, slotInfo: { type: 'activity', activityType: 'crawlSession' } });
  expect(load.sessions).toBe(1);
  // A poll that timed out gives back a slot that never held a task.
  supplier.releaseSlot({ permit: {} });
  expect(load.sessions).toBe(1);
  supplier.releaseSlot({ permit: a, slotInfo: { type: 'activity', activityType: 'crawlSession' } });
  expect(load.sessions).toBe(0);
  expect(supplier.issued).toBe(0);
});

test("past the floor, a host's first session waits until the figure covers the floor's sessions, then runs here only if the thread has room", async () => {
  // Just reached the floor, the thread still reads idle: the answer waits for a window of the new load.
  const thread = fakeThread();
  const load = new WorkerLoad(thread.elu, thread.clock);
  load.sample();
  for (let i = 0; i < SESSION_FLOOR - 1; i++) expect(await load.admitFirstSession()).toBe(true);
  for (let i = 0; i < SESSION_FLOOR; i++) load.started();
  let answer: boolean | null = null;
  const admitted = load.admitFirstSession().then((a) => (answer = a));
  for (let i = 0; i < 4; i++) {
    thread.pass(250, 0.97);
    load.sample();
  }
  await admitted;
  expect(answer).toBe(false);
  // Once the figure is there, no more waiting: a worker with room says yes at once.
  const busyButRoomy = loadAt(0.5, SESSION_FLOOR + 3);
  expect(await busyButRoomy.load.admitFirstSession()).toBe(true);
});

test("the main thread's own CPU time: it grows while the thread spins, not while it waits", async () => {
  const thread = mainThreadTime();
  // Spin until 200 ms of CPU show (however long a loaded machine makes that take).
  const start = thread();
  let now = start;
  const cap = performance.now() + 30_000;
  while (now.busy - start.busy < 200 && performance.now() < cap) now = thread();
  expect(now.busy - start.busy).toBeGreaterThanOrEqual(200);
  const before = thread();
  await new Promise((r) => setTimeout(r, 500));
  const after = thread();
  expect(after.total - before.total).toBeGreaterThanOrEqual(400);
  expect(after.busy - before.busy).toBeLessThan(100);
});

test("a worker whose browser is saturated is full though its thread idles: a rendering worker's work is in its child processes", () => {
  const thread = fakeThread();
  let childMs = 0;
  const load = new WorkerLoad(thread.elu, thread.clock, () => childMs);
  for (let i = 0; i < SESSION_FLOOR; i++) load.started();
  load.sample();
  for (let i = 0; i < 4; i++) {
    // The thread 10 % busy, Chromium's processes 1.5 cores.
    thread.pass(250, 0.1);
    childMs += 250 * 1.5;
    load.sample();
  }
  expect(load.utilization()).toBeLessThan(SATURATED_UTILIZATION);
  expect(load.childCores()).toBeGreaterThanOrEqual(BROWSER_SATURATED_CORES);
  expect(load.full()).toBe(true);
  // Its browser idle again (pages waiting on the network): room for more.
  for (let i = 0; i < 4; i++) {
    thread.pass(250, 0.1);
    childMs += 250 * 0.2;
    load.sample();
  }
  expect(load.full()).toBe(false);
  // Below the floor a busy browser still takes sessions.
  const few = new WorkerLoad(thread.elu, thread.clock, () => childMs);
  few.sample();
  thread.pass(1000, 0.1);
  childMs += 2000;
  few.sample();
  expect(few.childCores()).toBeGreaterThanOrEqual(BROWSER_SATURATED_CORES);
  expect(few.full()).toBe(false);
});

test("the child processes' CPU time (Linux): it grows while a child (and its own child) spins, and stays put once they exit", async () => {
  const read = childProcessesTime();
  if (read === null) throw new Error('no /proc children list on this machine: the crawler runs on Linux');
  const base = read();
  // A child that spins in a grandchild of its own, as Chromium's renderers run under its zygote.
  const spin = 'const s = Date.now(); while (Date.now() - s < 60000);';
  const child = spawn(process.execPath, ['-e', `require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(spin)}], { stdio: 'inherit' }); ${spin}`], {
    stdio: 'ignore',
    detached: true,
  });
  try {
    // Until 300 ms of the tree's CPU show (the tree is looked for every 2 s; however long a loaded machine takes).
    const cap = Date.now() + 30_000;
    while (read() - base < 300 && Date.now() < cap) await new Promise((r) => setTimeout(r, 100));
    expect(read() - base).toBeGreaterThanOrEqual(300);
  } finally {
    // Its own process group: the grandchild goes with it.
    process.kill(-child.pid!, 'SIGKILL');
  }
  // Gone: the figure keeps what they used and never goes back.
  const atExit = read();
  await new Promise((r) => setTimeout(r, 300));
  expect(read()).toBeGreaterThanOrEqual(atExit);
}, 60_000);
