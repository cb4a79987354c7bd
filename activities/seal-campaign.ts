// Sealing a campaign's index with what Redis knows: which attempt's commit
// counted for each URL (src/storage/seal.ts does the files). Used by the
// campaign's summary at its end and by `crawler seal`. An output in a bucket
// is sealed the same way, on a local mirror of it (src/storage/output-mirror.ts):
// the raw index and dataset files (and the campaign's WARCs, for the replay
// index) are brought down, the folder seal runs on them, and its products
// are published under `sealed/<id>/` in the bucket (src/storage/mirror-layout.ts).
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { CampaignSettings } from '../src/config/campaign';
import { loadCampaignSettings } from '../src/redis/campaign-store';
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { Frontier } from '../src/redis/frontier';
import type { RedisLike } from '../src/redis/scripts';
import { sealCampaignIndex, sealedPaths, type SealOptions, type SealResult } from '../src/storage/seal';
import type { ObjectStore } from '../src/storage/object-store';
import { sealCampaignDatasets, type SealedDataset } from '../src/storage/seal-dataset';
import { CDXJ_FILE, writeCampaignCdxj, type CdxjResult } from '../src/storage/cdxj';
import { SEALED_AREA, sealManifestName } from '../src/storage/mirror-layout';
import { openObjectStore, parseOutputLocation, type S3Settings } from '../src/storage/output-location';
import { OutputMirror, withView, type MirrorView } from '../src/storage/output-mirror';
import { StorageError } from '../src/storage/storage-error';
import type { FlushOutcome } from '../src/redis/output-flush';
import { flushCampaignOutput } from './output-flush';

export interface SealCampaignOptions {
  /** The output folder as this process sees it, or `s3://bucket/prefix`; default the campaign's (`output.dir`). */
  outputDir?: string;
  /** The connection to an `s3://` output; default the campaign's `output.s3` (then the machine's AWS variables). */
  s3?: S3Settings | null;
  /**
   * Where an output in a bucket is mirrored (`<LOCAL_DIR>/cache`: the
   * worker and the CLI pass theirs in); needed only for such an output.
   */
  cacheRoot?: string;
  /** Recorded in the manifest (why it was sealed, the campaign's status). */
  info?: Record<string, unknown>;
  onProgress?: () => void;
  /**
   * An output in a bucket: publish the products under `sealed/` (default true). False: a check
   * only (the lost-page check, activities/requeue-lost.ts), whose index readers must not take for
   * the campaign's; `file` then names a local file that is gone once this returns.
   */
  publish?: boolean;
  /** Also index the WARC files for replay (default true; the summary leaves it to `crawler cdxj` for very large WARCs). */
  cdxj?: boolean;
  /**
   * How long to wait for another writer of the folder's index.cdxj (a
   * campaign sharing the folder); past it the seal goes on without the
   * replay index and says so in `cdxjSkipped`. Default: wait (up to 30 min), then fail.
   */
  cdxjLockWaitMs?: number;
}

/**
 * What a seal wrote: `file` and the datasets' and CDXJ's files are paths, or
 * the objects' URLs for an output in a bucket; then `flush` says whether every
 * worker spooling for the bucket had uploaded what it held.
 */
export type SealCampaignResult = SealResult & { datasets: SealedDataset[]; cdxj: CdxjResult | null; cdxjSkipped?: string; flush?: FlushOutcome };

/**
 * Writes the campaign's sealed index. The campaign's totals must be up to
 * date with the hosts' counters (summarizeCampaign reconciles them first):
 * they say how many URLs were committed, so a committed URL without its
 * line shows as `missing`.
 */
export async function sealCampaign(redis: RedisLike, campaignKey: string, opts: SealCampaignOptions = {}): Promise<SealCampaignResult> {
  const { settings } = await loadCampaignSettings(redis, campaignKey);
  const outputDir = opts.outputDir ?? settings.output.dir;
  const location = parseOutputLocation(outputDir);
  if (location.kind === 'folder') return sealFolder(redis, campaignKey, settings, outputDir, opts);
  if (!opts.cacheRoot) throw new StorageError('INVALID_INPUT', location.url, 'sealing an output in object storage needs the local cache folder it is read through');
  // The last files of the campaign may still sit in its workers' spools: each live one uploads what it holds first.
  const flush = (await flushCampaignOutput(redis, settings)) ?? undefined;
  const store = openObjectStore(location, opts.s3 ?? settings.output.s3);
  try {
    const mirror = new OutputMirror(store, { cacheRoot: opts.cacheRoot, onProgress: opts.onProgress });
    // The raw index and datasets always; the campaign's WARCs only for the replay index.
    const needs = { warcs: opts.cdxj === false ? ('none' as const) : { campaignId: settings.campaignId } };
    const sealOpts = flush ? { ...opts, info: { ...opts.info, flush } } : opts;
    const bucket = { recordThere: await warcRecordCheck(store), onSealed: (host: string, fps: string[]) => new Frontier(redis, campaignKey, host).sealed(fps) };
    const r = await withView(mirror, needs, async (view) => {
      const local = await sealFolder(redis, campaignKey, settings, view.dir, sealOpts, bucket);
      return opts.publish === false ? local : publishSeal(view, settings.campaignId, local);
    });
    return flush ? { ...r, flush } : r;
  } finally {
    store.destroy();
  }
}

