// What a worker process does from start to exit: start the worker, say it is
// ready on stdout (WorkerPool waits for that line), drain on SIGTERM/SIGINT.
// Shared by the prebuilt worker bundle (worker-main.ts, what WorkerPool and
// `npm run crawler -- worker` run) and the `crawler worker` command of the
// TypeScript CLI.
import { processSettings, redactRedisUrl } from '../config/env';
import { createLogger } from '../log/logger';
import { startCrawlerWorker } from './crawler-worker';
import { startMallocTrim } from './malloc-trim';
import { WORKER_READY_LINE } from './ready-line';

export async function runWorkerProcess(): Promise<void> {
  const cfg = processSettings();
  const w = await startCrawlerWorker();
  // The worker process only: it holds hundreds of hosts in flight, and what its threads free in bursts would otherwise stay in its RSS.
  const trim = await startMallocTrim(cfg.mallocTrimMs, createLogger({ level: cfg.logLevel }).child({ pid: process.pid }));
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    process.stderr.write('crawler worker: draining in-flight activities…\n');
    void w.shutdown();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const metrics = w.metricsUrl ? `, metrics ${w.metricsUrl}` : '';
  process.stdout.write(`${WORKER_READY_LINE} (pid ${process.pid}, queue ${cfg.taskQueue}, temporal ${cfg.temporalAddress}, redis ${redactRedisUrl(cfg.redisUrl)}${metrics})\n`);
  try {
    await w.done;
  } finally {
    trim.stop();
  }
}
