// What a fresh machine needs before the stack and the tests run: openssl and
// a python3 that can make venvs (Debian and Ubuntu ship `python3 -m venv`'s
// ensurepip separately, in python3-venv). Installed with apt-get when we are
// root, otherwise named in the error. These tests run the real functions
// against small executables on a PATH of their own: an `apt-get` that records
// what it was asked and "installs" by writing the program the package would
// bring, and a `python3` that lacks ensurepip until python3-venv is there.
// Nothing here runs the real apt-get, pip or openssl.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensurePythonVenv, findOrInstallOpenssl } from '../../src/stack/tools';
import { StackError } from '../../src/stack/stack-error';
import { findOrInstallChromium } from '../../src/stack/chromium';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tools-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const savedPath = process.env.PATH;
const savedChromium = process.env.CHROMIUM_PATH;
afterEach(() => {
  process.env.PATH = savedPath;
  if (savedChromium === undefined) delete process.env.CHROMIUM_PATH;
  else process.env.CHROMIUM_PATH = savedChromium;
});

/** A shell script; it finds chmod, touch and mkdir on the system's PATH, not on the test's. */
function script(file: string, body: string): void {
  fs.writeFileSync(file, `#!/bin/sh\nPATH=/usr/bin:/bin\n${body}\n`, { mode: 0o755 });
}

/** A bin folder that is the whole PATH, with a recording apt-get; `packages` says what each package installs. */
function machine(packages: (bin: string) => Record<string, string> = () => ({})): { bin: string; aptCalls: () => string[] } {
  const root = fs.mkdtempSync(path.join(tmp, 'machine-'));
  const bin = path.join(root, 'bin');
  fs.mkdirSync(bin);
  const log = path.join(root, 'apt.log');
  const cases = Object.entries(packages(bin))
    .map(([pkg, install]) => `    ${pkg}) ${install} ;;`)
    .join('\n');
  script(
    path.join(bin, 'apt-get'),
    [
      `echo "$*" >> '${log}'`,
      'if [ "$1" = install ]; then',
      '  for last in "$@"; do :; done',
      '  case "$last" in',
      cases,
      '    *) echo "E: Unable to locate package $last" >&2; exit 100 ;;',
      '  esac',
      'fi',
    ].join('\n'),
  );
  process.env.PATH = bin;
  return { bin, aptCalls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []) };
}

async function stackError(p: Promise<unknown> | (() => unknown)): Promise<StackError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    expect(err).toBeInstanceOf(StackError);
    return err as StackError;
  }
  throw new Error('expected a StackError');
}

describe('openssl', () => {
  it('is found on PATH without installing anything', async () => {
    const m = machine();
    script(path.join(m.bin, 'openssl'), 'exit 0');
    expect(await findOrInstallOpenssl({ root: true })).toBe(path.join(m.bin, 'openssl'));
    expect(m.aptCalls()).toEqual([]);
  });

  it('is installed with apt-get when missing and we are root', async () => {
    // The package "installs" into the machine's bin folder.
    const m = machine((bin) => ({ openssl: `printf '#!/bin/sh\\n' > '${bin}/openssl'; chmod +x '${bin}/openssl'` }));
    expect(await findOrInstallOpenssl({ root: true })).toBe(path.join(m.bin, 'openssl'));
    expect(m.aptCalls()).toEqual(['install -y -qq openssl']);
  });

  it('is named, with the package to install, when missing and we are not root', async () => {
    const m = machine();
    const err = await stackError(findOrInstallOpenssl({ root: false }));
    expect(err.code).toBe('TOOL_MISSING');
    expect(err.message).toContain('sudo apt-get install openssl');
    expect(m.aptCalls()).toEqual([]);
  });
});

