// The store stage: a response into the WARC, in full or as a revisit of a
// payload stored before, and the handler's items after it. The WARC writer,
// the payload index and the dataset are fakes recording what they were asked.
import { storeStage, type StoreDeps, type StoreInput } from '../../activities/pipeline/store-stage';
import type { PayloadClaim, PayloadKey } from '../../src/dedup/payload-index';
import type { DatasetLine } from '../../src/storage/dataset-writer';
import { responseRecordId, type RevisitOf, type WarcExchange } from '../../src/storage/warc-writer';
import { fakeResponse } from '../support/fake-response';

const PAGE = 'https://a.test/page';

function setup(claim: PayloadClaim = { kind: 'original' }, opts: { failWrite?: boolean; dedup?: boolean } = {}) {
  const log: string[] = [];
  const written: WarcExchange[] = [];
  const lines: DatasetLine[] = [];
  const confirmed: [PayloadKey, RevisitOf, string | undefined][] = [];
  const deps: StoreDeps = {
    warc: {
      writeExchange: async (ex) => {
        if (opts.failWrite) throw new Error('disk full');
        written.push(ex);
        log.push('warc');
        return { type: ex.revisit ? 'revisit' : 'response', file: 'a.warc.gz', offset: 10, length: 20, recordId: '<urn:uuid:1>', payloadDigest: 'sha1:P', blockDigest: 'sha1:B' };
      },
    },
    payloads:
      opts.dedup === false
        ? null
        : {
            claim: async () => (log.push('claim'), claim),
            awaitStored: async () => (log.push('await'), claim),
            confirm: async (digest, stored, attemptId) => void (log.push('confirm'), confirmed.push([digest, stored, attemptId])),
            abandon: async () => void log.push('abandon'),
          },
    dataset: async () => ({ appendAll: async (l: DatasetLine[]) => void lines.push(...l) }),
    signal: new AbortController().signal,
  };
  const input: StoreInput = {
    url: PAGE,
    fp: 'fp1',
    attemptId: 'att1',
    campaignId: 'c',
    label: null,
    response: fakeResponse(PAGE, { html: '<p>hello</p>' }),
    candidates: [],
    hops: 'LE',
    referrer: 'https://a.test/',
    firstLook: false,
    items: [],
  };
  return { deps, input, log, written, lines, confirmed };
}

test('a payload claimed as the original is written in full, then offered to later copies', async () => {
  const s = setup();
  const stored = await storeStage(s.input, s.deps);
  expect(s.log).toEqual(['claim', 'warc', 'confirm']);
  expect(stored).toMatchObject({ loc: { file: 'a.warc.gz', offset: 10 }, revisitOf: null, digest: expect.stringMatching(/^sha1:/) });
  expect(s.written[0]).toMatchObject({ url: PAGE, response: { status: 200 }, metadata: { fetchTimeMs: '25', hopsFromSeed: 'LE', via: 'https://a.test/' } });
  // The original's record ID follows from its URL, date and attempt, which the payload index is given to keep instead.
  const date = new Date(s.input.response.startedAt).toISOString();
  expect(s.written[0].recordId).toBe(responseRecordId(PAGE, date, 'att1'));
  expect(s.confirmed).toEqual([[stored.digest, { uri: PAGE, date, recordId: '<urn:uuid:1>' }, 'att1']]);
});

test('a payload stored before becomes a revisit record referring to it', async () => {
  const of = { uri: 'https://a.test/first', date: '2026-01-01T00:00:00Z', recordId: '<urn:uuid:0>' };
  const s = setup({ kind: 'revisit', of });
  expect(await storeStage(s.input, s.deps)).toMatchObject({ revisitOf: of });
  expect(s.written[0].revisit).toEqual(of);
  // Not an original: its own record ID is a random one.
  expect(s.written[0].recordId).toBeUndefined();
});

test("a first look the content index settled needs no claim of its own; its exact duplicate waits for the original's copy", async () => {
  const first = setup();
  await storeStage({ ...first.input, firstLook: true }, first.deps);
  expect(first.log).toEqual(['warc', 'confirm']);
  const dup = setup();
  await storeStage({ ...dup.input, firstLook: true, duplicateOf: { url: 'https://a.test/first', kind: 'exact', distance: 0 } }, dup.deps);
  expect(dup.log[0]).toBe('await');
});

test("a retry of a page the content index found unique stores its own copy, never a revisit of its earlier attempt's (which may be lost)", async () => {
  const of = { uri: PAGE, date: '2026-01-01T00:00:00Z', recordId: '<urn:uuid:lost>' };
  const retry = setup({ kind: 'revisit', of });
  const r = await storeStage({ ...retry.input, firstLook: false, ownCopy: true }, retry.deps);
  expect(r.revisitOf).toBeNull();
  expect(retry.written[0].revisit).toBeUndefined();
  expect(retry.log).toEqual(['warc', 'confirm']);
  // An exact copy of another URL on a retry still claims (and refers to that URL's copy).
  const dup = setup({ kind: 'revisit', of: { ...of, uri: 'https://a.test/first' } });
  await storeStage({ ...dup.input, firstLook: false, ownCopy: true, duplicateOf: { url: 'https://a.test/first', kind: 'exact', distance: 0 } }, dup.deps);
  expect(dup.log[0]).toBe('claim');
});

test('an error page is stored in full with its URL, never offered as a payload', async () => {
  const s = setup();
  await storeStage({ ...s.input, response: fakeResponse(PAGE, { status: 404, html: 'nope' }) }, s.deps);
  expect(s.log).toEqual(['warc']);
});

test('a WARC write that fails gives the payload claim back', async () => {
  const s = setup({ kind: 'original' }, { failWrite: true });
  await expect(storeStage(s.input, s.deps)).rejects.toThrow('disk full');
  expect(s.log).toEqual(['claim', 'abandon']);
});

test("the body's content hash goes with its digest to the payload index, which may keep an HTML page's copy with its exact entry", async () => {
  const s = setup();
  const stored = await storeStage({ ...s.input, firstLook: true, contentHash: 'sha256:00ff' }, s.deps);
  expect(s.confirmed.map((c) => c[0])).toEqual([{ digest: stored.digest, contentHash: 'sha256:00ff' }]);
});

test("the handler's items are written after the record, tagged with the attempt and the record", async () => {
  const s = setup({ kind: 'original' }, { dedup: false });
  await storeStage({ ...s.input, items: [{ title: 'x' }], label: 'detail' }, s.deps);
  expect(s.lines).toEqual([
    {
      url: PAGE,
      fp: 'fp1',
      attemptId: 'att1',
      campaignId: 'c',
      label: 'detail',
      fetchedAt: '2026-01-01T00:00:00.000Z',
      warc: { file: 'a.warc.gz', offset: 10 },
      item: { title: 'x' },
    },
  ]);
});
