// What the campaign's summary reads of its output before and besides the
// seal, from a folder or from a bucket (through the local mirror,
// src/storage/output-mirror.ts): the sizes that decide whether the summary
// seals and indexes itself, and the raw index's tally after a Redis restart.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { CampaignSettings } from '../src/config/campaign';
import { campaignWarcFiles, CDXJ_FILE } from '../src/storage/cdxj';
import { tallyIndex, type IndexTally } from '../src/storage/index-tally';
import { openObjectStore, parseOutputLocation } from '../src/storage/output-location';
import { bucketOutputSizes, OutputMirror, withView } from '../src/storage/output-mirror';
import { StorageError } from '../src/storage/storage-error';

export interface OutputSizes {
  /** The raw index files' bytes (every campaign's, in a shared folder). */
  rawIndexBytes: number;
  /** The campaign's WARC files' bytes. */
  warcBytes: number;
  /** The folder's index.cdxj, whose other campaigns' lines a seal sorts in again (0 in a bucket: a seal there indexes its campaign alone). */
  keptCdxjBytes: number;
  /** Whether the output is in a bucket (its files are downloaded before they are read). */
  inBucket: boolean;
}

async function folderWarcBytes(outputDir: string, campaignId: string): Promise<number> {
  let total = 0;
  for (const f of await campaignWarcFiles(outputDir, campaignId).catch(() => [] as string[])) total += (await fsp.stat(f).catch(() => ({ size: 0 }))).size;
  return total;
}

async function folderRawIndexBytes(outputDir: string): Promise<number> {
  const dir = path.join(path.resolve(outputDir), 'index');
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  let total = 0;
  for (const n of names) if (n.endsWith('.jsonl')) total += (await fsp.stat(path.join(dir, n)).catch(() => ({ size: 0 }))).size;
  return total;
}

export async function outputSizes(settings: CampaignSettings): Promise<OutputSizes> {
  const location = parseOutputLocation(settings.output.dir);
  if (location.kind === 's3') {
    // From a listing: nothing is downloaded to be weighed.
    const store = openObjectStore(location, settings.output.s3);
    try {
      const s = await bucketOutputSizes(store, settings.campaignId);
      return { rawIndexBytes: s.rawIndexBytes, warcBytes: s.warcBytes, keptCdxjBytes: 0, inBucket: true };
    } finally {
      store.destroy();
    }
  }
  const dir = settings.output.dir;
  return {
    rawIndexBytes: await folderRawIndexBytes(dir),
    warcBytes: await folderWarcBytes(dir, settings.campaignId),
    keptCdxjBytes: (await fsp.stat(path.join(dir, CDXJ_FILE)).catch(() => ({ size: 0 }))).size,
    inBucket: false,
  };
}

/** The raw index's counts (src/storage/index-tally.ts), of the folder or of the bucket's raw index files brought down. */
export async function tallyOutputIndex(settings: CampaignSettings, cacheRoot: string | undefined, onProgress?: () => void): Promise<IndexTally> {
  const location = parseOutputLocation(settings.output.dir);
  if (location.kind === 'folder') return tallyIndex(path.join(path.resolve(settings.output.dir), 'index'));
  if (!cacheRoot) throw new StorageError('INVALID_INPUT', location.url, 'reading an output in object storage needs the local cache folder it is read through');
  const store = openObjectStore(location, settings.output.s3);
  try {
    return await withView(new OutputMirror(store, { cacheRoot, onProgress }), {}, (view) => tallyIndex(path.join(view.dir, 'index')));
  } finally {
    store.destroy();
  }
}
