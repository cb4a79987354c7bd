import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import { CAMPAIGN_ID_PATTERN } from '../../config/campaign';
import { qaFileName, QA_DIR, worstPages, type QaReport } from '../../qa/qa-report';
import { runQa, type QaCandidate, type QaOptions } from '../../qa/run-qa';
import { findOrInstallChromium } from '../../stack/chromium';
import { freePort } from '../../stack/ports';
import type { CrawlCaptures } from '../../qa/crawl-captures';
import type { PywbSource } from '../../qa/pywb-server';
import { renderTag } from '../../storage/seal';
import { qaReportName, REPORTS_AREA } from '../../storage/mirror-layout';
import { findOrInstallPyReplayTools, type PyReplayTools } from '../../stack/tools';
import { normalizeUrl } from '../../url/normalize';
import { UsageError } from '../usage-error';
import { addS3Options, checkS3Flags, isLocationUrl, publishCdxj, withBucketOutput, writeOutputFile, type S3Flags } from '../bucket-output';
import { bucketWarcs, findCampaignWarcs, freshCdxj } from './archive';
import { loadCampaignIndex } from './report';

// `crawler qa`: replays a campaign's rendered pages (and a sample of its
// plain HTTP pages) from its own archive through pywb in Chromium, and
// compares each with the crawl (src/qa/). Reads the output folder as it is
// now, like `replay`: the campaign's WARCs and a replay index brought up to
// date with them, so a running campaign is checked on what it has written so
// far. Or a WACZ, which pywb takes in itself. The JSON report goes to
// <output>/qa/qa-<time>.json, where `crawler report` finds the newest (in a
// bucket: reports/<id>/<campaign>.qa-<time>.json, where its report finds it).

interface QaFlags extends S3Flags {
  out?: string;
  wacz?: string;
  file?: string;
  sampleHttp: string;
  concurrency: string;
  pageTimeout: string;
  worst: string;
}

const run = promisify(execFile);

function whole(name: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return n;
}

/** A campaign's pages from its index: those rendered, and its stored plain HTML pages; each URL once. */
async function campaignPages(campaignId: string, dir: string): Promise<QaCandidate[]> {
  const { entries } = await loadCampaignIndex(campaignId, [dir]);
  const pages = new Map<string, QaCandidate>();
  for (const e of entries) {
    const tag = renderTag(e);
    if (tag === '' || !e.warc || typeof e.status !== 'number' || e.status < 200 || e.status >= 300) continue;
    // The raw index may hold a URL twice (a page retried): rendered once is rendered.
    const kind = tag === '-' ? 'http' : 'rendered';
    if (pages.get(e.url)?.kind !== 'rendered') pages.set(e.url, { url: e.url, kind });
  }
  return [...pages.values()];
}

/** A WACZ's pages (pages.jsonl, extraPages.jsonl): rendered when the crawl kept a screenshot (full page or view) or text of it. */
async function waczPages(wacz: string, captures: CrawlCaptures, tools: PyReplayTools): Promise<QaCandidate[]> {
  // Node has no ZIP reader of its own; the replay tools' Python has one.
  const py = String.raw`
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for name in ('pages/pages.jsonl', 'pages/extraPages.jsonl'):
    if name in z.namelist():
        sys.stdout.write(z.read(name).decode('utf-8') + '\n')
`;
  const { stdout } = await run(tools.python, ['-c', py, wacz], { maxBuffer: 256 * 1024 * 1024 });
  const has = (m: Map<string, unknown>, url: string) => m.has(url) || m.has(keyOf(url));
  const pages = new Map<string, QaCandidate>();
  for (const line of stdout.split('\n')) {
    if (!line.trim()) continue;
    let url: unknown;
    try {
      url = (JSON.parse(line) as { url?: unknown }).url;
    } catch {
      continue;
    }
    // The header line ({"format": …}) has no url.
    if (typeof url !== 'string' || !/^https?:/i.test(url)) continue;
    pages.set(url, { url, kind: has(captures.screenshots, url) || has(captures.views, url) || has(captures.texts, url) ? 'rendered' : 'http' });
  }
  return [...pages.values()];
}

function keyOf(url: string): string {
  try {
    return normalizeUrl(url);
  } catch {
    return url;
  }
}

