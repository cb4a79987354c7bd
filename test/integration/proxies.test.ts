// Crawling through forward proxies (docs/operations.md, "Proxies"), with
// real workers, Temporal and Redis. The sites here have names only the test
// proxies can resolve (the campaigns get no --resolve pins, and nothing in
// DNS answers for them), and each site refuses, and counts, any request
// that does not come from a proxy's own source address (127.0.0.2): a page
// fetched with 200 was fetched through a proxy, over http or https.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { proxyFilesFor } from '../../src/cli/proxy-files';
import { parseProxyUrl, rankProxies, withIds } from '../../src/http/proxies';
import { createHarness, fetchedUrls, launch, minGapsByHost, outputOf, sleep, type Harness } from '../support/harness';
import { makeTestPki, type TestPki } from '../support/test-pki';
import { startHttpProxy, type TestProxy } from '../web/forward-proxy';
import type { SiteSpec } from '../web/test-web';

const PROXY_SOURCE = '127.0.0.2';
const AUTH = { user: 'crawler', password: 'Pr0xy-pa55word-never-stored' };
const TLS_HOST = 'tls.proxied.test';
const DELAY_MS = 300;

let h: Harness;
let pki: TestPki;
let httpsPort: number;
const direct: string[] = [];
const proxies: TestProxy[] = [];
/** Where the proxies find the sites: read at each request, so sites added later are found. */
const routes: Record<string, string> = {};

/** A site that answers only requests that came through a test proxy. */
function proxiedOnly(spec: Omit<SiteSpec, 'handler'>): SiteSpec {
  routes[spec.host] = '127.0.0.1';
  return {
    ...spec,
    handler: (ctx) => {
      if (ctx.socket.remoteAddress === PROXY_SOURCE || ctx.socket.remoteAddress === `::ffff:${PROXY_SOURCE}`) return false;
      direct.push(`${ctx.host}${ctx.target}`);
      ctx.send(403, 'text/plain', 'direct requests are refused');
      return true;
    },
  };
}

async function proxy(auth?: typeof AUTH): Promise<TestProxy> {
  const p = await startHttpProxy({ hosts: routes, auth, localAddress: PROXY_SOURCE });
  proxies.push(p);
  return p;
}

beforeAll(async () => {
  pki = await makeTestPki([TLS_HOST]);
  // The workers trust the test CA, so the https site is fetched for real, through a CONNECT tunnel.
  h = await createHarness('proxies', { workers: 2, env: { NODE_EXTRA_CA_CERTS: pki.ca } });
  h.web.addSite(proxiedOnly({ host: 'members.proxied.test', pages: 6, fanOut: 2 }));
  h.web.addSite(proxiedOnly({ host: TLS_HOST, pages: 1, fanOut: 0 }));
  httpsPort = await h.web.startHttps({ key: fs.readFileSync(pki.serverKey, 'utf8'), cert: fs.readFileSync(pki.serverCert, 'utf8') });
}, 120_000);

afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await h?.close();
  pki?.remove();
});

/** Every file under `dir`, gzip members decompressed (WARCs, CDXJ), as text. */
function allOutput(dir: string): string {
  let text = '';
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const bytes = fs.readFileSync(path.join(entry.parentPath, entry.name));
    text += bytes[0] === 0x1f && bytes[1] === 0x8b ? zlib.gunzipSync(bytes).toString('latin1') : bytes.toString('latin1');
  }
  return text;
}

