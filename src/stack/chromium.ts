// The Chromium that `render: browser` drives through playwright-core (which
// brings no browser of its own): found like the stack's servers
// (src/stack/tools.ts): $CHROMIUM_PATH, then PATH and the usual places;
// Debian's package installed with apt-get when we are root.
//
// Chromium's headless shell first (Debian's `chromium-headless-shell`, the
// old headless mode as its own program): it is what Playwright itself runs
// for headless Chromium, and measured on the client-rendered test sites it
// spends 0.4× the CPU a page of the full Chromium in its new headless mode
// (bench/render-tabs.ts: 112 against 260 ms a page, our way of rendering;
// 156 against 271 for a new tab a page), which is what bounds rendering on a
// small machine. The full Chromium is used when it is the one installed, or
// named by CHROMIUM_PATH (docs/rendering.md, "Which Chromium").
import { processSetting } from '../config/env';
import { executable, findOrInstallAptTool, type InstallOptions } from './tools';
import { StackError } from './stack-error';
import { executableSearchPath } from '../config/env';
import path from 'node:path';

const SHELL = 'chromium-headless-shell';
const NAMES = [SHELL, 'chromium', 'chromium-browser'];
const PLACES = [`/usr/bin/${SHELL}`, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium', '/snap/bin/chromium'];

/** Where to look besides PATH (tests give their own). */
export interface ChromiumPlaces {
  places?: string[];
}

/** Chromium on PATH or in the usual places (its headless shell first), or null. */
export function findChromium(o: ChromiumPlaces = {}): string | null {
  for (const name of NAMES) {
    for (const dir of executableSearchPath()) if (executable(path.join(dir, name))) return path.join(dir, name);
  }
  return (o.places ?? PLACES).find(executable) ?? null;
}

/** Chromium's executable: $CHROMIUM_PATH, then PATH and the usual places; `apt-get install chromium-headless-shell` when root. Throws StackError TOOL_MISSING saying what to install. */
export async function findOrInstallChromium(opts: InstallOptions & ChromiumPlaces = {}): Promise<string> {
  const fromEnv = processSetting('chromiumPath');
  if (fromEnv) {
    if (!executable(fromEnv)) {
      throw new StackError(
        'TOOL_MISSING',
        `CHROMIUM_PATH=${fromEnv} is not an executable file: point it to a Chromium or Chrome executable, or unset it to use Debian's \`${SHELL}\` (Debian/Ubuntu: \`sudo apt-get install ${SHELL}\`)`,
      );
    }
    return fromEnv;
  }
  return findChromium(opts) ?? findOrInstallAptTool(SHELL, SHELL, '`render: browser` renders pages with it (or set CHROMIUM_PATH to a Chromium or Chrome executable)', opts);
}

/**
 * Why this process could not render, or null when it could: Chromium found,
 * or installable (root with apt-get). Checked without installing anything,
 * so a steering request is answered at once (activities/steer-campaign.ts).
 */
export function chromiumProblem(): string | null {
  const fromEnv = processSetting('chromiumPath');
  if (fromEnv) return executable(fromEnv) ? null : `CHROMIUM_PATH=${fromEnv} is not an executable file on the worker`;
  if (findChromium()) return null;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (root && executableSearchPath().some((dir) => executable(path.join(dir, 'apt-get')))) return null;
  return `Chromium is not installed on the worker (Debian/Ubuntu: \`sudo apt-get install ${SHELL}\`, or set CHROMIUM_PATH to a Chromium or Chrome executable)`;
}
