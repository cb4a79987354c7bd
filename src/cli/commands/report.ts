import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { forEachIndexEntry, type IndexEntry } from '../../storage/index-writer';
import { buildReportData } from '../../report/report-data';
import { newestQaReport } from '../../qa/qa-report';
import { sealedPaths } from '../../storage/seal';
import { renderReportHtml } from '../../report/html-report';
import { CAMPAIGN_ID_PATTERN } from '../../config/campaign';
import { REPORTS_AREA } from '../../storage/mirror-layout';
import { UsageError } from '../usage-error';
import { addS3Options, checkS3Flags, isLocationUrl, withBucketOutput, writeOutputFile, type S3Flags } from '../bucket-output';

// The output folder of a campaign is recorded only in its workflow input
// (and its final result), which needs a running Temporal to read. The report
// works offline instead: it looks where `crawl` puts it by default
// (crawl-output/<campaign>), or in --out, the same folder given to crawl.
// An output in a bucket (--out s3://bucket/prefix) is read through this
// machine's cache of it (../bucket-output.ts), and the report published
// there (reports/<id>/<campaign>.report.html) unless --file says where. Its
// QA section is the newest `crawler qa` pass: from the folder's qa/, or the
// reports a pass on the bucket published (reports/<id>/<campaign>.qa-<time>.json).

interface ReportOptions {
  out?: string;
  file?: string;
}

/** Folders that may hold the campaign's index, most likely first. */
export function candidateOutputDirs(campaignId: string, out: string | undefined, cwd = process.cwd()): string[] {
  if (out !== undefined) return [path.resolve(cwd, out)];
  // crawl-output itself is the default of a campaign started without the CLI.
  return [path.resolve(cwd, 'crawl-output', campaignId), path.resolve(cwd, 'crawl-output')];
}

/**
 * The entries of `campaignId` in the index files of `dir`, read one line at a
 * time so that neither a file's text nor other campaigns' entries are held;
 * the IDs of other campaigns met go to `others`.
 */
async function campaignEntries(dir: string, campaignId: string, accept?: (fileName: string) => boolean, others?: Set<string>): Promise<IndexEntry[]> {
  const entries: IndexEntry[] = [];
  await forEachIndexEntry(
    dir,
    (e) => {
      if (e.campaignId === campaignId) entries.push(e);
      else others?.add(String(e.campaignId));
    },
    accept,
  );
  return entries;
}

/**
 * The entries of one campaign: its sealed index (<dir>/sealed, one line per
 * URL) when it was sealed, else the raw files in <dir>/index (or <dir> when
 * it is the index folder itself), which may hold a URL twice.
 */
export async function loadCampaignIndex(campaignId: string, dirs: string[]): Promise<{ dir: string; entries: IndexEntry[]; sealed?: boolean }> {
  const others = new Set<string>();
  for (const dir of dirs) {
    const sealed = sealedPaths(dir, campaignId).index;
    if (
      await fsp.stat(sealed).then(
        () => true,
        () => false,
      )
    ) {
      return { dir: sealed, entries: await campaignEntries(path.dirname(sealed), campaignId, (f) => f === path.basename(sealed)), sealed: true };
    }
  }
  for (const dir of dirs) {
    for (const indexDir of [path.join(dir, 'index'), dir]) {
      // One folder can be shared by several campaigns' workers.
      const entries = await campaignEntries(indexDir, campaignId, undefined, others);
      if (entries.length) return { dir: indexDir, entries };
    }
  }
  const found = others.size ? `; found entries of ${[...others].slice(0, 5).join(', ')}${others.size > 5 ? ', …' : ''}` : '';
  throw new UsageError(`no index entries for campaign ${campaignId} in ${dirs.join(' or ')}${found} (give its output folder with --out)`);
}

/**
 * Writes the report of `campaignId` from the output folders `dirs` (the
 * first holding its index) to `file` (a path or s3://bucket/key), or to
 * `defaultFile(outputDir)`; returns where it went.
 */
