// The order test files start in, so that Jest's workers end together and the
// machine's two cores are used all along:
// - longest first, so the last files to finish are short ones. Jest orders so
//   itself from the durations it cached on earlier runs, but a fresh clone
//   (CI, a new contributor) has no cache: Jest then ordered by file size, and
//   a short file that waits on crawl-delays (crash-and-sleep.test.ts: 100
//   lines, 40 s) started among the last and ran on alone. There the durations
//   of a recent run stand in (test-durations.json, written by the slowest
//   reporter when CRAWLER_TEST_DURATIONS=write);
// - the projects side by side, each at its share of its own total: unit
//   files keep the cores busy (all CPU), integration files mostly wait on
//   crawl-delays and timers. Longest first over all, the unit files (all
//   short) would come last, four at a time on two cores, after a first part
//   that left a core idle.
// A file without a duration (a new one) goes first, as Jest puts it, and a
// file that failed last time before it. Plain CommonJS: Jest loads the
// sequencer with require, before any transform.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const DURATIONS_FILE = path.join(__dirname, 'test-durations.json');
const ROOT = path.resolve(__dirname, '..', '..');

function recordedDurations() {
  try {
    return JSON.parse(fs.readFileSync(DURATIONS_FILE, 'utf8'));
  } catch {
    // No file, or one cut short: Jest's cache and file sizes alone.
    return {};
  }
}

class LongestFirstSequencer extends Sequencer {
  sort(tests) {
    const recorded = recordedDurations();
    const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
    const first = [];
    const byProject = new Map();
    for (const test of tests) {
      // In milliseconds, as Jest caches them.
      const ms = this.time(test) ?? (recorded[path.relative(ROOT, test.path)] ?? NaN) * 1000;
      test.duration = Number.isFinite(ms) ? ms : undefined;
      if (this.hasFailed(test) || test.duration === undefined) first.push(test);
      else {
        const project = test.context.config.displayName?.name ?? test.context.config.rootDir;
        byProject.set(project, [...(byProject.get(project) ?? []), test]);
      }
    }
    first.sort((a, b) => Number(this.hasFailed(b)) - Number(this.hasFailed(a)) || size(b) - size(a));
    const queues = [...byProject.values()].map((q) => {
      q.sort((a, b) => b.duration - a.duration);
      return { q, total: q.reduce((n, t) => n + t.duration, 0) || 1, taken: 0 };
    });
    const rest = [];
    for (;;) {
      // The project furthest behind, as a share of its own total, gives the next file.
      const open = queues.filter((x) => x.q.length > 0);
      if (open.length === 0) break;
      const next = open.reduce((a, b) => (b.taken / b.total < a.taken / a.total ? b : a));
      const test = next.q.shift();
      next.taken += test.duration;
      rest.push(test);
    }
    return [...first, ...rest];
  }
}

module.exports = LongestFirstSequencer;
