import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { datasetCsv, isOutputDir, readDataset } from '../../storage/dataset-writer';
import { UsageError } from '../usage-error';
import { candidateOutputDirs } from './report';

interface DatasetOptions {
  csv?: boolean;
  file?: string;
}

/** A campaign ID (looked up where `crawl` puts it) or an output folder. */
async function outputDirOf(target: string): Promise<string> {
  if (await isOutputDir(path.resolve(target))) return path.resolve(target);
  if (/^[A-Za-z0-9._-]{1,80}$/.test(target)) {
    for (const dir of candidateOutputDirs(target, undefined)) if (await isOutputDir(dir)) return dir;
  }
  throw new UsageError(`no campaign output at ${JSON.stringify(target)} (give a campaign ID under crawl-output/, or the folder given to crawl --out)`);
}

export function registerDatasetCommand(program: Command): void {
  program
    .command('dataset <campaign-or-dir>')
    .description("a campaign's dataset (the items its handler returned), each page's items once: JSON lines, or CSV with --csv")
    .option('--csv', 'CSV: url, fetchedAt, warcFile, warcOffset, label, then the items’ fields')
    .option('--file <path>', 'write to this file instead of standard output')
    .action(async (target: string, o: DatasetOptions) => {
      const dir = await outputDirOf(target);
      const lines = await readDataset(dir);
      const text = o.csv ? datasetCsv(lines) : lines.map((l) => `${JSON.stringify(l)}\n`).join('');
      if (o.file) {
        await fsp.writeFile(path.resolve(o.file), text, 'utf8');
        process.stderr.write(`${lines.length} item(s) from ${dir} to ${path.resolve(o.file)}\n`);
      } else process.stdout.write(text);
    });
}
