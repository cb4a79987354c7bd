import path from 'node:path';

// Set by the worker bundle's build (scripts/worker-bundle.cjs): in the bundle,
// __dirname is the bundle's folder under .crawler/, not this file's.
declare const __CRAWLER_PROJECT_ROOT__: string | undefined;

/** The project's folder (where package.json and node_modules are), from source and from the worker bundle alike. */
export const PROJECT_ROOT = typeof __CRAWLER_PROJECT_ROOT__ === 'string' ? __CRAWLER_PROJECT_ROOT__ : path.resolve(__dirname, '..', '..');
