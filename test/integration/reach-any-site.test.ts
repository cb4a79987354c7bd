// Issue 25's first acceptance case, end to end through `crawler crawl`: a
// site that answers only through a forward proxy, sets a session cookie on
// its home page and requires it everywhere else, and keeps a members' area
// behind HTTP Basic, crawled with `--proxy user:password@…` and
// `--credentials-file` and nothing else that matters. Every page is fetched
// with 200, none directly, and no password (the site's or the proxy's), no
// Basic token and no session cookie is found anywhere the crawl writes or
// says something: the output folder (WARCs decompressed), the command's
// output with its worker's logs, and the Temporal history of the campaign
// and of every host workflow it started; in Redis, only the session, in
// its cookie jar. Each of those searches is shown able to find a secret
// that is there (a second crawl with --warc-keep-secrets, the files the
// secrets came from, the jar), so none passes for searching nothing.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { SECRETS_DIR } from '../../src/cli/proxy-files';
import { readIndex } from '../../src/storage/index-writer';
import { hostKey } from '../../src/url/normalize';
import { domainWorkflowId } from '../../workflows/ids';
import { createHarness, sleep, type Harness } from '../support/harness';
import { startHttpProxy, type TestProxy } from '../web/forward-proxy';
import type { SiteRequest, SiteSpec } from '../web/test-web';
import { allText } from '../support/all-text';

jest.setTimeout(180_000);
const run = promisify(execFile);

/** The proxy's own source address: a request from anywhere else reached the site directly. */
const PROXY_SOURCE = '127.0.0.2';
const SITE_AUTH = { user: 'alice', password: 'site-pw-Q4z-s3cret' };
const PROXY_AUTH = { user: 'egress', password: 'proxy-pw-W8k-s3cret' };
const HOST = 'www.reach.test';
/** The host of the --warc-keep-secrets crawl: the same site, its own requests. */
const KEEP_HOST = 'keep.reach.test';
const PAGES = ['/', '/about', '/news/1', '/news/2', '/members/', '/members/a', '/members/b'];
const basicToken = (a: { user: string; password: string }) => Buffer.from(`${a.user}:${a.password}`).toString('base64');

const html = (body: string) => `<!doctype html><html><head><title>t</title></head><body>${body}</body></html>`;
const links = (...hrefs: string[]) => html(hrefs.map((h) => `<a href="${h}">${h}</a>`).join(''));
const BODIES: Record<string, string> = {
  '/': links('/about', '/news/1', '/members/'),
  '/about': links('/news/2'),
  '/news/1': links('/news/2', '/members/a'),
  '/news/2': html('news'),
  '/members/': links('/members/a', '/members/b'),
  '/members/a': links('/members/b'),
  '/members/b': html('members only'),
};

interface ReachSite {
  spec: SiteSpec;
  /** Requests that did not come from the proxy (answered 403), as paths. */
  direct: string[];
  /** Session cookie values handed out by the home page. */
  issued: string[];
  /** Pages asked for without a session (403) or, in the members' area, without the Basic credentials (401). */
  refused: string[];
}

/**
 * The site: only the proxy's connections are answered; `/` hands a visitor
 * without a session a fresh `sid` cookie, every other page needs it, and
 * /members/ needs HTTP Basic as well.
 */
