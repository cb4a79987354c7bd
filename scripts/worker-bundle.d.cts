// Types of worker-bundle.cjs, for the TypeScript that imports it.
export interface WorkerBundleOptions {
  /** Project to bundle (default: this repository). */
  root?: string;
  /** Cache folder (default: CRAWLER_HOME or <root>/.crawler); bundles go to its bundles/. */
  localDir?: string;
  /** Build to this file instead, unconditionally (the Docker image). */
  out?: string;
}
export function ensureWorkerBundle(opts?: WorkerBundleOptions): Promise<string>;
/** JavaScript source with every non-ASCII character as a \\u escape (V8 then holds it as a one-byte string). */
export function escapeNonAscii(text: string): string;
export function sourceHash(root: string): string;
export function buildOptions(root: string, outfile: string): Record<string, unknown>;
export const EXTERNAL: string[];
export class WorkerBundleError extends Error {
  readonly code: 'WORKER_BUNDLE_BUILD';
}
/** node's options for a worker process: CRAWLER_WORKER_NODE_ARGS, or the default. */
export function workerNodeArgs(env?: NodeJS.ProcessEnv, renders?: boolean): string[];
export const DEFAULT_WORKER_NODE_ARGS: string;
export function workerProcessEnv(env?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
export const DEFAULT_WORKER_ENV: Readonly<Record<string, string>>;
