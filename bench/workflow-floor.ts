// The floor under scenario (k): what the Temporal server and an SDK worker
// spend on a workflow that does nothing, started as our campaigns start host
// workflows (eagerly, from a client sharing the worker's connection, nobody
// waiting on their results), run for one workflow task and completed. No host
// workflow can cost less, so 2 cores ÷ (server + worker CPU per workflow)
// bounds (k)'s pages/s on this machine, whatever the crawl does
// (docs/benchmarks-history.md, sessions 16–18).
import path from 'node:path';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker, type InjectedSinks } from '@temporalio/worker';
import { processSettings } from '../src/config/env';
import { cpuSeconds } from './figures';
import type { FloorSinks } from './workflow-floor-workflows';

export interface FloorFigures {
  scenario: string;
  workflows: number;
  seconds: number;
  workflowsPerSec: number;
  /** CPU of the Temporal server's processes per workflow. */
  serverCpuMsPerWorkflow: number;
  /** CPU of the process that starts the workflows and runs them (client and worker, as in our workers). */
  workerCpuMsPerWorkflow: number;
  eagerShare: number;
  /** What two cores could sustain at that CPU, with nothing else to do. */
  twoCoreCeilingPerSec: number;
}

export async function workflowFloorRun(temporalAddress: string, temporalPids: number[], count: number, concurrency = 100): Promise<FloorFigures> {
  const namespace = processSettings().temporalNamespace;
  const connection = await NativeConnection.connect({ address: temporalAddress });
  const taskQueue = `bench-floor-${Date.now()}`;
  // Workflows that ran (their sink call), counted in this process.
  let done = 0;
  // Waiters for the next sink call: woken by it, not by polling (a timer per
  // waiter every few ms would be worker CPU counted against the workflows).
  let waiters: (() => void)[] = [];
  const ran = () => {
    done++;
    const woken = waiters;
    waiters = [];
    for (const w of woken) w();
  };
  const until = async (ok: () => boolean) => {
    while (!ok()) await new Promise<void>((r) => waiters.push(r));
  };
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowsPath: path.join(__dirname, 'workflow-floor-workflows.ts'),
    // As our workers (CRAWLER_WORKFLOW_TASK_SLOTS): eager starts need a free slot.
    maxConcurrentWorkflowTaskExecutions: 200,
    sinks: { floor: { done: { fn: ran, callDuringReplay: false } } } satisfies InjectedSinks<FloorSinks>,
  });
  const running = worker.run();
  try {
    // A Client on the worker's NativeConnection, as in activities/campaign-hosts.ts: eager start needs it.
    const client = new Client({ connection, namespace });
    // Warm up (the bundle loads, the first workflows compile paths) before measuring.
    await Promise.all(Array.from({ length: 50 }, (_, i) => client.workflow.execute('emptyWorkflow', { taskQueue, workflowId: `${taskQueue}-warm-${i}`, requestEagerStart: true })));
    const server0 = temporalPids.reduce((s, p) => s + cpuSeconds(p), 0);
    const own0 = process.cpuUsage();
    const t0 = performance.now();
    let next = 0;
    let eager = 0;
    // Sinks run after their activation: the warm-up's may come after its results.
    await until(() => done >= 50);
    const done0 = done;
    // Started as activities/campaign-hosts.ts starts hosts: nobody waits on a
    // workflow's result (a long poll of its history each, which would add to
    // both sides' CPU). Each workflow's sink call says it ran; starts are
    // paced so that at most `concurrency` are in flight, which leaves the
    // worker free workflow-task slots, so starts can be eager, as for our
    // hosts while the dispatching worker has slots.
    const room = () => until(() => next - (done - done0) < concurrency);
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (;;) {
          await room();
          if (next >= count) return;
          const i = next++;
          const handle = await client.workflow.start('emptyWorkflow', { taskQueue, workflowId: `${taskQueue}-${i}`, requestEagerStart: true });
          if (handle.eagerlyStarted) eager++;
        }
      }),
    );
    await until(() => done - done0 >= count);
    const seconds = (performance.now() - t0) / 1000;
    const serverMs = (temporalPids.reduce((s, p) => s + cpuSeconds(p), 0) - server0) * 1000;
    const own = process.cpuUsage(own0);
    const workerMs = (own.user + own.system) / 1000;
    const per = (ms: number) => Number((ms / count).toFixed(2));
    return {
      scenario: `(floor) ${count.toLocaleString('en-US')} workflows that do nothing, started eagerly, at most ${concurrency} in flight`,
      workflows: count,
      seconds: Number(seconds.toFixed(1)),
      workflowsPerSec: Number((count / seconds).toFixed(1)),
      serverCpuMsPerWorkflow: per(serverMs),
      workerCpuMsPerWorkflow: per(workerMs),
      eagerShare: Number((eager / count).toFixed(2)),
      twoCoreCeilingPerSec: Number(((2 * 1000 * count) / (serverMs + workerMs)).toFixed(1)),
    };
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
  }
}
