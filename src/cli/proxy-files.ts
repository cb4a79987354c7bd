// What `--proxy URL` and `--proxy-file FILE` become in the campaign input:
// paths only. The campaign input lands in Temporal's history (and its Web
// UI), so a proxy URL, which may carry a password, never goes in it: the
// `--proxy` values are written to a private file (mode 0600, in a folder
// only its owner may enter) under the project's own .crawler/secrets/,
// outside the output folder, and its path is passed instead; `--proxy-file`
// lists are checked (readable, not readable by every user, each line a
// proxy URL) and passed by their absolute path. Problems name the flag or
// the file and line, never the URL.
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseProxyUrl, readProxyFile, MAX_PROXIES } from '../http/proxies';
import { LOCAL_DIR } from '../stack/paths';
import { UsageError } from './usage-error';

/** Where the `--proxy` values of a campaign are kept for its workers. */
export const SECRETS_DIR = path.join(LOCAL_DIR, 'secrets');

/** The `--proxy` values, checked: a problem names the flag's position, never its value. */
export function checkProxyFlags(urls: readonly string[]): string[] {
  const problems: string[] = [];
  if (urls.length > MAX_PROXIES) problems.push(`--proxy: more than ${MAX_PROXIES} proxies; list them in a --proxy-file`);
  urls.forEach((u, i) => {
    try {
      parseProxyUrl(u, urls.length === 1 ? '--proxy' : `--proxy (the ${ordinal(i + 1)})`);
    } catch (err) {
      problems.push((err as Error).message);
    }
  });
  return problems;
}

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${s}`;
}

/**
 * The proxy files of a campaign: every `--proxy-file` (made absolute, read
 * and checked now, as workers will read it), then one private file holding
 * the `--proxy` values, if any. `dir` is where that file goes (SECRETS_DIR).
 */
export async function proxyFilesFor(campaignId: string, o: { proxy?: string[]; proxyFile?: string[] }, dir = SECRETS_DIR): Promise<string[]> {
  const problems = checkProxyFlags(o.proxy ?? []);
  const files: string[] = [];
  for (const f of o.proxyFile ?? []) {
    const abs = path.resolve(f);
    try {
      await readProxyFile(abs);
      files.push(abs);
    } catch (err) {
      problems.push(`--proxy-file: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) throw new UsageError(problems.join('\n'));
  if ((o.proxy ?? []).length > 0) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, `proxies-${campaignId.replace(/[^A-Za-z0-9._-]/g, '_')}.txt`);
    const header = `# --proxy values of campaign ${campaignId}, read by its workers; delete once the campaign is over\n`;
    // `mode` applies only to a file it creates: one left by an earlier run of the same ID is narrowed before it is rewritten.
    await chmod(file, 0o600).catch(() => undefined);
    await writeFile(file, header + o.proxy!.map((u) => `${u.trim()}\n`).join(''), { mode: 0o600 });
    await readProxyFile(file).catch((err: unknown) => Promise.reject(new UsageError(`--proxy: ${(err as Error).message}`)));
    files.push(file);
  }
  return files;
}

/**
 * Deletes the private files proxyFilesFor wrote for a campaign that is over
 * (its workers read them no more); files elsewhere (`--proxy-file`) are the
 * operator's and stay.
 */
export async function removeProxySecrets(files: readonly string[], dir = SECRETS_DIR): Promise<void> {
  const root = path.resolve(dir) + path.sep;
  for (const f of files) if (path.resolve(f).startsWith(root)) await rm(f, { force: true });
}
