// `npm run test:cluster`: the production topology brought up natively
// (`crawler cluster up`), crawled and brought down. Kept out of `npm test`:
// the first run builds the Temporal server from source (minutes of CPU).
const path = require('node:path');
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] };
const rootDir = path.join(__dirname, '..', '..');
module.exports = {
  rootDir,
  maxWorkers: 1,
  projects: [{ displayName: 'cluster', rootDir, testEnvironment: 'node', transform, testMatch: ['<rootDir>/test/cluster/**/*.test.ts'] }],
};
