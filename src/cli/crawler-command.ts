// How to run the `crawler` CLI as a child process: node with tsx's loader,
// as the tsx launcher would run it minus the launcher process itself. One
// process per command (about 50 MB and a few hundred ms less), and a signal
// sent to it reaches the crawler, not a wrapper. scripts/run.cjs does the
// same for `npm run crawl` / `npm run crawler`.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../stack/paths';

export const CLI_MAIN = path.join(PROJECT_ROOT, 'src', 'cli', 'main.ts');

/** The executable and arguments of `crawler <args…>`; nodeArgs go to node itself (e.g. --cpu-prof). */
export function crawlerCommand(args: string[], nodeArgs: string[] = []): { command: string; args: string[] } {
  const tsxDir = path.join(PROJECT_ROOT, 'node_modules', 'tsx', 'dist');
  return {
    command: process.execPath,
    args: [...nodeArgs, '--require', path.join(tsxDir, 'preflight.cjs'), '--import', pathToFileURL(path.join(tsxDir, 'loader.mjs')).href, CLI_MAIN, ...args],
  };
}
