// Bundling the workflow code takes seconds of CPU; `crawl` does it once and
// hands the file to every worker it starts. The cache is keyed by a hash of
// the sources, so an edited workflow is never served stale.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { escapeNonAscii } from '../../scripts/worker-bundle.cjs';
import { LOCAL_DIR, PROJECT_ROOT } from '../stack/paths';

export const WORKFLOWS_PATH = path.join(PROJECT_ROOT, 'workflows', 'index.ts');

/**
 * The SDK needs an inline source map (it maps workflow stack traces, the Web UI's stack trace
 * included, back to the TypeScript). Its default is a full map with every source's text: a 3.2 MB
 * bundle of which 2 MB is the map, held as a string by the workflow thread and parsed by the main
 * thread, and 8 MB of WebAssembly memory in the workflow thread to decode its mappings. A
 * line-level map without the sources still names each frame's .ts file and line: 1.3 MB in all
 * (issue 27: worker RSS).
 */
const WORKFLOW_DEVTOOL = 'inline-nosources-cheap-module-source-map';

function sourceHash(): string {
  const h = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      if (fs.statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts')) h.update(p).update(fs.readFileSync(p));
    }
  };
  walk(path.join(PROJECT_ROOT, 'workflows'));
  walk(path.join(PROJECT_ROOT, 'src'));
  h.update(fs.readFileSync(path.join(PROJECT_ROOT, 'node_modules', '@temporalio', 'workflow', 'package.json')));
  // How the file is written (ASCII only since issue 27): a bundle cached before is not reused.
  h.update('ascii');
  // And with a line-level map without sources (below).
  h.update(WORKFLOW_DEVTOOL);
  // And its workflow modules preloaded.
  h.update('preload');
  return h.digest('hex').slice(0, 16);
}

export async function ensureWorkflowBundle(): Promise<string> {
  const dir = path.join(LOCAL_DIR, 'bundles');
  const file = path.join(dir, `workflows-${sourceHash()}.js`);
  if (fs.existsSync(file)) return file;
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: quietLogger,
    // Our workflow modules are loaded once per workflow thread and shared by every workflow in its
    // reused V8 context, instead of evaluated again for each cached workflow (about 40 KB and the
    // module graph's evaluation per host workflow; bench (k): the busy worker's workflow heap
    // 47–55 -> 41–45 MB). They keep no state of their own (their exports are frozen by the SDK;
    // per-workflow state lives in the workflow functions): the replay test replays every recorded
    // history through this bundle in one context. src/config/campaign.ts (zod) stays out of it,
    // loaded by a campaign when it resolves its input (workflows/crawl-campaign.ts).
    preloadModules: [WORKFLOWS_PATH],
    webpackConfigHook: (config) => ({ ...config, devtool: WORKFLOW_DEVTOOL }),
  });
  fs.mkdirSync(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  // ASCII only: the workflow thread holds the code as a one-byte string, half the size (scripts/worker-bundle.cjs).
  fs.writeFileSync(tmp, escapeNonAscii(code));
  fs.renameSync(tmp, file);
  return file;
}

const noop = () => undefined;
const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: console.error };
