// Pure: how alike a page's crawl and its replay are, each measure 0–1.
//
// Screenshots: both PNGs (decoded by pngjs: pure JavaScript, so nothing to
// build on a worker, and the PNG reader most of npm depends on) are
// brought to greyscale blocks of BLOCK_PX square, and the share of blocks
// whose means differ by more than BLOCK_TOLERANCE is what is unlike. Block
// means absorb what differs between two renders of the same page by a pixel
// (antialiasing, subpixel text positions), while a missing image, a block of
// text or a stylesheet not applied changes whole blocks. Only blocks with
// something drawn in either image count (blockSimilarity says why).
//
// Text: the sets of words (letters and digits, lower-cased) of both texts,
// their Jaccard index: blind to whitespace and line breaks (a plain HTTP
// page's text is read from its markup, laid out unlike innerText) and to a
// word repeated.
import { PNG } from 'pngjs';
import { Parser } from 'htmlparser2';

/** Side of a square block of the greyscale comparison, in CSS pixels of the screenshot. */
export const BLOCK_PX = 16;
/** Two blocks differ when their mean grey levels (0–255) are further apart than this. */
export const BLOCK_TOLERANCE = 12;

/** A screenshot as greyscale block means, row by row. */
export interface GreyBlocks {
  cols: number;
  rows: number;
  means: Float32Array;
}

/** Decodes a PNG and averages it into BLOCK_PX blocks of grey (alpha composited over white); throws on a file that is not a PNG. */
export function greyBlocks(png: Buffer): GreyBlocks {
  const img = PNG.sync.read(png);
  const cols = Math.ceil(img.width / BLOCK_PX);
  const rows = Math.ceil(img.height / BLOCK_PX);
  const sums = new Float64Array(cols * rows);
  const counts = new Uint32Array(cols * rows);
  const d = img.data;
  for (let y = 0; y < img.height; y++) {
    const row = Math.floor(y / BLOCK_PX) * cols;
    for (let x = 0; x < img.width; x++) {
      const i = (y * img.width + x) * 4;
      const a = d[i + 3]! / 255;
      // Rec. 601 luma; transparent pixels are what a white page shows.
      const grey = (0.299 * d[i]! + 0.587 * d[i + 1]! + 0.114 * d[i + 2]!) * a + 255 * (1 - a);
      const b = row + Math.floor(x / BLOCK_PX);
      sums[b]! += grey;
      counts[b]!++;
    }
  }
  const means = new Float32Array(cols * rows);
  for (let b = 0; b < means.length; b++) means[b] = counts[b]! ? sums[b]! / counts[b]! : 255;
  return { cols, rows, means };
}

/** The grey level most blocks of both images have: the page's background (rounded to whole levels). */
function backgroundOf(a: GreyBlocks, b: GreyBlocks): number {
  const counts = new Uint32Array(256);
  for (const g of [a, b]) for (const m of g.means) counts[Math.round(m)]!++;
  let best = 255;
  for (let v = 0; v < 256; v++) if (counts[v]! > counts[best]!) best = v;
  return best;
}

/**
 * The share of the content blocks (those that differ from the background in
 * either image) that are alike in both: 1 for the same picture (or two
 * empty pages), 0 when nothing drawn in one is drawn in the other. Counted
 * over content only, as a page is mostly background: over every block, a
 * page whose whole text is missing would still be 99 % alike. A region one
 * image lacks (it is shorter) counts as background there.
 */
export function blockSimilarity(a: GreyBlocks, b: GreyBlocks): number {
  const cols = Math.max(a.cols, b.cols);
  const rows = Math.max(a.rows, b.rows);
  const bg = backgroundOf(a, b);
  const at = (g: GreyBlocks, c: number, r: number) => (c < g.cols && r < g.rows ? g.means[r * g.cols + c]! : bg);
  let content = 0;
  let differ = 0;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const x = at(a, c, r);
      const y = at(b, c, r);
      if (Math.abs(x - bg) <= BLOCK_TOLERANCE && Math.abs(y - bg) <= BLOCK_TOLERANCE) continue;
      content++;
      if (Math.abs(x - y) > BLOCK_TOLERANCE) differ++;
    }
  }
  return content === 0 ? 1 : 1 - differ / content;
}

/** Screenshot similarity of two PNGs, 0–1. */
export function screenshotSimilarity(crawl: Buffer, replay: Buffer): number {
  return blockSimilarity(greyBlocks(crawl), greyBlocks(replay));
}

/** The distinct words of a text: runs of letters and digits, lower-cased. */
export function wordsOf(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
}

/** Jaccard index of the two texts' word sets: 1 when both have the same words (or none), 0 when they share none. */
export function textSimilarity(crawl: string, replay: string): number {
  const a = wordsOf(crawl);
  const b = wordsOf(replay);
  if (a.size === 0 && b.size === 0) return 1;
  let shared = 0;
  for (const w of a) if (b.has(w)) shared++;
  return shared / (a.size + b.size - shared);
}

/** Elements whose text is no text a reader sees. */
const UNSEEN = new Set(['script', 'style', 'noscript', 'template', 'title', 'head', 'svg', 'math', 'iframe', 'object', 'select', 'datalist']);
/** Elements a browser lays out as blocks or cells: innerText breaks lines (or tabs) around them, so their words never run together. */
const BREAKS = new Set(
  'address article aside blockquote br caption dd details dialog div dl dt fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol option p pre section summary table tbody td tfoot th thead tr ul'.split(
    ' ',
  ),
);

/**
 * The visible text of an HTML document, as innerText would read it without
 * style: the body's text without what is never shown (scripts, styles,
 * templates, the title), words of separate blocks kept apart.
 */
export function visibleText(html: string): string {
  const out: string[] = [];
  let unseen = 0;
  const parser = new Parser(
    {
      onopentag(name) {
        if (UNSEEN.has(name)) unseen++;
        else if (BREAKS.has(name)) out.push('\n');
      },
      ontext(text) {
        if (unseen === 0) out.push(text);
      },
      onclosetag(name, implied) {
        if (UNSEEN.has(name)) unseen = Math.max(0, unseen - 1);
        else if (BREAKS.has(name) && !implied) out.push('\n');
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  return out
    .join('')
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .join('\n');
}
