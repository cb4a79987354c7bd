// The commands that read a campaign's output (`seal`, `cdxj`, `export`,
// `report`, `dataset`, `replay`) take `--out s3://bucket/prefix` as well as a
// folder: this is what they share for it. The connection flags; a view of the
// bucket in this machine's cache (src/storage/output-mirror.ts) for the
// folder code to run on; and output files (a WACZ, a report, a dataset) that
// may themselves be `s3://bucket/key`. Credentials are the AWS SDK's, found
// on this machine; nothing here prints or stores them.
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { outputCacheRoot } from '../stack/paths';
import type { CdxjResult } from '../storage/cdxj';
import { CDXJ_NAME, cdxjManifestName, SEALED_AREA, splitObjectUrl } from '../storage/mirror-layout';
import { openObjectStore, parseOutputLocation, type S3Settings } from '../storage/output-location';
import { isLocationUrl, s3EndpointProblem, s3RegionProblem, type S3Location } from '../storage/output-location-rules';
import { OutputMirror, withView, type MirrorView, type ViewNeeds } from '../storage/output-mirror';
import type { S3ObjectStore } from '../storage/s3-object-store';
import { StorageError } from '../storage/storage-error';
import { UsageError } from './usage-error';

export { isLocationUrl };

export interface S3Flags {
  s3Endpoint?: string;
  s3Region?: string;
  s3PathStyle?: boolean;
}

/** The connection flags of a command that reads (or writes) `s3://…`, as `crawl` has them for its workers. */
export function addS3Options(cmd: Command): Command {
  return cmd
    .option(
      '--s3-endpoint <url>',
      "the S3-compatible endpoint of an s3:// location, e.g. http://127.0.0.1:8333 (default: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, else AWS S3); credentials are the AWS SDK's on this machine (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE…)",
    )
    .option('--s3-region <region>', "the bucket's region (default: AWS_REGION, else us-east-1 with an endpoint)")
    .option('--s3-path-style', 'address the bucket as <endpoint>/<bucket> rather than <bucket>.<endpoint host>, as most self-hosted stores need');
}

/** The flags as connection settings, checked as the campaign schema checks `output.s3`; null when none was given. */
export function s3SettingsOf(o: S3Flags): S3Settings | null {
  if (o.s3Endpoint === undefined && o.s3Region === undefined && !o.s3PathStyle) return null;
  const endpointProblem = o.s3Endpoint === undefined ? null : s3EndpointProblem(o.s3Endpoint);
  if (endpointProblem) throw new UsageError(`--s3-endpoint ${endpointProblem}`);
  const regionProblem = o.s3Region === undefined ? null : s3RegionProblem(o.s3Region);
  if (regionProblem) throw new UsageError(`--s3-region ${regionProblem}`);
  return { endpoint: o.s3Endpoint ?? null, region: o.s3Region ?? null, pathStyle: o.s3PathStyle ?? false };
}

/** Refuses connection flags when no location of the command is in a bucket (as `crawl` does): they would be silently unused. */
export function checkS3Flags(o: S3Flags, ...locations: (string | undefined)[]): void {
  if (s3SettingsOf(o) !== null && !locations.some((l) => l !== undefined && isLocationUrl(l))) {
    throw new UsageError('--s3-endpoint, --s3-region and --s3-path-style are for a location in a bucket (s3://bucket/prefix)');
  }
}

/** The store of an `s3://` location, or a usage error saying what is wrong with it. */
function storeAt(url: string, o: S3Flags): S3ObjectStore {
  let location;
  try {
    location = parseOutputLocation(url);
  } catch (err) {
    if (err instanceof StorageError && err.code === 'INVALID_INPUT') throw new UsageError(err.message);
    throw err;
  }
  if (location.kind !== 's3') throw new UsageError(`${JSON.stringify(url)} is no s3://bucket/prefix location`);
  return openObjectStore(location as S3Location, s3SettingsOf(o));
}

/**
 * Runs `fn` on a view of the output at `out` (s3://bucket/prefix) in this
 * machine's cache: a folder laid out as an output folder, with the raw
 * index and dataset files and what `needs` asks for. Removed afterwards.
 */
export async function withBucketOutput<T>(out: string, o: S3Flags, needs: ViewNeeds, fn: (view: MirrorView) => Promise<T>): Promise<T> {
  const store = storeAt(out, o);
  try {
    return await withView(new OutputMirror(store, { cacheRoot: outputCacheRoot() }), needs, async (view) => {
      try {
        return await fn(view);
      } catch (err) {
        // The folder code names the folder it looked in: the view, gone once this returns. The operator gave the bucket.
        if (err instanceof UsageError && err.message.includes(view.dir)) throw new UsageError(err.message.split(view.dir).join(store.location.replace(/\/$/, '')), err.code);
        throw err;
      }
    });
  } finally {
    store.destroy();
  }
}

/**
 * Publishes a replay index the folder code wrote into a view (`crawler
 * cdxj`, or `replay` indexing again): `sealed/<id>/index.cdxj`, then its
 * manifest `<campaign>.cdxj.json`, which says whose it is and marks it
 * complete. Returns the index's URL.
 */
export async function publishCdxj(view: MirrorView, campaignId: string, res: CdxjResult, by: string): Promise<string> {
  const target = view.newPublication(SEALED_AREA);
  const manifest = path.join(view.dir, `${cdxjManifestName(campaignId)}.published`);
  const body = { campaignId, file: target.urlOf(CDXJ_NAME), lines: res.lines, warcFiles: res.warcFiles, writtenAt: new Date().toISOString(), by };
  await fsp.writeFile(manifest, `${JSON.stringify(body, null, 2)}\n`);
  await view.upload(target, [
    { name: CDXJ_NAME, file: res.file },
    { name: cdxjManifestName(campaignId), file: manifest },
  ]);
  // Older replay indexes this one supersedes go (what a failure leaves, the next publication deletes).
  await view.prune(campaignId).catch(() => 0);
  return target.urlOf(CDXJ_NAME);
}

/**
 * Writes a command's output file: a local path (made absolute) as the
 * command always has, or `s3://bucket/key`: written into a scratch folder of
 * the cache, then uploaded. An object already under the key is refused
 * before anything is written: a store keeps the first object under a key,
 * and takes another of the same size for it, so nothing would say that the
 * new file was not stored. Returns the file's path or URL, and what `write`
 * returned.
 */
export async function writeOutputFile<T>(target: string, o: S3Flags, write: (file: string) => Promise<T>): Promise<{ file: string; result: T }> {
  if (!isLocationUrl(target)) {
    const file = path.resolve(target);
    return { file, result: await write(file) };
  }
  const split = splitObjectUrl(target);
  if (!split) throw new UsageError(`${JSON.stringify(target)} names no object: s3://bucket/path/file`);
  const store = storeAt(split.location, o);
  const scratch = path.join(outputCacheRoot(), 'uploads', `${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    if ((await store.size(split.key)) !== null) throw new UsageError(`${store.location}${split.key} already exists: objects are never replaced; choose another name`);
    await fsp.mkdir(scratch, { recursive: true });
    const file = path.join(scratch, split.key);
    const result = await write(file);
    await store.putFile(split.key, file);
    return { file: `${store.location}${split.key}`, result };
  } finally {
    await fsp.rm(scratch, { recursive: true, force: true }).catch(() => undefined);
    store.destroy();
  }
}
