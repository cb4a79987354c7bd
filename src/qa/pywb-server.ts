// pywb for `crawler qa`: one collection, served unframed (the page Chromium
// shows is the archived page itself, no frame and no banner around it) on a
// free loopback port, for as long as the pass runs, then stopped. Over a
// campaign's CDXJ and WARC folder as they are, or over a WACZ that pywb's
// `wb-manager add --unpack-wacz` takes into the collection.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { PyReplayTools } from '../stack/tools';

const run = promisify(execFile);

/** The collection's name in pywb's URLs: `<base>/qa/<timestamp>/<url>`. */
export const QA_COLLECTION = 'qa';
/** How long pywb may take to answer its first request (it imports a lot of Python on a busy machine). */
const START_TIMEOUT_MS = 120_000;

export interface QaPywb {
  /** `http://127.0.0.1:<port>/qa`: a page's replay URL is `<collection>/<timestamp>/<url>`. */
  collection: string;
  /** The collection's WARC folder (a WACZ's, once unpacked). */
  archiveDir: string;
  /** The collection's CDXJ files. */
  indexFiles: string[];
  stop(): Promise<void>;
}

export type PywbSource = { cdxj: string; warcDir: string } | { wacz: string };

/** Polls `ready` until it holds, `dead` names why it never will, or the time is up. */
async function waitUntil(ready: () => Promise<boolean>, dead: () => string | null, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await ready()) return;
    const why = dead();
    if (why !== null) throw new Error(why);
    if (Date.now() > until) throw new Error(`pywb did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Starts pywb on `port` of the loopback in `root` (made, and emptied of an earlier pass's collection) over `source`. */
export async function startQaPywb(tools: PyReplayTools, root: string, source: PywbSource, port: number): Promise<QaPywb> {
  fs.rmSync(root, { recursive: true, force: true });
  fs.mkdirSync(root, { recursive: true });
  const quote = (p: string) => JSON.stringify(p);
  let archiveDir: string;
  let indexFiles: string[];
  if ('wacz' in source) {
    await run(path.join(tools.bin, 'wb-manager'), ['init', QA_COLLECTION], { cwd: root });
    await run(path.join(tools.bin, 'wb-manager'), ['add', QA_COLLECTION, path.resolve(source.wacz), '--unpack-wacz'], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
    archiveDir = path.join(root, 'collections', QA_COLLECTION, 'archive');
    const indexes = path.join(root, 'collections', QA_COLLECTION, 'indexes');
    indexFiles = fs
      .readdirSync(indexes)
      .filter((n) => n.endsWith('.cdxj'))
      .map((n) => path.join(indexes, n));
    fs.writeFileSync(path.join(root, 'config.yaml'), '# written by crawler qa\nframed_replay: false\n');
  } else {
    archiveDir = source.warcDir;
    indexFiles = [source.cdxj];
    fs.writeFileSync(
      path.join(root, 'config.yaml'),
      `# written by crawler qa\ncollections:\n  ${QA_COLLECTION}:\n    index_paths: ${quote(source.cdxj)}\n    archive_paths: ${quote(`${source.warcDir}/`)}\nframed_replay: false\n`,
    );
  }
  const proc: ChildProcess = spawn(path.join(tools.bin, 'wayback'), ['-p', String(port), '-b', '127.0.0.1'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (d: Buffer) => (log = (log + d.toString()).slice(-4000));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  };
  const collection = `http://127.0.0.1:${port}/${QA_COLLECTION}`;
  try {
    await waitUntil(
      async () => (await fetch(`${collection}/`).catch(() => null))?.ok === true,
      () => (proc.exitCode !== null ? `pywb exited (${proc.exitCode}):\n${log}` : null),
      START_TIMEOUT_MS,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { collection, archiveDir, indexFiles, stop };
}