async function writeReport(
  campaignId: string,
  dirs: string[],
  file: string | undefined,
  o: S3Flags,
  defaultFile: (outputDir: string) => string,
  shown: (dir: string) => string = (dir) => dir,
  shownFile: (file: string) => string = (file) => file,
): Promise<string> {
  const { dir, entries, sealed } = await loadCampaignIndex(campaignId, dirs);
  // A revisit campaign's change rate needs every visit: the raw index has them, the sealed one a URL's last.
  const visits = sealed ? await campaignEntries(path.join(path.dirname(path.dirname(dir)), 'index'), campaignId) : entries;
  const outputDir = sealed ? path.dirname(path.dirname(dir)) : path.basename(dir) === 'index' ? path.dirname(dir) : dir;
  // The newest `crawler qa` pass of the campaign, written into the output folder's qa/ (a bucket's: brought into the view's).
  const newest = await newestQaReport(outputDir, campaignId);
  const qa = newest && { ...newest, file: shownFile(newest.file) };
  const data = buildReportData(entries, { campaignId, generatedAt: new Date().toISOString(), visits, qa });
  const written = await writeOutputFile(file ?? defaultFile(outputDir), o, async (target) => {
    await fsp.mkdir(path.dirname(target), { recursive: true });
    await fsp.writeFile(target, renderReportHtml(data), 'utf8');
  });
  const s = data.summary;
  process.stderr.write(
    `report of ${campaignId}: ${s.entries} entries from ${shown(dir)} (fetched ${s.fetched}, failed ${s.failed}, skipped ${s.skipped}, embeds ${s.embeds}, hosts ${s.hosts}${s.rendered ? `, rendered ${s.rendered} of ${s.htmlPages} HTML pages` : ''}${data.qa ? `, QA score ${data.qa.score?.toFixed(3) ?? '-'} from ${data.qa.file}` : ''})\n`,
  );
  return written.file;
}

export function registerReportCommand(program: Command): void {
  const cmd = program
    .command('report <campaign>')
    .description('write a self-contained HTML report of a campaign from its index')
    .option('--out <dir>', "the campaign's output folder, as given to crawl, or s3://bucket/prefix (default crawl-output/<campaign>)")
    .option(
      '--file <path>',
      'where to write the report, a path or s3://bucket/path/file.html (default <output folder>/report.html; in a bucket, reports/<id>/<campaign>.report.html)',
    );
  addS3Options(cmd).action(async (campaignId: string, o: ReportOptions & S3Flags) => {
    // Also keeps the default path inside crawl-output.
    if (!CAMPAIGN_ID_PATTERN.test(campaignId)) throw new UsageError(`campaign ID must match ${CAMPAIGN_ID_PATTERN.source}, got ${JSON.stringify(campaignId)}`);
    checkS3Flags(o, o.out, o.file);
    if (o.out !== undefined && isLocationUrl(o.out)) {
      // The raw index, the campaign's newest seal and its newest QA reports (published under reports/): what a folder's report reads.
      await withBucketOutput(o.out, o, { sealed: { campaignId }, qaOf: campaignId }, async (view) => {
        let published: string | null = null;
        // Messages name the bucket, not the view (gone once the command ends).
        const shown = (dir: string) => (path.basename(path.dirname(dir)) === 'sealed' ? `the newest seal in ${view.location}sealed/` : `${view.location}index/`);
        const shownFile = (f: string) => view.urlOf(f) ?? f;
        const file = await writeReport(campaignId, [view.dir], o.file, o, (outputDir) => path.join(outputDir, 'report.html'), shown, shownFile);
        // No --file: the report is published beside the output, as a folder's goes into it.
        if (o.file === undefined) published = (await view.publish(REPORTS_AREA, [{ name: `${campaignId}.report.html`, file }])).urlOf(`${campaignId}.report.html`);
        process.stdout.write(`${published ?? file}\n`);
      });
      return;
    }
    const file = await writeReport(campaignId, candidateOutputDirs(campaignId, o.out), o.file, o, (outputDir) => path.join(outputDir, 'report.html'));
    process.stdout.write(`${file}\n`);
  });
}