test('a site that answers only through a proxy is crawled whole through it, over http and https, and the proxy password is stored nowhere', async () => {
  const p = await proxy(AUTH);
  // What `crawl --proxy URL` does with the URL: a private file, passed by path.
  const files = await proxyFilesFor(`proxies-${process.pid}`, { proxy: [p.urlWithAuth] }, path.join(h.outDir, '..', `secrets-${path.basename(h.outDir)}`));
  const seeds = [h.web.url('members.proxied.test', '/'), `https://${TLS_HOST}:${httpsPort}/`];
  const handle = await launch(h, { seeds, scope: { mode: 'same-host' }, politeness: { minDelayMs: DELAY_MS }, fetch: { resolve: [], proxyFiles: files } });
  const result = await handle.result();
  expect(result.status).toBe('completed');

  const expected = new Set([...h.web.expectedPages([seeds[0]], { hosts: ['members.proxied.test'] }), seeds[1]]);
  const index = await outputOf(h, handle.workflowId).index();
  expect(new Set(fetchedUrls(index))).toEqual(expected);
  expect(index.filter((e) => e.outcome === 'fetched').every((e) => e.status === 200)).toBe(true);
  expect(direct).toEqual([]);
  // Both ways through the proxy, always with the right credentials.
  expect(new Set(p.records().map((r) => r.kind))).toEqual(new Set(['forward', 'connect']));
  expect(p.records().every((r) => r.authorized)).toBe(true);

  // No trace of the password, plain or as the Basic credentials, in the output (WARCs decompressed) or in Temporal's history.
  const basic = Buffer.from(`${AUTH.user}:${AUTH.password}`).toString('base64');
  const output = allOutput(outputOf(h, handle.workflowId).dir);
  expect(output).toContain('members.proxied.test');
  expect(output).not.toContain(AUTH.password);
  expect(output).not.toContain(basic);
  const history = JSON.stringify(await handle.fetchHistory());
  expect(history).not.toContain(AUTH.password);
  expect(history).not.toContain(basic);
}, 180_000);

test("two proxies, one killed mid-crawl: its hosts move to the other, every page is fetched, and each host's pace holds", async () => {
  const [a, b] = [await proxy(), await proxy()];
  const list = withIds([a, b].map((p, i) => parseProxyUrl(p.url, `proxy ${i}`)));
  // Three hosts that rank each proxy first, so both carry hosts when one dies.
  const byProxy = new Map<string, string[]>(list.map((p) => [p.id, []]));
  for (let i = 0; [...byProxy.values()].some((hosts) => hosts.length < 3); i++) {
    const host = `s${i}.failover.test`;
    const hosts = byProxy.get(rankProxies(host, list)[0].id)!;
    if (hosts.length < 3) hosts.push(host);
  }
  const hosts = [...byProxy.values()].flat();
  for (const host of hosts) h.web.addSite(proxiedOnly({ host, pages: 10, fanOut: 2 }));
  const first = new Map(hosts.map((host) => [host, rankProxies(host, list)[0].id]));
  const [victim, survivor] = [a, b];
  const victimId = list[0].id;

  const dir = fs.mkdtempSync(path.join(h.outDir, '..', 'proxy-lists-'));
  const listFile = path.join(dir, 'proxies.txt');
  fs.writeFileSync(listFile, `${a.url}\n${b.url}\n`, { mode: 0o600 });
  const seeds = hosts.map((host) => h.web.url(host, '/'));
  // The proxies set aside are looked at once the campaign has completed: kept (keep summary deletes them at the end).
  const handle = await launch(h, {
    seeds,
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: DELAY_MS },
    fetch: { resolve: [], proxyFiles: [listFile] },
    retention: { keep: 'all' },
  });

  // Mid-crawl: once the victim has carried a few pages of its hosts.
  while (victim.records().length < 6) await sleep(50);
  await victim.kill();
  const carriedBefore = victim.records().length;
  const result = await handle.result();
  expect(result.status).toBe('completed');

  const expected = h.web.expectedPages(seeds, { hosts });
  const index = await outputOf(h, handle.workflowId).index();
  expect(new Set(fetchedUrls(index))).toEqual(expected);
  expect(direct).toEqual([]);
  expect(carriedBefore).toBeLessThan(expected.size);
  // The victim's hosts went on through the survivor.
  const victimHosts = hosts.filter((host) => first.get(host) === victimId);
  const survivorTargets = new Set(survivor.records().map((r) => r.target.split(':')[0]));
  for (const host of victimHosts) expect(survivorTargets.has(host)).toBe(true);
  // Every worker was told: the victim is set aside in the campaign's keys.
  const keys = await h.redis.keys(`crawl:{${handle.workflowId}.*}:proxies-down`);
  expect(keys).toHaveLength(1);
  expect(await h.redis.zrange(keys[0], 0, -1)).toEqual([victimId]);
  // A proxy changes where requests come from, not how often a host is asked. The
  // gaps are measured where requests arrive, one proxy hop after they were paced:
  // a few ms of that hop's jitter are allowed.
  const reqs = h.web.requests().filter((r) => hosts.includes(r.host));
  for (const [host, gap] of minGapsByHost(reqs)) expect({ host, ok: gap >= DELAY_MS - 50 }).toEqual({ host, ok: true });
}, 240_000);
