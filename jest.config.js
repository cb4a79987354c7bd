// Three projects: unit tests need nothing running; integration and acceptance
// tests share one real Temporal dev server and one real Redis started by
// globalSetup. `npm test` runs unit and integration (a contributor's check,
// under 10 minutes on a 2-core machine); `npm run test:acceptance` runs the
// long scenarios at full size (thousands of hosts, the hostile host, chaos,
// a browser's life, its pool, a kill mid-render, its network (POSTs, fetches), behaviors,
// interactive pages, replays in pywb and QA; the package
// installed as a library; kills and outages of workers, Redis and the Temporal
// server, a 100k-URL frontier), and CI runs both (.ci/run).
// Four test files at a time on two cores: most integration time is spent
// waiting on crawl-delays and timers (with two at a time the run used 0.93
// of the machine's two cores, and took 470 s against 343 s with three; with
// three, the run's processes used 400 s of CPU in a 420 s run, half of the
// two cores), and every file has its own task queue, test web port and Redis
// keys, so they do not see each other. Longest files first, by the durations
// of a recent run where Jest has none cached (test/support/longest-first-sequencer.cjs).
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] };
const stack = {
  testEnvironment: 'node',
  transform,
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};
module.exports = {
  maxWorkers: 4,
  testSequencer: '<rootDir>/test/support/longest-first-sequencer.cjs',
  // The slowest files and tests, listed at the end of every run so that a regression shows in CI's output.
  reporters: ['default', '<rootDir>/test/support/slowest-reporter.cjs'],
  projects: [
    { displayName: 'unit', testEnvironment: 'node', transform, testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { displayName: 'integration', ...stack, testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    { displayName: 'acceptance', ...stack, testMatch: ['<rootDir>/test/acceptance/**/*.test.ts'] },
  ],
};