describe('python3 -m venv', () => {
  /**
   * A python3 whose `import venv, ensurepip` works only once python3-venv is
   * "installed" (a marker file), and whose `-m venv DIR` makes a venv with a
   * python that answers `-m pip --version`.
   */
  function debianPython(): { bin: string; aptCalls: () => string[]; marker: string } {
    const m = machine();
    const marker = path.join(m.bin, '..', 'python3-venv-installed');
    script(
      path.join(m.bin, 'apt-get'),
      [`echo "$*" >> '${path.join(m.bin, '..', 'apt.log')}'`, `if [ "$1" = install ] && [ "$4" = python3-venv ]; then touch '${marker}'; exit 0; fi`, 'exit 100'].join('\n'),
    );
    script(
      path.join(m.bin, 'python3'),
      [
        `if [ "$1" = -c ]; then [ -e '${marker}' ] && exit 0; echo "ModuleNotFoundError: No module named 'ensurepip'" >&2; exit 1; fi`,
        'if [ "$1" = -m ] && [ "$2" = venv ]; then',
        `  [ -e '${marker}' ] || { echo 'ensurepip is not available' >&2; exit 1; }`,
        '  mkdir -p "$3/bin"',
        `  printf '#!/bin/sh\\nexit 0\\n' > "$3/bin/python"; chmod +x "$3/bin/python"; exit 0`,
        'fi',
        'exit 2',
      ].join('\n'),
    );
    return { ...m, marker };
  }

  it('installs python3-venv with apt-get when root and python3 cannot make venvs, then makes the venv', () => {
    const m = debianPython();
    const dir = path.join(tmp, 'venv-root');
    expect(ensurePythonVenv(dir, { root: true, purpose: 'the test' })).toBe(path.join(dir, 'bin', 'python'));
    expect(m.aptCalls()).toEqual(['install -y -qq python3-venv']);
    expect(fs.existsSync(path.join(dir, 'bin', 'python'))).toBe(true);
  });

  it('refreshes the package lists once when the first install fails', () => {
    const m = debianPython();
    const apt = path.join(m.bin, 'apt-get');
    // Fails until `update` has run, as with stale lists on a fresh image.
    const lists = path.join(m.bin, '..', 'lists-updated');
    fs.writeFileSync(
      apt,
      fs
        .readFileSync(apt, 'utf8')
        .replace('exit 100', `if [ "$1" = update ]; then touch '${lists}'; exit 0; fi\nexit 100`)
        .replace('if [ "$1" = install ]', `if [ -e '${lists}' ] && [ "$1" = install ]`),
    );
    ensurePythonVenv(path.join(tmp, 'venv-stale'), { root: true, purpose: 'the test' });
    expect(m.aptCalls()).toEqual(['install -y -qq python3-venv', 'update -qq', 'install -y -qq python3-venv']);
  });

  it('says to install python3-venv when not root, and installs nothing', async () => {
    const m = debianPython();
    const dir = path.join(tmp, 'venv-user');
    const err = await stackError(() => ensurePythonVenv(dir, { root: false, purpose: 'the test' }));
    expect(err.code).toBe('TOOL_MISSING');
    expect(err.message).toContain('sudo apt-get install python3-venv');
    expect(err.message).toContain('the test');
    expect(m.aptCalls()).toEqual([]);
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('leaves a working venv alone', () => {
    const m = debianPython();
    const dir = path.join(tmp, 'venv-ready');
    fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
    script(path.join(dir, 'bin', 'python'), 'exit 0');
    expect(ensurePythonVenv(dir, { root: true, purpose: 'the test' })).toBe(path.join(dir, 'bin', 'python'));
    expect(m.aptCalls()).toEqual([]);
  });

  it('names python3 itself when there is none', async () => {
    machine();
    const err = await stackError(() => ensurePythonVenv(path.join(tmp, 'venv-none'), { root: true, purpose: 'the test' }));
    expect(err.code).toBe('TOOL_MISSING');
    expect(err.message).toMatch(/python3 is not installed/);
  });
});

describe('chromium (render: browser)', () => {
  it('is found on PATH; CHROMIUM_PATH wins', async () => {
    const m = machine();
    script(path.join(m.bin, 'chromium'), 'exit 0');
    delete process.env.CHROMIUM_PATH;
    expect(await findOrInstallChromium({ root: true, places: [] })).toBe(path.join(m.bin, 'chromium'));
    script(path.join(m.bin, 'chrome'), 'exit 0');
    process.env.CHROMIUM_PATH = path.join(m.bin, 'chrome');
    expect(await findOrInstallChromium({ root: true, places: [] })).toBe(path.join(m.bin, 'chrome'));
    expect(m.aptCalls()).toEqual([]);
  });

  it('is named, with the package to install, when missing and we are not root', async () => {
    machine();
    delete process.env.CHROMIUM_PATH;
    const err = await stackError(findOrInstallChromium({ root: false, places: [] }));
    expect(err.code).toBe('TOOL_MISSING');
    expect(err.message).toContain('`sudo apt-get install chromium-headless-shell`');
  });

  it('the headless shell is taken before the full Chromium when both are installed, and installed when neither is', async () => {
    const m = machine((bin) => ({ 'chromium-headless-shell': `printf '#!/bin/sh\\nexit 0\\n' > '${bin}/chromium-headless-shell'; chmod +x '${bin}/chromium-headless-shell'` }));
    delete process.env.CHROMIUM_PATH;
    expect(await findOrInstallChromium({ root: true, places: [] })).toBe(path.join(m.bin, 'chromium-headless-shell'));
    expect(m.aptCalls()).toEqual([expect.stringMatching(/^install .*chromium-headless-shell$/)]);
    script(path.join(m.bin, 'chromium'), 'exit 0');
    expect(await findOrInstallChromium({ root: true, places: [] })).toBe(path.join(m.bin, 'chromium-headless-shell'));
    fs.rmSync(path.join(m.bin, 'chromium-headless-shell'));
    expect(await findOrInstallChromium({ root: true, places: [] })).toBe(path.join(m.bin, 'chromium'));
    expect(m.aptCalls()).toHaveLength(1);
  });

  it('CHROMIUM_PATH naming no executable is refused, saying what to install, and apt-get is not tried', async () => {
    const m = machine();
    process.env.CHROMIUM_PATH = path.join(m.bin, 'absent');
    const err = await stackError(findOrInstallChromium({ root: true, places: [] }));
    expect(err.code).toBe('TOOL_MISSING');
    expect(err.message).toMatch(/^CHROMIUM_PATH=.*absent is not an executable file/);
    expect(err.message).toContain('`sudo apt-get install chromium-headless-shell`');
    expect(m.aptCalls()).toEqual([]);
  });
});