/** What the operator reads: the campaign's score, what was measured, the worst pages and the URLs missing most. */
function printSummary(report: QaReport, worst: number): void {
  const lines: string[] = [];
  const measured = (k: 'screenshot' | 'text') => report.pages.filter((p) => p[k] !== null).length;
  lines.push(
    report.score === null
      ? `qa: no page to replay in ${report.source}`
      : `qa score ${report.score.toFixed(3)} over ${report.pages.length} pages (screenshots compared on ${measured('screenshot')}, text on ${measured('text')}; ${report.missing.length} URLs missing from the archive)`,
  );
  for (const p of worstPages(report, worst)) {
    const fig = (v: number | null) => (v === null ? '-' : v.toFixed(3));
    lines.push(
      `  ${p.score.toFixed(3)}  ${p.url}  screenshot ${fig(p.screenshot)} text ${fig(p.text)} resources ${fig(p.resources)}${p.error ? `  ${p.error}` : ''}${p.missing.length ? `  missing: ${p.missing.map((m) => m.url).join(' ')}` : ''}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function writeQaReport(report: QaReport, target: string, o: S3Flags): Promise<string> {
  const { file } = await writeOutputFile(target, o, async (f) => {
    await fsp.mkdir(path.dirname(f), { recursive: true });
    await fsp.writeFile(f, `${JSON.stringify(report, null, 2)}\n`, 'utf8');
  });
  return file;
}

export function registerQaCommand(program: Command): void {
  const cmd = program
    .command('qa [campaign]')
    .description("replay a campaign's rendered pages (and a sample of plain HTTP pages) from its archive in pywb and Chromium, and compare each with the crawl")
    .option('--out <dir>', "the campaign's output folder, as given to crawl, or s3://bucket/prefix (default crawl-output/<campaign>)")
    .option('--wacz <file>', 'check a WACZ file instead of an output folder (its pages.jsonl lists the pages)')
    .option('--file <path>', 'where to write the JSON report, a path or s3://bucket/path/file.json (default <output folder>/qa/qa-<time>.json; with --wacz, beside it)')
    .option('--sample-http <n>', 'also replay this many plain HTTP (not rendered) HTML pages, spread over them', '0')
    .option('--concurrency <n>', 'pages replayed at once', '2')
    .option('--page-timeout <ms>', 'time one page may take to replay, screenshot and text included', '30000')
    .option('--worst <n>', 'how many of the lowest-scoring pages to print', '10');
  addS3Options(cmd).action(async (campaignId: string | undefined, o: QaFlags) => {
    const settings = {
      sampleHttp: whole('--sample-http', o.sampleHttp, 0, 1_000_000),
      concurrency: whole('--concurrency', o.concurrency, 1, 16),
      pageTimeoutMs: whole('--page-timeout', o.pageTimeout, 1_000, 600_000),
    };
    const worst = whole('--worst', o.worst, 0, 10_000);
    const log = (m: string) => process.stderr.write(`${m}\n`);
    checkS3Flags(o, o.out, o.file);
    const started = new Date();
    // What the pass runs on, found (or installed) once the arguments are known to be good.
    const find = async (): Promise<Pick<QaOptions, 'tools' | 'chromium' | 'port'>> => ({
      tools: await findOrInstallPyReplayTools(log),
      chromium: await findOrInstallChromium({ log }),
      port: await freePort(),
    });

    if (o.wacz !== undefined) {
      if (o.out !== undefined) throw new UsageError('--wacz and --out name two archives: give one');
      if (isLocationUrl(o.wacz)) throw new UsageError('--wacz takes a local file');
      const wacz = path.resolve(o.wacz);
      await fsp.access(wacz).catch(() => {
        throw new UsageError(`no WACZ file at ${wacz}`);
      });
      const found = await find();
      const pywbRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'crawler-qa-'));
      try {
        const report = await runQa({
          campaignId: campaignId ?? null,
          source: wacz,
          pywb: { wacz },
          pywbRoot,
          pages: (captures) => waczPages(wacz, captures, found.tools),
          ...settings,
          ...found,
          log,
        });
        const file = await writeQaReport(report, o.file ?? path.join(path.dirname(wacz), QA_DIR, qaFileName(started)), o);
        printSummary(report, worst);
        process.stdout.write(`${file}\n`);
      } finally {
        await fsp.rm(pywbRoot, { recursive: true, force: true });
      }
      return;
    }

    if (campaignId === undefined) throw new UsageError('name the campaign to check, or give --wacz FILE');
    if (!CAMPAIGN_ID_PATTERN.test(campaignId)) throw new UsageError(`campaign ID must match ${CAMPAIGN_ID_PATTERN.source}, got ${JSON.stringify(campaignId)}`);
    const check = async (dir: string, files: string[], cdxj: string, source: string) => {
      const found = await find();
      const pywbRoot = path.join(dir, QA_DIR, `pywb-${process.pid}`);
      try {
        return await runQa({
          campaignId,
          source,
          pywb: { cdxj, warcDir: path.dirname(files[0]!) } satisfies PywbSource,
          pywbRoot,
          warcFiles: files,
          pages: () => campaignPages(campaignId, dir),
          ...settings,
          ...found,
          log,
        });
      } finally {
        await fsp.rm(pywbRoot, { recursive: true, force: true });
      }
    };

    if (o.out !== undefined && isLocationUrl(o.out)) {
      await withBucketOutput(o.out, o, { warcs: { campaignId }, sealed: { campaignId }, cdxjOf: campaignId }, async (view) => {
        const files = await bucketWarcs(view.dir, view.location, campaignId);
        const cdxj = await freshCdxj(view.dir, campaignId, files);
        if (cdxj.written) await publishCdxj(view, campaignId, cdxj.written, 'crawler qa');
        const report = await check(view.dir, files, cdxj.file, view.location);
        let file: string;
        if (o.file !== undefined) file = await writeQaReport(report, o.file, o);
        else {
          // Published beside the campaign's HTML report, as the folder's goes into its qa/ folder.
          const name = qaReportName(campaignId, qaFileName(started));
          const local = await writeQaReport(report, path.join(view.dir, QA_DIR, name), o);
          file = (await view.publish(REPORTS_AREA, [{ name, file: local }])).urlOf(name);
        }
        printSummary(report, worst);
        process.stdout.write(`${file}\n`);
      });
      return;
    }

    const { dir, files } = await findCampaignWarcs(campaignId, o.out);
    // The replay index as `crawler cdxj` writes it, brought up to date with what the campaign has written so far.
    const cdxj = await freshCdxj(dir, campaignId, files);
    if (cdxj.written) log(`indexed ${cdxj.written.warcFiles} WARC files: ${cdxj.written.lines - cdxj.written.keptLines} CDXJ lines in ${cdxj.file}`);
    const report = await check(dir, files, cdxj.file, dir);
    const file = await writeQaReport(report, o.file ?? path.join(dir, QA_DIR, qaFileName(started)), o);
    printSummary(report, worst);
    process.stdout.write(`${file}\n`);
  });
}
