// A real browser for the tests that check what an operator sees: Debian's
// Chromium driven by playwright-core (which brings no browser of its own).
// Found as the workers find theirs (src/stack/chromium.ts): $CHROMIUM_PATH,
// then PATH and the usual places, the headless shell first; apt-get installs
// the shell when we are root.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { withFileLock } from '../../src/stack/file-lock';
import { TOOLS_DIR } from '../../src/stack/paths';

const SHELL = 'chromium-headless-shell';
const NAMES = [SHELL, 'chromium', 'chromium-browser'];
const PLACES = [`/usr/bin/${SHELL}`, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium', '/snap/bin/chromium'];

const executable = (file: string) => {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
};

function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && executable(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}

const find = () => NAMES.map(onPath).find((p) => p !== null) ?? PLACES.find(executable) ?? null;

function apt(args: string[]): { ok: boolean; out: string } {
  const res = spawnSync('apt-get', args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  const out = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
  return { ok: res.status === 0, out: out || String(res.error?.message ?? '') };
}

/** Chromium's executable: $CHROMIUM_PATH, then PATH and the usual places; installed with apt-get when root. */
export async function findOrInstallChromium(log: (msg: string) => void = () => {}): Promise<string> {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) {
    if (!executable(fromEnv)) throw new Error(`CHROMIUM_PATH=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const found = find();
  if (found) return found;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !onPath('apt-get')) {
    throw new Error(
      'Chromium is not installed, and the browser tests need it. Install it (Debian/Ubuntu: `sudo apt-get install chromium-headless-shell`) ' +
        'or set CHROMIUM_PATH to a Chromium or Chrome executable.',
    );
  }
  // The same lock as the stack's installs: one apt-get at a time from this project.
  return withFileLock(path.join(TOOLS_DIR, 'install.lock'), async () => {
    const again = find();
    if (again) return again;
    log(`installing ${SHELL} with apt-get…`);
    let res = apt(['install', '-y', '-qq', SHELL]);
    // Stale package lists are the usual reason; refresh only then.
    if (!res.ok && apt(['update', '-qq']).ok) res = apt(['install', '-y', '-qq', SHELL]);
    if (!res.ok) throw new Error(`apt-get install ${SHELL} failed:\n${res.out}\nInstall Chromium yourself or set CHROMIUM_PATH.`);
    const installed = find();
    if (!installed) throw new Error(`apt-get installed ${SHELL} but no Chromium executable was found`);
    return installed;
  });
}

/** Headless Chromium; --no-sandbox because tests often run as root in containers. `args` are added to Chromium's. */
export async function launchBrowser(log?: (msg: string) => void, args: string[] = []): Promise<Browser> {
  const executablePath = await findOrInstallChromium(log);
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', ...args] });
}

/**
 * Screenshots go to the test run's data folder; with CRAWLER_UPDATE_DOCS_IMAGES=1
 * those given a `docsName` also refresh docs/img (so a plain test run leaves
 * the working tree clean).
 */
export async function screenshot(page: Page, name: string, opts: { docsName?: string; fullPage?: boolean } = {}): Promise<string> {
  const dir = path.join(process.env.CRAWLER_TEST_DATA_DIR ?? path.join(TOOLS_DIR, '..', 'test-runs'), 'screenshots');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? false });
  if (opts.docsName && process.env.CRAWLER_UPDATE_DOCS_IMAGES === '1') {
    const docs = path.resolve(__dirname, '..', '..', 'docs', 'img');
    fs.mkdirSync(docs, { recursive: true });
    fs.copyFileSync(file, path.join(docs, opts.docsName));
  }
  return file;
}
