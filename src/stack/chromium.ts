// The Chromium that `render: browser` drives through playwright-core (which
// brings no browser of its own): found like the stack's servers
// (src/stack/tools.ts): $CHROMIUM_PATH, then PATH and the usual places;
// Debian's package installed with apt-get when we are root.
import { processSetting } from '../config/env';
import { executable, findOrInstallAptTool, type InstallOptions } from './tools';
import { StackError } from './stack-error';
import { executableSearchPath } from '../config/env';
import path from 'node:path';

const NAMES = ['chromium', 'chromium-browser'];
const PLACES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium', '/snap/bin/chromium'];

/** Where to look besides PATH (tests give their own). */
export interface ChromiumPlaces {
  places?: string[];
}

/** Chromium on PATH or in the usual places, or null. */
export function findChromium(o: ChromiumPlaces = {}): string | null {
  for (const name of NAMES) {
    for (const dir of executableSearchPath()) if (executable(path.join(dir, name))) return path.join(dir, name);
  }
  return (o.places ?? PLACES).find(executable) ?? null;
}

/** Chromium's executable: $CHROMIUM_PATH, then PATH and the usual places; `apt-get install chromium` when root. Throws StackError TOOL_MISSING saying what to install. */
export async function findOrInstallChromium(opts: InstallOptions & ChromiumPlaces = {}): Promise<string> {
  const fromEnv = processSetting('chromiumPath');
  if (fromEnv) {
    if (!executable(fromEnv)) {
      throw new StackError(
        'TOOL_MISSING',
        `CHROMIUM_PATH=${fromEnv} is not an executable file: point it to a Chromium or Chrome executable, or unset it to use Debian's \`chromium\` (Debian/Ubuntu: \`sudo apt-get install chromium\`)`,
      );
    }
    return fromEnv;
  }
  return (
    findChromium(opts) ?? findOrInstallAptTool('chromium', 'chromium', '`render: browser` renders pages with it (or set CHROMIUM_PATH to a Chromium or Chrome executable)', opts)
  );
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
  return 'Chromium is not installed on the worker (Debian/Ubuntu: `sudo apt-get install chromium`, or set CHROMIUM_PATH to a Chromium or Chrome executable)';
}
