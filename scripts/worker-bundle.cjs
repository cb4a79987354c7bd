// The worker bundle: src/worker/worker-main.ts and everything it imports,
// compiled by esbuild into one CommonJS file that plain `node` runs. A worker
// started this way carries no TypeScript loader (tsx's loader thread, its
// transform cache and source maps): about 45 MB less resident memory per
// worker and a faster start (docs/benchmarks-history.md, Memory).
//
// Built from the sources as they are when a worker starts, never committed:
// the file is cached under the project's local folder, named by a hash of
// every input that can change the output, so an edited source (or a
// reinstalled dependency) gets a fresh bundle and an unchanged tree reuses it.
//
// Plain CommonJS with no dependency but esbuild, because scripts/run.cjs
// (`npm run crawler -- worker`) uses it before any TypeScript can run.
// As a script: `node scripts/worker-bundle.cjs [--out <file>]` builds it (to
// <file> when given, e.g. in the Docker image) and prints its path.
'use strict';
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const ENTRY = path.join('src', 'worker', 'worker-main.ts');
/** Folders whose TypeScript the worker is built from (the hash walks them all). */
const SOURCE_DIRS = ['src', 'activities', 'workflows'];

/**
 * Packages left to node_modules rather than copied into the bundle:
 * - @temporalio/*: the worker's native core bridge (a .node file), and the
 *   workflow bundler (webpack, @swc/core) it loads to bundle workflows; one
 *   copy of @temporalio/common shared with the SDK keeps its failure and
 *   payload classes the SDK's own.
 * - @swc/*, esbuild, koffi: native binaries.
 * - playwright-core: reads its own files relative to its folder.
 * Everything else (undici, ioredis, cheerio, prom-client, …) is bundled: one
 * file to read and no module resolution at start-up, and measured a few MB
 * lighter than leaving them in node_modules.
 */
const EXTERNAL = ['@temporalio/*', '@swc/*', 'esbuild', 'playwright-core', 'koffi'];

/** Where bundles are cached: the project's local folder (src/stack/paths.ts LOCAL_DIR). */
function defaultLocalDir(root) {
  return process.env.CRAWLER_HOME || path.join(root, '.crawler');
}

function sourceHash(root) {
  const h = createHash('sha256');
  const walk = (rel) => {
    const dir = path.join(root, rel);
    if (!fs.existsSync(dir)) return;
    for (const name of fs.readdirSync(dir).sort()) {
      const r = path.join(rel, name);
      const st = fs.statSync(path.join(root, r));
      if (st.isDirectory()) walk(r);
      else if (/\.(c|m)?[jt]s$|\.json$/.test(name))
        h.update(`${r}\0`)
          .update(fs.readFileSync(path.join(root, r)))
          .update('\0');
    }
  };
  for (const d of SOURCE_DIRS) walk(d);
  // The project's own place (baked into the bundle), how it is built, and the
  // installed dependencies (npm rewrites this file on every install).
  h.update(root).update('\0').update(fs.readFileSync(__filename));
  for (const f of ['tsconfig.json', path.join('node_modules', '.package-lock.json')]) {
    const p = path.join(root, f);
    if (fs.existsSync(p)) h.update(fs.readFileSync(p));
  }
  return h.digest('hex').slice(0, 16);
}

