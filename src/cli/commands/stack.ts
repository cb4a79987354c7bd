import type { Command } from 'commander';
import { stackDown, stackUp } from '../../stack/stack';

export function registerStackCommands(program: Command): void {
  const stack = program.command('stack').description('the embedded Temporal dev server and Redis (data under .crawler/stack)');
  stack
    .command('up')
    .description('start Temporal (7233, Web UI 8233) and Redis (6379) on loopback, in the background')
    .action(async () => {
      const s = await stackUp({ log: (m) => process.stderr.write(`${m}\n`) });
      process.stdout.write(`TEMPORAL_ADDRESS=${s.temporalAddress}\nREDIS_URL=${s.redisUrl}\nWeb UI: ${s.uiUrl}\n`);
    });
  stack
    .command('down')
    .description('stop the embedded servers, whether `stack up` or a crawl started them (data is kept)')
    .action(async () => {
      const stopped = await stackDown();
      process.stdout.write(stopped.length ? `stopped ${stopped.join(', ')}\n` : 'nothing was running\n');
    });
}
