// The store a campaign's spilled frontier segments go to (src/redis/frontier-spill.ts): its output,
// folder or bucket, shared by every worker like its WARCs. One handle per output per process: a
// worker's spool already holds one for an output in a bucket (reused, not a second S3 client), and
// anything else opened here is kept for the process's life (an output's handle is a few objects).
import path from 'node:path';
import type { CampaignSettings } from '../config/campaign';
import { CampaignConfigMissingError, loadCampaignSettings } from '../redis/campaign-store';
import { removeCampaignSegments, type SpillOptions } from '../redis/frontier-spill';
import type { RedisLike } from '../redis/scripts';
import { FolderObjectStore } from './folder-object-store';
import type { ObjectStore } from './object-store';
import { openObjectStore, parseOutputLocation, type S3Location } from './output-location';
import type { SpoolUploader } from './spool-uploader';

const opened = new Map<string, ObjectStore>();

/** The store behind a campaign's output: its folder as one, or its bucket (the spool's handle when it has one). */
export function outputStoreOf(output: Pick<CampaignSettings['output'], 'dir' | 's3'>, spool: SpoolUploader | null = null): ObjectStore {
  const location = parseOutputLocation(output.dir);
  if (location.kind === 's3') {
    const held = spool?.locate({ dir: output.dir, s3: output.s3 ?? null })?.store;
    if (held) return held;
  }
  const key = location.kind === 'folder' ? `folder\0${path.resolve(output.dir)}` : `s3\0${output.dir}\0${JSON.stringify(output.s3 ?? null)}`;
  let store = opened.get(key);
  if (!store) {
    store = location.kind === 'folder' ? new FolderObjectStore(path.resolve(output.dir)) : openObjectStore(location as S3Location, output.s3);
    opened.set(key, store);
  }
  return store;
}

/** A campaign's spill options: its frontier.spillAbove and its output's store. */
export function spillOptionsOf(settings: Pick<CampaignSettings, 'frontier' | 'output'>, spool: SpoolUploader | null = null, onError?: (err: unknown) => void): SpillOptions {
  return { above: settings.frontier.spillAbove, store: outputStoreOf(settings.output, spool), ...(onError ? { onError } : {}) };
}

/**
 * Removes the campaign's frontier segments (spilled tails, shared seed segments) from its output
 * store, as `crawler purge` does before it deletes the keys: how many went, or null when its
 * settings are gone from Redis (a purge run again after it deleted them) and the store is not known.
 */
export async function removeSegmentsOf(redis: RedisLike, campaignKey: string, spool: SpoolUploader | null = null): Promise<number | null> {
  let settings: CampaignSettings;
  try {
    ({ settings } = await loadCampaignSettings(redis, campaignKey));
  } catch (err) {
    if (err instanceof CampaignConfigMissingError) return null;
    throw err;
  }
  return removeCampaignSegments(outputStoreOf(settings.output, spool), campaignKey);
}
