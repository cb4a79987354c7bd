// ESLint (flat config): `npm run lint` (scripts/run.cjs --lint).
//
// Beyond the usual recommended rules, one rule this project cannot do
// without: workflow code runs in Temporal's deterministic sandbox and is
// replayed from history, so workflows/ may import only @temporalio/workflow,
// @temporalio/common and pure modules. An import of node:fs, undici or a
// Redis client there would fail at bundling, or worse, work until a replay.
// Besides: no import reaches a layer above its own (LAYERS), the HTTP layer
// knows neither the browser nor Redis, and one idiom per concern (errors,
// environment). test/unit/lint.test.ts checks that the
// rules catch what they are for.
import path from 'node:path';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'eslint/config';
import { builtinRules } from 'eslint/use-at-your-own-risk';
import tseslint from 'typescript-eslint';

const ROOT = path.dirname(fileURLToPath(import.meta.url));

/**
 * src/ modules workflows may import: no I/O, no clock, no randomness, no
 * imports beyond each other (the same rule holds in them). Files, or folders
 * ending in '/'. src/url/traps.ts, src/url/url-rules.ts,
 * src/http/header-rules.ts and src/storage/output-location-rules.ts come in
 * through src/config/campaign.ts, src/errors.ts and src/config/render-modes.ts
 * through both config modules.
 */
const PURE_SRC = [
  'src/config/campaign.ts',
  'src/config/render-modes.ts',
  'src/config/retry-policy.ts',
  'src/config/steering.ts',
  'src/errors.ts',
  'src/temporal/search-attributes.ts',
  'src/url/traps.ts',
  'src/url/url-rules.ts',
  'src/http/header-rules.ts',
  'src/storage/output-location-rules.ts',
  'src/stats/counters.ts',
  'src/state/',
];

/** Packages (and their subpaths) nothing deterministic may load. */
const IMPURE_PACKAGES = ['undici', 'ioredis', 'cheerio', '@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/testing'];
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

const restrictedImports = {
  paths: [...new Set(builtinModules.map((m) => m.replace(/^node:/, '')))].map((name) => ({
    name,
    message: 'Node built-ins are not available in the workflow sandbox (and are not deterministic).',
  })),
  patterns: [
    { regex: '^node:', message: 'Node built-ins are not available in the workflow sandbox (and are not deterministic).' },
    {
      regex: `^(${IMPURE_PACKAGES.map(escape).join('|')})(/|$)`,
      message: 'Workflow code may not do I/O: only @temporalio/workflow, @temporalio/common and pure modules. Call an activity instead.',
    },
  ],
};

/**
 * Relative imports of workflow (and pure) code, resolved to the file they
 * name: the own folder, the pure src/ modules, and activities/ (or any other
 * src/ module) for types only (`import type`, erased before bundling).
 * A rule of its own because an import path means something else from each
 * folder, which no-restricted-imports' patterns cannot tell apart.
 */
const pureRelativeImports = {
  meta: {
    type: 'problem',
    docs: { description: 'relative imports of deterministic code stay within pure modules' },
    schema: [
      {
        type: 'object',
        properties: { allow: { type: 'array', items: { type: 'string' } }, typesFrom: { type: 'array', items: { type: 'string' } } },
        additionalProperties: false,
      },
    ],
    messages: {
      impure: "'{{source}}' ({{target}}) is not a pure module: deterministic code may import only {{pure}}{{types}}.",
    },
  },
  create(context) {
    const { allow = [], typesFrom = [] } = context.options[0] ?? {};
    return relativeImportVisitors(context, (node, source, rel, typeOnly) => {
      if (matches(rel, allow) || (typeOnly && matches(rel, typesFrom))) return;
      const types = typesFrom.length ? `; types only (import type) from ${typesFrom.join(', ')}` : '';
      context.report({ node, messageId: 'impure', data: { source, target: rel, pure: allow.join(', '), types } });
    });
  },
};

/** Whether a path from the root (without extension, as imported) is one of `entries`: files, or folders ending in '/' (their index too). */
const matches = (rel, entries) =>
  entries.some((e) =>
    e.endsWith('/') ? rel.startsWith(e) || rel === e.slice(0, -1) : rel === e || `${rel}.ts` === e || `${rel}/index.ts` === e || rel === e.replace(/\.ts$/, '.js'),
  );

