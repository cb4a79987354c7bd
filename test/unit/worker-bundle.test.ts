// Workers run a bundle built from the sources on demand (scripts/worker-bundle.cjs):
// it must run under plain node, follow the sources, and not rebuild an unchanged tree.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { ensureWorkerBundle as buildWorkerBundle, escapeNonAscii, workerNodeArgs, WorkerBundleError } from '../../scripts/worker-bundle.cjs';
import { ensureWorkflowBundle } from '../../src/worker/workflow-bundle';
import { workerCommand } from '../../src/worker/worker-bundle';

// Seconds of CPU here (a large index, processes started, the worker bundled) that a loaded machine stretches past Jest's 5 s.
jest.setTimeout(60_000);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'worker-bundle-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A project of its own: the worker entry the builder looks for, importing a second module. */
function project(name: string) {
  const root = path.join(tmp, name);
  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };
  write(
    'src/worker/worker-main.ts',
    [
      "import { greeting } from '../greeting';",
      'declare const __CRAWLER_PROJECT_ROOT__: string;',
      'const root: string = __CRAWLER_PROJECT_ROOT__;',
      'console.log(JSON.stringify({ greeting: greeting(), root, loaders: process.execArgv }));',
    ].join('\n'),
  );
  write('src/greeting.ts', "export const greeting = (): string => 'one';\n");
  return { root, write, localDir: path.join(root, '.local') };
}

const runNode = (file: string, env: NodeJS.ProcessEnv = {}) => spawnSync(process.execPath, [file], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env }, timeout: 60_000 });

test('the bundle runs under plain node, knows its project, and follows edits to the sources', async () => {
  const p = project('edits');
  const first = await buildWorkerBundle({ root: p.root, localDir: p.localDir });
  expect(path.dirname(first)).toBe(path.join(p.localDir, 'bundles'));
  const out1 = runNode(first);
  expect(out1.stderr).toBe('');
  expect(JSON.parse(out1.stdout)).toEqual({ greeting: 'one', root: p.root, loaders: [] });

  // Unchanged sources: the same file, not written again.
  const mtime = fs.statSync(first).mtimeMs;
  await new Promise((r) => setTimeout(r, 20));
  expect(await buildWorkerBundle({ root: p.root, localDir: p.localDir })).toBe(first);
  expect(fs.statSync(first).mtimeMs).toBe(mtime);

  // An edited module (not the entry) makes a new bundle with the new code.
  p.write('src/greeting.ts', "export const greeting = (): string => 'two';\n");
  const second = await buildWorkerBundle({ root: p.root, localDir: p.localDir });
  expect(second).not.toBe(first);
  expect(JSON.parse(runNode(second).stdout).greeting).toBe('two');

  // So does a new file in a source folder (the lead's workflows/, say).
  p.write('workflows/state/new.ts', 'export const x = 1;\n');
  expect(await buildWorkerBundle({ root: p.root, localDir: p.localDir })).not.toBe(second);
});

test('a source that does not compile is a typed error naming the file', async () => {
  const p = project('broken');
  p.write('src/greeting.ts', 'export const greeting = ( => ;\n');
  const err = await buildWorkerBundle({ root: p.root, localDir: p.localDir }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkerBundleError);
  expect(err).toMatchObject({ code: 'WORKER_BUNDLE_BUILD' });
  expect((err as Error).message).toContain('greeting.ts');
  expect(fs.existsSync(path.join(p.localDir, 'bundles')) ? fs.readdirSync(path.join(p.localDir, 'bundles')) : []).toEqual([]);
});

test("this project's worker bundle loads every module under plain node and gets as far as connecting", async () => {
  const cmd = await workerCommand();
  expect(cmd.command).toBe(process.execPath);
  expect(cmd.args).toHaveLength(1);
  expect(cmd.args[0]).toMatch(/worker-[0-9a-f]{16}\.cjs$/);
  // Nothing listens on port 1: the worker fails at its first connection, which
  // it only reaches once every module of the worker (activities included) loaded.
  const res = runNode(cmd.args[0], { TEMPORAL_ADDRESS: '127.0.0.1:1', REDIS_URL: 'redis://127.0.0.1:1' });
  expect(res.stderr).not.toMatch(/Cannot find module|SyntaxError|ReferenceError/);
  expect(res.stderr).toMatch(/^crawler: .*(ConnectionRefused|Connection refused)/m);
  expect(res.status).toBe(1);
});

