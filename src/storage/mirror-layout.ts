// The layout of a campaign's objects in a bucket, as pure rules: which keys
// are the raw files workers upload, which are products a seal (or `crawler
// cdxj`) published, which publication is the newest, and where each object
// goes in the local mirror (./output-mirror.ts does the I/O).
//
// A location in a bucket has the layout of an output folder:
//   warc/<file>                 WARC files, as the workers' uploader stores them
//   index/<file>                raw index files
//   datasets/<name>/<file>      raw dataset files
// and products, which are never overwritten (an object store refuses a key
// that exists only by its size, and two seals can give files of one size
// with different content), so each run publishes under a key of its own:
//   sealed/<id>/<campaign>.index.jsonl, <campaign>.dataset-<name>.jsonl,
//               index.cdxj, then <campaign>.seal.json     one seal
//   sealed/<id>/index.cdxj, then <campaign>.cdxj.json     one `crawler cdxj` (or a replay that indexed again)
//   reports/<id>/<campaign>.report.html                   one `crawler report`
//   reports/<id>/<campaign>.qa-<UTC time>.json            one `crawler qa` pass
// where <id> is `<UTC time>-<random>`: ids sort by the time they were made,
// and readers take the newest by listing. A publication's manifest
// (`.seal.json`, `.cdxj.json`) is uploaded last: it says whose it is, and
// a publication without it is one still under way (or given up), which
// readers pass over.
import type { StoredObject } from './object-store';

/** Where a seal's and a CDXJ run's products go, and a report's. */
export const SEALED_AREA = 'sealed';
export const REPORTS_AREA = 'reports';
/** The replay index's name, in a publication as in an output folder. */
export const CDXJ_NAME = 'index.cdxj';

/** `20260131T120000123Z-1a2b3c4d`: a publication's id. */
const PUBLICATION_ID = /^\d{8}T\d{9}Z-[0-9a-f]{8}$/;

/** A publication's id made at `now` with 4 random bytes (hex): sortable by time, unique without any coordination. */
export function publicationId(now: Date, randomHex: string): string {
  if (!/^[0-9a-f]{8}$/.test(randomHex)) throw new Error(`publicationId takes 8 hex digits, got ${JSON.stringify(randomHex)}`);
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('.', '');
  return `${stamp}-${randomHex}`;
}

export const isPublicationId = (s: string): boolean => PUBLICATION_ID.test(s);

/** The manifest that closes a seal's publication, and the one that closes a CDXJ run's. */
export const sealManifestName = (campaignId: string): string => `${campaignId}.seal.json`;
export const cdxjManifestName = (campaignId: string): string => `${campaignId}.cdxj.json`;

/** A file name in the bucket that is also a file name here: not empty, `.` or `..`, no separator or control character. */
function isPlainName(s: string): boolean {
  if (s === '' || s === '.' || s === '..' || Buffer.byteLength(s) > 255) return false;
  return ![...s].some((ch) => ch === '/' || ch === '\\' || ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f);
}

/** What a key of the location is, for the mirror; null for anything else (or a key that would be no safe file path). */
export type MirroredKey =
  | { area: 'warc'; name: string }
  | { area: 'index'; name: string }
  | { area: 'datasets'; dataset: string; name: string }
  | { area: 'sealed'; id: string; name: string }
  | { area: 'reports'; id: string; name: string };

export function mirroredKey(key: string): MirroredKey | null {
  const parts = key.split('/');
  if (!parts.every(isPlainName)) return null;
  if (parts.length === 2 && parts[0] === 'warc' && /\.warc(\.gz)?$/.test(parts[1])) return { area: 'warc', name: parts[1] };
  if (parts.length === 2 && parts[0] === 'index') return { area: 'index', name: parts[1] };
  if (parts.length === 3 && parts[0] === 'datasets') return { area: 'datasets', dataset: parts[1], name: parts[2] };
  if (parts.length === 3 && parts[0] === SEALED_AREA && isPublicationId(parts[1])) return { area: 'sealed', id: parts[1], name: parts[2] };
  if (parts.length === 3 && parts[0] === REPORTS_AREA && isPublicationId(parts[1])) return { area: 'reports', id: parts[1], name: parts[2] };
  return null;
}

/** A `crawler qa` pass's file as an output folder's qa/ holds it: `qa-20261128T213000Z.json` (src/qa/qa-report.ts qaFileName). */
const QA_PASS_FILE = /^qa-\d{8}T\d{6}Z\.json$/;

/** The name a `crawler qa` pass on a bucket publishes its report under, in reports/<id>/: the campaign's, then the folder's file name. */
export const qaReportName = (campaignId: string, passFile: string): string => `${campaignId}.${passFile}`;

/**
 * The campaign's `crawler qa` reports in a listing of reports/, newest pass
 * first (the pass's time, then the publication's id), each with the name an
 * output folder's qa/ gives it. One file is a whole publication (an object
 * is stored whole or not at all), so there is no manifest to wait for.
 */
