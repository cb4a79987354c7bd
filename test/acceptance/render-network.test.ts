// Issue 26, items 3 and 4: every request a rendered page makes goes through
// the crawler, other hosts and other methods included, and is archived.
// test/web/render-net-site.ts's page fetches JSON from an API on another
// (out-of-scope) host whose robots.txt disallows /private/ and asks for a
// one-second Crawl-delay, POSTs JSON to its own host, asks for a file with a
// Range header and reads two cookies another response set; each result is a
// link of the rendered page. Rendered, the crawl finds every such link (the
// browser got each answer), the API sees its requests spaced by its delay and
// never the disallowed one, and the WARC holds each exchange (the POST's
// body in its request record, the ranged file whole, both Set-Cookie lines).
// Then a resource captured earlier in the campaign is answered from its
// capture: a client-rendered site crawled one page per session (each session
// a fresh browser context and memory) still requests its script and image
// once. Real workers, Temporal and Redis; Chromium is Debian's.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Browser } from 'playwright-core';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { findOrInstallPyReplayTools } from '../../src/stack/tools';
import type { IndexEntry } from '../../src/storage/index-writer';
import type { WarcReadRecord } from '../../src/storage/warc-reader';
import { normalizeUrl } from '../../src/url/normalize';
import type { CampaignResult } from '../../workflows/messages';
import { renderNetSite } from '../web/render-net-site';
import { spaSite } from '../web/spa-site';
import type { RequestRecord } from '../web/test-web';
import { findOrInstallChromium, launchBrowser } from '../support/browser';
import { createHarness, launch, minGapsByHost, outputOf, type Harness } from '../support/harness';
import { startPywb, type Pywb } from '../support/pywb';

jest.setTimeout(300_000);
const run = promisify(execFile);

interface Crawl {
  result: CampaignResult;
  requests: RequestRecord[];
  lines: IndexEntry[];
  records: WarcReadRecord[];
  warcDir: string;
  outDir: string;
}

let h: Harness;
let pywb: Pywb | undefined;
let browser: Browser | undefined;

async function crawl(input: Parameters<typeof launch>[1]): Promise<Crawl> {
  h.web.clearRequests();
  const handle = await launch(h, input);
  const result = await handle.result();
  const out = outputOf(h, result.campaignId);
  return { result, requests: h.web.requests(), lines: await out.sealed(), records: await out.warc(), warcDir: path.join(out.dir, 'warc'), outDir: out.dir };
}

/** The raw HTTP header lines of a record, read from its own gzip member (the reader keeps one value per name). */
function rawHeaderLines(c: Crawl, r: WarcReadRecord): string[] {
  const fd = fs.openSync(path.join(c.warcDir, r.file), 'r');
  try {
    const member = Buffer.alloc(r.length);
    fs.readSync(fd, member, 0, r.length, r.offset);
    const text = zlib.gunzipSync(member).toString('utf8');
    const http = text.slice(text.indexOf('\r\n\r\n') + 4);
    return http.slice(0, http.indexOf('\r\n\r\n')).split('\r\n').slice(1);
  } finally {
    fs.closeSync(fd);
  }
}

beforeAll(async () => {
  await findOrInstallChromium((m) => process.stderr.write(`[browser] ${m}\n`));
  h = await createHarness('render-network', { workers: 1 });
});

afterAll(async () => {
  await pywb?.stop();
  await browser?.close();
  await h?.close();
});

