// Chromium processes under a process of the test's (a worker, or the test
// itself), told apart by a switch of their command line: the browser by the
// --crawler-browser= switch the pool launches it with, renderers by
// --type=renderer.
import fs from 'node:fs';
import { hasArg, processTree } from '../../src/browser/process-memory';

export async function chromiumUnder(rootPid: number, kind: 'browser' | 'renderer'): Promise<number[]> {
  return (await processTree(rootPid)).filter((pid) => {
    let cmd: string;
    try {
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return false;
    }
    return kind === 'browser' ? /(^|\0)--crawler-browser=/.test(cmd) : hasArg(cmd, '--type=renderer');
  });
}
