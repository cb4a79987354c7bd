// A Jest reporter that ends every run with the slowest test files and tests,
// so a suite that grows slower shows in CI's output the day it does
// (`npm test` must stay under 10 minutes on a 2-core machine). Jest's own
// reporter prints a file's time only beside its PASS line, scattered among
// hundreds; this lists them in one place, slowest first. Plain CommonJS:
// Jest loads reporters with require, before any transform.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const FILES = 12;
const TESTS = 10;
/** Lines of a failed file's worker log printed (test/support/worker-logs.ts). */
const LOG_TAIL = 60;

class SlowestReporter {
  constructor(globalConfig, options = {}) {
    this.rootDir = globalConfig.rootDir;
    this.files = options.files ?? FILES;
    this.tests = options.tests ?? TESTS;
  }

  onRunComplete(_contexts, results) {
    this.printFailedLogs(results);
    const rel = (p) => (p.startsWith(this.rootDir) ? p.slice(this.rootDir.length + 1) : p);
    const files = results.testResults
      .map((r) => ({ path: rel(r.testFilePath), ms: r.perfStats.end - r.perfStats.start, tests: r.testResults.length }))
      .filter((f) => Number.isFinite(f.ms) && f.ms > 0)
      .sort((a, b) => b.ms - a.ms);
    const tests = results.testResults.flatMap((r) => r.testResults.map((t) => ({ path: rel(r.testFilePath), name: t.fullName, ms: t.duration ?? 0 }))).sort((a, b) => b.ms - a.ms);
    if (files.length === 0) return;
    if (process.env.CRAWLER_TEST_DURATIONS === 'write') this.writeDurations(files);
    const total = (results.testResults.length && Date.now() - results.startTime) / 1000;
    const sec = (ms) => `${(ms / 1000).toFixed(1).padStart(6)} s`;
    const lines = [
      '',
      `Slowest test files (wall time of the whole run: ${total.toFixed(0)} s, ${results.numTotalTests} tests in ${results.numTotalTestSuites} files):`,
      ...files.slice(0, this.files).map((f) => `  ${sec(f.ms)}  ${f.path} (${f.tests} tests)`),
      'Slowest tests:',
      ...tests.slice(0, this.tests).map((t) => `  ${sec(t.ms)}  ${t.path}: ${t.name.slice(0, 120)}`),
      '',
    ];
    process.stderr.write(`${lines.join('\n')}\n`);
  }

  /**
   * The files' times into test-durations.json (merged: a run of a few files updates theirs), where
   * the longest-first sequencer finds them on a clone without Jest's cache. Best from a full run on
   * an idle machine: what counts is how the files compare.
   */
  writeDurations(files) {
    const file = path.join(__dirname, 'test-durations.json');
    let durations = {};
    try {
      durations = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch {
      // None yet: start one.
    }
    for (const f of files) durations[f.path] = Math.round(f.ms / 100) / 10;
    const sorted = Object.fromEntries(
      Object.keys(durations)
        .sort()
        .map((k) => [k, durations[k]]),
    );
    fs.writeFileSync(file, `${JSON.stringify(sorted, null, 2)}\n`);
  }

  /**
   * The last lines the workers of each failed file printed, with the test's
   * own marks: a stalled campaign's test times out with no word of where.
   * The data folder is the global setup's (same process); gone once torn down.
   */
  printFailedLogs(results) {
    const dataDir = process.env.CRAWLER_TEST_DATA_DIR;
    if (!dataDir) return;
    for (const r of results.testResults) {
      if (r.numFailingTests === 0 && !r.testExecError) continue;
      const file = path.join(dataDir, 'worker-logs', `${path.basename(r.testFilePath)}.log`);
      let text;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch {
        continue;
      }
      const lines = text.trimEnd().split('\n');
      const tail = lines.slice(-LOG_TAIL);
      process.stderr.write(`\nWorker log of failed ${path.basename(r.testFilePath)} (last ${tail.length} of ${lines.length} lines):\n${tail.join('\n')}\n`);
    }
  }
}

module.exports = SlowestReporter;
