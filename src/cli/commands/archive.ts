import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { findOrInstallPyReplayTools } from '../../stack/tools';
import { campaignWarcFiles, CDXJ_FILE, indexCovers, listWarcFiles, withIndexLock, writeCampaignCdxj, writeCdxj } from '../../storage/cdxj';
import { StorageError } from '../../storage/storage-error';
import { pagesFromIndex, writeWacz } from '../../storage/wacz';
import { UsageError } from '../usage-error';
import { candidateOutputDirs, loadCampaignIndex } from './report';
import { CAMPAIGN_ID_PATTERN } from '../../config/campaign';

// `crawler cdxj`, `crawler export --wacz` and `crawler replay`: the replay
// index, the portable package and a replay server of a campaign, from its
// output folder alone (offline, like `report`): the WARC files the
// campaign's workers wrote, and its index.

function isDir(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The output folder among the candidates that holds WARC files of this campaign, and those files. */
async function findCampaignWarcs(campaignId: string, out: string | undefined): Promise<{ dir: string; files: string[] }> {
  const dirs = candidateOutputDirs(campaignId, out);
  for (const dir of dirs) {
    const files = await campaignWarcFiles(dir, campaignId).catch(() => []);
    if (files.length) return { dir, files };
  }
  throw new UsageError(`no WARC files of campaign ${campaignId} in ${dirs.map((d) => path.join(d, 'warc')).join(' or ')} (give its output folder with --out)`);
}

/**
 * The folder's CDXJ, the campaign's lines written again (other campaigns'
 * kept) when it is missing, older than one of the campaign's WARCs, or
 * lacks one of them: another campaign's seal makes it newer without them.
 */
async function freshCdxj(dir: string, campaignId: string, files: string[]): Promise<string> {
  const cdxj = path.join(dir, CDXJ_FILE);
  const mtime = (f: string) => fs.statSync(f).mtimeMs;
  if (!fs.existsSync(cdxj) || files.some((f) => mtime(f) > mtime(cdxj)) || !(await indexCovers(cdxj, files))) {
    const res = await writeCampaignCdxj(dir, campaignId);
    process.stderr.write(`indexed ${res.warcFiles} WARC files: ${res.lines - res.keptLines} CDXJ lines in ${cdxj}\n`);
  }
  return cdxj;
}

export function registerArchiveCommands(program: Command): void {
  program
    .command('cdxj <campaign-or-folder>')
    .description('index WARC files into a sorted CDXJ file for replay (pywb, wayback tools): a campaign, or every WARC of a folder')
    .option('--out <dir>', "the campaign's output folder, as given to crawl (default crawl-output/<campaign>)")
    .option('-o, --output <file>', `where to write the index (default <output folder>/${CDXJ_FILE}; for a folder, <folder>/${CDXJ_FILE})`)
    .action(async (target: string, o: { out?: string; output?: string }) => {
      let files: string[];
      let dest: string;
      let campaign: { id: string; dir: string } | null = null;
      if (isDir(target) && o.out === undefined) {
        // A folder: its WARC files, or those of its warc/ folder (an output folder).
        const dir = path.resolve(target);
        files = await listWarcFiles(dir);
        if (!files.length && isDir(path.join(dir, 'warc'))) files = await listWarcFiles(path.join(dir, 'warc'));
        if (!files.length) throw new UsageError(`no .warc.gz or .warc files in ${dir}`);
        dest = o.output ?? path.join(dir, CDXJ_FILE);
      } else {
        if (!CAMPAIGN_ID_PATTERN.test(target)) throw new UsageError(`${JSON.stringify(target)} is neither a folder nor a campaign ID (${CAMPAIGN_ID_PATTERN.source})`);
        const found = await findCampaignWarcs(target, o.out);
        files = found.files;
        dest = o.output ?? path.join(found.dir, CDXJ_FILE);
        campaign = { id: target, dir: found.dir };
      }
      // A campaign into its folder's index keeps the other campaigns' lines there.
      const res = campaign
        ? await writeCampaignCdxj(campaign.dir, campaign.id, path.resolve(dest))
        : // A whole folder: every WARC, so nothing to keep, but the lock all the same (a seal may be writing it).
          await withIndexLock(path.resolve(dest), () => writeCdxj(files, path.resolve(dest), { tmpDir: path.dirname(path.resolve(dest)) }));
      process.stderr.write(`${res.lines} CDXJ lines from ${res.warcFiles} WARC files${res.keptLines ? ` (${res.keptLines} of them other campaigns', kept)` : ''}\n`);
      process.stdout.write(`${res.file}\n`);
    });

  program
    .command('export <campaign>')
    .description("package a campaign's WARCs, CDXJ index and page list as a WACZ file")
    .requiredOption('--wacz <file>', 'the WACZ file to write')
    .option('--out <dir>', "the campaign's output folder, as given to crawl (default crawl-output/<campaign>)")
    .option('--title <text>', 'title recorded in the package (default the campaign ID)')
    .option('--allow-missing-originals', 'write the package even when revisit records refer to captures in no WARC file of the folder (those URLs will not replay)')
    .action(async (campaignId: string, o: { wacz: string; out?: string; title?: string; allowMissingOriginals?: boolean }) => {
      if (!CAMPAIGN_ID_PATTERN.test(campaignId)) throw new UsageError(`campaign ID must match ${CAMPAIGN_ID_PATTERN.source}, got ${JSON.stringify(campaignId)}`);
      if (!o.wacz.endsWith('.wacz')) throw new UsageError(`--wacz must name a .wacz file, got ${JSON.stringify(o.wacz)}`);
      const { dir, files } = await findCampaignWarcs(campaignId, o.out);
      const { entries } = await loadCampaignIndex(campaignId, [dir]);
      const pages = pagesFromIndex(entries);
      // The first page fetched at depth 0 is a seed: the page a reader opens first.
      const seed = pages.find((p) => entries.some((e) => e.url === p.url && e.depth === 0));
      const warcDir = path.join(dir, 'warc');
      const res = await writeWacz(path.resolve(o.wacz), {
        warcFiles: files,
        pages,
        title: o.title ?? campaignId,
        mainPageUrl: seed?.url,
        // A revisit record's original is looked for in the rest of the folder (listed
        // then, so files a running campaign opened since count too); elsewhere, it
        // cannot be found, and a package that will not replay is refused.
        originalsFrom: () => listWarcFiles(warcDir),
        allowMissingOriginals: o.allowMissingOriginals ?? false,
      }).catch((err: unknown) => {
        if (err instanceof StorageError && err.code === 'MISSING_ORIGINALS') {
          throw new StorageError('MISSING_ORIGINALS', null, `${err.message}; they are in no WARC file of ${warcDir} (--allow-missing-originals writes the package anyway)`);
        }
        throw err;
      });
      if (res.addedWarcFiles.length) {
        const names = res.addedWarcFiles.map((f) => path.basename(f));
        process.stderr.write(`packed ${names.length} more WARC file${names.length === 1 ? '' : 's'} holding originals of revisit records: ${names.join(', ')}\n`);
      }
      if (res.missingOriginals)
        process.stderr.write(`warning: ${res.missingOriginals} revisit records refer to captures in no WARC file of ${warcDir}: those URLs will not replay from the package\n`);
      process.stderr.write(`${res.warcFiles} WARC files, ${res.cdxjLines} CDXJ lines, ${res.pages} pages, ${res.bytes} bytes\n`);
      process.stdout.write(`${res.file}\n`);
    });

  program
    .command('replay <campaign>')
    .description('replay a campaign in pywb (installed on first use): browse the archived pages on a local port')
    .option('--out <dir>', "the campaign's output folder, as given to crawl (default crawl-output/<campaign>)")
    .option('--port <n>', 'port to serve on', '8090')
    .option('--bind <addr>', 'address to listen on', '127.0.0.1')
    .action(async (campaignId: string, o: { out?: string; port: string; bind: string }) => {
      if (!CAMPAIGN_ID_PATTERN.test(campaignId)) throw new UsageError(`campaign ID must match ${CAMPAIGN_ID_PATTERN.source}, got ${JSON.stringify(campaignId)}`);
      const port = Number(o.port);
      if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError(`--port must be a port number, got ${JSON.stringify(o.port)}`);
      const { dir, files } = await findCampaignWarcs(campaignId, o.out);
      const cdxj = await freshCdxj(dir, campaignId, files);
      const tools = await findOrInstallPyReplayTools((m) => process.stderr.write(`${m}\n`));
      // pywb reads config.yaml from its working folder: one collection, named after the campaign,
      // indexed by our CDXJ over the WARC folder as it is (nothing copied).
      const coll = campaignId.replace(/[^A-Za-z0-9_-]/g, '-');
      const root = path.join(dir, 'pywb');
      fs.mkdirSync(root, { recursive: true });
      const quote = (p: string) => JSON.stringify(p);
      fs.writeFileSync(
        path.join(root, 'config.yaml'),
        `# written by crawler replay\ncollections:\n  ${coll}:\n    index_paths: ${quote(cdxj)}\n    archive_paths: ${quote(`${path.dirname(files[0]!)}/`)}\n`,
      );
      const wayback = spawn(path.join(tools.bin, 'wayback'), ['-p', String(port), '-b', o.bind], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
      const stop = () => wayback.kill('SIGTERM');
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      const host = o.bind.includes(':') ? `[${o.bind}]` : o.bind;
      process.stdout.write(`http://${host}:${port}/${coll}/\n`);
      process.stderr.write(`replaying ${campaignId} with pywb: open http://${host}:${port}/${coll}/<archived URL> (Ctrl-C stops)\n`);
      // Returns only once pywb is gone, so stopping this command never leaves a server behind.
      const code = await new Promise<number>((resolve) => wayback.once('exit', (c, sig) => resolve(c ?? (sig ? 0 : 1))));
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      if (code !== 0) throw Object.assign(new Error(`pywb exited with code ${code}`), { exitCode: 1 });
    });
}
