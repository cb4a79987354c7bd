// pywb's `wayback` for replay tests: started on a free loopback port over a
// folder of collections (config.yaml and collections/), stopped with the test.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort, waitFor } from '../../src/stack/ports';
import type { PyReplayTools } from '../../src/stack/tools';

export interface Pywb {
  /** `http://127.0.0.1:<port>`; a collection's replay URLs are `<base>/<coll>/[<timestamp><modifier>/]<original>`. */
  base: string;
  stop(): Promise<void>;
}

/** Starts pywb in `root` and waits until `collection` answers. */
export async function startPywb(tools: PyReplayTools, root: string, collection: string): Promise<Pywb> {
  const port = await freePort();
  const proc: ChildProcess = spawn(path.join(tools.bin, 'wayback'), ['-p', String(port), '-b', '127.0.0.1'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  };
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      'pywb',
      async () => (await fetch(`${base}/${collection}/`).catch(() => null))?.ok === true,
      120_000,
      () => (proc.exitCode !== null ? `pywb exited (${proc.exitCode}):\n${log}` : null),
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { base, stop };
}
