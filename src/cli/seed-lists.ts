// Lists given to the CLI as files: --seeds-file (a path, an http(s) URL or
// `-` for standard input) and --resolve-file. Thousands of seeds or pins do
// not fit on a command line (see docs/operations.md, "Long seed lists"), and
// seeds do not belong in the workflow input either: the campaign gets the
// list's location and its workers read it in batches (src/seeds/seed-source.ts).
// Everything here runs before anything starts; a bad list is a UsageError (exit 2).
import path from 'node:path';
import { parseResolveEntry } from '../http/resolve-overrides';
import { readListEntries, readSeedBatch, readSeedBatches, saveSeedStream, SeedSourceError, parseSeedSource } from '../seeds/seed-source';
import { normalizeUrl } from '../url/normalize';
import { UsageError } from './usage-error';

/** Problems listed before "… and N more": enough to see the pattern, not a wall of text. */
const SHOWN = 5;

function usage(flag: string, source: string, err: unknown): never {
  if (err instanceof SeedSourceError) throw new UsageError(`${flag} ${source}: ${err.message} [${err.code}]`);
  throw err;
}

/** The HOST:PORT:ADDR entries of a --resolve-file, each checked; problems name their lines. */
export async function readResolveFile(file: string): Promise<string[]> {
  const entries: string[] = [];
  const problems: string[] = [];
  let bad = 0;
  try {
    for await (const { value, line } of readListEntries(file)) {
      try {
        parseResolveEntry(value);
        entries.push(value);
      } catch (err) {
        if (++bad <= SHOWN) problems.push(`--resolve-file ${file} line ${line}: ${(err as Error).message}`);
      }
    }
  } catch (err) {
    usage('--resolve-file', file, err);
  }
  if (bad > SHOWN) problems.push(`--resolve-file ${file}: … and ${bad - SHOWN} more bad lines`);
  if (problems.length) throw new UsageError(problems.join('\n'));
  return entries;
}

/**
 * Where the campaign will read --seeds-file from: a URL as given, a path
 * made absolute (workers do not share the CLI's working directory), and for
 * `-` the file standard input will be copied to, in the output folder.
 */
export function seedsFileLocation(arg: string, outDir: string, campaignId: string): { location: string; fromStdin: boolean } {
  if (arg === '-') return { location: path.join(outDir, `${stdinSeedsName(campaignId)}.txt`), fromStdin: true };
  let parsed;
  try {
    parsed = parseSeedSource(arg);
  } catch (err) {
    usage('--seeds-file', arg, err);
  }
  return { location: parsed.kind === 'url' ? arg : path.resolve(parsed.path), fromStdin: false };
}

const stdinSeedsName = (campaignId: string) => `seeds-${campaignId}`;

/**
 * Copies standard input into the output folder (workers cannot read the
 * CLI's stdin, and may run elsewhere; the output folder is shared by all of
 * them). Returns the copy's absolute path (`.txt.gz` for gzip).
 */
export async function copyStdinSeeds(stdin: NodeJS.ReadableStream & { isTTY?: boolean }, outDir: string, campaignId: string): Promise<string> {
  if (stdin.isTTY) throw new UsageError('--seeds-file -: standard input is a terminal; pipe the list in (… < seeds.txt, or zcat … |)');
  try {
    return (await saveSeedStream(stdin, outDir, stdinSeedsName(campaignId))).path;
  } catch (err) {
    throw new UsageError(`--seeds-file -: cannot copy standard input to ${outDir}: ${(err as Error).message}`);
  }
}

export interface SeedListCheck {
  /** Seeds seen (all of them, unless `complete` is false). */
  seeds: number;
  /** Seeds that are not usable URLs; the campaign skips them. */
  invalid: number;
  /** Whether the whole list was read (local files), or only its first batch (URLs). */
  complete: boolean;
}

/**
 * Reads a seed list before the campaign starts, so that a missing file, a
 * binary file or a dead URL ends the command with exit code 2 instead of
 * failing in a worker. A local file is read to the end (a stream: about two
 * seconds per million lines, URL checks included); a URL source only as
 * far as its first batch, rather than downloading it twice. Unusable URLs
 * are reported but not fatal: the campaign skips them like any rejected
 * seed. A list with no usable seed is an error unless `inlineSeeds` has some.
 */
export async function checkSeedList(location: string, inlineSeeds: number, warn: (m: string) => void, label = location): Promise<SeedListCheck> {
  const isUrl = parseSeedSource(location).kind === 'url';
  const examples: string[] = [];
  let seeds = 0;
  let invalid = 0;
  const check = (seed: string, line: number) => {
    try {
      normalizeUrl(seed);
    } catch (err) {
      if (++invalid <= SHOWN) examples.push(`line ${line} ${JSON.stringify(seed.length > 100 ? `${seed.slice(0, 100)}…` : seed)}: ${(err as Error).message}`);
    }
  };
  try {
    const batches = isUrl ? [await readSeedBatch(location, { batchSize: 10_000 })] : readSeedBatches(location, { batchSize: 10_000 });
    for await (const batch of batches) {
      seeds += batch.seeds.length;
      batch.seeds.forEach((s, i) => check(s, batch.lines[i]));
    }
  } catch (err) {
    usage('--seeds-file', label, err);
  }
  const complete = !isUrl;
  const list = `--seeds-file ${label}`;
  const detail = `${examples.join('; ')}${invalid > SHOWN ? `; … and ${invalid - SHOWN} more` : ''}`;
  if (seeds === invalid && inlineSeeds === 0) {
    throw new UsageError(
      seeds === 0
        ? `${list}: no seed URLs in it (one URL per line; blank lines and # comments are skipped)`
        : `${list}: no usable seed URL in ${complete ? 'it' : 'its first 10,000'}: ${detail}`,
    );
  }
  if (invalid > 0) warn(`${list}: ${invalid} of ${seeds} seeds${complete ? '' : ' in its first batch'} are not usable URLs and will be skipped: ${detail}`);
  return { seeds, invalid, complete };
}