describe("a rendered page's requests to another host, POST, Range and cookies", () => {
  const site = renderNetSite();
  let c: Crawl;
  const appUrl = (p: string) => normalizeUrl(h.web.url(site.host, p));
  const apiUrl = (p: string) => h.web.url(site.api, p);
  const responseOf = (url: string) => c.records.find((r) => r.type === 'response' && r.targetUri === url);

  beforeAll(async () => {
    for (const s of site.specs) h.web.addSite(s);
    c = await crawl({ seeds: [h.web.url(site.host, '/')], render: 'browser', politeness: { minDelayMs: 20 } });
  });

  test('the rendered page got every answer: the API JSON of the other host, the POST answer, the whole file, both cookies', () => {
    expect(c.result.status).toBe('completed');
    const fetched = c.lines.filter((e) => !e.kind && e.outcome === 'fetched').map((e) => e.url);
    expect(fetched.sort()).toEqual(['/', ...site.leaves].map(appUrl).sort());
    expect(c.lines.find((e) => e.url === appUrl('/'))?.render).toMatchObject({ done: 'quiet' });
  });

  test("the other host's requests respect its robots.txt and its Crawl-delay", () => {
    const api = c.requests.filter((r) => r.host === site.api);
    // robots.txt first (read for the page's request), then the two JSON files; never the disallowed one, nor anything else.
    expect(api[0]?.path).toBe('/robots.txt');
    expect(api.map((r) => r.path).sort()).toEqual(['/robots.txt', site.files.items, site.files.more].sort());
    expect(api.some((r) => r.path.startsWith('/private/'))).toBe(false);
    expect({ minGap: minGapsByHost(api).get(site.api)! >= site.apiDelayMs }).toEqual({ minGap: true });
  });

  test("each exchange with the other host is archived like the page's own, naming the page", () => {
    for (const f of [site.files.items, site.files.more]) {
      const res = responseOf(apiUrl(f));
      expect({ f, status: res?.statusLine }).toEqual({ f, status: 'HTTP/1.1 200 OK' });
      const meta = c.records.find((r) => r.type === 'metadata' && r.targetUri === apiUrl(f));
      expect(meta?.payload?.toString('utf8')).toContain(`via: ${appUrl('/')}`);
    }
    expect(responseOf(apiUrl(site.files.secret))).toBeUndefined();
  });

  test('each POST went out with its body, and its request record keeps it', () => {
    const bodies = ['posted', 'second'].map((word) => JSON.stringify({ word }));
    expect([...site.posted].sort()).toEqual(bodies);
    const url = appUrl(site.files.echo);
    const requests = c.records.filter((r) => r.type === 'request' && r.targetUri === url);
    expect(
      requests.map((r) => ({ line: r.statusLine, type: r.httpHeaders?.['content-type'], body: r.payload?.toString('utf8') })).sort((a, b) => a.body!.localeCompare(b.body!)),
    ).toEqual(bodies.map((body) => ({ line: `POST ${site.files.echo} HTTP/1.1`, type: 'application/json', body })));
    const answers = c.records.filter((r) => r.type === 'response' && r.targetUri === url).map((r) => r.payload?.toString('utf8'));
    expect(answers.sort()).toEqual(['posted', 'second'].map((w) => JSON.stringify({ echo: w })));
  });

  test('a Range request is fetched whole: the site never saw the Range header, and the WARC holds the whole file as a 200', () => {
    expect(site.ranges.get(site.files.clip)).toEqual([undefined]);
    const res = responseOf(appUrl(site.files.clip));
    expect({ status: res?.statusLine, bytes: res?.payload?.length }).toEqual({ status: 'HTTP/1.1 200 OK', bytes: site.clipBytes });
    expect(c.records.some((r) => r.type === 'response' && r.statusLine?.includes(' 206 '))).toBe(false);
  });

  test('several Set-Cookie values are kept apart: the browser got both cookies, and the record has one line each', () => {
    const res = responseOf(appUrl(site.files.cookies));
    expect(res).toBeDefined();
    const lines = rawHeaderLines(c, res!).filter((l) => /^set-cookie:/i.test(l));
    // Redacted (output.warcKeepSecrets off), one line per cookie as the server sent them.
    expect(lines).toHaveLength(2);
  });

  test("replayed by pywb from our WARCs and CDXJ: the other host's JSON and the POST's answer come from the archive", async () => {
    const tools = await findOrInstallPyReplayTools((m) => process.stderr.write(`[replay tools] ${m}\n`));
    const id = c.result.campaignId;
    const cmd = crawlerCommand(['cdxj', id, '--out', c.outDir]);
    const cdxj = (await run(cmd.command, cmd.args, { env: process.env })).stdout.trim().split('\n').pop()!;
    const root = path.join(h.outDir, `pywb-${id}`);
    fs.mkdirSync(root, { recursive: true });
    fs.writeFileSync(path.join(root, 'config.yaml'), `collections:\n  net:\n    index_paths: ${cdxj}\n    archive_paths: ${c.warcDir}/\nframed_replay: false\n`);
    pywb = await startPywb(tools, root, 'net');
    // No name resolves: a replayed page that reached for the live site would fail.
    browser = await launchBrowser((m) => process.stderr.write(`[browser] ${m}\n`), ['--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1']);
    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      tab.setDefaultTimeout(60_000);
      const archived: string[] = [];
      tab.on('response', (res) => {
        if (res.headers()['memento-datetime'] !== undefined) archived.push(`${res.request().method()} ${res.url()}`);
      });
      await tab.goto(`${pywb.base}/net/${h.web.url(site.host, '/')}`, { waitUntil: 'networkidle' });
      await tab.waitForFunction('document.title === "Net app"');
      const links = (await tab.evaluate('[...document.querySelectorAll("nav a")].map((a) => a.textContent)')) as string[];
      // Each POST answered by its own capture: the CDXJ keys them by body, as pywb looks them up.
      expect(links.filter((l) => l.startsWith('/item/') || l.startsWith('/echo/'))).toEqual(['/echo/posted', '/echo/second', '/item/alpha', '/item/beta', '/item/gamma']);
      expect(archived.some((a) => a.startsWith('POST ') && a.includes(site.files.echo))).toBe(true);
      expect(archived.some((a) => a.includes(`${site.api}:`) && a.includes(site.files.items))).toBe(true);
    } finally {
      await context.close();
    }
  });
});

