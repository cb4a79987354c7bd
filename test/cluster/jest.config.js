// `npm run test:cluster`: the production topology brought up natively
// (`crawler cluster up`), crawled and brought down. Kept out of `npm test`:
// the first run builds the Temporal server from source (minutes of CPU).
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] };
module.exports = {
  rootDir: '../..',
  maxWorkers: 1,
  projects: [{ displayName: 'cluster', testEnvironment: 'node', transform, testMatch: ['<rootDir>/test/cluster/**/*.test.ts'] }],
};
