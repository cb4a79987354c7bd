// The bench's long seed lists, gzip-compressed as an operator would hand one
// over: `perHost` URLs on each of `hosts` hosts, written host after host for
// each page number, so consecutive lines name different hosts as in a list
// gathered from many sources (and every batch the campaign reads spans many hosts).
import fs from 'node:fs';
import zlib from 'node:zlib';

/** Writes the list to `file`; returns its lines, the file's size and the mean URL length (characters). */
export function writeSeedList(
  file: string,
  hosts: number,
  perHost: number,
  urlOf: (host: number, page: number) => string,
): { seeds: number; listBytes: number; meanUrlChars: number } {
  const lines: string[] = [];
  let chars = 0;
  for (let p = 0; p < perHost; p++) {
    for (let h = 0; h < hosts; h++) {
      const url = urlOf(h, p);
      chars += url.length;
      lines.push(url);
    }
  }
  fs.writeFileSync(file, zlib.gzipSync(lines.join('\n')));
  return { seeds: lines.length, listBytes: fs.statSync(file).size, meanUrlChars: Number((chars / Math.max(1, lines.length)).toFixed(1)) };
}
