import { createReadStream, createWriteStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { writeCdxj } from './cdxj';
import { filesHoldingOriginals, RevisitRefs, unresolvedRevisits, type RevisitRef } from './revisit-originals';
import type { IndexEntry } from './index-writer';
import { StorageError } from './storage-error';
import { readResourceAt } from './warc-reader';
import { StoredZipWriter } from './zip-store';

// WACZ 1.1.1 (https://specs.webrecorder.net/wacz/1.1.1/): one ZIP holding
//   archive/<warc files>          the WARCs as written
//   indexes/index.cdx.gz          the CDXJ of those WARCs (filenames relative to archive/), gzipped
//   pages/pages.jsonl             the pages a person would open first (the seeds' pages)
//   pages/extraPages.jsonl        the other pages (when there are any), as Browsertrix lists them
// A page's screenshots (browser.screenshot: `urn:view:`, `urn:thumbnail:`,
// `urn:fullPage:` resource records, as Browsertrix stores them) are in the
// WARCs and the CDXJ; a page list entry names none, as Browsertrix's do not:
// ReplayWeb.page looks `urn:thumbnail:<url>` up at the entry's `ts`.
//   datapackage.json              every other file with its size and sha256
//   datapackage-digest.json       the sha256 of datapackage.json
// Every entry is STORED, so readers (ReplayWeb.page, pywb after unpacking)
// can seek into the WARCs and the index by byte range.
//
// A revisit record replays only with its original in the same package, so
// the package is closed over originals: a revisit whose original is in none
// of the WARC files given brings in the file that holds it (from
// `originalsFrom`: the rest of the output folder), and one whose original is
// nowhere fails the package (MISSING_ORIGINALS) unless the caller accepts
// it. How an original can be elsewhere: a campaign exported while it runs
// (its workers open new files after the list was taken, and a revisit in a
// listed file may refer to a capture in one of those), files renamed or
// moved, workers that wrote into folders of their own.

export const WACZ_VERSION = '1.1.1';

export interface WaczPage {
  /** Unique within the package. */
  id: string;
  url: string;
  /** RFC 3339 date of the capture. */
  ts: string;
  /** The page's <title> as the crawl saw it (the rendered DOM's for a rendered page); absent without one. */
  title?: string;
  /** Link hops from a seed (0: a seed's page, or where its redirects ended). */
  depth?: number;
  /** A seed's page: listed in pages.jsonl, the others in extraPages.jsonl. */
  seed?: true;
  /** The page's text as a reader saw it (browser.text: its `urn:text:` record), for full-text search; see WriteWaczOptions.textOf. */
  text?: string;
}

export interface WriteWaczOptions {
  warcFiles: string[];
  /** pages/pages.jsonl: the pages a reader opens first (a crawl's seeds). */
  pages: WaczPage[];
  /** pages/extraPages.jsonl, written when not empty: the crawl's other pages. */
  extraPages?: WaczPage[];
  /** A page's text, asked for as its line is written (pageTexts); none: the pages as given. */
  textOf?: (page: WaczPage) => Promise<string | undefined>;
  title?: string;
  /** The first page to show (a seed). */
  mainPageUrl?: string;
  software?: string;
  /** Default now. */
  created?: Date;
  /**
   * More WARC files to take originals from (listed when needed): those
   * holding a capture a packed revisit record refers to are packed too.
   */
  originalsFrom?: () => Promise<string[]>;
  /** Write the package even when some revisit record's original is nowhere (counted in `missingOriginals`); default: fail with MISSING_ORIGINALS. */
  allowMissingOriginals?: boolean;
}

export interface WaczResult {
  file: string;
  bytes: number;
  warcFiles: number;
  cdxjLines: number;
  /** Pages listed, in pages.jsonl and extraPages.jsonl together. */
  pages: number;
  /** Files packed besides `warcFiles` because they hold originals of revisit records. */
  addedWarcFiles: string[];
  /** Revisit records packed without their original (only with allowMissingOriginals). */
  missingOriginals: number;
}

/** Missing originals named in the error. */
const MISSING_SHOWN = 3;

interface Resource {
  name: string;
  path: string;
  hash: string;
  bytes: number;
}

/**
 * The pages of a crawl for pages.jsonl: each URL fetched as an HTML page
 * (2xx, not a sitemap), once (the raw index may hold a URL twice after a
 * worker died), in fetch order. Each carries an `id` (the URL's
 * fingerprint): besides being asked for by the spec, validators that read
 * pages.jsonl as a table take a row without `id` or `title` for a blank one.
 */
export function pagesFromIndex(entries: IndexEntry[]): WaczPage[] {
  const seen = new Set<string>();
  const out: WaczPage[] = [];
  const sorted = [...entries].sort((a, b) => a.fetchedAt.localeCompare(b.fetchedAt));
  for (const e of sorted) {
    if (e.kind || !e.warc || typeof e.status !== 'number' || e.status < 200 || e.status > 299) continue;
    if (!/^(text\/html|application\/xhtml\+xml)\b/i.test(e.contentType ?? '')) continue;
    if (seen.has(e.url)) continue;
    seen.add(e.url);
    out.push({ id: e.fp, url: e.url, ts: e.fetchedAt, ...(e.title ? { title: e.title } : {}), depth: e.depth, ...(e.depth === 0 ? { seed: true as const } : {}) });
  }
  return out;
}

/** Reads each page's text where the crawl archived it, one page at a time (writeWacz asks as it writes the page lists). */
export interface PageTexts {
  textOf(page: WaczPage): Promise<string | undefined>;
  /** Pages whose text record could not be read, or was not theirs: listed without text. */
  readonly unread: number;
}

/**
 * The pages' texts where the crawl archived them (browser.text: the index
 * line's `render.text` names the page's `urn:text:` resource record in one
 * of `warcFiles`). Read when asked, so a package of many pages never holds
 * their texts at once. A record that cannot be read, or is not that page's,
 * leaves its page without text: the package is still whole.
 */
export function pageTexts(entries: IndexEntry[], warcFiles: string[]): PageTexts {
  const byName = new Map(warcFiles.map((f) => [path.basename(f), f]));
  const where = new Map<string, NonNullable<NonNullable<IndexEntry['render']>['text']>>();
  for (const e of entries) if (e.render?.text && !where.has(e.url)) where.set(e.url, e.render.text);
  let unread = 0;
  return {
    async textOf(p) {
      const at = where.get(p.url);
      if (!at) return undefined;
      const file = byName.get(at.file);
      const got = file ? await readResourceAt(file, at.offset, at.length).catch(() => null) : null;
      if (got && got.targetUri === `urn:text:${p.url}`) return got.block.toString('utf8');
      unread++;
      return undefined;
    },
    get unread() {
      return unread;
    },
  };
}

const isoSeconds = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Writes the WACZ to `file` (through `<file>.tmp`, renamed when complete). */
export async function writeWacz(file: string, o: WriteWaczOptions): Promise<WaczResult> {
  checkNames(o.warcFiles);
  const target = path.resolve(file);
  await fsp.mkdir(path.dirname(target), { recursive: true });
  const work = await fsp.mkdtemp(path.join(path.dirname(target), '.wacz-'));
  const tmp = `${target}.tmp`;
  let zip: StoredZipWriter | null = null;
  try {
    const created = o.created ?? new Date();
    const cdxj = path.join(work, 'index.cdxj');
    const { warcFiles, lines, added, missing } = await indexWithOriginals(o, cdxj, work);
    if (missing.count > 0 && !o.allowMissingOriginals) throw missingOriginalsError(missing);
    const cdxGz = path.join(work, 'index.cdx.gz');
    await pipeline(createReadStream(cdxj), createGzip(), createWriteStream(cdxGz));
    const extra = o.extraPages ?? [];
    // Browsertrix's two lists: the seeds' pages first, the rest apart (ReplayWeb.page shows both).
    const lists = [
      { name: 'pages.jsonl', header: { format: 'json-pages-1.0', id: 'pages', title: extra.length ? 'Seed Pages' : 'All Pages' }, pages: o.pages },
      ...(extra.length ? [{ name: 'extraPages.jsonl', header: { format: 'json-pages-1.0', id: 'extra-pages', title: 'Extra Pages' }, pages: extra }] : []),
    ];
    for (const l of lists) await writePageList(path.join(work, l.name), l.header, l.pages, o.textOf);

    zip = await StoredZipWriter.open(tmp, { date: created });
    const resources: Resource[] = [];
    const add = async (zipPath: string, src: string) => {
      const { size, sha256 } = await zip!.add({ name: zipPath, file: src });
      resources.push({ name: path.basename(zipPath).toLowerCase(), path: zipPath, hash: `sha256:${sha256}`, bytes: size });
    };
    for (const f of warcFiles) await add(`archive/${path.basename(f)}`, f);
    await add('indexes/index.cdx.gz', cdxGz);
    for (const l of lists) await add(`pages/${l.name}`, path.join(work, l.name));

    const main = o.mainPageUrl ? o.pages.find((p) => p.url === o.mainPageUrl) : undefined;
    const datapackage = {
      profile: 'data-package',
      resources,
      ...(o.title ? { title: o.title } : {}),
      ...(main ? { mainPageURL: main.url, mainPageDate: main.ts } : {}),
      created: isoSeconds(created),
      wacz_version: WACZ_VERSION,
      software: o.software ?? 'durable-crawler',
    };
    const dpBytes = Buffer.from(`${JSON.stringify(datapackage, null, 2)}\n`, 'utf8');
    const dp = await zip.add({ name: 'datapackage.json', data: dpBytes });
    const digest = { path: 'datapackage.json', hash: `sha256:${dp.sha256}` };
    await zip.add({ name: 'datapackage-digest.json', data: Buffer.from(`${JSON.stringify(digest, null, 2)}\n`, 'utf8') });
    const bytes = await zip.close();
    zip = null;
    await fsp.rename(tmp, target);
    return { file: target, bytes, warcFiles: warcFiles.length, cdxjLines: lines, pages: o.pages.length + extra.length, addedWarcFiles: added, missingOriginals: missing.count };
  } catch (err) {
    await zip?.abort();
    await fsp.rm(tmp, { force: true });
    if (err instanceof StorageError) throw err;
    throw new StorageError('WRITE_FAILED', target, 'cannot write WACZ', { cause: err });
  } finally {
    await fsp.rm(work, { recursive: true, force: true });
  }
}

function checkNames(files: string[]): void {
  const names = files.map((f) => path.basename(f));
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw new StorageError('INVALID_INPUT', null, `two WARC files are named ${dup}; a WACZ keeps them in one folder`);
}

interface Missing {
  count: number;
  shown: RevisitRef[];
}

/**
 * The package's CDXJ written to `cdxj`, over `o.warcFiles` and every file of
 * `o.originalsFrom` holding an original one of them needs (again, until the
 * added files need none that is elsewhere), and what is still missing.
 */
async function indexWithOriginals(o: WriteWaczOptions, cdxj: string, work: string): Promise<{ warcFiles: string[]; lines: number; added: string[]; missing: Missing }> {
  const warcFiles = [...o.warcFiles];
  const added: string[] = [];
  const refsFile = path.join(work, 'revisits.txt');
  for (;;) {
    const refs = new RevisitRefs(work);
    let lines: number;
    try {
      ({ lines } = await writeCdxj(warcFiles, cdxj, { tmpDir: work, onLine: refs.add }));
      await refs.writeTo(refsFile);
    } finally {
      await refs.dispose();
    }
    const missing: Missing = { count: 0, shown: [] };
    const needed = new Set<string>();
    const anyDigest = new Set<string>();
    for await (const r of unresolvedRevisits(cdxj, refsFile)) {
      missing.count++;
      if (missing.shown.length < MISSING_SHOWN) missing.shown.push(r);
      // In memory: what is missing, normally nothing (a lost file's worth at worst).
      if (r.digest === '-') anyDigest.add(r.key);
      else needed.add(`${r.key} ${r.digest}`);
    }
    if (missing.count === 0 || !o.originalsFrom) return { warcFiles, lines, added, missing };
    const packed = new Set(warcFiles.map((f) => path.resolve(f)));
    const others = (await o.originalsFrom()).filter((f) => !packed.has(path.resolve(f)));
    const found = await filesHoldingOriginals(others, needed, anyDigest);
    if (found.length === 0) return { warcFiles, lines, added, missing };
    warcFiles.push(...found);
    added.push(...found);
    checkNames(warcFiles);
  }
}

/** One page list, a JSON line a page after its header, each page's text read only as its line is written. */
async function writePageList(file: string, header: object, pages: WaczPage[], textOf: WriteWaczOptions['textOf']): Promise<void> {
  const fh = await fsp.open(file, 'w');
  try {
    await fh.write(`${JSON.stringify(header)}\n`);
    for (const p of pages) {
      const text = textOf ? await textOf(p) : undefined;
      await fh.write(`${JSON.stringify(text !== undefined ? { ...p, text } : p)}\n`);
    }
  } finally {
    await fh.close();
  }
}

function missingOriginalsError(m: Missing): StorageError {
  const one = (r: RevisitRef) => `${r.url} (${r.timestamp}, in ${r.filename}) refers to ${r.refersTo ?? r.url}${r.refersToDate ? ` at ${r.refersToDate}` : ''}`;
  return new StorageError(
    'MISSING_ORIGINALS',
    null,
    `${m.count} revisit record${m.count === 1 ? '' : 's'} refer${m.count === 1 ? 's' : ''} to a capture in none of the WARC files: ${m.shown.map(one).join('; ')}${m.count > m.shown.length ? '; …' : ''}. Replayed from this package they would fail`,
  );
}
