import path from 'node:path';
import { processSetting } from '../config/env';
import { PROJECT_ROOT } from '../config/project-root';

// Everything the project installs or stores for itself lives under one
// git-ignored folder at the project root, so a fresh clone is self-contained
// and `rm -rf .crawler` is a full reset.
export { PROJECT_ROOT };
export const LOCAL_DIR = processSetting('crawlerHome') ?? path.join(PROJECT_ROOT, '.crawler');
export const TOOLS_DIR = path.join(LOCAL_DIR, 'tools');
export const STACK_DIR = path.join(LOCAL_DIR, 'stack');
/** Where workers spool the outputs of campaigns in object storage (src/storage/spool.ts) unless CRAWLER_SPOOL_DIR says otherwise. */
export const DEFAULT_SPOOL_DIR = path.join(LOCAL_DIR, 'spool');
/**
 * Where outputs in object storage are brought down to be read
 * (src/storage/output-mirror.ts), one folder per location: CRAWLER_CACHE_DIR,
 * else `cache` here. Read at each call, so a process (a test) can point it elsewhere.
 */
export const outputCacheRoot = (): string => processSetting('cacheDir') ?? path.join(LOCAL_DIR, 'cache');
