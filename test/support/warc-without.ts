// An archive with a capture taken out: each WARC file of a folder copied
// record by record (gzip members as they are, so offsets of the rest change
// but every record stays byte for byte the writer's) into another folder,
// leaving out every record (request, response, metadata) of one URL, or of
// the URLs a test picks (every `urn:fullPage:` screenshot, say).
import fs from 'node:fs';
import path from 'node:path';
import { readWarcFile } from '../../src/storage/warc-reader';

/** Copies `fromDir`'s WARC files to `toDir` without the records whose WARC-Target-URI is `url` (or `url` picks); returns how many were left out. */
export async function copyWarcsWithout(fromDir: string, toDir: string, url: string | ((targetUri: string) => boolean)): Promise<number> {
  const drop = typeof url === 'string' ? (u: string) => u === url : url;
  fs.mkdirSync(toDir, { recursive: true });
  let dropped = 0;
  for (const name of fs.readdirSync(fromDir).filter((n) => n.endsWith('.warc.gz'))) {
    const src = fs.readFileSync(path.join(fromDir, name));
    const kept: Buffer[] = [];
    for (const r of await readWarcFile(path.join(fromDir, name))) {
      if (r.targetUri !== undefined && drop(r.targetUri)) dropped++;
      else kept.push(src.subarray(r.offset, r.offset + r.length));
    }
    fs.writeFileSync(path.join(toDir, name), Buffer.concat(kept));
  }
  return dropped;
}
