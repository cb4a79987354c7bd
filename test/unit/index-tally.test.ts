// The index read back as one outcome per URL and counted like the frontier's
// commit counts it: what a campaign's summary says after a Redis restart.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { countedAs, readIndexLatest, tallyIndex } from '../../src/storage/index-tally';
import type { IndexEntry, IndexOutcome } from '../../src/storage/index-writer';
import { StorageError } from '../../src/storage/storage-error';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
function dirWith(files: Record<string, string>): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'index-tally-'));
  dirs.push(d);
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(d, name), text);
  return d;
}
const line = (url: string, outcome: string, at: number, bytes = 10, kind?: IndexEntry['kind']): string =>
  JSON.stringify({
    url,
    fp: `fp:${url}`,
    host: new URL(url).host,
    outcome: outcome as IndexOutcome,
    bytes,
    ...(kind ? { kind } : {}),
    fetchedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, at)).toISOString(),
  } satisfies Partial<IndexEntry>) + '\n';

test('each outcome is counted as the commit in activities/page.ts counts it', () => {
  for (const o of ['fetched', 'duplicate', 'redirect', 'skipped-content-type', 'not-modified']) expect([o, countedAs(o)]).toEqual([o, 'fetched']);
  for (const o of ['error', 'http-error', 'refused', 'gone', 'an-outcome-of-another-version']) expect([o, countedAs(o)]).toEqual([o, 'failed']);
  for (const o of ['sitemap', 'robots-disallowed', 'robots-unavailable', 'host-budget-exhausted', 'budget-exhausted']) expect([o, countedAs(o)]).toEqual([o, 'skipped']);
});

test('a URL fetched again (in another worker’s file) counts once, with its latest line', async () => {
  const d = dirWith({
    'a.jsonl': line('http://a.test/1', 'fetched', 1, 100) + line('http://a.test/2', 'error', 2, 0) + line('http://b.test/', 'sitemap', 3, 5),
    // Worker b fetched /2 again later, and /1 again with an earlier time stamp (its line was written later, its fetch started earlier).
    'b.jsonl': line('http://a.test/2', 'fetched', 9, 50) + line('http://a.test/1', 'http-error', 0, 7),
  });
  const latest = await readIndexLatest(d);
  expect([...latest.values()].map((e) => [e.url, e.outcome]).sort()).toEqual([
    ['http://a.test/1', 'fetched'],
    ['http://a.test/2', 'fetched'],
    ['http://b.test/', 'sitemap'],
  ]);
  expect(await tallyIndex(d)).toEqual({ urls: 3, fetched: 2, failed: 0, skipped: 1, embeds: 0, embedsFailed: 0, embedsSkipped: 0, bytes: 155, hosts: 2 });
});

test('a last line cut short by a kill is skipped; a bad line elsewhere is an error', async () => {
  const cut = dirWith({ 'a.jsonl': line('http://a.test/1', 'fetched', 1) + '{"url":"http://a.test/2","fp":"x","outc' });
  expect((await tallyIndex(cut)).urls).toBe(1);
  const bad = dirWith({ 'a.jsonl': 'not json\n' + line('http://a.test/1', 'fetched', 1) });
  await expect(readIndexLatest(bad)).rejects.toBeInstanceOf(StorageError);
  // No index yet: nothing to count.
  expect(await tallyIndex(path.join(cut, 'missing'))).toEqual({ urls: 0, fetched: 0, failed: 0, skipped: 0, embeds: 0, embedsFailed: 0, embedsSkipped: 0, bytes: 0, hosts: 0 });
});

test('embeds are counted apart from pages, by the same table', async () => {
  const d = dirWith({
    'a.jsonl':
      line('http://a.test/', 'fetched', 1, 100) +
      line('http://a.test/s.css', 'fetched', 2, 20, 'embed') +
      line('http://cdn.test/x.png', 'http-error', 3, 0, 'embed') +
      line('http://cdn.test/private.png', 'robots-disallowed', 4, 0, 'embed') +
      line('http://a.test/feed.xml', 'feed', 5, 30, 'feed'),
  });
  expect(await tallyIndex(d)).toEqual({ urls: 5, fetched: 1, failed: 0, skipped: 1, embeds: 1, embedsFailed: 1, embedsSkipped: 1, bytes: 150, hosts: 2 });
  expect(countedAs('fetched', 'embed')).toBe('embeds');
  expect(countedAs('embed-budget-exhausted', 'embed')).toBe('embedsSkipped');
});
