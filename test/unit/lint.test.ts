// The lint rule that keeps workflow code deterministic (eslint.config.mjs):
// the files under test/fixtures/lint/ are linted through ESLint's Node API as
// if they stood at the same path from the project root.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'lint');

interface Finding {
  ruleId: string | null;
  line: number;
  message: string;
}

/** Lint results per fixture (its path below FIXTURES). */
function lintFixtures(): Map<string, Finding[]> {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir)) {
      const p = path.join(dir, name);
      if (fs.statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts')) files.push(path.relative(FIXTURES, p));
    }
  };
  walk(FIXTURES);
  const cases = files.map((rel) => ({ rel, code: fs.readFileSync(path.join(FIXTURES, rel), 'utf8'), as: path.join(ROOT, rel) }));
  // In a child process: ESLint loads its .mjs config with a dynamic import(),
  // which Jest's module sandbox does not allow.
  const script = `
    const { ESLint } = require('eslint');
    const cases = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
    (async () => {
      const eslint = new ESLint({ cwd: ${JSON.stringify(ROOT)} });
      const out = {};
      for (const c of cases) {
        const [result] = await eslint.lintText(c.code, { filePath: c.as });
        out[c.rel] = result.messages.map((m) => ({ ruleId: m.ruleId, line: m.line, message: m.message }));
      }
      process.stdout.write(JSON.stringify(out));
    })().catch((err) => { console.error(err); process.exit(1); });`;
  const res = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, input: JSON.stringify(cases), encoding: 'utf8', timeout: 120_000 });
  if (res.status !== 0) throw new Error(`eslint failed: ${res.stderr}`);
  return new Map(Object.entries(JSON.parse(res.stdout) as Record<string, Finding[]>));
}

let results: Map<string, Finding[]>;
beforeAll(() => {
  results = lintFixtures();
}, 120_000);

const findings = (rel: string) => {
  const r = results.get(rel);
  if (!r) throw new Error(`no fixture ${rel}`);
  return r;
};
/** The lines flagged in a fixture, with the rule that flagged each. */
const flagged = (rel: string) => findings(rel).map((f) => `${f.line} ${f.ruleId}`);

test('a workflow importing node:fs fails the lint', () => {
  expect(flagged('workflows/imports-node-fs.ts')).toEqual(['1 @typescript-eslint/no-restricted-imports']);
  expect(findings('workflows/imports-node-fs.ts')[0].message).toContain('workflow sandbox');
});

test('a workflow importing undici fails the lint', () => {
  expect(flagged('workflows/imports-undici.ts')).toEqual(['1 @typescript-eslint/no-restricted-imports']);
  expect(findings('workflows/imports-undici.ts')[0].message).toContain('Call an activity instead');
});

test('built-ins without the node: prefix, I/O packages and the non-workflow Temporal packages fail too', () => {
  expect(flagged('workflows/imports-bare-builtin.ts')).toEqual(['1 @typescript-eslint/no-restricted-imports', '2 @typescript-eslint/no-restricted-imports']);
  expect(flagged('workflows/imports-io-packages.ts')).toEqual([1, 2, 3, 4, 5, 6].map((l) => `${l} @typescript-eslint/no-restricted-imports`));
});

test('activities/ may be imported for types only', () => {
  // Line 2 imports a type without `import type`: it would load the module at run time.
  expect(flagged('workflows/imports-activity-code.ts')).toEqual(['1 crawler/pure-relative-imports', '2 crawler/pure-relative-imports']);
});

test('src/ modules outside the pure allow-list fail, also through require()', () => {
  expect(flagged('workflows/imports-impure-src.ts')).toEqual(['1 crawler/pure-relative-imports', '2 crawler/pure-relative-imports']);
  expect(findings('workflows/imports-impure-src.ts')[0].message).toContain('src/config/env');
  expect(flagged('workflows/requires.ts')).toEqual(['2 @typescript-eslint/no-require-imports', '2 crawler/pure-relative-imports']);
});

test('relative paths are resolved from the importing file: a subfolder of workflows/ is checked alike', () => {
  expect(flagged('workflows/state/deep.ts')).toEqual(['4 crawler/pure-relative-imports']);
  expect(findings('workflows/state/deep.ts')[0].message).toContain('src/redis/keys');
});

test('the pure src/ modules are held to the same rule', () => {
  expect(flagged('src/config/steering.ts')).toEqual(['2 @typescript-eslint/no-restricted-imports', '3 crawler/pure-relative-imports', '4 crawler/pure-relative-imports']);
});

test('an error class of the crawler that does not extend CrawlerError fails the lint', () => {
  expect(flagged('src/http/own-error.ts')).toEqual(['4 no-restricted-syntax', '5 no-restricted-syntax']);
  expect(findings('src/http/own-error.ts')[0].message).toContain('stable `code`');
});

test('no import reaches a layer above its own, types aside; pure workflow code is open to all', () => {
  expect(flagged('src/temporal/imports-stack.ts')).toEqual(['3 crawler/layered-imports', '7 crawler/layered-imports']);
  expect(findings('src/temporal/imports-stack.ts')[0].message).toContain('src/stack/stack');
  expect(flagged('src/worker/imports-cli.ts')).toEqual(['2 crawler/layered-imports']);
  expect(flagged('activities/imports-stack.ts')).toEqual(['2 crawler/layered-imports', '3 crawler/layered-imports']);
});

test('the HTTP layer imports nothing of the browser or Redis, types included; the rules of every library still hold in it', () => {
  expect(flagged('src/http/imports-browser.ts')).toEqual(['3 crawler/layered-imports', '4 crawler/layered-imports', '5 crawler/layered-imports', '7 crawler/layered-imports']);
  expect(findings('src/http/imports-browser.ts')[0].message).toContain('not even for types');
  expect(findings('src/http/imports-browser.ts')[0].message).toContain('src/browser/page-fetcher');
  expect(findings('src/http/imports-browser.ts')[3].message).toContain('a layer above');
});

test('environment variables are read in the settings table only; the whole environment may be handed on', () => {
  expect(flagged('src/stack/reads-env.ts')).toEqual(['5 no-restricted-syntax', '6 no-restricted-syntax', '7 no-restricted-syntax', '8 no-restricted-syntax']);
  expect(findings('src/stack/reads-env.ts')[0].message).toContain('src/config/env.ts');
  expect(findings('src/config/env.ts')).toEqual([]);
});

test('what workflow code may import passes: @temporalio/workflow and /common, pure modules, other workflow files, types', () => {
  expect(findings('workflows/keeps-the-rule.ts')).toEqual([]);
});
