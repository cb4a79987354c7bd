// A members' area behind HTTP Basic and an API behind a bearer token,
// crawled by `crawler crawl --credentials-file`: every page is fetched with
// 200, each host gets only its own credentials (robots.txt included), and no
// password, token or session cookie is found anywhere the crawl writes or
// says something: the output folder (WARCs decompressed), the command's
// output with its worker's logs, and the campaign's Temporal history.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { createHarness, type Harness } from '../support/harness';
import { membersSite, type MembersSite } from '../web/members-site';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { readIndex } from '../../src/storage/index-writer';
import { allText } from '../support/all-text';

jest.setTimeout(240_000);
const run = promisify(execFile);

const SECRETS = { user: 'alice', password: 'pw-Xq7-s3cret', token: 'tok-9f8e7d6c5b4a', session: 'sess-0a1b2c3d4e5f' };
const HOST = 'intranet.members.test';
const API = 'api.members.test';

let h: Harness;
let m: MembersSite;
beforeAll(async () => {
  h = await createHarness('credentials');
  m = membersSite(HOST, API, SECRETS);
  h.web.addSite(m.site);
  h.web.addSite(m.api);
});
afterAll(() => h?.close());

test('crawl --credentials-file: every page 200, credentials only to their origin, no secret in the output, the logs or the history', async () => {
  const out = path.join(h.outDir, 'members');
  const creds = path.join(h.outDir, 'credentials.txt');
  fs.writeFileSync(
    creds,
    [
      '# the members area and its API',
      `${h.web.url(HOST, '/').slice(0, -1)}  ${SECRETS.user}:${SECRETS.password}   # HTTP Basic`,
      `${h.web.url(API, '/').slice(0, -1)}  Bearer ${SECRETS.token}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const id = `members-${process.pid}`;
  const seed = h.web.url(HOST, '/');
  const resolve = h.web.resolveArgs().flatMap((r) => ['--resolve', r]);
  const crawl = crawlerCommand([
    'crawl',
    seed,
    '--id',
    id,
    '--delay-ms',
    '50',
    '--out',
    out,
    '--json',
    '--credentials-file',
    creds,
    '--header',
    'X-Crawl-Purpose: acceptance',
    ...resolve,
  ]);
  const { stdout, stderr } = await run(crawl.command, crawl.args, { env: { ...process.env, CRAWLER_TASK_QUEUE: h.taskQueue, CRAWLER_LOG_LEVEL: 'debug' } });
  const summary = JSON.parse(stdout.trim().split('\n').pop()!);
  expect(summary.status).toBe('completed');

  // Every page, public and protected, fetched with 200, and nothing refused.
  const index = await readIndex(path.join(out, 'index'));
  // Pages: the /sitemap.xml probes answer 404 and are no pages.
  const fetched = index.filter((e) => e.outcome === 'fetched' && e.kind === undefined);
  expect(new Set(fetched.map((e) => e.url))).toEqual(
    new Set([...['/', '/about', '/members/', '/members/a', '/members/b'].map((p) => h.web.url(HOST, p)), ...['/api/items', '/api/items/2'].map((p) => h.web.url(API, p))]),
  );
  expect(fetched.every((e) => e.status === 200)).toBe(true);
  expect(m.refused).toEqual([]);
  // Each origin got its own credentials and never the other's, robots.txt included; --header went everywhere.
  expect(m.misdirected).toEqual([]);
  expect(new Set(m.robotsWithCredentials)).toEqual(new Set([HOST, API]));
  expect(m.purposes.length).toBeGreaterThan(0);
  expect(m.purposes.every((p) => p === 'acceptance')).toBe(true);

  // No secret, in any spelling the crawler could have written it.
  const basic = Buffer.from(`${SECRETS.user}:${SECRETS.password}`).toString('base64');
  const secrets = [SECRETS.password, SECRETS.token, SECRETS.session, basic];
  const output = allText(out);
  expect(output).toContain('[redacted]');
  expect(output).toContain('<a href="/members/a">');
  // Payloads are base64 in the history's JSON: read decoded, as the Web UI shows them.
  const raw = JSON.stringify(await h.client.workflow.getHandle(id).fetchHistory());
  const history = [raw, ...[...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)].map((d) => Buffer.from(d[1], 'base64').toString('utf8'))].join('\n');
  expect(history).toContain(creds);
  for (const s of secrets) {
    expect({ where: 'output folder', found: output.includes(s) }).toEqual({ where: 'output folder', found: false });
    expect({ where: 'crawl output and worker logs', found: `${stdout}\n${stderr}`.includes(s) }).toEqual({ where: 'crawl output and worker logs', found: false });
    expect({ where: 'campaign history', found: history.includes(s) }).toEqual({ where: 'campaign history', found: false });
  }
});
