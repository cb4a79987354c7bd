// The bench's long seed lists, gzip-compressed as an operator would hand one
// over: `perHost` URLs on each of `hosts` hosts, written host after host for
// each page number, so consecutive lines name different hosts as in a list
// gathered from many sources (and every batch the campaign reads spans many hosts).
// Written a block of lines at a time (each block its own gzip member, which a
// gzip reader takes as one stream): a list of 10 million URLs never sits in
// memory whole (it would pass V8's longest string).
import fs from 'node:fs';
import zlib from 'node:zlib';

const LINES_A_MEMBER = 200_000;

/** Writes the list to `file`; returns its lines, the file's size and the mean URL length (characters). */
export function writeSeedList(
  file: string,
  hosts: number,
  perHost: number,
  urlOf: (host: number, page: number) => string,
): { seeds: number; listBytes: number; meanUrlChars: number } {
  const fd = fs.openSync(file, 'w');
  let lines: string[] = [];
  let chars = 0;
  let seeds = 0;
  const flush = (last: boolean) => {
    if (lines.length === 0) return;
    fs.writeSync(fd, zlib.gzipSync(lines.join('\n') + (last ? '' : '\n')));
    lines = [];
  };
  try {
    for (let p = 0; p < perHost; p++) {
      for (let h = 0; h < hosts; h++) {
        const url = urlOf(h, p);
        chars += url.length;
        lines.push(url);
        seeds++;
        if (lines.length === LINES_A_MEMBER) flush(seeds === hosts * perHost);
      }
    }
    flush(true);
  } finally {
    fs.closeSync(fd);
  }
  return { seeds, listBytes: fs.statSync(file).size, meanUrlChars: Number((chars / Math.max(1, seeds)).toFixed(1)) };
}
