// `crawler robots check`: evaluate URLs against a local robots.txt file, the
// same way the crawler's workers do, so operators can debug a site's rules.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseRobotsTxt } from './robots-txt';
import { CrawlerError } from '../errors';

/** Exit code for an unreadable --file; commander usage errors also map to 2 in main. */
export const EXIT_UNREADABLE_FILE = 2;

/** Raised when the robots.txt file given to the command cannot be read. */
export class RobotsFileError extends CrawlerError<'UNREADABLE_FILE'> {
  readonly exitCode = EXIT_UNREADABLE_FILE;
  readonly path: string;
  constructor(path: string, options?: { cause?: unknown }) {
    const reason = (options?.cause as { message?: string } | undefined)?.message ?? 'unknown error';
    super('UNREADABLE_FILE', `cannot read robots.txt file ${path}: ${reason}`, options);
    this.name = 'RobotsFileError';
    this.path = path;
  }
}

export interface RobotsCheckOptions {
  /** Also print the applicable Crawl-delay (seconds) or `none`, after the URL lines. */
  crawlDelay?: boolean;
}

/** The command's output lines, without I/O: `<url>\tallowed|disallowed`, then the delay if asked. */
export function robotsCheckLines(body: string | Uint8Array, agent: string, urls: readonly string[], opts: RobotsCheckOptions = {}): string[] {
  const rules = parseRobotsTxt(body).rulesFor(agent);
  const lines = urls.map((url) => `${url}\t${rules.isAllowed(url) ? 'allowed' : 'disallowed'}`);
  if (opts.crawlDelay) lines.push(rules.crawlDelaySec === undefined ? 'none' : String(rules.crawlDelaySec));
  return lines;
}

interface CheckCliOptions {
  file: string;
  agent: string;
  crawlDelay?: boolean;
}

/** Adds `robots check` to the given program (or parent command). */
export function registerRobotsCommand(parent: Command): Command {
  const robots = parent.command('robots').description('Inspect robots.txt rules (RFC 9309)');
  robots
    .command('check')
    .description('Print whether each URL is allowed for an agent by a local robots.txt file')
    .requiredOption('--file <path>', 'robots.txt file to evaluate')
    .requiredOption('--agent <name>', "crawler user-agent or product token, e.g. 'DurableCrawler/0.1'")
    .option('--crawl-delay', 'also print the applicable Crawl-delay in seconds, or none')
    .argument('[urls...]', 'URLs or paths to check')
    .action((urls: string[], options: CheckCliOptions) => {
      let body: Uint8Array;
      try {
        body = readFileSync(options.file);
      } catch (err: unknown) {
        // main.ts prints the message to stderr and exits with exitCode (2).
        throw new RobotsFileError(options.file, { cause: err });
      }
      const lines = robotsCheckLines(body, options.agent, urls, { crawlDelay: options.crawlDelay === true });
      if (lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`);
    });
  return robots;
}