function reachSite(host: string): ReachSite {
  const out: ReachSite = { spec: undefined!, direct: [], issued: [], refused: [] };
  const basic = `Basic ${basicToken(SITE_AUTH)}`;
  const handler = (ctx: SiteRequest): boolean => {
    const from = ctx.socket.remoteAddress;
    if (from !== PROXY_SOURCE && from !== `::ffff:${PROXY_SOURCE}`) {
      out.direct.push(ctx.target);
      ctx.send(403, 'text/plain', 'direct requests are refused');
      return true;
    }
    // robots.txt: the test web's allow-all one (no session needed to read the rules).
    if (ctx.path === '/robots.txt') return false;
    const body = BODIES[ctx.path];
    if (body === undefined) return (ctx.send(404, 'text/plain', 'not found'), true);
    const sid = /(?:^|;\s*)sid=([^;]*)/.exec(ctx.req.headers.cookie ?? '')?.[1];
    const session = sid !== undefined && out.issued.includes(sid);
    if (ctx.path === '/') {
      if (session) return (ctx.send(200, 'text/html', body), true);
      const fresh = `sid-${randomBytes(9).toString('hex')}`;
      out.issued.push(fresh);
      ctx.send(200, 'text/html', body, { 'set-cookie': `sid=${fresh}; Path=/; HttpOnly` });
      return true;
    }
    if (!session) {
      out.refused.push(`403 ${ctx.path}`);
      return (ctx.send(403, 'text/plain', 'no session'), true);
    }
    if (ctx.path.startsWith('/members/') && ctx.req.headers.authorization !== basic) {
      out.refused.push(`401 ${ctx.path}`);
      return (ctx.send(401, 'text/plain', 'who are you?', { 'www-authenticate': 'Basic realm="members"' }), true);
    }
    ctx.send(200, 'text/html', body);
    return true;
  };
  out.spec = { host, pages: 1, fanOut: 0, handler };
  return out;
}

/** A whole header line in a WARC record, its name in any case (the client sends names in lower case). */
const headerLine = (name: string, value: string) => new RegExp(`\r\n${name}: ${value.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\r\n`, 'i');

let h: Harness;
let proxy: TestProxy;
/** The files `--proxy` wrote under .crawler/secrets/, removed when done. */
const proxyFiles: string[] = [];
const site = reachSite(HOST);
const keep = reachSite(KEEP_HOST);
beforeAll(async () => {
  h = await createHarness('reach-any-site');
  h.web.addSite(site.spec);
  h.web.addSite(keep.spec);
  // Only the proxy knows where the sites are: the crawl gets no --resolve pins, and nothing in DNS answers for them.
  proxy = await startHttpProxy({ hosts: { [HOST]: '127.0.0.1', [KEEP_HOST]: '127.0.0.1' }, auth: PROXY_AUTH, localAddress: PROXY_SOURCE });
});
afterAll(async () => {
  for (const f of proxyFiles) fs.rmSync(f, { force: true });
  await proxy?.close();
  await h?.close();
});

/** `crawler crawl <host>/ --proxy … --credentials-file …` with its own worker and task queue. */
async function crawl(name: string, host: string, extra: string[] = []) {
  const id = `reach-${name}-${process.pid}`;
  const out = path.join(h.outDir, name);
  // Beside the output folder, not in it: the one file here that should hold the site's password.
  const creds = path.join(h.outDir, `${name}-credentials`, 'credentials.txt');
  fs.mkdirSync(path.dirname(creds), { mode: 0o700 });
  fs.writeFileSync(creds, `# the members' area\n${h.web.url(host, '/').slice(0, -1)}  ${SITE_AUTH.user}:${SITE_AUTH.password}\n`, { mode: 0o600 });
  const cmd = crawlerCommand([
    'crawl',
    h.web.url(host, '/'),
    '--id',
    id,
    '--out',
    out,
    '--json',
    '--delay-ms',
    '50',
    '--proxy',
    proxy.urlWithAuth,
    '--credentials-file',
    creds,
    ...extra,
  ]);
  // Where `--proxy` puts its URL for the workers: the one place the proxy password should be.
  const proxyFile = path.join(SECRETS_DIR, `proxies-${id}.txt`);
  proxyFiles.push(proxyFile);
  const env = { ...process.env, CRAWLER_TASK_QUEUE: `${h.taskQueue}-${name}`, CRAWLER_LOG_LEVEL: 'debug' };
  const { stdout, stderr } = await run(cmd.command, cmd.args, { env, maxBuffer: 64 * 1024 * 1024 });
  const summary = JSON.parse(stdout.trim().split('\n').pop()!) as { status: string };
  return { id, out, creds, proxyFile, stdout, stderr, summary };
}

