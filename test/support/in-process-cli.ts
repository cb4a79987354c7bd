// `crawler <args…>` run in the test's own process, through the same
// commander program and exit-code mapping as the command line
// (src/cli/main.ts, runCrawler): a `crawler` process costs about a second
// of CPU to start, which tests that only read a command's output and exit
// code need not pay. Keep a few real processes where the process itself
// is what is tested (signals, the worker it starts, stdout being a pipe).
import { runCrawler } from '../../src/cli/main';

export interface CliRun {
  /** The code the process would have exited with: 0 when the command ran to its end. */
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `crawler <args…>` here, capturing what it writes to stdout and
 * stderr. One at a time: the capture is of this process's own streams.
 */
export async function runCrawlerInProcess(args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const capture = (to: (s: string) => void) => (chunk: string | Uint8Array) => {
    to(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  };
  const out = jest.spyOn(process.stdout, 'write').mockImplementation(capture((s) => (stdout += s)));
  const err = jest.spyOn(process.stderr, 'write').mockImplementation(capture((s) => (stderr += s)));
  try {
    const code = await runCrawler(['node', 'crawler', ...args]);
    return { code: code ?? 0, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

/**
 * runCrawlerInProcess shaped as a promisified execFile: resolves with the
 * output when the command exits 0, rejects with an error carrying `code`,
 * `stdout` and `stderr` otherwise.
 */
export async function crawlerInProcess(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const r = await runCrawlerInProcess(args);
  if (r.code !== 0) throw Object.assign(new Error(`crawler ${args.join(' ')} exited with code ${r.code}: ${r.stderr}`), r);
  return { stdout: r.stdout, stderr: r.stderr };
}
