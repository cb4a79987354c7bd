// Reading a campaign's output in a bucket with the code that reads an output
// folder: the objects a command needs are brought down into a local cache
// (one folder per location, `<LOCAL_DIR>/cache/<name>`, passed in by the
// caller), a private folder laid out as an output folder is made of them
// (a "view"), the folder code runs on it unchanged, and what it produced is
// published back to the bucket under keys of its own (./mirror-layout.ts).
//
// The cache keeps every object it downloaded under its key
// (`objects/warc/…`, `objects/index/…`, `objects/sealed/<id>/…`); objects are
// written once in the bucket and never change, so one already here with the
// listed size is that object, and only the others are downloaded (to a
// temporary name, renamed once whole and of the listed size). A view links
// (hard links: no copy, and a file its command replaces is replaced in the
// view alone) the objects into `views/<pid>-<random>@<host>/`: each command
// sees the objects as listed when it started and writes its products where no
// other command writes, so two commands on one machine (a campaign's seal on
// a worker, an operator's `crawler report`) never see each other's work half
// done. A view is removed when its command ends; a dead process's views are
// removed by the next view made on its machine. The whole cache may be
// deleted at any time but while a command runs: it is downloaded again.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ownsWarc } from './cdxj';
import {
  cacheFolderName,
  CDXJ_NAME,
  mirroredKey,
  newestCdxj,
  newestSeal,
  objectsToFetch,
  publicationId,
  publicationsOf,
  qaReportsOf,
  REPORTS_AREA,
  stalePublications,
  SEALED_AREA,
  sealedCampaigns,
  sealedFolderFiles,
  type Publication,
} from './mirror-layout';
import { processExists } from './files';
import type { ObjectStore, StoredObject } from './object-store';
import { StorageError } from './storage-error';

/** Downloads at once: enough to hide a round trip per object, few enough for a shared machine and store. */
const DEFAULT_PARALLEL = 4;

export interface MirrorOptions {
  /** The root of every location's cache (`<LOCAL_DIR>/cache`, or CRAWLER_CACHE_DIR). */
  cacheRoot: string;
  /** Called after each object downloaded or uploaded (an activity's heartbeat). */
  onProgress?: () => void;
  /** Downloads at once (default 4). */
  parallel?: number;
}

/** What a command reads besides the raw index and dataset files, which every view holds. */
export interface ViewNeeds {
  /** WARC files: none (default), those of one campaign, or every one of the location. */
  warcs?: 'none' | 'all' | { campaignId: string };
  /** Sealed products placed in the view's `sealed/` as a folder seal leaves them: the newest seal of one campaign, or of every campaign sealed there. */
  sealed?: 'none' | 'all' | { campaignId: string };
  /** The campaign whose newest replay index goes to `<view>/index.cdxj`. */
  cdxjOf?: string;
  /** The campaign whose newest `crawler qa` reports (published under reports/) go to `<view>/qa/`, named as a folder's pass names them. */
  qaOf?: string;
}

/** QA reports a view brings down: the newest, and the ones before it in case it cannot be read (a folder's reader then takes the one before). */
export const QA_REPORTS_FETCHED = 3;

/** The cache folder of a location (what `crawler` prints and the docs name). */
export function cacheDirOf(cacheRoot: string, location: string): string {
  return path.join(path.resolve(cacheRoot), cacheFolderName(location, createHash('sha256').update(location).digest('hex')));
}

async function localSize(file: string): Promise<number | null> {
  try {
    return (await fsp.stat(file)).size;
  } catch {
    return null;
  }
}

/** A hard link, or a copy where the file system has none: the view's file either way, the source unchanged. */
async function linkOrCopy(from: string, to: string): Promise<void> {
  await fsp.mkdir(path.dirname(to), { recursive: true });
  await fsp.rm(to, { force: true });
  try {
    await fsp.link(from, to);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
    await fsp.copyFile(from, to);
  }
}

