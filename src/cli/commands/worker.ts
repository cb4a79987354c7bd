import type { Command } from 'commander';
import { startCrawlerWorker } from '../../worker/crawler-worker';
import { WORKER_READY_LINE } from '../../worker/worker-pool';
import { processSettings, redactRedisUrl } from '../../config/env';

export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('run one worker process (workflows + activities); start more for more capacity')
    .action(async () => {
      const cfg = processSettings();
      const w = await startCrawlerWorker();
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
      await w.done;
    });
}
