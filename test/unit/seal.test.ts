import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { urlFingerprint } from '../../src/url/fingerprint';
import { bucketOf, readSealManifest, sealCampaignIndex, sealedPaths } from '../../src/storage/seal';

// A test here seals an index of many thousand lines several times: seconds of CPU that a loaded machine stretches past Jest's 5 s.
jest.setTimeout(60_000);

const tmpDirs: string[] = [];
afterAll(() => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A raw line as a page attempt writes it (only the fields sealing reads matter, plus a marker). */
function line(campaignId: string, host: string, i: number, attemptId: string | undefined, extra: Record<string, unknown> = {}): string {
  const url = `http://${host}/p/${i}`;
  return JSON.stringify({ url, fp: urlFingerprint(url), attemptId, host, campaignId, outcome: 'fetched', bytes: 100 + i, ...extra });
}

describe('sealCampaignIndex', () => {
  // Two workers' raw files: URLs 0..59 on two hosts. Worker A wrote a line
  // for every URL; worker B wrote a second line for every third URL (a
  // retry after A "died"), and for those B's attempt is the one whose
  // commit counted. URL 7 has lines but was never committed (in flight
  // when the campaign was cancelled); URL 8's committed line is missing.
  // Another campaign's lines share the folder; A's last line is cut off.
  function setUp() {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'seal-test-'));
    tmpDirs.push(out);
    fs.mkdirSync(path.join(out, 'index'));
    const committed = new Map<string, string>();
    const a: string[] = [];
    const b: string[] = [];
    for (let i = 0; i < 60; i++) {
      const host = i % 2 ? 'a.test' : 'b.test:8080';
      const fp = urlFingerprint(`http://${host}/p/${i}`);
      a.push(line('c1', host, i, `A${i}`, i % 5 === 0 ? { revisit: { url: 'http://x.test/', date: '2026-01-01T00:00:00.000Z', recordId: null } } : {}));
      if (i % 3 === 0) {
        b.push(line('c1', host, i, `B${i}`));
        committed.set(`${host} ${fp}`, `B${i}`);
      } else if (i === 8) {
        committed.set(`${host} ${fp}`, 'lost-line');
      } else if (i !== 7) {
        committed.set(`${host} ${fp}`, `A${i}`);
      }
      a.push(line('other', host, i, `A${i}`));
    }
    a.push(line('c1', 'a.test', 999, 'Z').slice(0, 30));
    fs.writeFileSync(path.join(out, 'index', 'index-1.jsonl'), `${a.join('\n')}`);
    fs.writeFileSync(path.join(out, 'index', 'index-2.jsonl'), `${b.join('\n')}\n`);
    const lookups: number[] = [];
    const lookup = async (host: string, fps: string[]) => {
      lookups.push(fps.length);
      return fps.map((fp) => committed.get(`${host} ${fp}`) ?? null);
    };
    return { out, lookup, lookups, committedCount: committed.size };
  }

  it('keeps exactly the committed line of each URL, in fingerprint order, whatever the bucket count', async () => {
    const { out, lookup, committedCount } = setUp();
    const one = await sealCampaignIndex({ outputDir: out, campaignId: 'c1', committed: lookup, expectedLines: committedCount });
    const text1 = fs.readFileSync(one.file, 'utf8');
    // 64-byte buckets: one line or so each, the external path at its most split.
    const many = await sealCampaignIndex({ outputDir: out, campaignId: 'c1', committed: lookup, expectedLines: committedCount, bucketBytes: 64 });
    expect(one.buckets).toBe(1);
    expect(many.buckets).toBeGreaterThan(50);
    expect(fs.readFileSync(many.file, 'utf8')).toBe(text1);

    const sealed = text1
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { url: string; fp: string; attemptId: string; campaignId: string });
    // 60 URLs: 7 never committed, 8 committed without its line.
    expect(sealed).toHaveLength(58);
    expect(new Set(sealed.map((e) => e.url)).size).toBe(58);
    expect(sealed.every((e) => e.campaignId === 'c1')).toBe(true);
    for (const e of sealed) {
      const i = Number(e.url.split('/').pop());
      expect(e.attemptId).toBe(i % 3 === 0 ? `B${i}` : `A${i}`);
    }
    expect(sealed.map((e) => e.fp)).toEqual([...sealed.map((e) => e.fp)].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
    expect(sealed.find((e) => e.url.endsWith('/p/7'))).toBeUndefined();

    // 60 + 20 retries = 80 raw lines of c1; 22 left out (20 lost attempts, 2 of URL 7 and 8).
    expect(one).toMatchObject({ lines: 58, rawLines: 80, dropped: 22, unreadable: 1, missing: 1 });
    // Revisits among the committed lines: A's lines of multiples of 5, but for 0, 15, 30, 45, won by B.
    expect(one.revisits).toEqual({ records: 8, bytesSaved: [5, 10, 20, 25, 35, 40, 50, 55].reduce((s, i) => s + 100 + i, 0) });
    const manifest = await readSealManifest(out, 'c1');
    expect(manifest).toMatchObject({ lines: 58, missing: 1, file: sealedPaths(out, 'c1').index });
    // Nothing left behind but the index and its manifest.
    expect(fs.readdirSync(path.join(out, 'sealed')).sort()).toEqual(['c1.index.jsonl', 'c1.seal.json']);
  });

  it('asks Redis in batches per host, not once per URL', async () => {
    const { out, lookup, lookups } = setUp();
    await sealCampaignIndex({ outputDir: out, campaignId: 'c1', committed: lookup });
    expect(lookups).toHaveLength(2);
    expect(lookups.reduce((s, n) => s + n, 0)).toBe(60);
  });

  it("in a bucket, leaves out a committed line whose WARC record is not there, and names the kept lines' fingerprints per host", async () => {
    const { out, lookup, committedCount } = setUp();
    // Every line's record in WARC file w<i mod 4>, at offset 1000·i; file w1 was lost, w2 was cut back to its first 20 000 bytes.
    const recordOf = (l: string) => {
      const i = Number((JSON.parse(l) as { url: string }).url.split('/').pop());
      return { file: `w${i % 4}`, offset: 1000 * i, length: 500 };
    };
    const rawDir = path.join(out, 'index');
    for (const f of fs.readdirSync(rawDir)) {
      const lines = fs.readFileSync(path.join(rawDir, f), 'utf8').split('\n');
      const withWarc = lines.map((l) => {
        try {
          return JSON.stringify({ ...(JSON.parse(l) as object), warc: recordOf(l) });
        } catch {
          return l;
        }
      });
      fs.writeFileSync(path.join(rawDir, f), withWarc.join('\n'));
    }
    const sizes = new Map([
      ['w0', 1e9],
      ['w2', 20_000],
      ['w3', 1e9],
    ]);
    const kept = new Map<string, string[]>();
    const r = await sealCampaignIndex({
      outputDir: out,
      campaignId: 'c1',
      committed: lookup,
      expectedLines: committedCount,
      recordThere: (w) => w.offset + w.length <= (sizes.get(w.file) ?? -1),
      onSealed: async (host, fps) => void kept.set(host, [...(kept.get(host) ?? []), ...fps]),
    });
    const sealed = fs
      .readFileSync(r.file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { url: string; fp: string; host: string });
    const there = (i: number) => i % 4 === 0 || i % 4 === 3 || (i % 4 === 2 && 1000 * i + 500 <= 20_000);
    const expected = Array.from({ length: 60 }, (_, i) => i).filter((i) => i !== 7 && i !== 8 && there(i));
    expect(sealed.map((e) => Number(e.url.split('/').pop())).sort((x, y) => x - y)).toEqual(expected);
    // The others count as missing: committed without a line the bucket backs.
    expect(r.missing).toBe(committedCount - expected.length);
    const keptFps = [...kept.values()].flat().sort();
    expect(keptFps).toEqual(sealed.map((e) => e.fp).sort());
    for (const e of sealed) expect(kept.get(e.host)).toContain(e.fp);
  });

  it('seals a campaign that stored nothing as an empty index', async () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'seal-test-'));
    tmpDirs.push(out);
    const r = await sealCampaignIndex({ outputDir: out, campaignId: 'c1', committed: async (_h, fps) => fps.map(() => null), expectedLines: 0 });
    expect(r).toMatchObject({ lines: 0, rawLines: 0, missing: 0 });
    expect(fs.readFileSync(r.file, 'utf8')).toBe('');
  });
});

describe('bucketOf', () => {
  it('splits fingerprints into ranges in byte order', () => {
    const fps = Array.from({ length: 2000 }, (_, i) => urlFingerprint(`http://h/${i}`)).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    for (const n of [1, 7, 64, 4096]) {
      const bs = fps.map((fp) => bucketOf(fp, n));
      expect(bs).toEqual([...bs].sort((x, y) => x - y));
      expect(Math.max(...bs)).toBeLessThan(n);
    }
  });
});
