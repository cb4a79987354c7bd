// Worker processes run the prebuilt worker bundle with plain node (see
// scripts/worker-bundle.cjs for what is in it and why).
import { ensureWorkerBundle as buildWorkerBundle, workerNodeArgs, workerProcessEnv } from '../../scripts/worker-bundle.cjs';

export { workerNodeArgs, workerProcessEnv };
import fs from 'node:fs';
import { LOCAL_DIR, PROJECT_ROOT } from '../stack/paths';

let current: Promise<string> | null = null;

/**
 * The worker bundle of this process's sources, built on first use. One per
 * process, so every worker a pool starts (replacements too) runs the code the
 * pool started with, even while the sources are being edited; built again
 * only if the file went away (pruned by newer builds, `rm -rf .crawler`).
 */
export async function ensureWorkerBundle(): Promise<string> {
  if (current) {
    const file = await current.catch(() => null);
    if (file && fs.existsSync(file)) return file;
  }
  current = buildWorkerBundle({ root: PROJECT_ROOT, localDir: LOCAL_DIR });
  return current;
}

/** How to start one worker process; nodeArgs go to node itself (e.g. --cpu-prof, --enable-source-maps). */
export async function workerCommand(nodeArgs: string[] = []): Promise<{ command: string; args: string[] }> {
  return { command: process.execPath, args: [...nodeArgs, await ensureWorkerBundle()] };
}
