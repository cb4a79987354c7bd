// Steering a running campaign: rate, budgets, more seeds (pause/resume of
// one host live beside the campaign-wide ones in campaign-control.ts), and
// the list of campaigns. Every change is a validated Temporal update: the
// campaign answers, and a rejected value changes nothing (exit 2).
import type { Command } from 'commander';
import {
  parseLimitArg,
  parseNumberArg,
  parseRenderArg,
  validateAddSeeds,
  validateSetBudgets,
  validateSetConcurrency,
  validateSetPoliteness,
  validateSetRender,
  type AddSeedsResult,
  type SetBudgetsRequest,
  type SetRenderRequest,
} from '../../config/steering';
import { readSeedBatches, readSeedBatchesFromStream, SeedSourceError, type SeedBatch } from '../../seeds/seed-source';
import { CrawlPages, CrawlState, queryLiteral } from '../../temporal/search-attributes';
import { CAMPAIGN_WORKFLOW } from '../../temporal/workflow-types';
import { addSeedsUpdate, campaignStatusQuery, setBudgetsUpdate, setConcurrencyUpdate, setPolitenessUpdate, setRenderUpdate } from '../../../workflows/messages';
import { UsageError } from '../usage-error';
import { checkLocally, connectCli, sendUpdate, steerCampaign, withCampaign } from './campaign-control';

const limitText = (v: number | null) => (v === null ? 'unlimited' : String(v));

export interface CampaignListRow {
  campaignId: string;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, TERMINATED… */
  status: string;
  /** The campaign's own state (CrawlState): running, completed, budget-exhausted, cancelled. */
  state: string | null;
  startedAt: string;
  closedAt: string | null;
  pages: number | null;
  paused?: boolean;
}

/** How long `list` waits for a running campaign to answer its status query. */
const QUERY_DEADLINE_MS = 5_000;

async function listCampaigns(all: boolean): Promise<CampaignListRow[]> {
  const client = await connectCli();
  try {
    const query = `WorkflowType = ${queryLiteral(CAMPAIGN_WORKFLOW)}${all ? '' : " AND ExecutionStatus = 'Running'"}`;
    const rows: CampaignListRow[] = [];
    for await (const wf of client.workflow.list({ query })) {
      // A campaign that continued as new is listed once, by its latest run.
      if (wf.status.name === 'CONTINUED_AS_NEW') continue;
      rows.push({
        campaignId: wf.workflowId,
        status: wf.status.name,
        state: wf.typedSearchAttributes.get(CrawlState) ?? null,
        startedAt: wf.startTime.toISOString(),
        closedAt: wf.closeTime?.toISOString() ?? null,
        pages: wf.typedSearchAttributes.get(CrawlPages) ?? null,
      });
    }
    // Running campaigns know their numbers best: ask them, bounded, since a
    // campaign without workers never answers. The bound is a gRPC deadline on
    // the call itself, not a race against a timer: an abandoned call stays in
    // flight after the connection below is closed, and when the server finally
    // answers it with a retryable status the SDK's retry timer dials the closed
    // channel and dies with an uncaught "Channel has been shut down". A call
    // past its deadline ends with DEADLINE_EXCEEDED, which is never retried, so
    // once every query here has settled nothing is left to fire.
    await Promise.all(
      rows
        .filter((r) => r.status === 'RUNNING')
        .map(async (r) => {
          const s = await client.withDeadline(Date.now() + QUERY_DEADLINE_MS, () => client.workflow.getHandle(r.campaignId).query(campaignStatusQuery)).catch(() => null);
          if (!s) return;
          r.pages = s.totals.fetched;
          r.state = s.status;
          r.startedAt = s.startedAt;
          r.paused = s.paused;
        }),
    );
    return rows.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  } finally {
    await client.connection.close();
  }
}

export function formatCampaignList(rows: CampaignListRow[]): string {
  if (rows.length === 0) return 'no campaigns';
  return [
    ['CAMPAIGN', 'STATUS', 'STATE', 'STARTED', 'PAGES'].join('\t'),
    ...rows.map((r) => [r.campaignId, r.status.toLowerCase(), `${r.state ?? '-'}${r.paused ? ' (paused)' : ''}`, r.startedAt, r.pages ?? '-'].join('\t')),
  ].join('\n');
}

