// A crawl replayed by real clients: the crawler archives a small site (a
// redirect chain, the same page at two URLs, a PNG and a PDF, Shift_JIS and
// windows-1252 pages; a revisit record of the duplicate page is added by hand), `crawler cdxj` indexes the WARCs and `crawler export --wacz`
// packages them; then tools we did not write take over. Python's
// cdxj-indexer (pywb's own) indexes the same WARCs and must agree with our
// index line for line; `wacz validate` (PyPI wacz) accepts the package and
// rejects a tampered copy; pywb serves the WARCs through our CDXJ, and the
// WACZ through its own `wb-manager add --unpack-wacz`; Chromium opens the
// replayed pages and finds the original text, follows a link, ends a
// redirect chain on its final page, decodes both charsets and shows the
// image; `crawler replay` serves the campaign in pywb as an operator runs it.
// Screenshots: <test data>/screenshots/replay-*.png, docs/img/replay.png.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { parseCdxjLine, type CdxjLine } from '../../src/storage/cdxj';
import { findOrInstallPyReplayTools, type PyReplayTools } from '../../src/stack/tools';
import { freePort, portOpen, waitFor } from '../../src/stack/ports';
import { launchBrowser, screenshot } from '../support/browser';
import { png } from '../support/media';
import { appendRevisit } from '../support/revisit';
import { runCrawlerInProcess } from '../support/in-process-cli';
import { createHarness, launch, outputOf, type Harness } from '../support/harness';

jest.setTimeout(600_000);
const run = promisify(execFile);

const HOST = 'replay.test';
const TEXT = {
  root: 'Welcome to the archived replay site',
  about: 'About this archive: every page here came out of a WARC file',
  final: 'End of the redirect chain',
  dup: 'The same words at two addresses',
  sjis: '日本語のページです',
  cp1252: 'Café crème brûlée — “quoted” for 5 €',
};

const PNG = png(160, 40);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n', 'latin1');
// Shift_JIS bytes of TEXT.sjis, spelled out so no encoder of ours is involved.
const SJIS = Buffer.from([0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea, 0x82, 0xcc, 0x83, 0x79, 0x81, 0x5b, 0x83, 0x57, 0x82, 0xc5, 0x82, 0xb7]);
// windows-1252 bytes of TEXT.cp1252: Latin-1 letters, plus dash, quotes and euro from the 0x80–0x9f range where
// windows-1252 and ISO-8859-1 differ (so only the declared charset decodes them right).
const CP1252_EXTRA: Record<string, number> = { '—': 0x97, '“': 0x93, '”': 0x94, '€': 0x80 };
const CP1252 = Buffer.from([...TEXT.cp1252].map((c) => CP1252_EXTRA[c] ?? c.charCodeAt(0)));
const html = (title: string, body: string) => `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;
const DUP = html('Mirrored', `<p id="text">${TEXT.dup}</p>`);

/** What the test reads of an <img> (the tests compile without the DOM's types). */
interface ImageLike {
  complete: boolean;
  naturalWidth: number;
  naturalHeight: number;
  onload: ((ev: unknown) => unknown) | null;
}

// Rebuilds a WACZ with one byte added to pages.jsonl (still valid JSON lines, still a sound ZIP):
// only the hash in datapackage.json can tell.
const PY_TAMPER = String.raw`
import sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, 'w', zipfile.ZIP_STORED) as zout:
    for info in zin.infolist():
        data = zin.read(info)
        if info.filename == 'pages/pages.jsonl':
            data = data.replace(b'"url":', b'"url": ', 1)
        zout.writestr(info.filename, data)
`;

let h: Harness;
let browser: Browser;
let page: Page;
let tools: PyReplayTools;
const servers: ChildProcess[] = [];
/** Hosts serving byte-identical pages (relative links only): the revisit records' case. */
const MIRROR_HOSTS = ['m0.mirrors.replay.test', 'm1.mirrors.replay.test', 'm2.mirrors.replay.test', 'm3.mirrors.replay.test'];
const MIRROR_PAGES: Record<string, string> = {
  '/': html('Mirror home', '<p id="text">mirror home</p><a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>'),
  '/a': html('Mirror a', '<p id="text">mirror page a</p><a href="/">home</a>'),
  '/b': html('Mirror b', '<p id="text">mirror page b</p><a href="/">home</a>'),
  '/c': html('Mirror c', '<p id="text">mirror page c</p><a href="/">home</a>'),
};

/** pywb's `wayback` on a free loopback port, serving the collections of `root` (config.yaml and collections/). */
async function startPywb(root: string): Promise<string> {
  const port = await freePort();
  const proc = spawn(path.join(tools.bin, 'wayback'), ['-p', String(port), '-b', '127.0.0.1'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  servers.push(proc);
  let log = '';
  proc.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const base = `http://127.0.0.1:${port}`;
  await waitFor(
    'pywb',
    async () => (await fetch(`${base}/crawl/`).catch(() => null))?.ok === true,
    120_000,
    () => (proc.exitCode !== null ? `pywb exited (${proc.exitCode}):\n${log}` : null),
  );
  return base;
}

