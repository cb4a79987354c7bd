// Which revisit records of an index have no original in it, found the way
// replay looks one up (a capture, not a revisit, at the URI referred to,
// with the record's payload digest), on real WARC files from our writer and
// with sorted runs spilled to disk, as a campaign too large for memory is.
import fs from 'node:fs';
import path from 'node:path';
import { listWarcFiles, writeCdxj } from '../../src/storage/cdxj';
import { filesHoldingOriginals, RevisitRefs, unresolvedRevisits } from '../../src/storage/revisit-originals';
import { WarcWriter, type WarcExchange, type WarcLocation } from '../../src/storage/warc-writer';
import { tempDirs } from '../support/temp-dirs';

// Seconds of CPU here (a large index, processes started, the worker bundled) that a loaded machine stretches past Jest's 5 s.
jest.setTimeout(60_000);

const tmpDir = tempDirs('revisit-originals-test-');
const at = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s));
const exchange = (url: string, s: number, body: string): WarcExchange => ({
  url,
  fetchedAt: at(s),
  request: { method: 'GET', headers: {} },
  response: { status: 200, headers: { 'Content-Type': 'text/plain' }, body: Buffer.from(body) },
});

/** Writes the exchanges (each a revisit of `of` when given) into one campaign file; its path and where each landed. */
async function warc(dir: string, prefix: string, exchanges: (WarcExchange & { of?: { url: string; s: number; loc: WarcLocation } })[]) {
  const w = await WarcWriter.open({ dir, prefix });
  const locs: WarcLocation[] = [];
  for (const { of, ...ex } of exchanges) {
    locs.push(await w.writeExchange(of ? { ...ex, revisit: { uri: of.url, date: at(of.s).toISOString(), recordId: of.loc.recordId } } : ex));
  }
  await w.close();
  return { file: path.join(dir, w.files[0]!), locs };
}

async function unresolved(files: string[], dir: string, runBytes?: number): Promise<string[]> {
  const refs = new RevisitRefs(dir, runBytes);
  const cdxj = path.join(dir, `index-${runBytes ?? 'mem'}.cdxj`);
  const refsFile = path.join(dir, `refs-${runBytes ?? 'mem'}.txt`);
  try {
    await writeCdxj(files, cdxj, { tmpDir: dir, runBytes, onLine: refs.add });
    await refs.writeTo(refsFile);
  } finally {
    await refs.dispose();
  }
  const out: string[] = [];
  for await (const r of unresolvedRevisits(cdxj, refsFile)) out.push(`${r.url} -> ${r.refersTo}`);
  return out.sort();
}

describe('unresolvedRevisits', () => {
  it('names every revisit whose original is not in the index, by URI and digest, whatever the spills', async () => {
    const dir = tmpDir();
    const warcDir = path.join(dir, 'warc');
    // /0 … /29: even ones stored in full; every one revisited at its own URL, and every third one at another host's URL.
    // Keys sort with prefixes of each other (/1, /10 …, /2, /20 …): the walk must keep both files in step.
    const originals = await warc(
      warcDir,
      'camp',
      Array.from({ length: 15 }, (_, k) => exchange(`http://s.test/${2 * k}`, 2 * k, `body ${2 * k}`)),
    );
    const loc = (i: number) => originals.locs[i / 2]!;
    // For an odd i the original was never written: a record of it from elsewhere gives the revisit its digest and ID.
    const nowhere = await warc(
      path.join(dir, 'elsewhere'),
      'camp',
      Array.from({ length: 15 }, (_, k) => exchange(`http://s.test/${2 * k + 1}`, 2 * k + 1, `body ${2 * k + 1}`)),
    );
    const ref = (i: number) => ({ url: `http://s.test/${i}`, s: i, loc: i % 2 === 0 ? loc(i) : nowhere.locs[(i - 1) / 2]! });
    const revisits = await warc(warcDir, 'camp', [
      ...Array.from({ length: 30 }, (_, i) => ({ ...exchange(`http://s.test/${i}`, 100 + i, `body ${i}`), of: ref(i) })),
      ...Array.from({ length: 10 }, (_, k) => ({ ...exchange(`http://x.test/copy-${3 * k}`, 200 + k, `body ${3 * k}`), of: ref(3 * k) })),
      // The URL is there, but with another payload (it changed): not this revisit's original.
      { ...exchange('http://x.test/changed', 300, 'body 0 changed'), of: { url: 'http://s.test/0', s: 0, loc: loc(0) } },
    ]);
    const files = [originals.file, revisits.file];
    const expected = [
      ...Array.from({ length: 15 }, (_, k) => `http://s.test/${2 * k + 1} -> http://s.test/${2 * k + 1}`),
      ...[3, 9, 15, 21, 27].map((i) => `http://x.test/copy-${i} -> http://s.test/${i}`),
      'http://x.test/changed -> http://s.test/0',
    ].sort();
    expect(await unresolved(files, dir)).toEqual(expected);
    // Runs of a few hundred bytes: both the index and the references are merged from many spilled runs.
    expect(await unresolved(files, dir, 300)).toEqual(expected);
    expect(fs.readdirSync(dir).filter((n) => n.startsWith('cdxj-'))).toEqual([]);

    // Where the missing ones are: the other folder's file holds them; the campaign's own files hold none that is missing.
    const needed = new Set<string>();
    const refs = new RevisitRefs(dir);
    await writeCdxj(files, path.join(dir, 'again.cdxj'), { onLine: refs.add });
    await refs.writeTo(path.join(dir, 'again.txt'));
    await refs.dispose();
    for await (const r of unresolvedRevisits(path.join(dir, 'again.cdxj'), path.join(dir, 'again.txt'))) needed.add(`${r.key} ${r.digest}`);
    const candidates = [...(await listWarcFiles(path.join(dir, 'elsewhere'))), ...files];
    expect(await filesHoldingOriginals(candidates, needed, new Set())).toEqual([nowhere.file]);
  });
});
