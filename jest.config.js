// Three projects: unit tests need nothing running; integration and acceptance
// tests share one real Temporal dev server and one real Redis started by
// globalSetup. `npm test` runs unit and integration (a contributor's check,
// under 10 minutes on a 2-core machine); `npm run test:acceptance` runs the
// long scenarios at full size (thousands of hosts, the hostile host, chaos,
// a browser's life, its pool, a kill mid-render, its network (POSTs, fetches), behaviors,
// interactive pages, replays in pywb and QA; the package
// installed as a library; kills and outages of workers, Redis and the Temporal
// server, a 100k-URL frontier), and CI runs both (.ci/run).
// Five test files at a time on two cores: most integration time is spent
// waiting on crawl-delays and timers, and every file has its own task queue,
// test web port and Redis keys, so they do not see each other. With two at a
// time the run used 0.93 of a core and took 470 s against 343 s with three;
// with three (419 s on an idle machine), 400 s of CPU in 420 s, half of the
// two cores. Back to back on a shared machine (load 8-14): three 446 s, four
// 342 s, five 226 s (1.7 cores), every test passing. Longest files first, the
// projects side by side, by the durations of a recent run where Jest has none
// cached (test/support/longest-first-sequencer.cjs).
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] };
const stack = {
  testEnvironment: 'node',
  transform,
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};
module.exports = {
  maxWorkers: 5,
  testSequencer: '<rootDir>/test/support/longest-first-sequencer.cjs',
  // The slowest files and tests, listed at the end of every run so that a regression shows in CI's output.
  reporters: ['default', '<rootDir>/test/support/slowest-reporter.cjs'],
  projects: [
    { displayName: 'unit', testEnvironment: 'node', transform, testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { displayName: 'integration', ...stack, testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    { displayName: 'acceptance', ...stack, testMatch: ['<rootDir>/test/acceptance/**/*.test.ts'] },
  ],
};
