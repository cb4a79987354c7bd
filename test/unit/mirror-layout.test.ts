// The layout rules of outputs in a bucket (src/storage/mirror-layout.ts): which
// keys the mirror brings down and where, which seal and which replay index a
// reader takes, how publications are named, and the CLI's connection flags.
import { checkS3Flags, s3SettingsOf } from '../../src/cli/bucket-output';
import { UsageError } from '../../src/cli/usage-error';
import {
  cacheFolderName,
  isPublicationId,
  mirroredKey,
  newestCdxj,
  newestSeal,
  objectsToFetch,
  publicationId,
  publicationTime,
  publicationsOf,
  PUBLICATION_GRACE_MS,
  qaReportName,
  qaReportsOf,
  sealedCampaigns,
  sealedFolderFiles,
  splitObjectUrl,
  stalePublications,
} from '../../src/storage/mirror-layout';
import type { StoredObject } from '../../src/storage/object-store';

const obj = (key: string, size = 10): StoredObject => ({ key, size });
const OLD = '20260101T000000000Z-00000001';
const MID = '20260102T000000000Z-0000000a';
const NEW = '20260103T000000000Z-000000ff';

describe('publication ids', () => {
  test('are the UTC time to the millisecond and 8 hex digits, and sort by time whatever the random part', () => {
    const a = publicationId(new Date(Date.UTC(2026, 0, 31, 12, 0, 0, 123)), 'ffffffff');
    const b = publicationId(new Date(Date.UTC(2026, 0, 31, 12, 0, 0, 124)), '00000000');
    expect(a).toBe('20260131T120000123Z-ffffffff');
    expect(isPublicationId(a)).toBe(true);
    expect([b, a].sort()).toEqual([a, b]);
    // A later year, month or day sorts later too: fixed widths.
    expect(publicationId(new Date(Date.UTC(2027, 0, 1)), '00000000') > publicationId(new Date(Date.UTC(2026, 11, 31, 23, 59, 59, 999)), 'ffffffff')).toBe(true);
  });

  test('take exactly 8 hex digits, and nothing else is taken for one', () => {
    expect(() => publicationId(new Date(), 'xyz')).toThrow(/8 hex digits/);
    for (const s of ['2026-01-01', '20260131T120000123Z', '20260131T120000123Z-FFFFFFFF', '../x', '']) expect({ s, id: isPublicationId(s) }).toEqual({ s, id: false });
  });
});

describe('mirroredKey', () => {
  test('knows the raw areas of an output folder and the publications of sealed/', () => {
    expect(mirroredKey('warc/c-20260101000000000-h-1-0.warc.gz')).toEqual({ area: 'warc', name: 'c-20260101000000000-h-1-0.warc.gz' });
    expect(mirroredKey('warc/old.warc')).toEqual({ area: 'warc', name: 'old.warc' });
    expect(mirroredKey('index/index-1.jsonl')).toEqual({ area: 'index', name: 'index-1.jsonl' });
    expect(mirroredKey('datasets/default/dataset-1.jsonl')).toEqual({ area: 'datasets', dataset: 'default', name: 'dataset-1.jsonl' });
    expect(mirroredKey(`sealed/${NEW}/c.index.jsonl`)).toEqual({ area: 'sealed', id: NEW, name: 'c.index.jsonl' });
    expect(mirroredKey(`reports/${NEW}/c.qa-20260103T000000Z.json`)).toEqual({ area: 'reports', id: NEW, name: 'c.qa-20260103T000000Z.json' });
  });

  test('passes over anything else, and every key that would be no safe file path here', () => {
    for (const key of [
      'warc/notes.txt', // not a WARC
      'warc/sub/x.warc.gz', // deeper than the folder code reads
      'index/a/b.jsonl',
      'datasets/default',
      'sealed/c.index.jsonl', // a folder seal's layout, not a publication
      'sealed/not-an-id/c.index.jsonl',
      'reports/x/c.report.html',
      'index/../../etc/passwd',
      'index/..',
      'index/.',
      'index//x.jsonl',
      'index/a\\b.jsonl',
      'index/a\nb.jsonl',
      `index/${'x'.repeat(256)}`,
    ]) {
      expect({ key, mirrored: mirroredKey(key) }).toEqual({ key, mirrored: null });
    }
  });
});

