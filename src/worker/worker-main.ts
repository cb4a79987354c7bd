// Entry point of the prebuilt worker bundle (scripts/worker-bundle.cjs): one
// worker process run by plain `node`, with no TypeScript loader in it. Errors
// end it the way src/cli/main.ts ends `crawler worker`.
import { runWorkerProcess } from './worker-process';

runWorkerProcess().catch((err: unknown) => {
  const e = err as { exitCode?: number; message?: string };
  process.stderr.write(`crawler: ${e.message ?? String(err)}\n`);
  process.exit(typeof e.exitCode === 'number' ? e.exitCode : 1);
});
