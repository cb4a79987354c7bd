// What the crawl kept of each rendered page besides its exchanges: its
// full-page screenshot (`urn:fullPage:<url>`, browser.screenshot, as
// Browsertrix names it; `urn:screenshot:<url>` in archives written before
// the crawl took Browsertrix's three shots), which is what the replay's own
// full-page shot is compared with; its viewport screenshot (`urn:view:<url>`),
// compared with the replay's viewport when there is no full page (a WACZ of
// Browsertrix's, whose default is the view alone); and its text
// (`urn:text:<url>`, browser.text: its innerText), resource records in the campaign's WARCs.
// The files are scanned once for where those records are; each is read back
// when its page is compared, so a large campaign's screenshots are never all
// held at once.
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { WARCParser } from 'warcio';
import { StorageError } from '../storage/storage-error';

export const SCREENSHOT_URN = 'urn:fullPage:';
/** The name the crawl gave its one full-page screenshot before it took Browsertrix's three (view, thumbnail, fullPage). */
export const OLD_SCREENSHOT_URN = 'urn:screenshot:';
export const TEXT_URN = 'urn:text:';
/** The viewport at the top of the page (Browsertrix's default `--screenshot view`). */
export const VIEW_URN = 'urn:view:';

/** Where one resource record is: its file, and its gzip member's offset and length. */
export interface RecordAt {
  file: string;
  offset: number;
  length: number;
}

/** Per page URL (as fetched), its newest full-page screenshot, view screenshot and text records. */
export interface CrawlCaptures {
  screenshots: Map<string, RecordAt>;
  views: Map<string, RecordAt>;
  texts: Map<string, RecordAt>;
}

/** Scans WARC files for the pages' screenshot and text records (an incomplete last record, a running campaign's, and what follows a damaged one are left out). */
export async function findCaptures(warcFiles: string[]): Promise<CrawlCaptures> {
  const out: CrawlCaptures = { screenshots: new Map(), views: new Map(), texts: new Map() };
  for (const file of warcFiles) {
    const stream = createReadStream(file);
    try {
      const parser = new WARCParser(stream, { parseHttp: false });
      for await (const record of parser) {
        if (record.warcType !== 'resource') continue;
        const uri = record.warcTargetURI ?? '';
        const into =
          uri.startsWith(SCREENSHOT_URN) || uri.startsWith(OLD_SCREENSHOT_URN)
            ? out.screenshots
            : uri.startsWith(VIEW_URN)
              ? out.views
              : uri.startsWith(TEXT_URN)
                ? out.texts
                : null;
        if (!into) continue;
        const declared = Number(record.warcHeaders.headers.get('Content-Length') ?? NaN);
        const block = await record.readFully(false);
        if (block.length !== declared) break;
        // Files are in name order (their time): a page rendered again keeps its newest.
        into.set(uri.slice(uri.indexOf(':', 4) + 1), { file, offset: parser.offset, length: parser.recordLength });
      }
    } catch {
      // A file a running campaign's writer is still appending to may end mid-record: what came before counts.
    } finally {
      stream.destroy();
    }
  }
  return out;
}

/** The block of the resource record at `at`. */
export async function readResourceAt(at: RecordAt): Promise<Buffer> {
  const stream = createReadStream(at.file, { start: at.offset, end: at.offset + at.length - 1 });
  try {
    for await (const record of new WARCParser(stream, { parseHttp: false })) return Buffer.from(await record.readFully(false));
  } catch (err) {
    throw new StorageError('CORRUPT', at.file, `cannot read the record at ${at.offset}`, { cause: err });
  } finally {
    stream.destroy();
  }
  throw new StorageError('CORRUPT', at.file, `no record at ${at.offset}`);
}

/** A record's file named as the CDXJ names it, resolved against the archive folder. */
export function warcPathOf(archiveDir: string, filename: string): string {
  return path.isAbsolute(filename) ? filename : path.join(archiveDir, filename);
}