describe('which seal and which replay index a reader takes', () => {
  const listing = [
    // The oldest seal of c, with its replay index.
    obj(`sealed/${OLD}/c.index.jsonl`, 1),
    obj(`sealed/${OLD}/c.dataset-default.jsonl`, 1),
    obj(`sealed/${OLD}/index.cdxj`, 1),
    obj(`sealed/${OLD}/c.seal.json`, 1),
    // A later `crawler cdxj` of c.
    obj(`sealed/${MID}/index.cdxj`, 2),
    obj(`sealed/${MID}/c.cdxj.json`, 2),
    // The newest seal of c, still being uploaded: no manifest yet.
    obj(`sealed/${NEW}/c.index.jsonl`, 3),
    obj(`sealed/${NEW}/index.cdxj`, 3),
    // Another campaign of the same location, sealed last of all.
    obj('sealed/20260104T000000000Z-00000002/d.index.jsonl', 4),
    obj('sealed/20260104T000000000Z-00000002/index.cdxj', 4),
    obj('sealed/20260104T000000000Z-00000002/d.seal.json', 4),
    // Not publications.
    obj('index/i.jsonl'),
    obj('sealed/loose.json'),
  ];
  const pubs = publicationsOf(listing);

  test('publications come newest first, each with its files by name', () => {
    expect(pubs.map((p) => p.id)).toEqual(['20260104T000000000Z-00000002', NEW, MID, OLD]);
    expect([...pubs[3].files.keys()].sort()).toEqual(['c.dataset-default.jsonl', 'c.index.jsonl', 'c.seal.json', 'index.cdxj']);
  });

  test("a campaign's newest seal is its newest publication with a manifest: one under way is passed over, another campaign's never taken", () => {
    expect(newestSeal(pubs, 'c')?.id).toBe(OLD);
    expect(newestSeal(pubs, 'd')?.id).toBe('20260104T000000000Z-00000002');
    expect(newestSeal(pubs, 'e')).toBeNull();
    expect(sealedCampaigns(pubs)).toEqual(['c', 'd']);
  });

  test("the replay index is the newest complete seal's or `crawler cdxj` run's of the campaign", () => {
    expect(newestCdxj(pubs, 'c')).toEqual(obj(`sealed/${MID}/index.cdxj`, 2));
    expect(newestCdxj(pubs, 'd')).toEqual(obj('sealed/20260104T000000000Z-00000002/index.cdxj', 4));
    // A seal written without the replay index (the summary leaves large WARCs to `crawler cdxj`) leaves the older one in use.
    const noCdxj = publicationsOf([...listing, obj('sealed/20260105T000000000Z-00000003/c.index.jsonl'), obj('sealed/20260105T000000000Z-00000003/c.seal.json')]);
    expect(newestSeal(noCdxj, 'c')?.id).toBe('20260105T000000000Z-00000003');
    expect(newestCdxj(noCdxj, 'c')?.key).toBe(`sealed/${MID}/index.cdxj`);
  });

  test("the files a seal places in a folder's sealed/ are the campaign's, not the replay index", () => {
    expect(
      sealedFolderFiles(pubs[3], 'c')
        .map((o) => o.key)
        .sort(),
    ).toEqual([`sealed/${OLD}/c.dataset-default.jsonl`, `sealed/${OLD}/c.index.jsonl`, `sealed/${OLD}/c.seal.json`]);
    // A campaign named "index" does not take index.cdxj for one of its own files.
    const idx = publicationsOf([obj(`sealed/${OLD}/index.index.jsonl`), obj(`sealed/${OLD}/index.cdxj`), obj(`sealed/${OLD}/index.seal.json`)]);
    expect(
      sealedFolderFiles(idx[0], 'index')
        .map((o) => o.key)
        .sort(),
    ).toEqual([`sealed/${OLD}/index.index.jsonl`, `sealed/${OLD}/index.seal.json`]);
  });
});

