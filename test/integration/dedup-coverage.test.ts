// Dedup never costs coverage: mirrors serving byte-identical pages are each
// crawled completely, and a site whose every page is a near-duplicate of
// the others is crawled completely; duplicates are recorded as such.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { contentKeys } from '../../src/redis/keys';
import { createHarness, launch, outputOf, pageRequests, type Harness } from '../support/harness';

jest.setTimeout(180_000);
const MIRRORS = 12;
const SUBPAGES = 5;
const NEAR = 30;
const HTML = 'text/html; charset=utf-8';
const words = Array.from({ length: 220 }, (_, i) => `word${(i * 7919) % 997}`).join(' ');

let h: Harness;
beforeAll(async () => {
  h = await createHarness('dedup-coverage', { workers: 1 });
  // The same bytes on every mirror: relative links only, no host name anywhere.
  const home = `<!doctype html><html><body><h1>Mirror</h1><p>${words}</p>${Array.from({ length: SUBPAGES }, (_, i) => `<a href="p/${i + 1}">page ${i + 1}</a>`).join(' ')}</body></html>`;
  const sub = (n: number) => `<!doctype html><html><body><h1>Page ${n}</h1><p>${words}</p><a href="/">home</a></body></html>`;
  for (let m = 0; m < MIRRORS; m++) {
    h.web.addSite({
      host: `m${m}.mirror.test`,
      pages: 1,
      fanOut: 0,
      handler: (ctx) => {
        if (ctx.path === '/robots.txt') return false;
        const n = /^\/p\/(\d+)$/.exec(ctx.path);
        if (ctx.path === '/') ctx.send(200, HTML, home);
        else if (n && Number(n[1]) >= 1 && Number(n[1]) <= SUBPAGES) ctx.send(200, HTML, sub(Number(n[1])));
        else ctx.send(404, 'text/plain', 'no');
        return true;
      },
    });
  }
  // Every page the same long text but for its number: each a near-duplicate of the first.
  h.web.addSite({
    host: 'near.dup.test',
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      if (ctx.path === '/robots.txt') return false;
      const n = ctx.path === '/' ? 0 : Number(/^\/n\/(\d+)$/.exec(ctx.path)?.[1] ?? -1);
      if (n < 0 || n > NEAR) return void ctx.send(404, 'text/plain', 'no');
      // Each page links on to the next two, so the last pages are reachable only through near-duplicates.
      const links = [n + 1, n + 2]
        .filter((k) => k <= NEAR)
        .map((k) => `<a href="/n/${k}">next ${k}</a>`)
        .join(' ');
      ctx.send(200, HTML, `<!doctype html><html><body><p>${words}</p><p>number ${n}</p>${links}</body></html>`);
      return true;
    },
  });
});
afterAll(() => h?.close());

