// What a search for leaked secrets reads: every file under a folder as
// text, gzip members (WARCs, anything else compressed) decompressed, so a
// value is found wherever a crawl may have written it.
import fs from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';

/** Every file under `dir`, gzip members decompressed (by their magic bytes, whatever the name), as text. */
export function allText(dir: string): string {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const bytes = fs.readFileSync(path.join(entry.parentPath, entry.name));
    out.push((bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes).toString('latin1'));
  }
  return out.join('\n');
}
