import { resolveCampaignSettings, type RevisitSettings } from '../../src/config/campaign';
import { changed, conditionalHeaders, firstInterval, hexDistance, planNotRequested, planRevisit, sitemapHintMs, type RevisitMeta } from '../../src/revisit/adapt';

const S: RevisitSettings = { enabled: true, minMs: 1_000, maxMs: 16_000, factor: 2, minChangeDistance: 3, goneAfter: 3 };
const ref = { u: 'http://a.test/', t: '2026-01-01T00:00:00.000Z', id: '<urn:uuid:1>' };
const full = (digest: string, extra = {}) => ({ status: 200, digest, simhash: null, etag: '"e"', lastModified: null, ref, ...extra });

test('the first interval is the geometric middle of the bounds, or a hint within them', () => {
  expect(firstInterval(S)).toBe(4_000);
  expect(firstInterval({ minMs: 3_600_000, maxMs: 30 * 86_400_000 })).toBe(Math.round(Math.sqrt(3_600_000 * 30 * 86_400_000)));
  expect(firstInterval(S, 500)).toBe(1_000);
  expect(firstInterval(S, 60_000)).toBe(16_000);
});

test('a change divides the interval by the factor, no change multiplies it, both within the bounds', () => {
  const first = planRevisit(null, full('sha1:A'), S);
  expect(first).toMatchObject({ verdict: 'new', intervalMs: 4_000 });
  expect(first.meta).toMatchObject({ i: 4_000, d: 'sha1:A', e: '"e"', r: ref, v: 1 });

  const same = planRevisit(first.meta, full('sha1:A'), S);
  expect(same).toMatchObject({ verdict: 'unchanged', intervalMs: 8_000 });
  const longest = planRevisit(planRevisit(same.meta, full('sha1:A'), S).meta, full('sha1:A'), S);
  expect(longest.intervalMs).toBe(16_000);

  const change = planRevisit(first.meta, full('sha1:B'), S);
  expect(change).toMatchObject({ verdict: 'changed', intervalMs: 2_000 });
  expect(change.meta).toMatchObject({ d: 'sha1:B', c: 1, v: 2 });
  const shortest = planRevisit(planRevisit(change.meta, full('sha1:C'), S).meta, full('sha1:D'), S);
  expect(shortest.intervalMs).toBe(1_000);
});

test('a 304 to a conditional request is no change, keeps the stored capture and digest', () => {
  const first = planRevisit(null, full('sha1:A', { lastModified: 'Tue, 01 Sep 2026 10:00:00 GMT' }), S).meta!;
  expect(conditionalHeaders(first)).toEqual({ 'if-none-match': '"e"', 'if-modified-since': 'Tue, 01 Sep 2026 10:00:00 GMT' });
  const nm = planRevisit(first, { status: 304, etag: '"e"' }, S);
  expect(nm).toMatchObject({ verdict: 'unchanged', intervalMs: 8_000 });
  expect(nm.meta).toMatchObject({ d: 'sha1:A', r: ref });
  // Nothing to refer a 304 to: no conditional request.
  expect(conditionalHeaders({ i: 1, e: '"e"' })).toEqual({});
  expect(conditionalHeaders(null)).toEqual({});
});

test('boilerplate churn within minChangeDistance bits of SimHash is no change; beyond it, or without SimHash, the digest decides', () => {
  const prev: RevisitMeta = { i: 4_000, d: 'sha1:A', s: '00000000000000ff', r: ref };
  expect(hexDistance('00000000000000ff', '000000000000000f')).toBe(4);
  expect(changed(prev, { status: 200, digest: 'sha1:B', simhash: '00000000000000fe' }, 3)).toBe(false);
  expect(changed(prev, { status: 200, digest: 'sha1:B', simhash: '000000000000000f' }, 3)).toBe(true);
  expect(changed(prev, { status: 200, digest: 'sha1:B', simhash: null }, 3)).toBe(true);
  expect(changed(prev, { status: 200, digest: 'sha1:B', simhash: '00000000000000fe' }, 0)).toBe(true);
  expect(changed(prev, { status: 200, digest: 'sha1:A', simhash: 'ffffffffffffffff' }, 3)).toBe(false);
});

