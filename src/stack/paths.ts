import path from 'node:path';
import { processSetting } from '../config/env';

// Set by the worker bundle's build (scripts/worker-bundle.cjs): in the bundle,
// __dirname is the bundle's folder under .crawler/, not this file's.
declare const __CRAWLER_PROJECT_ROOT__: string | undefined;

// Everything the project installs or stores for itself lives under one
// git-ignored folder at the project root, so a fresh clone is self-contained
// and `rm -rf .crawler` is a full reset.
export const PROJECT_ROOT = typeof __CRAWLER_PROJECT_ROOT__ === 'string' ? __CRAWLER_PROJECT_ROOT__ : path.resolve(__dirname, '..', '..');
export const LOCAL_DIR = processSetting('crawlerHome') ?? path.join(PROJECT_ROOT, '.crawler');
export const TOOLS_DIR = path.join(LOCAL_DIR, 'tools');
export const STACK_DIR = path.join(LOCAL_DIR, 'stack');