test('identical mirrors and an all-near-duplicate site are crawled completely', async () => {
  const handle = await launch(h, {
    seeds: [...Array.from({ length: MIRRORS }, (_, m) => h.web.url(`m${m}.mirror.test`, '/')), h.web.url('near.dup.test', '/')],
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: 50 },
    sitemaps: 'off',
    // Its content index is looked at once it has completed: kept (keep summary deletes it at the end).
    retention: { keep: 'all' },
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const reqs = pageRequests(h.web.requests());
  for (let m = 0; m < MIRRORS; m++) {
    const paths = new Set(reqs.filter((r) => r.host === `m${m}.mirror.test`).map((r) => r.path));
    expect({ mirror: m, paths: [...paths].sort() }).toEqual({ mirror: m, paths: ['/', ...Array.from({ length: SUBPAGES }, (_, i) => `/p/${i + 1}`)].sort() });
  }
  expect(new Set(reqs.filter((r) => r.host === 'near.dup.test').map((r) => r.path)).size).toBe(NEAR + 1);
  // Recorded as duplicates all the same: every page of every mirror but the
  // first one's is a duplicate (the subpages are also near-duplicates of each other).
  const index = await outputOf(h, handle.workflowId).index();
  const mirrorEntries = index.filter((e) => e.host.includes('mirror.test'));
  expect(mirrorEntries).toHaveLength(MIRRORS * (1 + SUBPAGES));
  expect(mirrorEntries.filter((e) => e.outcome === 'fetched').length).toBeLessThanOrEqual(1 + SUBPAGES);
  expect(mirrorEntries.filter((e) => e.outcome === 'duplicate').length).toBeGreaterThanOrEqual((MIRRORS - 1) * (1 + SUBPAGES));
  expect(index.filter((e) => e.host.startsWith('near.dup.test') && e.outcome === 'duplicate').length).toBeGreaterThan(NEAR / 2);
  // A new campaign keeps its content index compact (format 3, src/dedup/compact-store.ts), which names a page
  // by number: every duplicate's line still names its original by URL, another page of the crawl.
  const campaignKey = `${result.campaignId}.${handle.firstExecutionRunId.slice(0, 8)}`;
  expect(await h.redis.hget(contentKeys(campaignKey, 0).meta, 'v')).toBe('3');
  const crawled = new Set(index.map((e) => e.url));
  for (const e of index.filter((x) => x.outcome === 'duplicate')) {
    const of = e.duplicateOf?.url ?? '';
    expect({ url: e.url, original: crawled.has(of) && of !== e.url }).toEqual({ url: e.url, original: true });
  }

  // Stored once: one full response per distinct payload (a mirror's 1 + SUBPAGES
  // pages, the near-duplicates' NEAR + 1, which differ by a byte), revisit
  // records for every other copy, however the hosts' fetches interleaved.
  const records = await outputOf(h, handle.workflowId).warc();
  const responses = records.filter((r) => r.type === 'response');
  const revisits = records.filter((r) => r.type === 'revisit');
  const digests = responses.map((r) => r.headers['WARC-Payload-Digest']);
  expect(new Set(digests).size).toBe(digests.length);
  expect(responses).toHaveLength(1 + SUBPAGES + NEAR + 1);
  expect(revisits).toHaveLength((MIRRORS - 1) * (1 + SUBPAGES));
  expect(records.filter((r) => r.type === 'request')).toHaveLength(responses.length + revisits.length);
  // Each revisit names a response record that is in the WARCs, with its payload.
  const stored = new Map(responses.map((r) => [`${r.targetUri} ${r.headers['WARC-Date']}`, r]));
  let payloadBytes = 0;
  for (const v of revisits) {
    const o = stored.get(`${v.headers['WARC-Refers-To-Target-URI']} ${v.headers['WARC-Refers-To-Date']}`);
    expect({ revisit: v.targetUri, found: o !== undefined }).toEqual({ revisit: v.targetUri, found: true });
    expect(v.headers).toMatchObject({
      'WARC-Profile': 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest',
      'WARC-Refers-To': o!.recordId,
      'WARC-Payload-Digest': o!.headers['WARC-Payload-Digest'],
    });
    expect(o!.payloadDigestOk).toBe(true);
    expect({ body: v.payload!.length, blockDigestOk: v.blockDigestOk, status: v.statusLine }).toEqual({ body: 0, blockDigestOk: true, status: 'HTTP/1.1 200 OK' });
    payloadBytes += o!.payload!.length;
  }

  // The sealed index: one line per URL; the revisits' lines name their
  // original, and the summary counts the payload bytes not stored again.
  const sealed = await outputOf(h, handle.workflowId).sealed();
  expect(sealed).toHaveLength(MIRRORS * (1 + SUBPAGES) + NEAR + 1);
  expect(new Set(sealed.map((e) => e.url)).size).toBe(sealed.length);
  const revisitLines = sealed.filter((e) => e.revisit);
  expect(revisitLines).toHaveLength(revisits.length);
  for (const e of revisitLines) expect(stored.get(`${e.revisit!.url} ${e.revisit!.date}`)?.recordId).toBe(e.revisit!.recordId);
  expect(result.revisits).toEqual({ records: revisits.length, bytesSaved: payloadBytes });
  expect(result.sealedIndex).toMatchObject({ lines: sealed.length, missing: 0 });

  // `crawler seal` writes the same file again from Redis and the raw files,
  // with no worker involved, and leaves out the line of an attempt whose
  // commit did not count: here one as a worker that died between writing
  // its line and committing would have left in a raw file of its own.
  const file = result.sealedIndex!.file;
  const before = fs.readFileSync(file, 'utf8');
  const lost = { ...sealed[0]!, attemptId: 'died-before-commit', fetchedAt: new Date(0).toISOString(), status: 500 };
  fs.writeFileSync(path.join(outputOf(h, handle.workflowId).dir, 'index', 'index-lost-attempt.jsonl'), `${JSON.stringify(lost)}\n`);
  fs.rmSync(path.dirname(file), { recursive: true });
  const seal = crawlerCommand(['seal', handle.workflowId, '--json']);
  const { stdout } = await promisify(execFile)(seal.command, seal.args, { env: process.env });
  expect(JSON.parse(stdout.trim().split('\n').pop()!)).toMatchObject({
    file,
    lines: sealed.length,
    dropped: result.sealedIndex!.dropped + 1,
    missing: 0,
    revisits: result.revisits,
  });
  expect(fs.readFileSync(file, 'utf8')).toBe(before);
});