describe("which `crawler qa` reports a bucket's report reads", () => {
  test("the campaign's passes under reports/, newest pass first, each named as a folder's qa/ names it; reports, other campaigns and other names passed over", () => {
    const listing = [
      obj(`reports/${OLD}/${qaReportName('c', 'qa-20260101T000000Z.json')}`),
      obj(`reports/${NEW}/${qaReportName('c', 'qa-20260103T000000Z.json')}`),
      obj(`reports/${MID}/${qaReportName('c', 'qa-20260102T000000Z.json')}`),
      obj(`reports/${NEW}/c.report.html`),
      obj(`reports/${NEW}/${qaReportName('c-b', 'qa-20260104T000000Z.json')}`),
      obj(`reports/${NEW}/${qaReportName('b', 'qa-20260104T000000Z.json')}`),
      obj(`reports/${NEW}/c.qa-latest.json`),
      obj(`reports/not-an-id/${qaReportName('c', 'qa-20260105T000000Z.json')}`),
      obj(`sealed/${NEW}/${qaReportName('c', 'qa-20260105T000000Z.json')}`),
    ];
    expect(qaReportsOf(listing, 'c').map((r) => [r.object.key, r.file])).toEqual([
      [`reports/${NEW}/c.qa-20260103T000000Z.json`, 'qa-20260103T000000Z.json'],
      [`reports/${MID}/c.qa-20260102T000000Z.json`, 'qa-20260102T000000Z.json'],
      [`reports/${OLD}/c.qa-20260101T000000Z.json`, 'qa-20260101T000000Z.json'],
    ]);
    // `c-b` begins with `c`, yet is another campaign: its pass is its own.
    expect(qaReportsOf(listing, 'c-b').map((r) => r.file)).toEqual(['qa-20260104T000000Z.json']);
    expect(qaReportsOf(listing, 'd')).toEqual([]);
  });
});

describe('which publications a newer one supersedes', () => {
  const day = (d: number, rand: string) => `202601${String(d).padStart(2, '0')}T000000000Z-${rand}`;
  const seal = (id: string, c = 'c') => [obj(`sealed/${id}/${c}.index.jsonl`), obj(`sealed/${id}/index.cdxj`), obj(`sealed/${id}/${c}.seal.json`)];
  const cdxj = (id: string, c = 'c') => [obj(`sealed/${id}/index.cdxj`), obj(`sealed/${id}/${c}.cdxj.json`)];
  const listing = [
    ...seal(day(1, '00000001')),
    ...seal(day(2, '00000002')),
    ...cdxj(day(3, '00000003')),
    ...seal(day(4, '00000004')),
    ...cdxj(day(5, '00000005')),
    // An upload that died: no manifest, so nobody's.
    obj(`sealed/${day(6, '00000006')}/c.index.jsonl`),
    // Another campaign's, older than all.
    ...seal(day(1, '0000000d'), 'd'),
  ];
  const pubs = publicationsOf(listing);
  const ids = (ps: { id: string }[]) => ps.map((p) => p.id);

  test("the campaign's two newest seals and two newest replay indexes stay; the rest of its own go", () => {
    const later = publicationTime(day(6, '00000006')) + PUBLICATION_GRACE_MS;
    // Seals: days 4 and 2 stay. Replay indexes: days 5 and 4 stay. So days 3 and 1 go; the broken upload and d's seal stay.
    expect(ids(stalePublications(pubs, 'c', later))).toEqual([day(3, '00000003'), day(1, '00000001')]);
    expect(ids(stalePublications(pubs, 'd', later))).toEqual([]);
  });

  test('nothing younger than the grace time goes, whatever superseded it', () => {
    const soon = publicationTime(day(3, '00000003')) + PUBLICATION_GRACE_MS - 1;
    expect(ids(stalePublications(pubs, 'c', soon))).toEqual([day(1, '00000001')]);
    expect(publicationTime('20260131T120000123Z-1a2b3c4d')).toBe(Date.UTC(2026, 0, 31, 12, 0, 0, 123));
  });
});