export function qaReportsOf(objects: Iterable<StoredObject>, campaignId: string): { object: StoredObject; file: string; id: string }[] {
  const out: { object: StoredObject; file: string; id: string }[] = [];
  const prefix = `${campaignId}.`;
  for (const o of objects) {
    const k = mirroredKey(o.key);
    if (k?.area !== 'reports' || !k.name.startsWith(prefix)) continue;
    const file = k.name.slice(prefix.length);
    if (QA_PASS_FILE.test(file)) out.push({ object: o, file, id: k.id });
  }
  const order = (a: { file: string; id: string }, b: { file: string; id: string }) => (a.file !== b.file ? (a.file < b.file ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
  return out.sort(order);
}

/** One publication under sealed/: its id and its objects by file name. */
export interface Publication {
  id: string;
  files: Map<string, StoredObject>;
}

/** The publications in a listing of sealed/, newest first. */
export function publicationsOf(objects: Iterable<StoredObject>): Publication[] {
  const byId = new Map<string, Publication>();
  for (const o of objects) {
    const k = mirroredKey(o.key);
    if (k?.area !== 'sealed') continue;
    let p = byId.get(k.id);
    if (!p) byId.set(k.id, (p = { id: k.id, files: new Map() }));
    p.files.set(k.name, o);
  }
  return [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

/**
 * The campaign's newest complete seal: the newest publication holding its
 * `.seal.json`. Its sealed index, datasets and manifest belong together;
 * files of an older seal are never mixed in.
 */
export function newestSeal(pubs: Publication[], campaignId: string): Publication | null {
  return pubs.find((p) => p.files.has(sealManifestName(campaignId))) ?? null;
}

/** The campaign's newest replay index: from its newest seal or `crawler cdxj` run that wrote one. */
export function newestCdxj(pubs: Publication[], campaignId: string): StoredObject | null {
  const p = pubs.find((p) => p.files.has(CDXJ_NAME) && (p.files.has(sealManifestName(campaignId)) || p.files.has(cdxjManifestName(campaignId))));
  return p?.files.get(CDXJ_NAME) ?? null;
}

/** Seals and replay indexes of a campaign kept in the bucket, newest first, when a newer one is published. */
export const KEPT_PUBLICATIONS = 2;
/**
 * A publication younger than this is never deleted: a reader may have picked it as the newest a
 * moment before a newer one came, and still be downloading it.
 */
export const PUBLICATION_GRACE_MS = 15 * 60_000;

/** When a publication was made, from its id (ms since the epoch). */
export function publicationTime(id: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z-/.exec(id);
  return m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], +m[7]) : Number.NaN;
}

/**
 * The campaign's publications a newer one superseded: each seal and each `cdxj` run publishes
 * anew (nothing is overwritten), so without this a campaign sealed again and again (a revisit
 * campaign, an operator re-running `crawler seal`) would pile them up. Kept: the newest
 * KEPT_PUBLICATIONS holding its seal, the newest KEPT_PUBLICATIONS holding its replay index, and
 * any younger than PUBLICATION_GRACE_MS. A publication without a manifest (an upload that died)
 * names no campaign and is left alone. `pubs` newest first, as publicationsOf gives them.
 */
export function stalePublications(pubs: Publication[], campaignId: string, now: number): Publication[] {
  const own = pubs.filter((p) => p.files.has(sealManifestName(campaignId)) || p.files.has(cdxjManifestName(campaignId)));
  const seals = own.filter((p) => p.files.has(sealManifestName(campaignId))).slice(0, KEPT_PUBLICATIONS);
  const replays = own.filter((p) => p.files.has(CDXJ_NAME)).slice(0, KEPT_PUBLICATIONS);
  const kept = new Set([...seals, ...replays]);
  return own.filter((p) => !kept.has(p) && now - publicationTime(p.id) >= PUBLICATION_GRACE_MS);
}

/** Every campaign with a seal among these publications. */
export function sealedCampaigns(pubs: Publication[]): string[] {
  const ids = new Set<string>();
  for (const p of pubs) for (const name of p.files.keys()) if (name.endsWith('.seal.json') && name.length > '.seal.json'.length) ids.add(name.slice(0, -'.seal.json'.length));
  return [...ids].sort();
}

/**
 * The files of a seal that go into an output folder's `sealed/` (the index,
 * its manifest, the datasets): the campaign's own, named as the folder seal
 * names them. Not index.cdxj, which lives beside `warc/`.
 */
export function sealedFolderFiles(seal: Publication, campaignId: string): StoredObject[] {
  return [...seal.files.entries()].filter(([name]) => name.startsWith(`${campaignId}.`) && name !== CDXJ_NAME && name !== cdxjManifestName(campaignId)).map(([, o]) => o);
}

/**
 * The cache folder of a location under the cache root: a readable name made
 * from it (`s3://bucket/crawls/x/` -> `bucket-crawls-x`) and a short hash of
 * it, so two locations whose readable names meet get folders of their own.
 * `hash` is the location's SHA-256 in hex (passed in: this module does no I/O
 * and loads nothing).
 */
export function cacheFolderName(location: string, hash: string): string {
  const readable =
    location
      .replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^[-.]+|[-.]+$/g, '')
      .slice(0, 60)
      .replace(/[-.]+$/, '') || 'output';
  return `${readable}-${hash.slice(0, 12)}`;
}

/** Objects of a listing the mirror lacks: none locally, or one of another size (a download cut short never keeps its name). */
export function objectsToFetch(objects: StoredObject[], localSize: (key: string) => number | null): StoredObject[] {
  return objects.filter((o) => localSize(o.key) !== o.size);
}

/**
 * `s3://bucket/some/file.wacz` as a location (the folder) and the key in
 * it, for a command's output file written into a bucket; null when the URL
 * names no file (it ends in `/`, or has no key at all).
 */
export function splitObjectUrl(url: string): { location: string; key: string } | null {
  const m = /^s3:\/\/([^/]+)\/(.*)$/i.exec(url);
  if (!m) return null;
  const parts = m[2].split('/').filter((p) => p !== '');
  const key = parts.pop();
  if (!key || m[2].endsWith('/') || !isPlainName(key)) return null;
  return { location: `s3://${m[1]}/${parts.join('/')}`, key };
}
