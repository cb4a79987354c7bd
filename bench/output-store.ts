// Where a bench campaign writes its archive (`--out-store folder|s3`): a
// folder under .crawler/bench-output as always, or a bucket of a real
// S3-compatible server (SeaweedFS, src/stack/seaweedfs.ts) started for the
// run, so the bench shows what object storage costs (issue 39). Either way the
// figures that check the archive read the sealed index where the campaign
// published it: the folder, or the bucket.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import { startObjectStoreServer } from '../src/stack/seaweedfs';
import { LOCAL_DIR } from '../src/stack/paths';
import type { ObjectStore } from '../src/storage/object-store';
import { openObjectStore, parseOutputLocation, type S3Location } from '../src/storage/output-location';
import { publicationsOf, newestSeal, sealManifestName, splitObjectUrl } from '../src/storage/mirror-layout';
import { sealedPaths } from '../src/storage/seal';
import { CDXJ_FILE } from '../src/storage/cdxj';

export type OutStore = 'folder' | 's3';

export const BENCH_BUCKET = 'bench';

/** The object store of a bench run: where its campaigns' outputs go, and the environment its workers read the credentials from. */
export interface BenchOutput {
  kind: OutStore;
  /** The campaign's `output` settings. */
  outputOf(campaignId: string): { dir: string; s3?: { endpoint: string; pathStyle: true }; upload?: { maxFileAgeMs: number } };
  /** AWS_* variables (s3) and the workers' spool and cache folders: empty for a folder. */
  env: Record<string, string>;
  /** The campaign's output as a store to list and read (s3 only). */
  storeOf(campaignId: string): ObjectStore & { destroy(): void };
  /** The S3 server's process, for its CPU; null for a folder. */
  pid: number | null;
  stop(): Promise<void>;
}

/**
 * Opens the run's output: for s3, a SeaweedFS server with a fresh identity
 * and one bucket in `dataDir`. The credentials go to the workers through their
 * environment, as the AWS SDK reads them, and into this process's, which reads
 * the bucket back; never into a campaign's input or a figure.
 */
export async function openBenchOutput(kind: OutStore, dataDir: string, log: (m: string) => void, opts: { uploadAgeMs?: number } = {}): Promise<BenchOutput> {
  if (kind === 'folder') {
    return {
      kind,
      outputOf: (id) => ({ dir: path.join(LOCAL_DIR, 'bench-output', id) }),
      env: {},
      storeOf: () => {
        throw new Error('a folder output has no store');
      },
      pid: null,
      stop: async () => {},
    };
  }
  const accessKey = `AKBENCH${randomBytes(6).toString('hex').toUpperCase()}`;
  const secretKey = randomBytes(20).toString('base64url');
  const server = await startObjectStoreServer({ dataDir: path.join(dataDir, 'object-store'), accessKey, secretKey, buckets: [BENCH_BUCKET], log });
  const credentials = { AWS_ACCESS_KEY_ID: accessKey, AWS_SECRET_ACCESS_KEY: secretKey, AWS_REGION: 'us-east-1' };
  // This process lists and reads the bucket through the SDK's default chain, as the CLI would.
  Object.assign(process.env, credentials);
  const s3 = { endpoint: server.endpoint, pathStyle: true as const };
  return {
    kind,
    // --upload-age-ms: files finished (and uploaded) that often during the crawl, not only at its end's flush.
    outputOf: (id) => ({ dir: `s3://${BENCH_BUCKET}/${id}`, s3, ...(opts.uploadAgeMs !== undefined ? { upload: { maxFileAgeMs: opts.uploadAgeMs } } : {}) }),
    // Spool and cache in the run's data folder: removed with it, and no earlier run's files in them.
    env: { ...credentials, CRAWLER_SPOOL_DIR: path.join(dataDir, 'spool'), CRAWLER_CACHE_DIR: path.join(dataDir, 'cache') },
    storeOf: (id) => openObjectStore(parseOutputLocation(`s3://${BENCH_BUCKET}/${id}`) as S3Location, s3),
    pid: server.proc.pid,
    stop: () => server.stop(),
  };
}

/**
 * Watches the campaign's prefix of the bucket every `everyMs`, noting when
 * each object was first seen (epoch ms): when the workers' last raw file
 * (warc/, index/, datasets/) arrived, and when the seal's manifest, the last
 * object a seal publishes, did. A listing of a few dozen keys, four times a
 * second, beside thousands of pages.
 */
