import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { findOrInstallPyReplayTools } from '../../stack/tools';
import { campaignWarcFiles, CDXJ_FILE, indexCovers, listWarcFiles, withIndexLock, writeCampaignCdxj, writeCdxj, type CdxjResult } from '../../storage/cdxj';
import { StorageError } from '../../storage/storage-error';
import { pagesFromIndex, pageTexts, writeWacz } from '../../storage/wacz';
import { UsageError } from '../usage-error';
import { addS3Options, checkS3Flags, isLocationUrl, publishCdxj, withBucketOutput, writeOutputFile, type S3Flags } from '../bucket-output';
import { candidateOutputDirs, loadCampaignIndex } from './report';
import { CAMPAIGN_ID_PATTERN } from '../../config/campaign';

// `crawler cdxj`, `crawler export --wacz` and `crawler replay`: the replay
// index, the portable package and a replay server of a campaign, from its
// output folder alone (offline, like `report`): the WARC files the
// campaign's workers wrote, and its index. With `--out s3://bucket/prefix`
// the same code runs on a view of the bucket in this machine's cache
// (../bucket-output.ts): the campaign's WARCs are brought down, and a replay
// index written is published back (`sealed/<id>/index.cdxj`).

function isDir(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The output folder among the candidates that holds WARC files of this campaign, and those files. */
export async function findCampaignWarcs(campaignId: string, out: string | undefined): Promise<{ dir: string; files: string[] }> {
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
export async function freshCdxj(dir: string, campaignId: string, files: string[]): Promise<{ file: string; written: CdxjResult | null }> {
  const cdxj = path.join(dir, CDXJ_FILE);
  const mtime = (f: string) => fs.statSync(f).mtimeMs;
  if (!fs.existsSync(cdxj) || files.some((f) => mtime(f) > mtime(cdxj)) || !(await indexCovers(cdxj, files))) {
    return { file: cdxj, written: await writeCampaignCdxj(dir, campaignId) };
  }
  return { file: cdxj, written: null };
}

/** The campaign's WARC files in a view of a bucket, or a usage error naming where they were looked for. */
export async function bucketWarcs(dir: string, location: string, campaignId: string): Promise<string[]> {
  const files = await campaignWarcFiles(dir, campaignId);
  if (!files.length) throw new UsageError(`no WARC files of campaign ${campaignId} in ${location}warc/`);
  return files;
}

interface ExportOptions {
  wacz: string;
  title?: string;
  allowMissingOriginals?: boolean;
}

/**
 * The WACZ of a campaign whose output folder is `dir` (a folder, or a view
 * of a bucket), written to `o.wacz` (a path, or s3://bucket/key). `where`
 * names the WARC folder in messages; `originalsFrom` lists the other WARC
 * files of the output, where a revisit's original may be.
 */
async function exportWacz(campaignId: string, dir: string, files: string[], o: ExportOptions & S3Flags, where: string, originalsFrom: () => Promise<string[]>): Promise<void> {
  const { entries } = await loadCampaignIndex(campaignId, [dir]);
  const listed = pagesFromIndex(entries);
  // Each page with its text where the crawl archived it (browser.text), read as its line is written.
  const texts = pageTexts(entries, files);
  // The seeds' pages in pages.jsonl, the rest in extraPages.jsonl, as Browsertrix lists them.
  const pages = listed.filter((p) => p.seed);
  const extraPages = listed.filter((p) => !p.seed);
  // The first page fetched at depth 0 is a seed: the page a reader opens first.
  const seed = pages[0];
  const { file, result: res } = await writeOutputFile(o.wacz, o, (target) =>
    writeWacz(target, {
      warcFiles: files,
      pages,
      extraPages,
      textOf: (p) => texts.textOf(p),
      title: o.title ?? campaignId,
      mainPageUrl: seed?.url,
      // A revisit record's original is looked for in the rest of the output (listed
      // then, so files a running campaign opened since count too); elsewhere, it
      // cannot be found, and a package that will not replay is refused.
      originalsFrom,
      allowMissingOriginals: o.allowMissingOriginals ?? false,
    }).catch((err: unknown) => {
      if (err instanceof StorageError && err.code === 'MISSING_ORIGINALS') {
        throw new StorageError('MISSING_ORIGINALS', null, `${err.message}; they are in no WARC file of ${where} (--allow-missing-originals writes the package anyway)`);
      }
      throw err;
    }),
  );
  if (res.addedWarcFiles.length) {
    const names = res.addedWarcFiles.map((f) => path.basename(f));
    process.stderr.write(`packed ${names.length} more WARC file${names.length === 1 ? '' : 's'} holding originals of revisit records: ${names.join(', ')}\n`);
  }
  if (texts.unread) process.stderr.write(`warning: the text of ${texts.unread} pages could not be read from ${where}: listed without it\n`);
  if (res.missingOriginals)
    process.stderr.write(`warning: ${res.missingOriginals} revisit records refer to captures in no WARC file of ${where}: those URLs will not replay from the package\n`);
  process.stderr.write(`${res.warcFiles} WARC files, ${res.cdxjLines} CDXJ lines, ${res.pages} pages, ${res.bytes} bytes\n`);
  process.stdout.write(`${file}\n`);
}

/** Serves the campaign in pywb from `cdxj` over the WARC folder `warcDir`, until pywb exits (Ctrl-C). Its config goes to `<dir>/pywb`. */
async function servePywb(campaignId: string, dir: string, cdxj: string, warcDir: string, port: number, bind: string): Promise<void> {
  const tools = await findOrInstallPyReplayTools((m) => process.stderr.write(`${m}\n`));
  // pywb reads config.yaml from its working folder: one collection, named after the campaign,
  // indexed by our CDXJ over the WARC folder as it is (nothing copied).
  const coll = campaignId.replace(/[^A-Za-z0-9_-]/g, '-');
  const root = path.join(dir, 'pywb');
  fs.mkdirSync(root, { recursive: true });
  const quote = (p: string) => JSON.stringify(p);
  fs.writeFileSync(
    path.join(root, 'config.yaml'),
    `# written by crawler replay\ncollections:\n  ${coll}:\n    index_paths: ${quote(cdxj)}\n    archive_paths: ${quote(`${warcDir}/`)}\n`,
  );
  const wayback = spawn(path.join(tools.bin, 'wayback'), ['-p', String(port), '-b', bind], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  const stop = () => wayback.kill('SIGTERM');
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const host = bind.includes(':') ? `[${bind}]` : bind;
  process.stdout.write(`http://${host}:${port}/${coll}/\n`);
  process.stderr.write(`replaying ${campaignId} with pywb: open http://${host}:${port}/${coll}/<archived URL> (Ctrl-C stops)\n`);
  // Returns only once pywb is gone, so stopping this command never leaves a server behind.
  const code = await new Promise<number>((resolve) => wayback.once('exit', (c, sig) => resolve(c ?? (sig ? 0 : 1))));
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
  if (code !== 0) throw Object.assign(new Error(`pywb exited with code ${code}`), { exitCode: 1 });
}

export function registerArchiveCommands(program: Command): void {
  const cdxj = program
    .command('cdxj <campaign-or-folder>')
    .description('index WARC files into a sorted CDXJ file for replay (pywb, wayback tools): a campaign, or every WARC of a folder')
    .option('--out <dir>', "the campaign's output folder, as given to crawl, or s3://bucket/prefix (default crawl-output/<campaign>)")
    .option('-o, --output <file>', `where to write the index (default <output folder>/${CDXJ_FILE}; for a folder, <folder>/${CDXJ_FILE}; in a bucket, sealed/<id>/${CDXJ_FILE})`);
  addS3Options(cdxj).action(async (target: string, o: { out?: string; output?: string } & S3Flags) => {
    checkS3Flags(o, o.out);
    if (o.out !== undefined && isLocationUrl(o.out)) {
      if (!CAMPAIGN_ID_PATTERN.test(target)) throw new UsageError(`${JSON.stringify(target)} is no campaign ID (${CAMPAIGN_ID_PATTERN.source}): --out s3://… indexes one campaign`);
      if (o.output !== undefined && isLocationUrl(o.output)) throw new UsageError('-o takes a local file; without it the index is published in the bucket');
      await withBucketOutput(o.out, o, { warcs: { campaignId: target } }, async (view) => {
        await bucketWarcs(view.dir, view.location, target);
        // The view holds no index.cdxj: the index is the campaign's own lines, whether published or written to -o.
        const res = await writeCampaignCdxj(view.dir, target, o.output === undefined ? undefined : path.resolve(o.output));
        const file = o.output === undefined ? await publishCdxj(view, target, res, 'crawler cdxj') : res.file;
        process.stderr.write(`${res.lines} CDXJ lines from ${res.warcFiles} WARC files\n`);
        process.stdout.write(`${file}\n`);
      });
      return;
    }
    if (isLocationUrl(target)) throw new UsageError(`to index a campaign in a bucket, name the campaign and the bucket: cdxj <campaign> --out ${target}`);
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

  const exporter = program
    .command('export <campaign>')
    .description("package a campaign's WARCs, CDXJ index and page list as a WACZ file")
    .requiredOption('--wacz <file>', 'the WACZ file to write, or s3://bucket/path/file.wacz')
    .option('--out <dir>', "the campaign's output folder, as given to crawl, or s3://bucket/prefix (default crawl-output/<campaign>)")
    .option('--title <text>', 'title recorded in the package (default the campaign ID)')
    .option('--allow-missing-originals', 'write the package even when revisit records refer to captures in no WARC file of the folder (those URLs will not replay)');
  addS3Options(exporter).action(async (campaignId: string, o: ExportOptions & { out?: string } & S3Flags) => {
    if (!CAMPAIGN_ID_PATTERN.test(campaignId)) throw new UsageError(`campaign ID must match ${CAMPAIGN_ID_PATTERN.source}, got ${JSON.stringify(campaignId)}`);
    if (!o.wacz.endsWith('.wacz')) throw new UsageError(`--wacz must name a .wacz file, got ${JSON.stringify(o.wacz)}`);
    checkS3Flags(o, o.out, o.wacz);
    if (o.out !== undefined && isLocationUrl(o.out)) {
      // The campaign's WARCs and its newest seal (the pages come from the sealed index); the rest of the
      // location's WARCs only if a revisit's original is in none of the campaign's.
      await withBucketOutput(o.out, o, { warcs: { campaignId }, sealed: { campaignId } }, async (view) => {
        const files = await bucketWarcs(view.dir, view.location, campaignId);
        await exportWacz(campaignId, view.dir, files, o, `${view.location}warc/`, () => view.addWarcs());
      });
      return;
    }
    const { dir, files } = await findCampaignWarcs(campaignId, o.out);
    const warcDir = path.join(dir, 'warc');
    await exportWacz(campaignId, dir, files, o, warcDir, () => listWarcFiles(warcDir));
  });

  const replay = program
    .command('replay <campaign>')
    .description('replay a campaign in pywb (installed on first use): browse the archived pages on a local port')
    .option('--out <dir>', "the campaign's output folder, as given to crawl, or s3://bucket/prefix (default crawl-output/<campaign>)")
    .option('--port <n>', 'port to serve on', '8090')
    .option('--bind <addr>', 'address to listen on', '127.0.0.1');
  addS3Options(replay).action(async (campaignId: string, o: { out?: string; port: string; bind: string } & S3Flags) => {
    if (!CAMPAIGN_ID_PATTERN.test(campaignId)) throw new UsageError(`campaign ID must match ${CAMPAIGN_ID_PATTERN.source}, got ${JSON.stringify(campaignId)}`);
    const port = Number(o.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError(`--port must be a port number, got ${JSON.stringify(o.port)}`);
    checkS3Flags(o, o.out);
    if (o.out !== undefined && isLocationUrl(o.out)) {
      // pywb reads the view while it serves: the view (and its links to the cache) lasts until pywb exits.
      await withBucketOutput(o.out, o, { warcs: { campaignId }, cdxjOf: campaignId }, async (view) => {
        const files = await bucketWarcs(view.dir, view.location, campaignId);
        const cdxj = await freshCdxj(view.dir, campaignId, files);
        if (cdxj.written) {
          const url = await publishCdxj(view, campaignId, cdxj.written, 'crawler replay');
          process.stderr.write(`indexed ${cdxj.written.warcFiles} WARC files: ${cdxj.written.lines} CDXJ lines in ${url}\n`);
        }
        await servePywb(campaignId, view.dir, cdxj.file, path.dirname(files[0]!), port, o.bind);
      });
      return;
    }
    const { dir, files } = await findCampaignWarcs(campaignId, o.out);
    const cdxj = await freshCdxj(dir, campaignId, files);
    if (cdxj.written) process.stderr.write(`indexed ${cdxj.written.warcFiles} WARC files: ${cdxj.written.lines - cdxj.written.keptLines} CDXJ lines in ${cdxj.file}\n`);
    await servePywb(campaignId, dir, cdxj.file, path.dirname(files[0]!), port, o.bind);
  });
}
