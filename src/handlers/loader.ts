// Loading a campaign's handler module in a worker (or in the CLI, which
// checks it before starting anything). Workers run a prebuilt CommonJS
// bundle with plain node and no TypeScript loader, so .ts/.mts/.cts files go
// through tsx's API; .js/.mjs/.cjs files and packages through import().
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../config/project-root';
import { CrawlerError } from '../errors';
import { LABEL_PATTERN, type Handler } from './api';

/** A handler module that cannot be loaded or is not a handler: the campaign is refused. */
export class HandlerLoadError extends CrawlerError<'HANDLER_LOAD'> {
  constructor(
    readonly spec: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('HANDLER_LOAD', `handler ${JSON.stringify(spec)}: ${message}`, options);
    this.name = 'HandlerLoadError';
  }
}

const TS_FILE = /\.(c|m)?tsx?$/i;

/** A path (absolute or relative) rather than a package name. */
export function isHandlerPath(spec: string): boolean {
  return path.isAbsolute(spec) || spec.startsWith('./') || spec.startsWith('../') || spec === '.' || spec === '..' || /^[A-Za-z]:[\\/]/.test(spec);
}

/** What the CLI puts in the campaign input: a path made absolute against `cwd`, a package name as it is. */
export function resolveHandlerSpec(spec: string, cwd = process.cwd()): string {
  // `examples/x.ts` is meant as a file when there is one, not as package `examples`.
  return isHandlerPath(spec) || fs.existsSync(path.resolve(cwd, spec)) ? path.resolve(cwd, spec) : spec;
}

// esbuild would bundle (and break) a package named in a literal require or import():
// tsx registers loader files relative to its own folder. This require is the project's.
const projectRequire = createRequire(path.join(PROJECT_ROOT, 'package.json'));
// Kept out of esbuild's reach for the same reason: a computed import() stays Node's own.
const nativeImport = new Function('u', 'return import(u)') as (u: string) => Promise<Record<string, unknown>>;

async function importModule(spec: string): Promise<Record<string, unknown>> {
  if (isHandlerPath(spec)) {
    const file = path.resolve(spec);
    if (TS_FILE.test(file)) {
      // tsx's require API (TypeScript compiled to CommonJS on the way in): its
      // ESM API's loader thread fails to register from a CommonJS bundle. So a
      // TypeScript handler cannot use top-level await; a .mjs one can.
      const { require: tsxRequire } = projectRequire('tsx/cjs/api') as { require: (id: string, from: string) => Record<string, unknown> };
      return tsxRequire(file, path.join(PROJECT_ROOT, 'package.json'));
    }
    return nativeImport(pathToFileURL(file).href);
  }
  // A package: found from the working directory first (the user's project), then from the crawler's.
  for (const from of [path.join(process.cwd(), 'noop.js'), path.join(PROJECT_ROOT, 'package.json')]) {
    let resolved: string;
    try {
      resolved = createRequire(from).resolve(spec);
    } catch {
      continue;
    }
    return nativeImport(pathToFileURL(resolved).href);
  }
  return nativeImport(spec);
}

/**
 * The handler object of a module: its default export (or the default of a
 * default, what a CommonJS module compiled from ESM gives), else a `handler`
 * export, else the module itself when it has hooks.
 */
export function handlerOf(spec: string, mod: Record<string, unknown>): Handler {
  const candidates = [mod.default, (mod.default as Record<string, unknown> | undefined)?.default, mod.handler, mod];
  const hooks = ['onPage', 'routes', 'login', 'onRender', 'renderRoutes'];
  const h = candidates.find((c) => c && typeof c === 'object' && hooks.some((k) => k in c)) as Handler | undefined;
  if (!h)
    throw new HandlerLoadError(spec, 'the module exports no handler (export default { onPage(ctx) { … } }, { routes: { … } }, { onRender(ctx) { … } } or { login(ctx) { … } })');
  const problems: string[] = [];
  if (h.onPage !== undefined && typeof h.onPage !== 'function') problems.push('onPage must be a function');
  if (h.filterLink !== undefined && typeof h.filterLink !== 'function') problems.push('filterLink must be a function');
  if (h.login !== undefined && typeof h.login !== 'function') problems.push('login must be a function');
  if (h.isLoggedOut !== undefined && typeof h.isLoggedOut !== 'function') problems.push('isLoggedOut must be a function');
  // It would never be asked: only a handler that can log in is asked whether a page is logged out.
  if (h.isLoggedOut !== undefined && h.login === undefined) problems.push('isLoggedOut needs a login hook');
  if (h.onRender !== undefined && typeof h.onRender !== 'function') problems.push('onRender must be a function');
  problems.push(...routeProblems('routes', h.routes), ...routeProblems('renderRoutes', h.renderRoutes));
  if (problems.length) throw new HandlerLoadError(spec, problems.join('; '));
  return h;
}

/** What is wrong with a label → hook object (`routes`, `renderRoutes`), if anything. */
function routeProblems(name: string, routes: unknown): string[] {
  if (routes === undefined) return [];
  if (!routes || typeof routes !== 'object') return [`${name} must be an object of label → function`];
  const problems: string[] = [];
  for (const [label, hook] of Object.entries(routes)) {
    if (!LABEL_PATTERN.test(label)) problems.push(`${name} label ${JSON.stringify(label)} must match ${LABEL_PATTERN}`);
    if (typeof hook !== 'function') problems.push(`${name}[${JSON.stringify(label)}] must be a function`);
  }
  return problems;
}

const cache = new Map<string, Promise<Handler>>();

/** The handler named by `spec`, loaded once per process (a failed load is tried again next time). */
export function loadHandler(spec: string): Promise<Handler> {
  let p = cache.get(spec);
  if (!p) {
    p = importModule(spec).then(
      (mod) => handlerOf(spec, mod),
      (err: unknown) => {
        // Node's require stack names the loader's files, not the user's: left out.
        const why = (err instanceof Error ? err.message : String(err)).replace(/\nRequire stack:[\s\S]*/, '');
        throw new HandlerLoadError(spec, `cannot be loaded: ${why}`, { cause: err });
      },
    );
    cache.set(spec, p);
    p.catch(() => cache.delete(spec));
  }
  return p;
}