export function watchBucket(store: ObjectStore & { destroy(): void }, campaignId: string, everyMs = 250) {
  const firstSeen = new Map<string, number>();
  const isManifest = (key: string): boolean => key.startsWith('sealed/') && key.endsWith(`/${sealManifestName(campaignId)}`);
  const sealSeen = (): number | null => [...firstSeen].find(([k]) => isManifest(k))?.[1] ?? null;
  let busy = false;
  const timer = setInterval(() => {
    if (busy || sealSeen() !== null) return;
    busy = true;
    void (async () => {
      try {
        for await (const o of store.list('')) if (!firstSeen.has(o.key)) firstSeen.set(o.key, Date.now());
      } catch {
        // The next poll asks again.
      } finally {
        busy = false;
      }
    })();
  }, everyMs);
  return {
    /** When the seal and the workers' last upload were first seen; the campaign's result comes after its seal was published, so the next poll or two see it. */
    async seen(waitMs = 5_000): Promise<{ sealAt: number | null; lastUploadAt: number | null }> {
      for (const until = Date.now() + waitMs; sealSeen() === null && Date.now() < until;) await new Promise((r) => setTimeout(r, everyMs / 5));
      const uploads = [...firstSeen].filter(([k]) => !k.startsWith('sealed/')).map(([, t]) => t);
      return { sealAt: sealSeen(), lastUploadAt: uploads.length ? Math.max(...uploads) : null };
    },
    stop(): void {
      clearInterval(timer);
      store.destroy();
    },
  };
}

/** A folder seal's last file written (sealed index, datasets, manifest, replay index), epoch ms. */
export function folderSealedAt(dir: string, campaignId: string): number | null {
  const sealed = sealedPaths(dir, campaignId).dir;
  const files = [
    ...(fs.existsSync(sealed)
      ? fs
          .readdirSync(sealed)
          .filter((f) => f.startsWith(`${campaignId}.`))
          .map((f) => path.join(sealed, f))
      : []),
    path.join(dir, CDXJ_FILE),
  ].filter((f) => fs.existsSync(f));
  return files.length ? Math.max(...files.map((f) => fs.statSync(f).mtimeMs)) : null;
}

/** What the campaign's output holds, by area (warc, index, datasets, sealed): objects and bytes. */
export async function outputBytes(out: BenchOutput, campaignId: string): Promise<Record<string, { files: number; bytes: number }>> {
  const by: Record<string, { files: number; bytes: number }> = {};
  const add = (key: string, size: number) => {
    const area = key.split('/')[0];
    const a = (by[area] ??= { files: 0, bytes: 0 });
    a.files++;
    a.bytes += size;
  };
  if (out.kind === 's3') {
    const store = out.storeOf(campaignId);
    try {
      for await (const o of store.list('')) add(o.key, o.size);
    } finally {
      store.destroy();
    }
    return by;
  }
  const root = out.outputOf(campaignId).dir;
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) add(path.relative(root, p).split(path.sep).join('/'), fs.statSync(p).size);
    }
  };
  if (fs.existsSync(root)) walk(root);
  return by;
}

/** The sealed index the campaign reported: a file, or an object of the bucket (`s3://…`), read from where it is. */
export async function openSealedIndex(out: BenchOutput, campaignId: string, file: string | null): Promise<Readable | null> {
  if (!file) return null;
  if (!file.startsWith('s3://')) return fs.existsSync(file) ? fs.createReadStream(file) : null;
  const at = splitObjectUrl(file);
  const store = out.storeOf(campaignId);
  const prefix = `s3://${BENCH_BUCKET}/${campaignId}/`;
  if (!at || !file.startsWith(prefix)) throw new Error(`the sealed index ${file} is not under the campaign's output ${prefix}`);
  // The newest complete seal must be the one the campaign named.
  const seal = newestSeal(publicationsOf(await collect(store.list('sealed/'))), campaignId);
  if (!seal || !file.startsWith(`${prefix}sealed/${seal.id}/`)) throw new Error(`the sealed index ${file} is not the newest seal in the bucket`);
  const stream = await store.read(file.slice(prefix.length));
  stream.once('close', () => store.destroy());
  return stream;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** The sealed index's lines: how many, how many distinct URLs, and which expected pages it holds (with a 2xx status). */
export async function sealedIndexFigures(
  index: Readable | null,
  expected: Set<string> | null,
): Promise<{ lines: number; urls: number; expectedPagesStored: number | null } | null> {
  if (!index) return null;
  let lines = 0;
  const urls = new Set<string>();
  const stored = new Set<string>();
  for await (const line of readline.createInterface({ input: index, crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    lines++;
    const e = JSON.parse(line) as { url: string; status: number | null };
    urls.add(e.url);
    if (expected?.has(e.url) && e.status !== null && e.status >= 200 && e.status < 300) stored.add(e.url);
  }
  return { lines, urls: urls.size, expectedPagesStored: expected ? stored.size : null };
}
