import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { campaignWarcFiles, CDXJ_FILE, listWarcFiles, writeCdxj } from '../../storage/cdxj';
import { pagesFromIndex, writeWacz } from '../../storage/wacz';
import { UsageError } from '../usage-error';
import { candidateOutputDirs, loadCampaignIndex } from './report';

// `crawler cdxj` and `crawler export --wacz`: the replay index and the
// portable package of a campaign, from its output folder alone (offline,
// like `report`): the WARC files the campaign's workers wrote, and its index.

const CAMPAIGN_ID_RE = /^[A-Za-z0-9._-]{1,80}$/;

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

export function registerArchiveCommands(program: Command): void {
  program
    .command('cdxj <campaign-or-folder>')
    .description('index WARC files into a sorted CDXJ file for replay (pywb, wayback tools): a campaign, or every WARC of a folder')
    .option('--out <dir>', "the campaign's output folder, as given to crawl (default crawl-output/<campaign>)")
    .option('-o, --output <file>', `where to write the index (default <output folder>/${CDXJ_FILE}; for a folder, <folder>/${CDXJ_FILE})`)
    .action(async (target: string, o: { out?: string; output?: string }) => {
      let files: string[];
      let dest: string;
      if (isDir(target) && o.out === undefined) {
        // A folder: its WARC files, or those of its warc/ folder (an output folder).
        const dir = path.resolve(target);
        files = await listWarcFiles(dir);
        if (!files.length && isDir(path.join(dir, 'warc'))) files = await listWarcFiles(path.join(dir, 'warc'));
        if (!files.length) throw new UsageError(`no .warc.gz or .warc files in ${dir}`);
        dest = o.output ?? path.join(dir, CDXJ_FILE);
      } else {
        if (!CAMPAIGN_ID_RE.test(target)) throw new UsageError(`${JSON.stringify(target)} is neither a folder nor a campaign ID ([A-Za-z0-9._-]{1,80})`);
        const found = await findCampaignWarcs(target, o.out);
        files = found.files;
        dest = o.output ?? path.join(found.dir, CDXJ_FILE);
      }
      const res = await writeCdxj(files, path.resolve(dest), { tmpDir: path.dirname(path.resolve(dest)) });
      process.stderr.write(`${res.lines} CDXJ lines from ${res.warcFiles} WARC files\n`);
      process.stdout.write(`${res.file}\n`);
    });

  program
    .command('export <campaign>')
    .description("package a campaign's WARCs, CDXJ index and page list as a WACZ file")
    .requiredOption('--wacz <file>', 'the WACZ file to write')
    .option('--out <dir>', "the campaign's output folder, as given to crawl (default crawl-output/<campaign>)")
    .option('--title <text>', 'title recorded in the package (default the campaign ID)')
    .action(async (campaignId: string, o: { wacz: string; out?: string; title?: string }) => {
      if (!CAMPAIGN_ID_RE.test(campaignId)) throw new UsageError(`campaign ID must match [A-Za-z0-9._-]{1,80}, got ${JSON.stringify(campaignId)}`);
      if (!o.wacz.endsWith('.wacz')) throw new UsageError(`--wacz must name a .wacz file, got ${JSON.stringify(o.wacz)}`);
      const { dir, files } = await findCampaignWarcs(campaignId, o.out);
      const { entries } = await loadCampaignIndex(campaignId, [dir]);
      const pages = pagesFromIndex(entries);
      // The first page fetched at depth 0 is a seed: the page a reader opens first.
      const seed = pages.find((p) => entries.some((e) => e.url === p.url && e.depth === 0));
      const res = await writeWacz(path.resolve(o.wacz), { warcFiles: files, pages, title: o.title ?? campaignId, mainPageUrl: seed?.url });
      process.stderr.write(`${res.warcFiles} WARC files, ${res.cdxjLines} CDXJ lines, ${res.pages} pages, ${res.bytes} bytes\n`);
      process.stdout.write(`${res.file}\n`);
    });
}
