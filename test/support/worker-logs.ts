// Every line the workers of a test file print, kept in one file per test file
// under the run's data folder: CI shows only a failing test's assertion, and a
// campaign that stalls (a test timeout) says nothing about where. The Jest
// reporter (slowest-reporter.cjs) prints the tail of a failed file's log.
import fs from 'node:fs';
import path from 'node:path';

/** The log of the test file running in this Jest worker, by the same rule the reporter reads it. */
export function workerLogPath(testPath: string, dataDir: string): string {
  return path.join(dataDir, 'worker-logs', `${path.basename(testPath)}.log`);
}

/** Appends lines (with the time since the file began) to this test file's log; a no-op outside the integration stack. */
export function workerLog(): (line: string) => void {
  const dataDir = process.env.CRAWLER_TEST_DATA_DIR;
  const testPath = expect.getState().testPath;
  if (!dataDir || !testPath) return () => undefined;
  const file = workerLogPath(testPath, dataDir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const t0 = Date.now();
  return (line) => {
    // Synchronous, so the last lines before a hang are on disk when the reporter reads them.
    fs.appendFileSync(file, `${((Date.now() - t0) / 1000).toFixed(1).padStart(7)}s ${line}\n`);
  };
}