test('the bundle is ASCII only, its strings unchanged, and finds an external package it imports late from a cache outside the project', async () => {
  const p = project('late');
  // The project's dependencies, as a real project has them; the cache folder lies elsewhere.
  fs.symlinkSync(path.resolve(__dirname, '../../node_modules'), path.join(p.root, 'node_modules'), 'dir');
  p.write(
    'src/worker/worker-main.ts',
    [
      '// A comment of the kind esbuild keeps as it is: a response’s status (RFC 9110 §15).',
      "const text = 'a–b ≥ “c” é 😀';",
      'void (async () => {',
      "  const common = await import('@temporalio/common');",
      '  console.log(JSON.stringify({ text, codes: [...text].map((c) => c.codePointAt(0)), loaded: typeof common.ApplicationFailure }));',
      '})();',
    ].join('\n'),
  );
  const file = await buildWorkerBundle({ root: p.root, localDir: path.join(tmp, 'elsewhere') });
  const bytes = fs.readFileSync(file);
  expect(bytes.every((b) => b < 0x80)).toBe(true);
  const res = runNode(file);
  expect(res.stderr).toBe('');
  const text = 'a–b ≥ “c” é 😀';
  expect(JSON.parse(res.stdout)).toEqual({ text, codes: [...text].map((c) => c.codePointAt(0)), loaded: 'function' });
});

test("this project's worker bundle is ASCII only and does not load playwright-core until a page is rendered", async () => {
  const cmd = await workerCommand();
  expect(fs.readFileSync(cmd.args[0]).every((b) => b < 0x80)).toBe(true);
  // What the worker loaded by the time it fails to connect (every module of its own is loaded by then).
  const probe = path.join(tmp, 'loaded-probe.cjs');
  fs.writeFileSync(probe, "process.on('exit', () => process.stderr.write(`LOADED ${JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('playwright')))}\\n`));\n");
  const res = spawnSync(process.execPath, ['--require', probe, cmd.args[0]], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, TEMPORAL_ADDRESS: '127.0.0.1:1', REDIS_URL: 'redis://127.0.0.1:1' },
    timeout: 60_000,
  });
  expect(res.stderr).toMatch(/^crawler: .*(ConnectionRefused|Connection refused)/m);
  expect(/^LOADED (.*)$/m.exec(res.stderr)?.[1]).toBe('[]');
});

test('escaping non-ASCII characters keeps what code means: strings, templates, regular expressions, comments', () => {
  const source = [
    '// a response’s status (RFC 9110 §15)',
    "const s = 'a–b ≥ “c” é 😀';",
    'const t = `≥ ${1 + 1} — ${s}`;',
    'const r = /[–—]+|😀/u;',
    '/* “kept” */ ({ s, t, dash: r.test("x—y"), emoji: r.test("😀"), plain: r.test("x-y"), len: s.length });',
  ].join('\n');
  const escaped = escapeNonAscii(source);
  expect([...escaped].every((c) => c.charCodeAt(0) < 0x80)).toBe(true);
  expect(escaped.split('\n')).toHaveLength(5);
  expect(vm.runInNewContext(escaped)).toEqual(vm.runInNewContext(source));
  expect(escapeNonAscii('plain ascii')).toBe('plain ascii');
});

test('the workflow bundle is written ASCII only (its thread holds the code as a one-byte string)', async () => {
  const file = await ensureWorkflowBundle();
  expect(fs.readFileSync(file).every((b) => b < 0x80)).toBe(true);
}, 120_000);

test("a worker started to render keeps V8's 16 MB young generation; others get 2 MB; CRAWLER_WORKER_NODE_ARGS replaces either", () => {
  expect(workerNodeArgs({})).toEqual(['--max-semi-space-size=2', '--heap-growing-percent=30']);
  expect(workerNodeArgs({}, true)).toEqual(['--max-semi-space-size=16', '--heap-growing-percent=30']);
  expect(workerNodeArgs({ CRAWLER_WORKER_NODE_ARGS: '--enable-source-maps' }, true)).toEqual(['--enable-source-maps']);
  expect(workerNodeArgs({ CRAWLER_WORKER_NODE_ARGS: '' }, false)).toEqual([]);
});
