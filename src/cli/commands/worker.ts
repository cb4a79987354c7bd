import type { Command } from 'commander';
import { runWorkerProcess } from '../../worker/worker-process';

// `npm run crawler -- worker` does not come here: scripts/run.cjs runs the
// prebuilt worker bundle instead (no TypeScript loader in the worker). This
// command stays for the TypeScript CLI run directly (and `worker --help`).
export function registerWorkerCommand(program: Command): void {
  program.command('worker').description('run one worker process (workflows + activities); start more for more capacity').action(runWorkerProcess);
}
