// The real pages of `npm run bench -- --only p`: the HTML documentation of a
// Debian package, downloaded with apt-get (the .deb alone, nothing installed
// on the system) and unpacked with dpkg-deb into a cache under .crawler/, so
// a fresh clone's first run sets itself up and later runs reuse it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { LOCAL_DIR } from '../src/stack/paths';

/**
 * PostgreSQL 15's manual: about 1,170 pages of real, varied HTML (13 KB a
 * page on average, tables, code, long indexes), all linked from index.html,
 * with links to the real web that no crawler may follow here.
 */
export const CORPUS_PACKAGE = 'postgresql-doc-15';
/** Where the package keeps its HTML, inside the .deb. */
const HTML_DIR = 'usr/share/doc/postgresql-doc-15/html';

export interface Corpus {
  package: string;
  /** The package's version, as its control file says. */
  version: string;
  /** The folder of HTML to serve. */
  dir: string;
}

function run(cmd: string, args: string[], cwd: string): { ok: boolean; out: string } {
  const res = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  return { ok: res.status === 0, out: `${res.stdout ?? ''}${res.stderr ?? ''}${res.error ? String(res.error) : ''}`.trim() };
}

/** The corpus, downloaded and unpacked on first use (a few seconds); `log` says what is installed. */
export function ensureCorpus(log: (msg: string) => void): Corpus {
  const root = path.join(LOCAL_DIR, 'corpora', CORPUS_PACKAGE);
  const versionFile = path.join(root, 'VERSION');
  const dir = path.join(root, HTML_DIR);
  if (fs.existsSync(versionFile) && fs.existsSync(path.join(dir, 'index.html'))) {
    return { package: CORPUS_PACKAGE, version: fs.readFileSync(versionFile, 'utf8').trim(), dir };
  }
  const download = path.join(LOCAL_DIR, 'corpora', `.download-${process.pid}`);
  fs.rmSync(download, { recursive: true, force: true });
  fs.mkdirSync(download, { recursive: true });
  try {
    log(`bench: fetching Debian's ${CORPUS_PACKAGE} (apt-get download, the .deb only) and unpacking it into ${root}…`);
    let got = run('apt-get', ['download', CORPUS_PACKAGE], download);
    if (!got.ok) {
      // A machine whose package lists were never fetched knows no package yet.
      log('bench: apt-get download failed; running apt-get update once and trying again');
      const update = run('apt-get', ['update'], download);
      if (!update.ok) throw new Error(`apt-get update failed (the real-pages corpus comes from Debian's ${CORPUS_PACKAGE}):\n${update.out}`);
      got = run('apt-get', ['download', CORPUS_PACKAGE], download);
    }
    const deb = fs.readdirSync(download).find((f) => f.endsWith('.deb'));
    if (!got.ok || !deb) throw new Error(`apt-get download ${CORPUS_PACKAGE} failed; the real-pages scenario needs it:\n${got.out}`);
    const version = run('dpkg-deb', ['--field', deb, 'Version'], download);
    const unpacked = path.join(download, 'root');
    const x = run('dpkg-deb', ['-x', deb, unpacked], download);
    if (!x.ok || !version.ok) throw new Error(`dpkg-deb could not unpack ${deb}:\n${x.out}${version.out}`);
    if (!fs.existsSync(path.join(unpacked, HTML_DIR, 'index.html'))) throw new Error(`${deb} has no ${HTML_DIR}/index.html: the package's layout changed`);
    fs.writeFileSync(path.join(unpacked, 'VERSION'), `${version.out}\n`);
    // Moved into place whole, so an interrupted setup leaves no half a corpus behind.
    fs.rmSync(root, { recursive: true, force: true });
    fs.renameSync(unpacked, root);
    log(`bench: ${CORPUS_PACKAGE} ${version.out} unpacked (${fs.readdirSync(dir).length} files in ${dir})`);
    return { package: CORPUS_PACKAGE, version: version.out, dir };
  } finally {
    fs.rmSync(download, { recursive: true, force: true });
  }
}