/**
 * Seeds per addSeeds update when they come from a list: each update and its
 * answer land in the campaign's history, so many small ones beat one at the
 * MAX_ADD_SEEDS limit.
 */
export const ADD_SEEDS_PER_UPDATE = 1000;

/**
 * The seeds of `add-seeds`, one update's worth at a time: the URLs given as
 * arguments, then those of `--file` (a path, an http(s) URL, or `-` for
 * `stdin`), read as a stream.
 */
export async function* addSeedsBatches(urls: string[], file: string | undefined, stdin: NodeJS.ReadableStream & { isTTY?: boolean }): AsyncGenerator<string[]> {
  for (let i = 0; i < urls.length; i += ADD_SEEDS_PER_UPDATE) yield urls.slice(i, i + ADD_SEEDS_PER_UPDATE);
  if (file === undefined) return;
  if (file === '-' && stdin.isTTY) throw new UsageError('--file -: standard input is a terminal; pipe the list in (… < seeds.txt)');
  const opts = { batchSize: ADD_SEEDS_PER_UPDATE };
  const batches: AsyncIterable<SeedBatch> = file === '-' ? readSeedBatchesFromStream('standard input', stdin as AsyncIterable<Buffer>, opts) : readSeedBatches(file, opts);
  for await (const b of batches) if (b.seeds.length > 0) yield b.seeds;
}

/**
 * set-concurrency's request from its flags as typed: `none` is null, unlimited.
 * The flags stay strings for commander (a parser's null would come back as '');
 * the campaign's validator judges what this makes of them.
 */
export function concurrencyRequest(opts: { maxHosts: string }): { maxActiveHosts: number | null } {
  return { maxActiveHosts: parseLimitArg(opts.maxHosts) as number | null };
}

/** set-budget's request from its flags as typed: only the budgets given, `none` as null. */
export function budgetsRequest(opts: { maxPages?: string; maxDepth?: string }): SetBudgetsRequest {
  const req: SetBudgetsRequest = {};
  if (opts.maxPages !== undefined) req.maxPages = parseLimitArg(opts.maxPages) as number | null;
  if (opts.maxDepth !== undefined) req.maxDepth = parseLimitArg(opts.maxDepth) as number | null;
  return req;
}

/** Rejections printed by name before "… and N more". */
const REJECTED_SHOWN = 20;