/** Every key matching `pattern` with its value, whatever its type, as text. */
async function redisDump(pattern: string): Promise<string> {
  const out: string[] = [];
  for (const key of await h.redis.keys(pattern)) {
    const type = await h.redis.type(key);
    const value =
      type === 'string'
        ? await h.redis.get(key)
        : type === 'hash'
          ? await h.redis.hgetall(key)
          : type === 'set'
            ? await h.redis.smembers(key)
            : type === 'zset'
              ? await h.redis.zrange(key, 0, -1, 'WITHSCORES')
              : type === 'list'
                ? await h.redis.lrange(key, 0, -1)
                : type === 'stream'
                  ? await h.redis.xrange(key, '-', '+')
                  : `<${type}>`;
    out.push(`${key} ${JSON.stringify(value)}`);
  }
  return out.join('\n');
}

/**
 * The Temporal history of the campaign and of every workflow it started (its
 * host workflows, every run), as JSON with each payload also decoded (as the
 * Web UI shows them), with the workflow list's own entries (memo, search
 * attributes). Waits until the list, which lags, names the campaign and `hosts`.
 */
async function histories(id: string, hosts: string[]): Promise<{ ids: Set<string>; text: string }> {
  const want = [id, ...hosts.map((host) => domainWorkflowId(id, host))];
  for (let attempt = 0; ; attempt++) {
    const runs: { workflowId: string; runId: string; entry: string }[] = [];
    for await (const wf of h.client.workflow.list({ query: `CrawlCampaign = '${id}'` }))
      runs.push({ workflowId: wf.workflowId, runId: wf.runId, entry: JSON.stringify({ memo: wf.memo, searchAttributes: wf.typedSearchAttributes }) });
    const ids = new Set(runs.map((r) => r.workflowId));
    if (want.some((w) => !ids.has(w)) && attempt < 50) {
      await sleep(200);
      continue;
    }
    const texts: string[] = [];
    for (const r of runs) {
      const raw = JSON.stringify(await h.client.workflow.getHandle(r.workflowId, r.runId).fetchHistory());
      texts.push(r.entry, raw, ...[...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map((d) => Buffer.from(d[1], 'base64').toString('utf8')));
    }
    return { ids, text: texts.join('\n') };
  }
}

test('a site reached only through an authenticating proxy, with a session cookie and a Basic members area: every page 200, none direct, no secret anywhere', async () => {
  const [main, kept] = await Promise.all([crawl('main', HOST), crawl('kept', KEEP_HOST, ['--warc-keep-secrets', '--retention-keep', 'all'])]);
  expect(main.summary.status).toBe('completed');
  expect(kept.summary.status).toBe('completed');

  // Every page fetched with 200, through the proxy, with its credentials; nothing reached the site directly.
  const index = await readIndex(path.join(main.out, 'index'));
  // Pages: the /sitemap.xml probe answers 404 and is no page.
  const fetched = index.filter((e) => e.outcome === 'fetched' && e.kind === undefined);
  expect(new Set(fetched.map((e) => e.url))).toEqual(new Set(PAGES.map((p) => h.web.url(HOST, p))));
  expect(fetched.map((e) => e.status).filter((s) => s !== 200)).toEqual([]);
  expect(site.direct).toEqual([]);
  expect(keep.direct).toEqual([]);
  const viaProxy = proxy.records().filter((r) => r.target === `${HOST}:${h.web.port}`);
  expect(new Set(viaProxy.map((r) => r.path))).toEqual(new Set([...PAGES, '/robots.txt', '/sitemap.xml']));
  expect(proxy.records().every((r) => r.kind === 'forward' && r.authorized)).toBe(true);
  // One session for the whole crawl, sent with every page after the home page, and Basic sent ahead to the origin: no 403, no 401.
  expect(site.issued).toHaveLength(1);
  expect(site.refused).toEqual([]);

  const secrets: Record<string, string> = {
    'site password': SITE_AUTH.password,
    'site Basic token': basicToken(SITE_AUTH),
    'proxy password': PROXY_AUTH.password,
    'proxy Basic token': basicToken(PROXY_AUTH),
    ...Object.fromEntries([...site.issued, ...keep.issued].map((v, i) => [`session cookie ${i}`, v])),
  };

  // Each search finds a secret that is there. The files the secrets came from:
  expect(allText(path.dirname(main.creds))).toContain(SITE_AUTH.password);
  // The private file `--proxy` wrote for the workers (0600, tested in test/unit/proxies.test.ts) is gone with the campaign.
  expect(fs.existsSync(main.proxyFile)).toBe(false);
  // Redis, the campaigns' keys and their hosts': the main crawl's end deleted its cookie jar (retention.keep
  // summary), and the session the site handed out with it; the crawl run with --retention-keep all keeps its
  // jar for its retention, the session its site handed out in it.
  expect(await h.redis.keys(`crawl:{${main.id}.*|*}:cookies`)).toEqual([]);
  const jars = await h.redis.keys(`crawl:{${kept.id}.*|*}:cookies`);
  expect(jars).toHaveLength(1);
  const redis = await redisDump('*reach*');
  expect(redis).toContain(jars[0]);
  expect(redis).toContain(keep.issued[0]);
  expect(redis).not.toContain(site.issued[0]);
  // The --warc-keep-secrets crawl's folder: its WARC holds the Basic token and the session cookie, sent and set.
  const keptOutput = allText(kept.out);
  const keptLines = [
    ['Authorization', `Basic ${basicToken(SITE_AUTH)}`],
    ['Cookie', `sid=${keep.issued[0]}`],
    ['Set-Cookie', `sid=${keep.issued[0]}; Path=/; HttpOnly`],
  ];
  expect(keptLines.filter(([n, v]) => !headerLine(n, v).test(keptOutput))).toEqual([]);
  // Even there, nothing of the proxy's: its credentials went to the proxy only, on a hop the WARC does not record.
  expect([PROXY_AUTH.password, basicToken(PROXY_AUTH)].filter((s) => keptOutput.includes(s))).toEqual([]);

  // What was searched is what the crawl wrote and said: pages in the WARC with their headers' names, the
  // worker's own log lines, and the decoded history, which names the files the secrets are in.
  const output = allText(main.out);
  expect(output).toContain('<a href="/members/a">');
  expect(['Authorization', 'Cookie', 'Set-Cookie'].filter((n) => !headerLine(n, '[redacted]').test(output))).toEqual([]);
  const said = `${main.stdout}\n${main.stderr}\n${kept.stdout}\n${kept.stderr}`;
  expect(main.stderr).toContain(HOST);
  expect(main.stderr).toMatch(/"level":/);
  const history = await histories(main.id, [hostKey(h.web.url(HOST, '/'))]);
  // The campaign and its host workflow, every run of each (continued-as-new runs included).
  expect([main.id, domainWorkflowId(main.id, hostKey(h.web.url(HOST, '/')))].filter((w) => !history.ids.has(w))).toEqual([]);
  expect(history.text).toContain(main.creds);
  expect(history.text).toContain(main.proxyFile);
  const keptHistory = await histories(kept.id, [hostKey(h.web.url(KEEP_HOST, '/'))]);

  // And none of them holds a secret, in any spelling the crawler could have written it.
  const places: Record<string, string> = {
    'output folder': output,
    'crawl output and worker logs': said,
    'Temporal histories': history.text,
    'Temporal histories (--warc-keep-secrets crawl)': keptHistory.text,
    // Where the sessions are meant to be: nothing else of the secrets.
    Redis: [site.issued, keep.issued].flat().reduce((text, sid) => text.replaceAll(sid, '<session>'), redis),
  };
  const found = Object.entries(places).flatMap(([where, text]) =>
    Object.entries(secrets)
      .filter(([, s]) => text.includes(s))
      .map(([what]) => `${what} in ${where}`),
  );
  expect(found).toEqual([]);
});