test('404/410 are retried at the shortest interval, then the URL leaves the schedule as gone; a page back in between resets the count', () => {
  const first = planRevisit(null, full('sha1:A'), S).meta!;
  const m1 = planRevisit(first, { status: 404 }, S);
  expect(m1).toMatchObject({ verdict: 'missing', intervalMs: 1_000 });
  expect(m1.meta).toMatchObject({ g: 1, i: 4_000, d: 'sha1:A' });
  const m2 = planRevisit(m1.meta, { status: 410 }, S);
  expect(m2.meta?.g).toBe(2);
  expect(planRevisit(m2.meta, { status: 404 }, S)).toEqual({ verdict: 'gone', intervalMs: null, meta: null });
  const back = planRevisit(m2.meta, full('sha1:A'), S);
  expect(back.verdict).toBe('unchanged');
  expect(back.meta?.g).toBeUndefined();
});

test('a redirect, another error or no response keeps the interval', () => {
  const first = planRevisit(null, full('sha1:A'), S).meta!;
  expect(planRevisit(first, { status: 301 }, S)).toMatchObject({ verdict: 'kept', intervalMs: 4_000 });
  expect(planRevisit(first, { status: null }, S)).toMatchObject({ verdict: 'kept', intervalMs: 4_000 });
  expect(planRevisit(null, { status: 500 }, S)).toMatchObject({ verdict: 'kept', intervalMs: 4_000 });
});

test('revisit settings: defaults, and every bad value named', () => {
  const base = { seeds: ['http://a.test/'] };
  expect(resolveCampaignSettings(base, 'c').revisit).toEqual({ enabled: false, minMs: 3_600_000, maxMs: 2_592_000_000, factor: 1.5, minChangeDistance: 3, goneAfter: 3 });
  expect(resolveCampaignSettings({ ...base, revisit: { minMs: 1_000, maxMs: 8_000 } }, 'c').revisit).toMatchObject({ enabled: true, minMs: 1_000, maxMs: 8_000 });
  // Every problem at once, in any order.
  const bad = () => resolveCampaignSettings({ ...base, revisit: { minMs: 9_000, maxMs: 8_000, factor: 1, goneAfter: 0 } }, 'c');
  for (const problem of [/revisit.goneAfter must be at least 1/, /revisit.maxMs must be ≥ revisit.minMs/, /revisit.factor must be a number above 1/]) expect(bad).toThrow(problem);
});

test('a sitemap seeds the first interval: changefreq first, else the age of lastmod, within the bounds', () => {
  const bounds = { minMs: 3_600_000, maxMs: 30 * 86_400_000 };
  const now = Date.parse('2026-11-24T00:00:00Z');
  expect(sitemapHintMs({ changefreq: 'daily', lastmod: '2020-01-01' }, now, bounds)).toBe(86_400_000);
  expect(sitemapHintMs({ changefreq: 'always' }, now, bounds)).toBe(3_600_000);
  expect(sitemapHintMs({ changefreq: 'never' }, now, bounds)).toBe(30 * 86_400_000);
  expect(sitemapHintMs({ changefreq: 'yearly' }, now, bounds)).toBe(30 * 86_400_000);
  expect(sitemapHintMs({ lastmod: '2026-11-21T00:00:00Z' }, now, bounds)).toBe(3 * 86_400_000);
  expect(sitemapHintMs({ lastmod: '2026-11-23T23:50:00Z' }, now, bounds)).toBe(3_600_000);
  // A lastmod in the future, or none at all: no hint (the geometric middle applies).
  expect(sitemapHintMs({ lastmod: '2027-01-01' }, now, bounds)).toBeNull();
  expect(sitemapHintMs({}, now, bounds)).toBeNull();
  // A hint stored before the first visit is the interval that visit schedules.
  expect(planRevisit({ i: 86_400_000 }, full('sha1:A'), { ...S, ...bounds })).toMatchObject({ verdict: 'new', intervalMs: 86_400_000 });
});

test('a URL due but not requested (robots.txt, a refused address) stays at a longer interval each time, no visit counted; one never visited is not scheduled', () => {
  const prev: RevisitMeta = { i: 4_000, v: 3, d: 'abc' };
  expect(planNotRequested(prev, S)).toEqual({ verdict: 'not-requested', intervalMs: 8_000, meta: { i: 8_000, v: 3, d: 'abc' } });
  expect(planNotRequested({ ...prev, i: 12_000 }, S)!.intervalMs).toBe(16_000);
  expect(planNotRequested(null, S)).toBeNull();
});