export function registerSteerCommands(program: Command): void {
  program
    .command('set-rate <campaign>')
    .description('change the minimum delay between two requests to a host, campaign-wide or for one host (robots.txt Crawl-delay still wins when larger)')
    .requiredOption('--delay-ms <n>', 'milliseconds, 0–3600000')
    .option('--host <host>', 'only this host (host[:port], as `crawler status` lists them)')
    .action(async (campaignId: string, opts: { delayMs: string; host?: string }) => {
      const req = { minDelayMs: parseNumberArg(opts.delayMs) as number, ...(opts.host === undefined ? {} : { host: opts.host }) };
      checkLocally(() => validateSetPoliteness(req));
      const r = await steerCampaign(campaignId, setPolitenessUpdate, req);
      process.stdout.write(`${campaignId}: minimum delay ${r.minDelayMs} ms ${r.host ? `for ${r.host}` : 'campaign-wide'}, from each domain's next pause\n`);
    });

  program
    .command('set-render <campaign>')
    .description(
      "render one host's pages in Chromium (browser), only where rendering finds more (auto), or not at all (off), whatever the campaign's render setting; from the host's next session",
    )
    .requiredOption('--host <host>', 'the host (host[:port], as `crawler status` lists them)')
    .requiredOption('--mode <mode>', 'off, browser, auto, or "campaign" for the campaign\'s own setting again')
    .action(async (campaignId: string, opts: { host: string; mode: string }) => {
      const req = { host: opts.host, render: parseRenderArg(opts.mode) as SetRenderRequest['render'] };
      checkLocally(() => validateSetRender(req));
      const r = await steerCampaign(campaignId, setRenderUpdate, req);
      process.stdout.write(`${campaignId}: ${r.host} ${r.render === null ? "renders as the campaign's render setting says" : `render ${r.render}`}, from its next session\n`);
    });

  program
    .command('set-concurrency <campaign>')
    .description('change how many hosts the campaign crawls at once (each host is always one request at a time); crawling hosts are not stopped')
    .requiredOption('--max-hosts <n|none>', 'most hosts crawled at once, or "none" for unlimited')
    .action(async (campaignId: string, opts: { maxHosts: string }) => {
      const req = concurrencyRequest(opts);
      checkLocally(() => validateSetConcurrency(req));
      const r = await steerCampaign(campaignId, setConcurrencyUpdate, req);
      process.stdout.write(`${campaignId}: at most ${limitText(r.maxActiveHosts)} host(s) crawled at once\n`);
    });

  program
    .command('set-budget <campaign>')
    .description('change a running campaign\'s page or depth budget (a number, or "none" for unlimited)')
    .option('--max-pages <n|none>', 'pages fetched across the campaign')
    .option('--max-depth <n|none>', 'link hops from a seed')
    .action(async (campaignId: string, opts: { maxPages?: string; maxDepth?: string }) => {
      const req = budgetsRequest(opts);
      checkLocally(() => validateSetBudgets(req));
      const r = await steerCampaign(campaignId, setBudgetsUpdate, req);
      process.stdout.write(`${campaignId}: maxPages ${limitText(r.budgets.maxPages)}, maxDepth ${limitText(r.budgets.maxDepth)} (settings version ${r.configVersion})\n`);
    });

  program
    .command('add-seeds <campaign> [url...]')
    .description('add seed URLs to a running campaign (each must be within its scope); a long list with --file')
    .option(
      '--file <file|url|->',
      `read seeds from a list: one URL per line, # comments, gzip accepted; - reads standard input. Sent ${ADD_SEEDS_PER_UPDATE} per update; for a list of millions, start the campaign with crawl --seeds-file instead`,
    )
    .option('--json', 'print the answer as JSON')
    .action(async (campaignId: string, urls: string[], opts: { json?: boolean; file?: string }) => {
      if (urls.length === 0 && opts.file === undefined) throw new UsageError('give seed URLs, or a list of them with --file FILE|URL|-');
      // Whole lists only for --json: a list of millions need not sit in memory to be counted.
      const r: AddSeedsResult = { accepted: [], rejected: [] };
      let accepted = 0;
      let rejected = 0;
      let sent = 0;
      await withCampaign(campaignId, async (h) => {
        try {
          for await (const seeds of addSeedsBatches(urls, opts.file, process.stdin)) {
            checkLocally(() => validateAddSeeds({ seeds }));
            const part = await sendUpdate(h, campaignId, addSeedsUpdate, { seeds });
            sent += seeds.length;
            accepted += part.accepted.length;
            rejected += part.rejected.length;
            if (opts.json) r.accepted.push(...part.accepted);
            r.rejected.push(...(opts.json ? part.rejected : part.rejected.slice(0, Math.max(0, REJECTED_SHOWN - r.rejected.length))));
          }
        } catch (err) {
          if (!(err instanceof SeedSourceError)) throw err;
          // Seeds already sent stay added; sending them again is harmless (the campaign reports them as already seen).
          throw new UsageError(`--file ${opts.file}: ${err.message} [${err.code}]${sent ? `; the first ${sent} seed(s) were sent before that` : ''}`);
        }
      });
      if (opts.json) process.stdout.write(`${JSON.stringify(r)}\n`);
      else {
        const lines = [`${campaignId}: ${accepted} seed(s) accepted, ${rejected} rejected`];
        for (const x of r.rejected) lines.push(`  rejected ${x.seed}: ${x.reason}`);
        if (rejected > r.rejected.length) lines.push(`  … and ${rejected - r.rejected.length} more rejected (--json lists them all)`);
        process.stdout.write(`${lines.join('\n')}\n`);
      }
      // Nothing usable: say so in the exit code too.
      if (accepted === 0) process.exitCode = 2;
    });

  program
    .command('list')
    .description('list campaigns (running ones unless --all) with status, start time and pages')
    .option('--all', 'closed campaigns too')
    .option('--json', 'print the list as JSON')
    .action(async (opts: { all?: boolean; json?: boolean }) => {
      const rows = await listCampaigns(opts.all ?? false);
      process.stdout.write(opts.json ? `${JSON.stringify(rows)}\n` : `${formatCampaignList(rows)}\n`);
    });
}