describe("another host on the page host's own clock (politeness.key: domain)", () => {
  // A sibling subdomain shares the clock the page's session holds: its requests (and its robots.txt) go under that hold, not after it.
  const site = renderNetSite('app.shared-clock.test', 'api.shared-clock.test');
  let c: Crawl;

  beforeAll(async () => {
    for (const s of site.specs) h.web.addSite(s);
    c = await crawl({ seeds: [h.web.url(site.host, '/')], render: 'browser', politeness: { minDelayMs: 20, key: 'domain' } });
  });

  test('the page still gets the API JSON, and the disallowed file is still never requested', () => {
    expect(c.result.status).toBe('completed');
    const fetched = c.lines.filter((e) => !e.kind && e.outcome === 'fetched').map((e) => e.url);
    expect(fetched.sort()).toEqual(['/', ...site.leaves].map((p) => normalizeUrl(h.web.url(site.host, p))).sort());
    const api = c.requests.filter((r) => r.host === site.api).map((r) => r.path);
    expect(api.sort()).toEqual(['/robots.txt', site.files.items, site.files.more].sort());
  });
});

describe('a resource captured earlier in the campaign is answered from the capture', () => {
  const site = spaSite('spa.captures.test');
  let c: Crawl;

  beforeAll(async () => {
    h.web.addSite(site.spec);
    // One page per session: each session a fresh browser context and an empty session memory.
    c = await crawl({ seeds: [h.web.url(site.host, '/')], render: 'browser', politeness: { minDelayMs: 20 }, session: { maxPages: 1 } });
  });

  test('every page is found, each in a session of its own, and the script and image are requested once', () => {
    expect(c.result.status).toBe('completed');
    const fetched = c.lines.filter((e) => !e.kind && e.outcome === 'fetched').map((e) => e.url);
    expect(fetched.sort()).toEqual(site.pages.map((p) => normalizeUrl(h.web.url(site.host, p.path))).sort());
    const count = (p: string) => c.requests.filter((r) => r.host === site.host && r.path === p).length;
    expect({ script: count(site.files.script), image: count(site.files.image) }).toEqual({ script: 1, image: 1 });
    // The JSON the script fetches is data, not a shared file: each page asks for it.
    expect(count(site.files.data)).toBe(site.pages.length);
    // Archived once each: later pages were answered from that record.
    const stored = (p: string) => c.records.filter((r) => r.type === 'response' && r.targetUri === h.web.url(site.host, p)).length;
    expect({ script: stored(site.files.script), image: stored(site.files.image) }).toEqual({ script: 1, image: 1 });
  });
});
