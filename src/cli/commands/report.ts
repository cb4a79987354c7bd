import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { forEachIndexEntry, type IndexEntry } from '../../storage/index-writer';
import { buildReportData } from '../../report/report-data';
import { sealedPaths } from '../../storage/seal';
import { renderReportHtml } from '../../report/html-report';
import { CAMPAIGN_ID_PATTERN } from '../../config/campaign';
import { UsageError } from '../usage-error';

// The output folder of a campaign is recorded only in its workflow input
// (and its final result), which needs a running Temporal to read. The report
// works offline instead: it looks where `crawl` puts it by default
// (crawl-output/<campaign>), or in --out, the same folder given to crawl.

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

export function registerReportCommand(program: Command): void {
  program
    .command('report <campaign>')
    .description('write a self-contained HTML report of a campaign from its index')
    .option('--out <dir>', "the campaign's output folder, as given to crawl (default crawl-output/<campaign>)")
    .option('--file <path>', 'where to write the report (default <output folder>/report.html)')
    .action(async (campaignId: string, o: ReportOptions) => {
      // Also keeps the default path inside crawl-output.
      if (!CAMPAIGN_ID_PATTERN.test(campaignId)) throw new UsageError(`campaign ID must match ${CAMPAIGN_ID_PATTERN.source}, got ${JSON.stringify(campaignId)}`);
      const dirs = candidateOutputDirs(campaignId, o.out);
      const { dir, entries, sealed } = await loadCampaignIndex(campaignId, dirs);
      // A revisit campaign's change rate needs every visit: the raw index has them, the sealed one a URL's last.
      const visits = sealed ? await campaignEntries(path.join(path.dirname(path.dirname(dir)), 'index'), campaignId) : entries;
      const data = buildReportData(entries, { campaignId, generatedAt: new Date().toISOString(), visits });
      const outputDir = sealed ? path.dirname(path.dirname(dir)) : path.basename(dir) === 'index' ? path.dirname(dir) : dir;
      const file = path.resolve(o.file ?? path.join(outputDir, 'report.html'));
      await fsp.mkdir(path.dirname(file), { recursive: true });
      await fsp.writeFile(file, renderReportHtml(data), 'utf8');
      const s = data.summary;
      process.stderr.write(
        `report of ${campaignId}: ${s.entries} entries from ${dir} (fetched ${s.fetched}, failed ${s.failed}, skipped ${s.skipped}, embeds ${s.embeds}, hosts ${s.hosts}${s.rendered ? `, rendered ${s.rendered} of ${s.htmlPages} HTML pages` : ''})\n`,
      );
      process.stdout.write(`${file}\n`);
    });
}