/** esbuild options for a worker bundle of the project at `root` (exported for tests). */
function buildOptions(root, outfile) {
  return {
    entryPoints: [path.join(root, ENTRY)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    // The oldest Node package.json "engines" allows, whichever node builds it.
    target: 'node20',
    external: EXTERNAL,
    // import() of an external package (playwright-core, loaded on the first
    // page rendered) becomes require(), which the banner below lets find the
    // project's node_modules from wherever the bundle lies; a native import()
    // would look for them from the bundle's own folder.
    supported: { 'dynamic-import': false },
    // src/stack/paths.ts: in the bundle, __dirname is the cache folder.
    define: { __CRAWLER_PROJECT_ROOT__: JSON.stringify(root) },
    // The external packages are found from the project's node_modules even
    // when the cache folder (CRAWLER_HOME) lies outside the project.
    banner: { js: `module.paths.unshift(${JSON.stringify(path.join(root, 'node_modules'))});` },
    // Class and function names kept (Temporal names activities by them, logs
    // print them); not minified, so a stack trace is readable as it is.
    keepNames: true,
    // A map next to the bundle, used only when a worker runs with
    // --enable-source-maps (CRAWLER_WORKER_NODE_ARGS): loading it costs
    // about 50 MB per worker, too much to pay by default.
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'silent',
    write: false,
  };
}

/** Writes a file so that readers see either nothing or all of it. */
function writeAtomic(file, contents) {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  fs.writeFileSync(tmp, contents);
  fs.renameSync(tmp, file);
}

/**
 * JavaScript source with every character outside ASCII written as a \\u
 * escape. esbuild escapes them in code (its default charset) but not in the
 * comments it keeps (undici's `response’s`, `§` in RFC references); webpack
 * (the workflow bundle) not at all. One such character makes V8 hold the
 * whole source as a two-byte string: the worker bundle's 4.6 MB took 9 MB of
 * every worker's heap, the workflow bundle's 3 MB took 6 MB of its thread's.
 * In a comment the escape is only text; in a string, template or regular
 * expression it means the character itself (neither bundle reads a
 * template's raw text). Lines keep their count (source maps stay right).
 * @param {string} text
 * @returns {string}
 */
function escapeNonAscii(text) {
  // Code units, not code points: an astral character becomes its two surrogate escapes, valid wherever a \\u is.
  // eslint-disable-next-line no-control-regex
  return text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** @param {Uint8Array} contents UTF-8 @returns {Uint8Array} */
function asciiOnly(contents) {
  const text = Buffer.from(contents.buffer, contents.byteOffset, contents.byteLength).toString('utf8');
  const escaped = escapeNonAscii(text);
  return escaped === text ? contents : Buffer.from(escaped, 'latin1');
}

class WorkerBundleError extends Error {
  constructor(message, cause) {
    super(message, { cause });
    this.name = 'WorkerBundleError';
    this.code = 'WORKER_BUNDLE_BUILD';
  }
}

/** Bundles kept besides the current one: a pool started earlier may still start workers from its own. */
const KEEP_OLD = 4;

function prune(dir, keep) {
  const old = fs
    .readdirSync(dir)
    .filter((n) => /^worker-[0-9a-f]{16}\.cjs$/.test(n) && n !== path.basename(keep))
    .map((n) => ({ n, t: fs.statSync(path.join(dir, n)).mtimeMs }))
    .sort((a, b) => b.t - a.t)
    .slice(KEEP_OLD);
  for (const { n } of old) {
    for (const f of [n, `${n}.map`]) fs.rmSync(path.join(dir, f), { force: true });
  }
}

/**
 * The path of an up-to-date worker bundle, built first when the sources
 * changed since the last one. Concurrent callers (a pool starting several
 * workers, two test processes) may both build; the last rename wins, and
 * both files are the same.
 * @param {{ root?: string, localDir?: string, out?: string }} [opts]
 * @returns {Promise<string>}
 */
async function ensureWorkerBundle(opts = {}) {
  const root = opts.root ?? ROOT;
  const dir = path.join(opts.localDir ?? defaultLocalDir(root), 'bundles');
  const file = opts.out ? path.resolve(opts.out) : path.join(dir, `worker-${sourceHash(root)}.cjs`);
  if (!opts.out && fs.existsSync(file)) return file;
  const esbuild = require(require.resolve('esbuild', { paths: [root, __dirname] }));
  let result;
  try {
    result = await esbuild.build(buildOptions(root, file));
  } catch (err) {
    const first = err.errors?.[0];
    const where = first?.location ? `${first.location.file}:${first.location.line}: ` : '';
    throw new WorkerBundleError(`could not build the worker bundle: ${where}${first?.text ?? err.message}`, err);
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // The map first: a bundle that exists is complete, map included.
  const byPath = new Map(result.outputFiles.map((o) => [o.path, o.contents]));
  if (byPath.has(`${file}.map`)) writeAtomic(`${file}.map`, byPath.get(`${file}.map`));
  writeAtomic(file, asciiOnly(byPath.get(file)));
  if (!opts.out) prune(dir, file);
  return file;
}

/**
 * node's own options for a worker, unless CRAWLER_WORKER_NODE_ARGS says
 * otherwise. Neither caps the heap (a worker parsing a large page must not
 * run out of it); both keep V8 from growing it far ahead of what is live on
 * a machine with memory to spare (docs/benchmarks-history.md, measured on (a) and (b)):
 * - a 2 MB young generation (V8's default grows it to 16 MB per semi-space):
 *   4 MB took about 90 MB off at no measured cost in pages/s; 2 MB another
 *   10-20 MB where hundreds of hosts are in flight (bench (l), (k)), for about
 *   15 % more worker CPU per page on real pages (p), measured in three pairs;
 * - the old generation grown by 30 % of what a full collection left live
 *   (V8 otherwise grows it by up to 4×): about 70 MB less, ~8 % more CPU.
 */
const DEFAULT_WORKER_NODE_ARGS = '--max-semi-space-size=2 --heap-growing-percent=30';
/**
 * A worker started for a campaign that renders keeps V8's default young
 * generation (16 MB a semi-space): its thread relays every request of every
 * page over the DevTools pipe, short-lived JSON and buffers that a 2 MB young
 * generation collected about three times as often. Bench (v), pairs
 * alternated: the workers' own CPU a page 99 and 82 ms with 2 MB, 84 and 74
 * with 16, at +10 MB of PSS beside a Chromium of 0.5 GB.
 */
const RENDER_WORKER_NODE_ARGS = '--max-semi-space-size=16 --heap-growing-percent=30';

/** The node options of a worker process, as a list (`renders`: started for a campaign that renders). */
function workerNodeArgs(env = process.env, renders = false) {
  return (env.CRAWLER_WORKER_NODE_ARGS ?? (renders ? RENDER_WORKER_NODE_ARGS : DEFAULT_WORKER_NODE_ARGS)).split(' ').filter(Boolean);
}

/**
 * What a worker process's environment adds to `env`, unless `env` sets it:
 * - at most two glibc malloc arenas. Every thread (libuv's pool compressing
 *   WARC records, the SDK's core, the workflow thread) otherwise gets arenas
 *   of its own that keep freed memory: about 70 MB of RSS in (a) and (b);
 * - blocks of 128 KB and more always mapped on their own (glibc's starting
 *   threshold, held there): glibc otherwise raises it as large blocks are
 *   freed, up to 32 MB, and then serves them from its heaps, where they
 *   stay after they are freed until the next malloc_trim (src/worker/malloc-trim.ts).
 *   Bench (c): 251-263 MB against 241-246, at the same CPU in (c) and (p).
 */
const DEFAULT_WORKER_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };

function workerProcessEnv(env = process.env) {
  return { ...DEFAULT_WORKER_ENV, ...env };
}

module.exports = {
  ensureWorkerBundle,
  escapeNonAscii,
  sourceHash,
  buildOptions,
  WorkerBundleError,
  EXTERNAL,
  workerNodeArgs,
  DEFAULT_WORKER_NODE_ARGS,
  workerProcessEnv,
  DEFAULT_WORKER_ENV,
};

if (require.main === module) {
  const i = process.argv.indexOf('--out');
  ensureWorkerBundle(i > 0 ? { out: process.argv[i + 1] } : {}).then(
    (file) => process.stdout.write(`${file}\n`),
    (err) => {
      process.stderr.write(`crawler: ${err.message}\n`);
      process.exit(1);
    },
  );
}