beforeAll(async () => {
  const t0 = Date.now();
  tools = await findOrInstallPyReplayTools((m) => process.stderr.write(`[replay tools] ${m}\n`));
  process.stderr.write(`[replay tools] ready in ${Date.now() - t0} ms\n`);
  h = await createHarness('replay', { workers: 1 });
  h.web.addSite({
    host: HOST,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      const links =
        '<ul><li><a id="about" href="/about/">About this archive</a></li><li><a href="/start">The old address</a></li>' +
        '<li><a href="/mirror/a">Mirror A</a></li><li><a href="/mirror/b">Mirror B</a></li><li><a href="/logo.png">Logo</a></li>' +
        '<li><a href="/paper.pdf">Paper</a></li><li><a href="/sjis">Shift_JIS</a></li><li><a href="/cp1252">windows-1252</a></li></ul>';
      switch (ctx.path) {
        case '/':
          ctx.send(200, 'text/html; charset=utf-8', html('Replay test', `<h1 id="text">${TEXT.root}</h1><img id="logo" src="/logo.png" alt="logo">${links}`));
          return true;
        case '/about/': // a trailing slash, which SURT keys drop: pywb must still find it
          ctx.send(200, 'text/html; charset=utf-8', html('About', `<p id="text">${TEXT.about}</p><a href="/">home</a>`));
          return true;
        case '/start':
          ctx.send(301, 'text/html', 'moved', { location: `${ctx.origin}/moved` });
          return true;
        case '/moved':
          ctx.send(302, 'text/html', 'found', { location: '/final' });
          return true;
        case '/final':
          ctx.send(200, 'text/html; charset=utf-8', html('Final', `<p id="text">${TEXT.final}</p>`));
          return true;
        case '/mirror/a':
        case '/mirror/b':
          ctx.send(200, 'text/html; charset=utf-8', DUP);
          return true;
        case '/logo.png':
          ctx.send(200, 'image/png', PNG);
          return true;
        case '/paper.pdf':
          ctx.send(200, 'application/pdf', PDF);
          return true;
        case '/sjis':
          // The charset only in the HTTP header: replay has to keep it.
          ctx.send(200, 'text/html; charset=Shift_JIS', Buffer.concat([Buffer.from('<html><body><p id="text">'), SJIS, Buffer.from('</p></body></html>')]));
          return true;
        case '/cp1252':
          ctx.send(200, 'text/html; charset=windows-1252', Buffer.concat([Buffer.from('<html><body><h1 id="text">'), CP1252, Buffer.from('</h1></body></html>')]));
          return true;
        default:
          return false;
      }
    },
  });
  for (const host of MIRROR_HOSTS) {
    h.web.addSite({
      host,
      pages: 1,
      fanOut: 0,
      handler: (ctx) => {
        if (ctx.path === '/robots.txt') return false;
        const body = MIRROR_PAGES[ctx.path];
        if (body) ctx.send(200, 'text/html; charset=utf-8', body);
        else ctx.send(404, 'text/plain', 'no');
        return true;
      },
    });
  }
  browser = await launchBrowser((m) => process.stderr.write(`[browser] ${m}\n`));
  page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  page.setDefaultTimeout(60_000);
});

afterAll(async () => {
  for (const proc of servers) {
    if (proc.exitCode !== null) continue;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  }
  await browser?.close();
  await h?.close();
});

/** The last line `crawler <args…>` prints, run in this process (test/support/in-process-cli.ts). */
async function cli(args: string[]): Promise<string> {
  const r = await runCrawlerInProcess(args);
  if (r.code !== 0) throw new Error(`crawler ${args.join(' ')} exited ${r.code}:\n${r.stderr}`);
  return r.stdout.trim().split('\n').pop()!;
}

const lineKey = (l: CdxjLine) =>
  JSON.stringify([l.urlkey, l.timestamp, l.fields.url, l.fields.mime, l.fields.status, l.fields.digest, l.fields.length, l.fields.offset, l.fields.filename]);