/** Calls check(node, source, target from the root, typeOnly) for every relative import, export-from, import() and require(). */
function relativeImportVisitors(context, check) {
  const visit = (node, source, typeOnly) => {
    if (typeof source !== 'string' || !source.startsWith('.')) return;
    const rel = path
      .relative(ROOT, path.resolve(path.dirname(context.filename), source))
      .split(path.sep)
      .join('/');
    check(node, source, rel, typeOnly);
  };
  const allTypes = (specifiers, kind) => specifiers.length > 0 && specifiers.every((s) => s[kind] === 'type');
  return {
    ImportDeclaration: (node) => visit(node, node.source.value, node.importKind === 'type' || allTypes(node.specifiers, 'importKind')),
    ExportNamedDeclaration: (node) => node.source && visit(node, node.source.value, node.exportKind === 'type' || allTypes(node.specifiers, 'exportKind')),
    ExportAllDeclaration: (node) => visit(node, node.source.value, node.exportKind === 'type'),
    ImportExpression: (node) => visit(node, node.source.value, false),
    TSImportEqualsDeclaration: (node) => node.moduleReference.expression && visit(node, node.moduleReference.expression.value, node.importKind === 'type'),
    'CallExpression[callee.name="require"]': (node) => visit(node, node.arguments[0]?.value, false),
  };
}

/**
 * Layers, lowest first: the src/ libraries (config, url, http, parse,
 * storage, redis, temporal, …) < src/stack (the embedded servers) and
 * activities/ < src/worker < src/cli. A module may import its own layer and
 * those below, never one above it, except for types (`import type` is erased
 * before run time). workflows/ stands apart: the rules above keep it to pure
 * code (messages, IDs, status cards the client shows at start), which any
 * layer may use without pulling in I/O or an upper layer.
 *
 * `never`: folders a layer may not import even for types. The HTTP layer
 * serves the browser and stores nothing itself: a page is the browser's
 * type over its own (src/browser/page-fetcher.ts), and what it keeps
 * (cookies, address slots) goes through an interface it declares, with
 * Redis behind it in src/redis/. A type-only import would tie it to them
 * all the same.
 */
const LIBRARIES_ABOVE = ['src/stack/', 'src/worker/', 'src/cli/', 'activities/'];
const LAYERS = [
  { files: ['src/**/*.ts'], ignores: ['src/stack/**', 'src/worker/**', 'src/cli/**'], above: LIBRARIES_ABOVE },
  { files: ['src/http/**/*.ts'], above: LIBRARIES_ABOVE, never: ['src/browser/', 'src/redis/'] },
  { files: ['src/stack/**/*.ts'], above: ['src/worker/', 'src/cli/', 'activities/'] },
  { files: ['activities/**/*.ts'], above: ['src/stack/', 'src/worker/', 'src/cli/'] },
  { files: ['src/worker/**/*.ts'], above: ['src/cli/'] },
];

const layeredImports = {
  meta: {
    type: 'problem',
    docs: { description: 'no import reaches a layer above its own' },
    schema: [
      {
        type: 'object',
        properties: { above: { type: 'array', items: { type: 'string' } }, never: { type: 'array', items: { type: 'string' } } },
        additionalProperties: false,
      },
    ],
    messages: {
      upward: "'{{source}}' ({{target}}) is in a layer above this file's: move what it needs down, or pass it in. Not from here: {{above}} (types aside).",
      never:
        "'{{source}}' ({{target}}) is a layer this file's must not know, not even for types: declare what it needs here and let the layer above supply it. Not from here: {{never}}.",
    },
  },
  create(context) {
    const { above = [], never = [] } = context.options[0] ?? {};
    return relativeImportVisitors(context, (node, source, rel, typeOnly) => {
      if (matches(rel, never)) context.report({ node, messageId: 'never', data: { source, target: rel, never: never.join(', ') } });
      else if (!typeOnly && matches(rel, above)) context.report({ node, messageId: 'upward', data: { source, target: rel, above: above.join(', ') } });
    });
  },
};

/**
 * The project's own code (tests aside) follows one idiom per concern; these
 * selectors (no-restricted-syntax) refuse the other ways. Test files may do
 * as they need.
 */
