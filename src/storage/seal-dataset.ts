// The sealed dataset: a handler's items reduced to the attempts whose
// commit counted, the same ones the sealed index keeps (src/storage/seal.ts).
// Each raw item line carries its attempt's id, like the raw index line of
// that attempt, so an attempt a dead worker left behind (its items written,
// its commit lost to a retry) is dropped: every page's items appear once.
// Streams line by line: a dataset can be larger than memory; only the set
// of committed attempt ids (one short string per URL) is held.
import { randomBytes } from 'node:crypto';
import { createReadStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { sealedPaths } from './seal';
import { writeFully } from './files';
import { StorageError } from './storage-error';

export interface SealedDataset {
  name: string;
  file: string;
  items: number;
  /** Item lines of attempts that did not count (and unreadable ones: a killed writer's last line). */
  dropped: number;
}

/** Where the sealed copy of dataset `name` goes. */
export function sealedDatasetPath(outputDir: string, campaignId: string, name: string): string {
  return path.join(sealedPaths(outputDir, campaignId).dir, `${campaignId}.dataset-${name}.jsonl`);
}

async function* jsonLines(file: string): AsyncGenerator<Record<string, unknown> | null> {
  const rl = readline.createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  for await (const line of rl) {
    if (line.trim() === '') continue;
    try {
      yield JSON.parse(line) as Record<string, unknown>;
    } catch {
      yield null;
    }
  }
}

/**
 * Seals every dataset of a campaign whose index has just been sealed. Each
 * is replaced atomically (written beside, then renamed), so sealing again
 * gives the same files.
 */
export async function sealCampaignDatasets(outputDir: string, campaignId: string): Promise<SealedDataset[]> {
  const root = path.join(path.resolve(outputDir), 'datasets');
  let names: string[];
  try {
    names = (await fsp.readdir(root, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new StorageError('READ_FAILED', root, 'cannot list the datasets', { cause: err });
  }
  if (names.length === 0) return [];
  const committed = new Set<string>();
  for await (const line of jsonLines(sealedPaths(outputDir, campaignId).index)) {
    if (line && typeof line.attemptId === 'string') committed.add(line.attemptId);
  }
  const out: SealedDataset[] = [];
  for (const name of names.sort()) {
    const dir = path.join(root, name);
    const files = (await fsp.readdir(dir)).filter((n) => n.endsWith('.jsonl')).sort();
    const target = sealedDatasetPath(outputDir, campaignId, name);
    // Unique: a retried seal may still be writing the previous attempt's file.
    const tmp = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const fh = await fsp.open(tmp, 'w');
    let items = 0;
    let dropped = 0;
    try {
      for (const f of files) {
        let batch = '';
        for await (const line of jsonLines(path.join(dir, f))) {
          if (!line || typeof line.attemptId !== 'string' || !committed.has(line.attemptId)) {
            dropped++;
            continue;
          }
          batch += `${JSON.stringify(line)}\n`;
          items++;
          if (batch.length > 1 << 20) {
            await writeFully(fh, Buffer.from(batch, 'utf8'), null);
            batch = '';
          }
        }
        if (batch) await writeFully(fh, Buffer.from(batch, 'utf8'), null);
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, target);
    out.push({ name, file: target, items, dropped });
  }
  return out;
}
