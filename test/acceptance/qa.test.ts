// Issue 41, part 3: `crawler qa` on the client-rendered site of the test web
// (test/web/spa-site.ts). The site is crawled rendered, with
// browser.screenshot and browser.text on; `crawler qa` replays every
// rendered page from the campaign's own archive through pywb in Chromium:
// each scores ≥ 0.95 in screenshot and text similarity and its replay misses
// nothing. Then the same archive with one requisite taken out (every record
// of the JSON the pages render from, cut out of a copy of the WARCs): QA names
// that URL and every page it breaks, and their scores drop. `crawler report`
// shows the newest pass. An archive that kept only each page's view
// screenshot (`urn:view:`, Browsertrix's default) is compared on the
// replay's viewport instead, and still tells a broken page. The campaign's WACZ, which pywb takes in with
// `wb-manager add`, checks as the folder does; and `--sample-http` replays
// plain HTTP pages, here the shell an unrendered crawl of the site stored,
// whose replay misses the JSON that crawl never fetched; and a campaign's
// folder as it is while it runs (no seal, no replay index, a WARC record
// half written) checks as well.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { QaReport } from '../../src/qa/qa-report';
import { findOrInstallPyReplayTools } from '../../src/stack/tools';
import { openObjectStore, parseOutputLocation, type S3Location } from '../../src/storage/output-location';
import { readWarcDir } from '../../src/storage/warc-reader';
import { normalizeUrl } from '../../src/url/normalize';
import { spaSite, type SpaSite } from '../web/spa-site';
import { findOrInstallChromium } from '../support/browser';
import { createHarness, launch, outputOf, type Harness } from '../support/harness';
import { runCrawlerInProcess } from '../support/in-process-cli';
import { startTestObjectStore } from '../support/object-store';
import { copyWarcsWithout } from '../support/warc-without';

jest.setTimeout(600_000);

let h: Harness;
let site: SpaSite;
let campaignId: string;
let outDir: string;
let whole: QaReport;

const url = (p: string) => normalizeUrl(h.web.url(site.host, p));

/** `crawler <args…>` in this process: its stdout, failing the test on a non-zero exit. */
async function cli(args: string[]): Promise<string[]> {
  const r = await runCrawlerInProcess(args);
  if (r.code !== 0) throw new Error(`crawler ${args.join(' ')} exited ${r.code}:\n${r.stderr}`);
  return r.stdout.trim().split('\n');
}

/** Runs `crawler qa` and reads the report it names on its last line. */
async function qa(args: string[]): Promise<{ stdout: string[]; report: QaReport; file: string }> {
  const stdout = await cli(['qa', ...args]);
  const file = stdout[stdout.length - 1]!;
  return { stdout, file, report: JSON.parse(fs.readFileSync(file, 'utf8')) as QaReport };
}

/** A listed page's screenshot, looked up in a WACZ as a replay does: its index line by key, then the record at that line's place in the packed WARC. */
interface ShotLookup {
  page: string;
  kind: string;
  record: { type: string; uri: string; contentType: string; image: string } | null;
}

const PY_SHOTS = String.raw`
import sys, json, gzip, io, zipfile, surt
from warcio.archiveiterator import ArchiveIterator
out = []
with zipfile.ZipFile(sys.argv[1]) as z:
    names = z.namelist()
    pages = []
    for n in ('pages/pages.jsonl', 'pages/extraPages.jsonl'):
        if n in names:
            pages += [json.loads(l) for l in z.read(n).decode('utf-8').splitlines()[1:] if l.strip()]
    index = {}
    for line in gzip.decompress(z.read('indexes/index.cdx.gz')).decode('utf-8').splitlines():
        key, ts, data = line.split(' ', 2)
        index.setdefault(key, []).append((ts, json.loads(data)))
    for p in pages:
        ts = p['ts'].replace('-', '').replace(':', '').replace('T', '')[:14]
        for kind in ('view', 'thumbnail', 'fullPage'):
            lines = index.get(surt.surt('urn:%s:%s' % (kind, p['url'])), [])
            record = None
            if lines:
                # The capture closest to the page's time, as a replay picks it.
                f = min(lines, key=lambda l: abs(int(l[0]) - int(ts)))[1]
                with z.open('archive/' + f['filename']) as fh:
                    raw = fh.read()[int(f['offset']):int(f['offset']) + int(f['length'])]
                for rec in ArchiveIterator(io.BytesIO(raw)):
                    body = rec.content_stream().read()
                    image = 'png' if body[:8] == b'\x89PNG\r\n\x1a\n' else 'jpeg' if body[:2] == b'\xff\xd8' else None
                    record = {'type': rec.rec_type, 'uri': rec.rec_headers.get_header('WARC-Target-URI'),
                              'contentType': rec.rec_headers.get_header('Content-Type'), 'image': image}
                    break
            out.append({'page': p['url'], 'kind': kind, 'record': record})
print(json.dumps(out))
`;