test('a crawl replays in pywb from its CDXJ and from its WACZ, as Chromium shows it', async () => {
  const url = (p: string) => h.web.url(HOST, p);
  const handle = await launch(h, { seeds: [url('/')], politeness: { minDelayMs: 50 } });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const id = result.campaignId;
  const out = outputOf(h, id);
  const index = (await out.index()).filter((e) => e.campaignId === id);
  const byUrl = new Map(index.map((e) => [e.url, e]));
  for (const p of ['/', '/about/', '/start', '/moved', '/final', '/mirror/a', '/mirror/b', '/logo.png', '/paper.pdf', '/sjis', '/cp1252']) {
    expect({ p, stored: Boolean(byUrl.get(url(p))?.warc) }).toEqual({ p, stored: true });
  }
  expect(byUrl.get(url('/start'))!.status).toBe(301);
  // One of the mirrors is the duplicate of the other.
  expect(index.filter((e) => e.url.includes('/mirror/') && e.duplicateOf).length).toBe(1);
  // A third mirror, never fetched, as a WARC/1.1 revisit record (identical-payload-digest) of the first
  // stored one, in a WARC file of the campaign's own: what the revisit writer leaves for a duplicate.
  // Replay must take its payload from the record it refers to, through the CDXJ.
  const original = index.find((e) => e.url.includes('/mirror/') && !e.duplicateOf)!;
  const originalRecord = (await out.warc()).find((r) => r.type === 'response' && r.targetUri === original.url)!;
  const revisitWarc = path.join(out.dir, 'warc', `${id}-20000101000000000-test-revisit.warc.gz`);
  fs.writeFileSync(revisitWarc, '');
  appendRevisit(revisitWarc, {
    url: url('/mirror/c'),
    date: new Date(Date.parse(original.fetchedAt) + 1000),
    refersToUrl: original.url,
    refersToDate: new Date(originalRecord.headers['WARC-Date']!),
    payloadDigest: originalRecord.headers['WARC-Payload-Digest']!,
    status: 200,
    headers: [
      ['Content-Type', 'text/html; charset=utf-8'],
      ['Content-Length', String(Buffer.byteLength(DUP))],
    ],
  });

  // --- our CDXJ against pywb's own indexer over the same files
  const cdxjFile = await cli(['cdxj', id, '--out', out.dir]);
  expect(cdxjFile).toBe(path.join(out.dir, 'index.cdxj'));
  const ours = fs.readFileSync(cdxjFile, 'utf8').trimEnd().split('\n').map(parseCdxjLine);
  const warcDir = path.join(out.dir, 'warc');
  const warcNames = fs.readdirSync(warcDir).filter((n) => n.endsWith('.warc.gz'));
  const ref = await run(path.join(tools.bin, 'cdxj-indexer'), warcNames, { cwd: warcDir, maxBuffer: 64 * 1024 * 1024 });
  const theirs = ref.stdout.trimEnd().split('\n').map(parseCdxjLine);
  // cdxj-indexer also indexes the metadata records we write beside each response; ours holds responses (and revisits) only.
  const theirsResponses = theirs.filter((l) => l.fields.mime !== 'application/warc-fields');
  expect(ours.map(lineKey).sort()).toEqual(theirsResponses.map(lineKey).sort());
  expect(ours).toHaveLength(index.filter((e) => e.warc).length + 1);
  expect(ours.find((l) => l.fields.url === url('/mirror/c'))!.fields).toMatchObject({ mime: 'warc/revisit', status: '200', digest: originalRecord.headers['WARC-Payload-Digest'] });
  // The mirror fetched second is stored as a revisit record of the first (identical payload), indexed as one.
  const dup = index.find((e) => e.url.includes('/mirror/') && e.duplicateOf)!;
  expect(dup.revisit).toMatchObject({ url: original.url });
  expect(ours.find((l) => l.fields.url === dup.url)!.fields).toMatchObject({ mime: 'warc/revisit', digest: originalRecord.headers['WARC-Payload-Digest'] });

  // --- the WACZ, checked by py-wacz
  const wacz = path.join(h.outDir, `${id}.wacz`);
  expect(await cli(['export', id, '--wacz', wacz, '--out', out.dir])).toBe(wacz);
  // pywb's collections: "crawl" straight from the output folder, "pkg" unpacked from the WACZ by pywb itself.
  const root = path.join(h.outDir, `pywb-${id}`);
  fs.mkdirSync(root, { recursive: true });
  fs.writeFileSync(
    path.join(root, 'config.yaml'),
    // Unframed replay: the page Chromium shows is the archived page itself, not a frame around it.
    `collections:\n  crawl:\n    index_paths: ${cdxjFile}\n    archive_paths: ${warcDir}/\nframed_replay: false\n`,
  );
  // A validator that accepts anything proves nothing: a changed file must fail it.
  const tampered = path.join(h.outDir, `${id}-tampered.wacz`);
  // The package's checks and pywb's unpacking of it are independent Python processes: run side by side.
  const [valid, bad] = await Promise.all([
    run(path.join(tools.bin, 'wacz'), ['validate', '-f', wacz]),
    run(tools.python, ['-c', PY_TAMPER, wacz, tampered]).then(() =>
      run(path.join(tools.bin, 'wacz'), ['validate', '-f', tampered]).then(
        () => ({ code: 0, stdout: '' }),
        (e: { stdout: string; code: number }) => e,
      ),
    ),
    run(path.join(tools.bin, 'wb-manager'), ['init', 'pkg'], { cwd: root }).then(() =>
      run(path.join(tools.bin, 'wb-manager'), ['add', 'pkg', wacz, '--unpack-wacz'], { cwd: root }),
    ),
  ]);
  expect(valid.stdout).toContain('Validation succeeded');
  expect(bad.code).toBe(1);
  expect(bad.stdout).toContain('Validation failed');
  expect(bad.stdout).toMatch(/pages\.jsonl[\s\S]*does not match the expected hash/);

  // --- pywb
  const base = await startPywb(root);
  // A replay URL of `original` in a collection: <base>/<coll>/[<timestamp>/]<original>.
  const replayOf = (coll: string, original: string) => (u: URL) => new RegExp(`^${base}/${coll}/(\\d{1,14}/)?`).test(u.href) && u.href.endsWith(`/${original}`);

  // The original text, and the image (a PNG from the WARC, drawn at its size).
  await page.goto(`${base}/crawl/${url('/')}`);
  await expect(page.locator('#text').innerText()).resolves.toBe(TEXT.root);
  await page.locator('#logo').evaluate((el) => {
    const img = el as unknown as ImageLike;
    return img.complete ? null : new Promise((r) => (img.onload = r));
  });
  expect(await page.locator('#logo').evaluate((el) => [(el as unknown as ImageLike).naturalWidth, (el as unknown as ImageLike).naturalHeight])).toEqual([160, 40]);
  await screenshot(page, 'replay-root');

  // A working link: clicked, it lands on the replayed target.
  await Promise.all([page.waitForURL(replayOf('crawl', url('/about/'))), page.locator('#about').click()]);
  await expect(page.locator('#text').innerText()).resolves.toBe(TEXT.about);

  // The chain's first URL ends on its final page, through both archived redirects.
  await page.goto(`${base}/crawl/${url('/start')}`);
  await page.waitForURL(replayOf('crawl', url('/final')));
  await expect(page.locator('#text').innerText()).resolves.toBe(TEXT.final);
  await screenshot(page, 'replay-redirect-final');

  // Every mirror replays: the first stored, its duplicate, and the revisit record.
  for (const p of ['/mirror/a', '/mirror/b', '/mirror/c']) {
    await page.goto(`${base}/crawl/${url(p)}`);
    expect({ p, text: await page.locator('#text').innerText() }).toEqual({ p, text: TEXT.dup });
  }

  // Shift_JIS and windows-1252, declared only in the archived HTTP header, decoded right.
  // (Shift_JIS is checked in the text; its screenshot shows boxes where a machine has no CJK font.)
  await page.goto(`${base}/crawl/${url('/sjis')}`);
  await expect(page.locator('#text').innerText()).resolves.toBe(TEXT.sjis);
  await screenshot(page, 'replay-shift-jis');
  await page.goto(`${base}/crawl/${url('/cp1252')}`);
  await expect(page.locator('#text').innerText()).resolves.toBe(TEXT.cp1252);
  await screenshot(page, 'replay-windows-1252');

  // The PDF comes back byte for byte (pywb's id_ mode serves the archived payload unchanged).
  const pdf = await fetch(`${base}/crawl/id_/${url('/paper.pdf')}`);
  expect(pdf.headers.get('content-type')).toBe('application/pdf');
  expect(Buffer.from(await pdf.arrayBuffer()).equals(PDF)).toBe(true);

  // The same site from the WACZ, through the index we packed in it.
  await page.goto(`${base}/pkg/${url('/')}`);
  await expect(page.locator('#text').innerText()).resolves.toBe(TEXT.root);
  await Promise.all([page.waitForURL(replayOf('pkg', url('/about/'))), page.locator('#about').click()]);
  await expect(page.locator('#text').innerText()).resolves.toBe(TEXT.about);
  await page.goto(`${base}/pkg/${url('/start')}`);
  await page.waitForURL(replayOf('pkg', url('/final')));
  await expect(page.locator('#text').innerText()).resolves.toBe(TEXT.final);
  await screenshot(page, 'replay-wacz-final');

  // What an operator gets (docs/operations.md): `crawler replay`, pywb with its defaults, the page in a
  // frame under pywb's banner, which names the capture's URL and time. Stopping the command stops pywb.
  const replayPort = await freePort();
  const cmd = crawlerCommand(['replay', id, '--out', out.dir, '--port', String(replayPort)]);
  const replay = spawn(cmd.command, cmd.args, { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  servers.push(replay);
  let replayOut = '';
  replay.stdout!.on('data', (d: Buffer) => (replayOut += d.toString()));
  replay.stderr!.on('data', (d: Buffer) => (replayOut += d.toString()));
  const framed = `http://127.0.0.1:${replayPort}/${id}/`;
  await waitFor(
    'crawler replay',
    async () => (await fetch(framed).catch(() => null))?.ok === true,
    120_000,
    () => (replay.exitCode !== null ? `exit ${replay.exitCode}:\n${replayOut}` : null),
  );
  expect(replayOut.split('\n')).toContain(framed);
  await page.goto(`${framed}${url('/')}`);
  await expect(page.frameLocator('iframe').first().locator('#text').innerText()).resolves.toBe(TEXT.root);
  await screenshot(page, 'replay-framed', { docsName: 'replay.png' });
  const exited = new Promise<number | null>((r) => replay.once('exit', (code) => r(code)));
  replay.kill('SIGTERM');
  expect(await exited).toBe(0);
  expect(await portOpen(replayPort)).toBe(false);
});

test('mirrors: one full response per distinct payload, revisit records for the rest, every URL replays in pywb from the sealed CDXJ', async () => {
  const seeds = MIRROR_HOSTS.map((host) => h.web.url(host, '/'));
  const handle = await launch(h, { seeds, scope: { mode: 'same-host' }, politeness: { minDelayMs: 50 } });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const out = outputOf(h, result.campaignId);
  const urls = MIRROR_HOSTS.flatMap((host) => Object.keys(MIRROR_PAGES).map((p) => h.web.url(host, p)));
  // In the WARCs: each distinct page once in full, every other copy a revisit record naming a stored response.
  const records = (await out.warc()).filter((r) => urls.includes(r.targetUri ?? ''));
  const responses = records.filter((r) => r.type === 'response');
  const revisits = records.filter((r) => r.type === 'revisit');
  expect(responses).toHaveLength(Object.keys(MIRROR_PAGES).length);
  expect(revisits).toHaveLength(urls.length - Object.keys(MIRROR_PAGES).length);
  const stored = new Set(responses.map((r) => r.targetUri));
  for (const r of revisits) expect(stored.has(r.headers['WARC-Refers-To-Target-URI'])).toBe(true);
  expect(result.revisits?.records).toBe(revisits.length);
  expect(result.revisits?.bytesSaved).toBeGreaterThan(0);

  // The campaign's own CDXJ, written when it sealed, indexes all of them; pywb replays every URL with its page's bytes.
  const cdxj = path.join(out.dir, 'index.cdxj');
  const lines = fs.readFileSync(cdxj, 'utf8').trimEnd().split('\n').map(parseCdxjLine);
  expect(lines.filter((l) => urls.includes(l.fields.url) && l.fields.mime === 'warc/revisit')).toHaveLength(revisits.length);
  const root = path.join(h.outDir, `pywb-mirrors-${result.campaignId}`);
  fs.mkdirSync(root, { recursive: true });
  fs.writeFileSync(path.join(root, 'config.yaml'), `collections:\n  crawl:\n    index_paths: ${cdxj}\n    archive_paths: ${path.join(out.dir, 'warc')}/\n`);
  const base = await startPywb(root);
  for (const u of urls) {
    const res = await fetch(`${base}/crawl/id_/${u}`);
    expect({ u, status: res.status, body: await res.text() }).toEqual({ u, status: 200, body: MIRROR_PAGES[new URL(u).pathname] });
  }
});
