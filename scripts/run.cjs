#!/usr/bin/env node
// The only entry point behind `npm run crawl`, `npm run crawler`, `npm test`,
// `npm run test:acceptance`, `npm run test:cluster`, `npm run lint`, `npm run bench` and `npm run chaos`. Plain CommonJS with no dependencies, because on a fresh
// clone node_modules does not exist yet: it installs them first, then hands
// over to the TypeScript entry points (run with tsx's loader, so there is no
// build step to forget; workers run a bundle built here on demand, see
// worker-bundle.cjs). Servers (Temporal, Redis) are brought up by the TypeScript
// side, which knows how to find, install, start and stop them.
'use strict';
const { spawnSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

function depsInstalled() {
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  if (!fs.existsSync(marker)) return false;
  const required = ['@temporalio/worker', 'ioredis', 'undici', 'cheerio', 'tsx', 'jest'];
  if (!required.every((name) => fs.existsSync(path.join(root, 'node_modules', name, 'package.json')))) return false;
  // Reinstall when package-lock.json changed after the last install.
  const lock = path.join(root, 'package-lock.json');
  return !fs.existsSync(lock) || fs.statSync(lock).mtimeMs <= fs.statSync(marker).mtimeMs + 1000;
}

function ensureDeps() {
  if (depsInstalled()) return;
  // `npm install` rather than `npm ci`: the lock pins every version, and some
  // npm releases write locks without other platforms' optional packages
  // (e.g. @swc/core-darwin-*), which `npm ci` then rejects as out of sync.
  process.stderr.write('crawler: installing node modules (npm install)…\n');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const res = spawnSync(npm, ['install', '--no-audit', '--no-fund'], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (res.status !== 0) {
    process.stderr.write('crawler: npm could not install the node modules; see the output above.\n');
    process.exit(res.status ?? 1);
  }
}

function run(cmd, args) {
  let child;
  try {
    child = spawn(cmd, args, { cwd: process.cwd(), stdio: 'inherit' });
  } catch (err) {
    // The arguments reached this script but, with the few this script adds,
    // no longer fit the system's limit on a command line (Linux: a quarter
    // of the stack limit for arguments and environment together). `npm run`
    // fails earlier and silently, with exit code 249, once the whole line
    // passes 128 KiB: it hands it to `sh -c` as one argument.
    if (err.code !== 'E2BIG') throw err;
    const bytes = args.reduce((n, a) => n + Buffer.byteLength(a) + 1, 0);
    process.stderr.write(
      `crawler: the command line is too long for this system (${args.length} arguments, ${bytes} bytes). ` +
        'Put seed URLs in a file (crawl --seeds-file FILE, gzip accepted, or - for standard input) ' +
        'and --resolve entries in one (--resolve-file FILE).\n',
    );
    process.exit(2);
  }
  // Forward Ctrl-C / termination so the child can shut down what it started.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => child.kill(sig));
  }
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    process.exit(code ?? 1);
  });
}

ensureDeps();
const argv = process.argv.slice(2);
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
// node with tsx's loader, as the tsx launcher runs it minus the launcher
// process (the same as src/cli/crawler-command.ts): signals reach the
// crawler itself, and start-up is a few hundred ms shorter.
const tsxDir = path.join(root, 'node_modules', 'tsx', 'dist');
const runTs = (file, args) =>
  run(process.execPath, ['--require', path.join(tsxDir, 'preflight.cjs'), '--import', require('node:url').pathToFileURL(path.join(tsxDir, 'loader.mjs')).href, file, ...args]);

/**
 * ESLint (eslint.config.mjs: the recommended rules and the workflow
 * determinism rule), the type check and Prettier's check (`npx prettier
 * --write .` formats). All run, so one pass shows every kind of problem, and
 * at once: each is one thread, and on two cores the three took the sum of
 * their times one after the other. Each one's output is held and printed
 * whole, in this order, so that their lines do not mix. CRAWLER_LINT_FORMAT=0
 * skips the format check.
 */