const OWN_CODE = ['src/**/*.ts', 'activities/**/*.ts', 'workflows/**/*.ts', 'bench/**/*.ts'];
const errorIdiom = {
  // One base for the crawler's errors, so every one carries a stable code.
  selector: "ClassDeclaration[superClass.name='Error'][id.name!='CrawlerError'], ClassExpression[superClass.name='Error']",
  message: 'Extend CrawlerError (src/errors.ts): every error of the crawler carries a stable `code`.',
};
/**
 * The environment is read through the settings table (src/config/env.ts)
 * alone: a variable read there is typed, defaulted, validated and documented.
 * Only reading a variable is refused (process.env.X, process.env[x], taking
 * variables out by destructuring); handing the whole environment on
 * (`{ ...process.env }` for a child process, processSettings(process.env))
 * is fine.
 */
const envIdiom = {
  selector:
    "MemberExpression[object.type='MemberExpression'][object.object.name='process'][object.property.name='env'], " +
    "VariableDeclarator[id.type='ObjectPattern'][init.type='MemberExpression'][init.object.name='process'][init.property.name='env']",
  message: 'Read environment variables through the settings table (src/config/env.ts: processSettings, processSetting, explicitSetting).',
};

const crawlerPlugin = { rules: { 'pure-relative-imports': pureRelativeImports, 'layered-imports': layeredImports } };

/** The core rules ESLint recommends (what @eslint/js's recommended config holds), without that package. */
const jsRecommended = Object.fromEntries([...builtinRules].filter(([, rule]) => rule.meta?.docs?.recommended).map(([name]) => [name, 'error']));

/** Node's globals, for the plain JavaScript files (TypeScript knows them from @types/node). */
const nodeGlobals = Object.fromEntries(
  [
    'require',
    'module',
    'exports',
    '__dirname',
    '__filename',
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'clearImmediate',
    'queueMicrotask',
    'AbortController',
    'AbortSignal',
    'TextEncoder',
    'TextDecoder',
    'fetch',
    'structuredClone',
    'globalThis',
  ].map((g) => [g, 'readonly']),
);

export default defineConfig(
  {
    ignores: ['node_modules/', '.crawler/', 'crawl-output/', 'dist/', 'coverage/', 'test/fixtures/lint/'],
  },
  {
    files: ['**/*.{ts,js,cjs,mjs}'],
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: jsRecommended,
  },
  {
    files: ['**/*.{js,cjs}'],
    languageOptions: { sourceType: 'commonjs', globals: nodeGlobals },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: nodeGlobals },
  },
  ...tseslint.configs.recommended.map((c) => ({ ...c, files: ['**/*.ts'] })),
  {
    files: ['**/*.ts'],
    rules: {
      // `_`-prefixed names mark parameters a signature needs and the body does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
    },
  },
  {
    files: OWN_CODE,
    plugins: { crawler: crawlerPlugin },
    rules: { 'no-restricted-syntax': ['error', errorIdiom, envIdiom] },
  },
  {
    files: ['src/config/env.ts'],
    rules: { 'no-restricted-syntax': ['error', errorIdiom] },
  },
  ...LAYERS.map(({ above, never, ...files }) => ({ ...files, rules: { 'crawler/layered-imports': ['error', { above, ...(never ? { never } : {}) }] } })),
  {
    // The deterministic code: workflows/ and the pure src/ modules it imports.
    files: ['workflows/**/*.ts', ...PURE_SRC.map((p) => (p.endsWith('/') ? `${p}**/*.ts` : p))],
    plugins: { crawler: crawlerPlugin },
    // (require() is refused everywhere in TypeScript: @typescript-eslint/no-require-imports.)
    rules: { '@typescript-eslint/no-restricted-imports': ['error', restrictedImports] },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: { 'crawler/pure-relative-imports': ['error', { allow: ['workflows/', ...PURE_SRC], typesFrom: ['activities/', 'src/'] }] },
  },
  {
    files: PURE_SRC.map((p) => (p.endsWith('/') ? `${p}**/*.ts` : p)),
    rules: { 'crawler/pure-relative-imports': ['error', { allow: PURE_SRC, typesFrom: ['src/'] }] },
  },
);