test('the cache folder of a location: readable, safe, and distinct for locations that read alike', () => {
  const a = cacheFolderName('s3://bucket/crawls/x/', 'a'.repeat(64));
  const b = cacheFolderName('s3://bucket/crawls-x/', 'b'.repeat(64));
  expect(a).toBe('bucket-crawls-x-aaaaaaaaaaaa');
  expect(b).toBe('bucket-crawls-x-bbbbbbbbbbbb');
  expect(cacheFolderName('s3://b/../..', 'c'.repeat(64))).toMatch(/^[A-Za-z0-9._-]+$/);
  expect(cacheFolderName('s3://b/../..', 'c'.repeat(64))).not.toMatch(/^\./);
  expect(cacheFolderName(`s3://bucket/${'p/'.repeat(100)}`, 'd'.repeat(64)).length).toBeLessThanOrEqual(60 + 13);
});

test('only objects missing from the cache, or there at another size, are downloaded', () => {
  const local = new Map<string, number>([
    ['index/a.jsonl', 10],
    ['index/b.jsonl', 7], // cut short, or another object once
  ]);
  const listing = [obj('index/a.jsonl', 10), obj('index/b.jsonl', 10), obj('index/c.jsonl', 10)];
  expect(objectsToFetch(listing, (k) => local.get(k) ?? null).map((o) => o.key)).toEqual(['index/b.jsonl', 'index/c.jsonl']);
});

test('an output file in a bucket: its location and key, or null when it names no file', () => {
  expect(splitObjectUrl('s3://bucket/exports/c.wacz')).toEqual({ location: 's3://bucket/exports', key: 'c.wacz' });
  expect(splitObjectUrl('s3://bucket/c.wacz')).toEqual({ location: 's3://bucket/', key: 'c.wacz' });
  expect(splitObjectUrl('s3://bucket/a//b/c.wacz')).toEqual({ location: 's3://bucket/a/b', key: 'c.wacz' });
  for (const url of ['s3://bucket/', 's3://bucket/dir/', 's3://bucket', 'http://x/y.wacz', 's3://bucket/..'])
    expect({ url, split: splitObjectUrl(url) }).toEqual({ url, split: null });
});

describe('connection flags of the reading commands', () => {
  test('are settings only when given, checked as output.s3 is', () => {
    expect(s3SettingsOf({})).toBeNull();
    expect(s3SettingsOf({ s3Endpoint: 'http://127.0.0.1:8333', s3PathStyle: true })).toEqual({ endpoint: 'http://127.0.0.1:8333', region: null, pathStyle: true });
    expect(s3SettingsOf({ s3Region: 'eu-west-1' })).toEqual({ endpoint: null, region: 'eu-west-1', pathStyle: false });
    expect(() => s3SettingsOf({ s3Endpoint: 'ftp://x' })).toThrow(UsageError);
    // A credential in the endpoint is refused without being echoed.
    const err = (() => {
      try {
        s3SettingsOf({ s3Endpoint: 'http://AKID:SECRETVALUE@127.0.0.1:8333' });
      } catch (e) {
        return e as Error;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(UsageError);
    expect(err!.message).not.toContain('SECRETVALUE');
    expect(() => s3SettingsOf({ s3Region: 'no region!' })).toThrow(/--s3-region/);
  });

  test('are refused when no location of the command is in a bucket', () => {
    expect(() => checkS3Flags({ s3PathStyle: true }, 'crawl-output/c', undefined)).toThrow(/for a location in a bucket/);
    expect(() => checkS3Flags({ s3PathStyle: true }, 'crawl-output/c', 's3://b/x.wacz')).not.toThrow();
    expect(() => checkS3Flags({ s3PathStyle: true }, 's3://b/p')).not.toThrow();
    expect(() => checkS3Flags({}, 'crawl-output/c')).not.toThrow();
  });
});
