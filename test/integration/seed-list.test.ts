// A campaign seeded from a list: read by an activity in batches straight
// into the frontiers (never through workflow input or history), the list's
// hosts defining a same-host scope, bad lines recorded as problems.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createHarness, fetchedUrls, launch, outputOf, pageRequests, type Harness } from '../support/harness';
import { generateSites } from '../web/test-web';

jest.setTimeout(240_000);

const LISTED = 24;
let h: Harness;
beforeAll(async () => {
  h = await createHarness('seed-list', { workers: 1 });
  // Listed hosts link to each other and to one host the list does not name.
  for (const spec of generateSites({ count: LISTED, pages: 3, fanOut: 2, crossPerPage: 1, hostPattern: (i) => `s${i}.list.test`, seed: 7 })) h.web.addSite(spec);
  h.web.addSite({ host: 'unlisted.list.test', pages: 3, fanOut: 2 });
});
afterAll(() => h?.close());

test('a gzip seed list of many hosts is crawled in full, its hosts are the scope, bad lines are problems', async () => {
  const hosts = Array.from({ length: LISTED }, (_, i) => `s${i}.list.test`);
  const lines = ['# the seed list', '', ...hosts.map((x) => h.web.url(x, '/')), 'not a url', 'ftp://s0.list.test/'];
  const file = path.join(h.outDir, 'seeds.txt.gz');
  fs.writeFileSync(file, zlib.gzipSync(lines.join('\n')));
  const handle = await launch(h, { seedsFile: file, scope: { mode: 'same-host' }, politeness: { minDelayMs: 50 }, sitemaps: 'off' });
  // The list never enters the workflow's input.
  const started = (await handle.fetchHistory()).events![0].workflowExecutionStartedEventAttributes!.input!.payloads![0].data!;
  expect(Buffer.from(started).toString()).not.toContain(h.web.url('s1.list.test', '/'));
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.hosts).toBe(LISTED);
  const expected = new Set(hosts.flatMap((x) => [...h.web.expectedPages([h.web.url(x, '/')], { hosts: [x] })]));
  expect(new Set(fetchedUrls(await outputOf(h, handle.workflowId).index()))).toEqual(expected);
  // Linked from listed hosts, but not on the list: out of scope.
  expect(pageRequests(h.web.requests()).filter((r) => r.host === 'unlisted.list.test')).toEqual([]);
  expect(result.problems).toEqual(expect.arrayContaining([expect.stringMatching(/^seed not a url: /), expect.stringMatching(/^seed ftp:\/\/s0\.list\.test\/: /)]));
});

test('a seed list that cannot be read ends the campaign with the reason, not a hang', async () => {
  const handle = await launch(h, {
    seeds: [h.web.url('s0.list.test', '/')],
    seedsFile: path.join(h.outDir, 'no-such-list.txt'),
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 50 },
    sitemaps: 'off',
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.problems[0]).toMatch(/^seed list .*no-such-list\.txt: .*/);
  // The inline seed was crawled all the same.
  expect(result.pages).toBe(3);
});