const pageOf = (r: QaReport, p: string) => r.pages.find((x) => normalizeUrl(x.url) === url(p));

beforeAll(async () => {
  await findOrInstallChromium((m) => process.stderr.write(`[browser] ${m}\n`));
  h = await createHarness('qa', { workers: 1 });
  site = spaSite('qa-spa.test');
  h.web.addSite(site.spec);
  const handle = await launch(h, {
    seeds: [h.web.url(site.host, '/')],
    render: 'browser',
    browser: { screenshot: true, text: true },
    politeness: { minDelayMs: 20 },
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  campaignId = result.campaignId;
  outDir = outputOf(h, campaignId).dir;
});

afterAll(async () => {
  await h?.close();
});

test("browser.text keeps each rendered page's visible text in the WARC, beside its screenshot", async () => {
  const records = await readWarcDir(path.join(outDir, 'warc'));
  for (const p of site.pages) {
    const text = records.find((r) => r.type === 'resource' && r.targetUri === `urn:text:${url(p.path)}`);
    expect({ p: p.path, type: text?.headers['Content-Type'], digest: text?.blockDigestOk }).toEqual({ p: p.path, type: 'text/plain; charset=utf-8', digest: true });
    // The rendered DOM's text: what the script put there, which the shell the server sent has none of.
    const shown = text!.payload!.toString('utf8');
    for (const words of [p.title, p.text, ...p.links]) expect({ p: p.path, shown: shown.includes(words) }).toEqual({ p: p.path, shown: true });
    // browser.screenshot: Browsertrix's three, the full page the one QA compares.
    for (const kind of ['view', 'thumbnail', 'fullPage'])
      expect({ p: p.path, kind, stored: records.some((r) => r.type === 'resource' && r.targetUri === `urn:${kind}:${url(p.path)}`) }).toEqual({ p: p.path, kind, stored: true });
  }
});

test('every rendered page replays from the archive: screenshot and text similarity ≥ 0.95, no request missing', async () => {
  const run = await qa([campaignId, '--out', outDir]);
  whole = run.report;
  expect(path.dirname(run.file)).toBe(path.join(outDir, 'qa'));
  expect(whole.campaignId).toBe(campaignId);
  expect(whole.pages.map((p) => normalizeUrl(p.url)).sort()).toEqual(site.pages.map((p) => url(p.path)).sort());
  for (const p of site.pages) {
    const got = pageOf(whole, p.path)!;
    expect({
      p: p.path,
      kind: got.kind,
      screenshot: got.screenshot! >= 0.95,
      of: got.screenshotOf,
      text: got.text! >= 0.95,
      missing: got.missing,
      error: got.error,
    }).toEqual({
      p: p.path,
      kind: 'rendered',
      screenshot: true,
      of: 'fullPage',
      text: true,
      missing: [],
      error: undefined,
    });
  }
  expect(whole.missing).toEqual([]);
  expect(whole.score!).toBeGreaterThanOrEqual(0.95);
  // What the operator reads: the campaign's score, then the pages, lowest first.
  expect(run.stdout.find((l) => l.startsWith('qa score'))).toMatch(new RegExp(`^qa score ${whole.score!.toFixed(3)} over ${site.pages.length} pages`));
  // The pass leaves no pywb behind in the output folder.
  expect(fs.readdirSync(path.join(outDir, 'qa')).filter((n) => n.startsWith('pywb'))).toEqual([]);
});

test('with the JSON every page renders from cut out of the archive, QA names it and the pages it breaks, and their scores drop', async () => {
  expect(whole).toBeDefined();
  const json = url(site.files.data);
  // A copy of the output folder whose WARCs lack every record of the JSON: what the index says stays as it was.
  const broken = path.join(h.outDir, `${campaignId}-without-json`);
  for (const d of ['index', 'sealed']) fs.cpSync(path.join(outDir, d), path.join(broken, d), { recursive: true });
  expect(await copyWarcsWithout(path.join(outDir, 'warc'), path.join(broken, 'warc'), json)).toBeGreaterThan(0);

  const { report, stdout } = await qa([campaignId, '--out', broken]);
  expect(report.missing).toEqual([{ url: json, pages: site.pages.map((p) => url(p.path)).sort() }]);
  for (const p of site.pages) {
    const before = pageOf(whole, p.path)!;
    const after = pageOf(report, p.path)!;
    expect({ p: p.path, missing: after.missing.map((m) => [m.url, m.status, m.type]) }).toEqual({ p: p.path, missing: [[json, 404, 'fetch']] });
    // Without its JSON the page shows none of its title, text or links: little alike, and one request in three failed.
    expect({
      p: p.path,
      dropped: after.score < before.score,
      screenshot: after.screenshot! < 0.5,
      text: after.text! < 0.5,
      resources: after.resources < 1,
    }).toEqual({ p: p.path, dropped: true, screenshot: true, text: true, resources: true });
  }
  expect(report.score!).toBeLessThan(whole.score!);
  expect(stdout.join('\n')).toContain(`missing: ${json}`);

  // `crawler report` shows the newest pass: its score, and the missing URL with the pages it breaks.
  const html = fs.readFileSync((await cli(['report', campaignId, '--out', broken])).pop()!, 'utf8');
  expect(html).toContain('<section id="qa">');
  expect(html).toContain(`data-figure="qa-score" data-value="${report.score!.toFixed(3)}"`);
  expect(html).toContain(`data-url="${json}" data-pages="${site.pages.length}"`);
  // The report of the whole archive is still the whole archive's.
  const full = fs.readFileSync((await cli(['report', campaignId, '--out', outDir])).pop()!, 'utf8');
  expect(full).toContain(`data-figure="qa-score" data-value="${whole.score!.toFixed(3)}"`);
  expect(full).not.toContain('id="table-qa-missing"');
});

test("with the view screenshots alone (no full page, as Browsertrix's default keeps), QA compares the replay's viewport with them, and still tells a broken page", async () => {
  expect(whole).toBeDefined();
  const json = url(site.files.data);
  const fullPage = (u: string) => u.startsWith('urn:fullPage:');
  // Two copies of the output folder without any full-page shot: one whole otherwise, one without the JSON the pages render from too.
  const copy = async (name: string, drop: (u: string) => boolean) => {
    const dir = path.join(h.outDir, `${campaignId}-${name}`);
    for (const d of ['index', 'sealed']) fs.cpSync(path.join(outDir, d), path.join(dir, d), { recursive: true });
    expect(await copyWarcsWithout(path.join(outDir, 'warc'), path.join(dir, 'warc'), drop)).toBeGreaterThanOrEqual(site.pages.length);
    return dir;
  };
  const views = await copy('views-only', fullPage);
  const viewsBroken = await copy('views-only-without-json', (u) => fullPage(u) || u === json);

  const { report } = await qa([campaignId, '--out', views]);
  for (const p of site.pages) {
    const got = pageOf(report, p.path)!;
    expect({ p: p.path, screenshot: got.screenshot! >= 0.95, of: got.screenshotOf, why: got.notMeasured?.screenshot, missing: got.missing }).toEqual({
      p: p.path,
      screenshot: true,
      of: 'view',
      why: undefined,
      missing: [],
    });
  }
  const broken = (await qa([campaignId, '--out', viewsBroken])).report;
  for (const p of site.pages) {
    const got = pageOf(broken, p.path)!;
    // Without its JSON the top of the page shows none of what the script puts there.
    expect({ p: p.path, of: got.screenshotOf, screenshot: got.screenshot! < 0.5, dropped: got.score < pageOf(report, p.path)!.score }).toEqual({
      p: p.path,
      of: 'view',
      screenshot: true,
      dropped: true,
    });
  }
});

test("the campaign's WACZ lists each page with its screenshots findable from its entry, as Browsertrix's are, and checks as its folder does", async () => {
  const wacz = path.join(h.outDir, `${campaignId}.wacz`);
  await cli(['export', campaignId, '--wacz', wacz, '--out', outDir]);
  // Read by Python (zipfile, warcio, surt: pywb's own libraries): what ReplayWeb.page does for a listed page's thumbnail.
  const tools = await findOrInstallPyReplayTools((m) => process.stderr.write(`[replay tools] ${m}\n`));
  const found = JSON.parse(execFileSync(tools.python, ['-c', PY_SHOTS, wacz], { encoding: 'utf8' })) as ShotLookup[];
  const listed = found.map((f) => normalizeUrl(f.page)).filter((u, i, all) => all.indexOf(u) === i);
  expect(listed.sort()).toEqual(site.pages.map((p) => url(p.path)).sort());
  for (const f of found) {
    expect({ page: f.page, kind: f.kind, record: f.record }).toEqual({
      page: f.page,
      kind: f.kind,
      record: {
        type: 'resource',
        uri: `urn:${f.kind}:${f.page}`,
        contentType: f.kind === 'thumbnail' ? 'image/jpeg' : 'image/png',
        image: f.kind === 'thumbnail' ? 'jpeg' : 'png',
      },
    });
  }
  expect(found).toHaveLength(site.pages.length * 3);
  const { report, file } = await qa(['--wacz', wacz]);
  expect(path.dirname(file)).toBe(path.join(h.outDir, 'qa'));
  expect(report.pages.map((p) => normalizeUrl(p.url)).sort()).toEqual(site.pages.map((p) => url(p.path)).sort());
  for (const p of report.pages) {
    expect({ url: p.url, kind: p.kind, screenshot: p.screenshot! >= 0.95, text: p.text! >= 0.95, missing: p.missing }).toEqual({
      url: p.url,
      kind: 'rendered',
      screenshot: true,
      text: true,
      missing: [],
    });
  }
});

test('--sample-http: a plain HTTP crawl of the same site replays its shell, whose script asks for the JSON the crawl never fetched', async () => {
  const handle = await launch(h, { seeds: [h.web.url(site.host, '/')], politeness: { minDelayMs: 20 } });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const out = outputOf(h, result.campaignId).dir;
  const { report } = await qa([result.campaignId, '--out', out, '--sample-http', '5']);
  // Not rendered, the crawl found the shell alone: it is the one page, sampled as plain HTTP.
  expect(report.pages.map((p) => [normalizeUrl(p.url), p.kind])).toEqual([[url('/'), 'http']]);
  const home = report.pages[0]!;
  // No screenshot was taken of an HTTP page; its text is its response's (the empty shell), as the replay's is once the script's fetch fails.
  expect({ screenshot: home.screenshot, why: typeof home.notMeasured?.screenshot, text: home.text }).toEqual({ screenshot: null, why: 'string', text: 1 });
  expect(home.missing.map((m) => m.url)).toEqual([url(site.files.data)]);
  expect(home.resources).toBeLessThan(1);
  expect(home.score).toBeLessThan(1);
});

test('a campaign still running: no seal, no replay index yet, its WARC ending in a record being written', async () => {
  expect(whole).toBeDefined();
  // What a running campaign's folder holds: the raw index and the WARCs, the last one mid-append.
  const running = path.join(h.outDir, `${campaignId}-running`);
  fs.cpSync(path.join(outDir, 'index'), path.join(running, 'index'), { recursive: true });
  fs.cpSync(path.join(outDir, 'warc'), path.join(running, 'warc'), { recursive: true });
  const warcs = fs.readdirSync(path.join(running, 'warc')).sort();
  const last = path.join(running, 'warc', warcs[warcs.length - 1]!);
  fs.appendFileSync(last, fs.readFileSync(last).subarray(0, 300));
  expect(fs.existsSync(path.join(running, 'index.cdxj'))).toBe(false);

  const { report } = await qa([campaignId, '--out', running]);
  // Indexed as `crawler cdxj` would, now: every page there replays as from the finished folder.
  expect(fs.existsSync(path.join(running, 'index.cdxj'))).toBe(true);
  expect(report.pages.map((p) => normalizeUrl(p.url)).sort()).toEqual(site.pages.map((p) => url(p.path)).sort());
  for (const p of report.pages) expect({ url: p.url, score: p.score >= 0.95, missing: p.missing }).toEqual({ url: p.url, score: true, missing: [] });
});

test("on the campaign's output in a bucket: `crawler qa` publishes its pass under reports/, and `crawler report` there shows it", async () => {
  expect(whole).toBeDefined();
  const server = await startTestObjectStore('qa-bucket');
  const saved = { ...process.env };
  const bucket = openObjectStore(parseOutputLocation(`s3://${server.bucket}/`) as S3Location, { endpoint: server.endpoint, pathStyle: true });
  try {
    // Credentials as an operator's: the AWS SDK's variables.
    Object.assign(process.env, server.env, { CRAWLER_CACHE_DIR: path.join(h.outDir, 'qa-s3-cache') });
    for (const v of ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_PROFILE']) delete process.env[v];
    // The folder's raw files into the bucket, as the workers' uploader stores them.
    const prefix = `runs/${campaignId}/`;
    const location = `s3://${server.bucket}/${prefix}`;
    for (const area of ['warc', 'index'])
      for (const name of fs.readdirSync(path.join(outDir, area))) await bucket.putFile(`${prefix}${area}/${name}`, path.join(outDir, area, name));
    const flags = ['--s3-endpoint', server.endpoint, '--s3-path-style'];

    // No pass yet: the report has no QA section.
    const before = (await cli(['report', campaignId, '--out', location, ...flags])).pop()!;
    expect((await objectText(bucket, server.bucket, before)).includes('<section id="qa">')).toBe(false);

    const qaUrl = (await cli(['qa', campaignId, '--out', location, ...flags])).pop()!;
    expect(qaUrl).toMatch(new RegExp(`^${location}reports/\\d{8}T\\d{9}Z-[0-9a-f]{8}/${campaignId}\\.qa-\\d{8}T\\d{6}Z\\.json$`));
    const pass = JSON.parse(await objectText(bucket, server.bucket, qaUrl)) as QaReport;
    expect(pass.pages.map((p) => normalizeUrl(p.url)).sort()).toEqual(site.pages.map((p) => url(p.path)).sort());

    const reportUrl = (await cli(['report', campaignId, '--out', location, ...flags])).pop()!;
    const html = await objectText(bucket, server.bucket, reportUrl);
    expect(html).toContain('<section id="qa">');
    expect(html).toContain(`data-figure="qa-score" data-value="${pass.score!.toFixed(3)}"`);
    // It names the pass it shows where it is, in the bucket (the cache it was read through is gone).
    expect(html).toContain(qaUrl);
    expect(html).not.toContain(path.join(h.outDir, 'qa-s3-cache'));
  } finally {
    process.env = saved;
    bucket.destroy();
    await server.stop();
  }
});

/** The text of the object at an s3:// URL of the bucket. */
async function objectText(store: ReturnType<typeof openObjectStore>, bucketName: string, url: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of await store.read(url.slice(`s3://${bucketName}/`.length))) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