async function lint() {
  const tool = (...p) => path.join(root, 'node_modules', ...p);
  // Piped output is not a terminal: keep the colours and tsc's pretty errors where the user sees one.
  const tty = Boolean(process.stderr.isTTY);
  const steps = [
    ['eslint', [tool('eslint', 'bin', 'eslint.js'), '--max-warnings', '0', '.']],
    ['tsc', [tool('typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.json'), '--noEmit', ...(tty ? ['--pretty'] : [])]],
  ];
  if (process.env.CRAWLER_LINT_FORMAT !== '0') steps.push(['prettier', [tool('prettier', 'bin', 'prettier.cjs'), '--check', '.']]);
  const env = tty ? { ...process.env, FORCE_COLOR: process.env.FORCE_COLOR ?? '1' } : process.env;
  const running = steps.map(([name, args]) => {
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    child.stdout.on('data', (b) => out.push([process.stdout, b]));
    child.stderr.on('data', (b) => out.push([process.stderr, b]));
    const status = new Promise((resolve) => {
      child.on('error', () => resolve(1));
      child.on('close', (code) => resolve(code));
    });
    return { name, out, status };
  });
  const failed = [];
  for (const step of running) {
    process.stderr.write(`lint: ${step.name}\n`);
    const status = await step.status;
    for (const [stream, b] of step.out) stream.write(b);
    if (status !== 0) failed.push(step.name);
  }
  if (failed.length) process.stderr.write(`lint: ${failed.join(', ')} failed\n`);
  return failed.length === 0;
}

if (argv[0] === '--lint') {
  lint().then((ok) => process.exit(ok ? 0 : 1));
} else if (argv[0] === '--test' || argv[0] === '--test-acceptance') {
  // `npm test` (--test --lint-first) lints, then runs the unit and integration
  // suites; `npm run test:acceptance` (--test-acceptance) the long scenarios
  // (test/acceptance/); `--test <file>` runs just the tests it names, of any project.
  const lintFirst = argv[1] === '--lint-first';
  const projects = argv[0] === '--test-acceptance' ? ['acceptance'] : lintFirst ? ['unit', 'integration'] : [];
  // The acceptance suite's object store is built in its global set-up, where no hook's timeout cuts a cold build short.
  if (argv[0] === '--test-acceptance') process.env.CRAWLER_TEST_BUILD_OBJECT_STORE = '1';
  // --forceExit: native Temporal connections can keep the event loop alive for a while after the suites end.
  const jest = () =>
    run(process.execPath, [
      path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
      '--config',
      path.join(root, 'jest.config.js'),
      '--forceExit',
      ...argv.slice(lintFirst ? 2 : 1),
      // Last: --selectProjects takes every word after it, so a file named after it (`npm run
      // test:acceptance -- <file>`) was read as a project name and the whole suite ran.
      ...(projects.length ? ['--selectProjects', ...projects] : []),
    ]);
  if (lintFirst) lint().then((ok) => (ok ? jest() : process.exit(1)));
  else jest();
} else if (argv[0] === '--test-cluster') {
  // `npm run test:cluster`: the production topology brought up natively, crawled and
  // brought down (test/cluster/); out of `npm test` since its first run builds the Temporal server.
  run(process.execPath, [
    path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
    '--config',
    path.join(root, 'test', 'cluster', 'jest.config.js'),
    '--forceExit',
    ...argv.slice(1),
  ]);
} else if (argv[0] === '--bench') {
  runTs(path.join(root, 'bench', 'run.ts'), argv.slice(1));
} else if (argv[0] === '--chaos') {
  runTs(path.join(root, 'test', 'chaos', 'run.ts'), argv.slice(1));
} else if (argv[0] === '--typecheck') {
  run(bin('tsc'), ['-p', path.join(root, 'tsconfig.json'), '--noEmit']);
} else if (argv.length === 1 && argv[0] === 'worker') {
  // A worker is the one long-lived process, started once per unit of
  // capacity: it runs the prebuilt worker bundle with plain node, as the
  // workers `crawl` starts do (scripts/worker-bundle.cjs). `worker --help`
  // still goes through the CLI below.
  const workerBundle = require('./worker-bundle.cjs');
  for (const [k, v] of Object.entries(workerBundle.DEFAULT_WORKER_ENV)) process.env[k] ??= v;
  workerBundle.ensureWorkerBundle().then(
    (bundle) => run(process.execPath, [...workerBundle.workerNodeArgs(), bundle]),
    (err) => {
      process.stderr.write(`crawler: ${err.message}\n`);
      process.exit(1);
    },
  );
} else {
  runTs(path.join(root, 'src', 'cli', 'main.ts'), argv);
}