/**
 * Whether a WARC record is in the bucket: its file uploaded (files are uploaded whole, once) and
 * long enough to hold it. One listing of `warc/` per seal, names and sizes only. A line in the
 * bucket whose record is not (the WARC file stayed in the spool of a worker whose disk was lost,
 * while its index file went up) is then sealed as missing, and its URL fetched again
 * (activities/requeue-lost.ts), instead of pointing at nothing.
 */
async function warcRecordCheck(store: ObjectStore): Promise<NonNullable<SealOptions['recordThere']>> {
  const sizes = new Map<string, number>();
  for await (const o of store.list('warc/')) sizes.set(o.key.slice(o.key.lastIndexOf('/') + 1), o.size);
  return (w) => w.offset + w.length <= (sizes.get(w.file) ?? -1);
}

async function sealFolder(
  redis: RedisLike,
  campaignKey: string,
  settings: CampaignSettings,
  outputDir: string,
  opts: SealCampaignOptions,
  bucket?: Pick<SealOptions, 'recordThere' | 'onSealed'>,
): Promise<SealCampaignResult> {
  const t = await new CampaignHosts(redis, campaignKey).totals();
  const index = await sealCampaignIndex({
    outputDir,
    campaignId: settings.campaignId,
    committed: (host, fps) => new Frontier(redis, campaignKey, host).committedAttempts(fps),
    // A revisit campaign counts every visit but seals a URL's last one: no expectation to check against.
    expectedLines: settings.revisit?.enabled ? null : t.fetched + t.failed + t.skipped,
    info: { campaignKey, ...opts.info },
    onProgress: opts.onProgress,
    ...bucket,
  });
  // A handler's items: those of the attempts the sealed index kept.
  const datasets = await sealCampaignDatasets(outputDir, settings.campaignId);
  // The replay index covers every response and revisit record in the WARC
  // files, not only the sealed lines' own: a revisit may refer to a copy
  // written by an attempt whose commit did not count.
  if (opts.cdxj === false) return { ...index, datasets, cdxj: null };
  try {
    return { ...index, datasets, cdxj: await writeCampaignCdxj(outputDir, settings.campaignId, undefined, { lockWaitMs: opts.cdxjLockWaitMs }) };
  } catch (err) {
    if (opts.cdxjLockWaitMs === undefined || !(err instanceof StorageError && err.code === 'LOCKED')) throw err;
    return { ...index, datasets, cdxj: null, cdxjSkipped: err.message };
  }
}

/**
 * The folder seal's products, uploaded as one publication: the sealed index,
 * the datasets and the replay index, then the manifest, which marks the seal
 * complete (readers pass over a publication without it). The manifest names
 * the index by its URL, not the view's path, which is gone once this returns.
 */
async function publishSeal(view: MirrorView, campaignId: string, r: SealCampaignResult): Promise<SealCampaignResult> {
  const target = view.newPublication(SEALED_AREA);
  const files = [{ name: path.basename(r.file), file: r.file }, ...r.datasets.map((d) => ({ name: path.basename(d.file), file: d.file }))];
  if (r.cdxj) files.push({ name: CDXJ_FILE, file: r.cdxj.file });
  const manifest = JSON.parse(await fsp.readFile(sealedPaths(view.dir, campaignId).manifest, 'utf8')) as Record<string, unknown>;
  const published = path.join(view.dir, `${sealManifestName(campaignId)}.published`);
  await fsp.writeFile(published, `${JSON.stringify({ ...manifest, file: target.urlOf(path.basename(r.file)) }, null, 2)}\n`);
  await view.upload(target, [...files, { name: sealManifestName(campaignId), file: published }]);
  // Older seals this one supersedes go (what a failure leaves, the next seal deletes).
  await view.prune(campaignId).catch(() => 0);
  return {
    ...r,
    file: target.urlOf(path.basename(r.file)),
    datasets: r.datasets.map((d) => ({ ...d, file: target.urlOf(path.basename(d.file)) })),
    cdxj: r.cdxj ? { ...r.cdxj, file: target.urlOf(CDXJ_FILE) } : null,
  };
}