export class OutputMirror {
  /** `<cacheRoot>/<location's name>`. */
  readonly dir: string;
  private readonly onProgress: () => void;
  private readonly parallel: number;

  constructor(
    readonly store: ObjectStore,
    opts: MirrorOptions,
  ) {
    this.dir = cacheDirOf(opts.cacheRoot, store.location);
    this.onProgress = opts.onProgress ?? (() => undefined);
    this.parallel = Math.max(1, opts.parallel ?? DEFAULT_PARALLEL);
  }

  /** Where the cache keeps an object. */
  objectPath(key: string): string {
    return path.join(this.dir, 'objects', ...key.split('/'));
  }

  /** The objects under `prefix` the mirror knows how to place (./mirror-layout.ts: anything else is left in the bucket). */
  async list(prefix: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    for await (const o of this.store.list(prefix)) if (mirroredKey(o.key)) out.push(o);
    return out;
  }

  /** Downloads the objects the cache lacks (or holds at another size), a few at a time. */
  async fetch(objects: StoredObject[]): Promise<void> {
    const sizes = new Map<string, number | null>();
    for (const o of objects) sizes.set(o.key, await localSize(this.objectPath(o.key)));
    const todo = objectsToFetch(objects, (key) => sizes.get(key) ?? null);
    let next = 0;
    const worker = async () => {
      while (next < todo.length) {
        const o = todo[next++];
        await this.download(o);
        this.onProgress();
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.parallel, todo.length) }, worker));
  }

  private async download(o: StoredObject): Promise<void> {
    const dest = this.objectPath(o.key);
    await fsp.mkdir(path.dirname(dest), { recursive: true });
    // A name of its own per download: two commands fetching one object each write their own, and the last rename wins (same bytes).
    const tmp = `${dest}.${process.pid}-${randomBytes(4).toString('hex')}.part`;
    try {
      await pipeline(await this.store.read(o.key), createWriteStream(tmp));
      const size = (await fsp.stat(tmp)).size;
      if (size !== o.size) {
        throw new StorageError('READ_FAILED', `${this.store.location}${o.key}`, `the download has ${size} bytes where the listing said ${o.size}`);
      }
      await fsp.rename(tmp, dest);
    } catch (err) {
      if (err instanceof StorageError) throw err;
      throw new StorageError('WRITE_FAILED', dest, `cannot keep ${this.store.location}${o.key} in the local cache`, { cause: err });
    } finally {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
    }
  }

  /**
   * A view of the location for one command: the raw index and dataset files
   * always (small beside the WARCs, and every reader needs them), the WARCs
   * and sealed products `needs` names. Close it when the command is done.
   */
  async view(needs: ViewNeeds = {}): Promise<MirrorView> {
    await this.sweepViews();
    const dir = path.join(this.dir, 'views', `${process.pid}-${randomBytes(4).toString('hex')}@${os.hostname()}`);
    await fsp.mkdir(dir, { recursive: true });
    const view = new MirrorView(this, dir);
    try {
      const raw = [...(await this.list('index/')), ...(await this.list('datasets/'))];
      await this.fetch(raw);
      for (const o of raw) await view.link(o.key, o.key);
      // Made even when empty: the folder code takes an output folder to have index/ (`crawler dataset` checks for it).
      await fsp.mkdir(path.join(dir, 'index'), { recursive: true });
      const warcs = needs.warcs ?? 'none';
      if (warcs !== 'none') await view.addWarcs(warcs === 'all' ? () => true : ownsWarc(warcs.campaignId));
      const sealed = needs.sealed ?? 'none';
      if (sealed !== 'none' || needs.cdxjOf !== undefined) {
        const pubs = publicationsOf(await this.list(`${SEALED_AREA}/`));
        const campaigns = sealed === 'none' ? [] : sealed === 'all' ? sealedCampaigns(pubs) : [sealed.campaignId];
        for (const id of campaigns) {
          const seal = newestSeal(pubs, id);
          if (seal) await view.placeSeal(seal, id);
        }
        // After the WARCs: the index is then the newest file of the view, as a folder's is once written
        // (`crawler replay` indexes again when a WARC is newer; objects never change once in the bucket).
        const cdxj = needs.cdxjOf === undefined ? null : newestCdxj(pubs, needs.cdxjOf);
        if (cdxj) {
          await this.fetch([cdxj]);
          await view.link(cdxj.key, CDXJ_NAME);
          const now = new Date();
          await fsp.utimes(path.join(dir, CDXJ_NAME), now, now);
        }
      }
      if (needs.qaOf !== undefined) {
        const seen = new Set<string>();
        const reports = qaReportsOf(await this.list(`${REPORTS_AREA}/`), needs.qaOf)
          .filter((r) => !seen.has(r.file) && seen.add(r.file))
          .slice(0, QA_REPORTS_FETCHED);
        await this.fetch(reports.map((r) => r.object));
        for (const r of reports) await view.link(r.object.key, `${QA_AREA}/${r.file}`);
      }
      return view;
    } catch (err) {
      await view.close();
      throw err;
    }
  }

  /** Removes the views of processes of this machine that are gone (killed mid-command). */
  private async sweepViews(): Promise<void> {
    const root = path.join(this.dir, 'views');
    const names = await fsp.readdir(root).catch(() => [] as string[]);
    for (const name of names) {
      const m = /^(\d+)-[0-9a-f]{8}@(.+)$/.exec(name);
      if (!m || m[2] !== os.hostname() || Number(m[1]) === process.pid || processExists(Number(m[1]))) continue;
      await fsp.rm(path.join(root, name), { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /** Called by a view for each object it uploads. */
  progress(): void {
    this.onProgress();
  }
}

/** A publication under way: its area and id, and the key and URL of each of its files. */
export interface PublicationTarget {
  area: string;
  id: string;
  keyOf(name: string): string;
  urlOf(name: string): string;
}

/** One command's output folder, made of the mirror's objects (see the top of this file). */
/** Where an output folder keeps its `crawler qa` reports (src/qa/qa-report.ts QA_DIR). */
const QA_AREA = 'qa';

export class MirrorView {
  private warcListing: StoredObject[] | null = null;
  /** The key each linked file of the view came from, by its path here. */
  private readonly keys = new Map<string, string>();

  constructor(
    private readonly mirror: OutputMirror,
    /** The folder to give the folder code. */
    readonly dir: string,
  ) {}

  /** The location, as the operator names it (`s3://bucket/prefix/`). */
  get location(): string {
    return this.mirror.store.location;
  }

  /** The object `key` of the cache, linked at `rel` in the view. */
  async link(key: string, rel: string): Promise<void> {
    const to = path.join(this.dir, ...rel.split('/'));
    await linkOrCopy(this.mirror.objectPath(key), to);
    this.keys.set(to, key);
  }

  /** The URL in the bucket of a file the view holds from it (what a message names, the view being gone once its command ends); null for one made here. */
  urlOf(file: string): string | null {
    const key = this.keys.get(path.resolve(file));
    return key === undefined ? null : `${this.location}${key}`;
  }

  /**
   * Brings down the location's WARC files `want` accepts (by name) into the
   * view's `warc/`; those already in the view stay. Listed once per view.
   * Returns the paths of the view's WARC files.
   */
  async addWarcs(want: (name: string) => boolean = () => true): Promise<string[]> {
    this.warcListing ??= await this.mirror.list('warc/');
    const dir = path.join(this.dir, 'warc');
    await fsp.mkdir(dir, { recursive: true });
    const have = new Set(await fsp.readdir(dir));
    const wanted = this.warcListing.filter((o) => {
      const name = o.key.slice('warc/'.length);
      return !have.has(name) && want(name);
    });
    await this.mirror.fetch(wanted);
    for (const o of wanted) await this.link(o.key, o.key);
    return (await fsp.readdir(dir))
      .filter((n) => n.endsWith('.warc.gz') || n.endsWith('.warc'))
      .sort()
      .map((n) => path.join(dir, n));
  }

  /** A seal's index, manifest and datasets, at the names a folder seal gives them in `sealed/`. */
  async placeSeal(seal: Publication, campaignId: string): Promise<void> {
    const files = sealedFolderFiles(seal, campaignId);
    await this.mirror.fetch(files);
    for (const o of files) await this.link(o.key, `sealed/${o.key.slice(o.key.lastIndexOf('/') + 1)}`);
  }

  /** A new publication's id and keys (`<area>/<id>/<name>`): nothing already in the bucket is touched. */
  newPublication(area: string, now = new Date()): PublicationTarget {
    const id = publicationId(now, randomBytes(4).toString('hex'));
    const keyOf = (name: string) => `${area}/${id}/${name}`;
    return { area, id, keyOf, urlOf: (name) => `${this.location}${keyOf(name)}` };
  }

  /**
   * Uploads products of the view into a publication, in the order given: the
   * manifest that marks it complete goes last. Each is then kept in the
   * cache, so the next reader need not download it.
   */
  async upload(target: PublicationTarget, files: { name: string; file: string }[]): Promise<void> {
    for (const f of files) {
      const key = target.keyOf(f.name);
      await this.mirror.store.putFile(key, f.file);
      await linkOrCopy(f.file, this.mirror.objectPath(key)).catch(() => undefined);
      this.mirror.progress();
    }
  }

  /**
   * Deletes the campaign's superseded publications (./mirror-layout.ts, stalePublications), each
   * one's manifest first, so no reader takes up a publication whose files are going. Returns how
   * many went. A failure leaves the rest to the campaign's next publication.
   */
  async prune(campaignId: string, now = Date.now()): Promise<number> {
    const stale = stalePublications(publicationsOf(await this.mirror.list(`${SEALED_AREA}/`)), campaignId, now);
    for (const p of stale) {
      const keys = [...p.files.values()].map((o) => o.key);
      const manifests = keys.filter((k) => k.endsWith('.seal.json') || k.endsWith('.cdxj.json'));
      for (const key of [...manifests, ...keys.filter((k) => !manifests.includes(k))]) await this.mirror.store.remove(key);
    }
    return stale.length;
  }

  /** `files` as a new publication of their own. */
  async publish(area: string, files: { name: string; file: string }[]): Promise<PublicationTarget> {
    const target = this.newPublication(area);
    await this.upload(target, files);
    return target;
  }

  /** Removes the view (the cache's objects stay). */
  async close(): Promise<void> {
    await fsp.rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Runs `fn` on a view of the mirror, closed after it whatever happens. */
export async function withView<T>(mirror: OutputMirror, needs: ViewNeeds, fn: (view: MirrorView) => Promise<T>): Promise<T> {
  const view = await mirror.view(needs);
  try {
    return await fn(view);
  } finally {
    await view.close();
  }
}

/**
 * What the campaign's summary weighs before it seals in its own activity:
 * the raw index's bytes and the campaign's WARC bytes, from a listing (the
 * bucket's sizes; nothing downloaded).
 */
export async function bucketOutputSizes(store: ObjectStore, campaignId: string): Promise<{ rawIndexBytes: number; warcBytes: number }> {
  let rawIndexBytes = 0;
  let warcBytes = 0;
  for await (const o of store.list('index/')) if (o.key.endsWith('.jsonl') && !o.key.slice('index/'.length).includes('/')) rawIndexBytes += o.size;
  const own = ownsWarc(campaignId);
  for await (const o of store.list('warc/')) if (mirroredKey(o.key)?.area === 'warc' && own(o.key)) warcBytes += o.size;
  return { rawIndexBytes, warcBytes };
}
