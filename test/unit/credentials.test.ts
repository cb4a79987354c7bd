// The credentials file and the request headers of configuration: the file's
// format and refusals (naming the line, never quoting a secret), and the
// HTTP client sending each origin only its own credentials, against real
// loopback servers.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { CredentialsError, loadCredentialsFile, parseCredentials } from '../../src/http/credentials';
import { createHttpClient } from '../../src/http/http-client';
import type { HttpClient } from '../../src/http/http-types';
import { headerEntryProblem, parseHeaderEntries } from '../../src/http/header-rules';
import { CampaignInputError, resolveCampaignSettings } from '../../src/config/campaign';
import { buildCampaignInput } from '../../src/cli/commands/crawl';
import { tempDirs } from '../support/temp-dirs';

const tmpDir = tempDirs('credentials-test-');

const FILE = `# the intranet and an API
https://intranet.example.test  alice:s3cr#et:with:colons   # HTTP Basic
https://api.example.test       Bearer eyJhbGciOiJIUzI1NiJ9.e30.tok3n
https://api.example.test       X-Api-Key: k-1234
http://lab.example.test:8080/  X-Team: blue
`;

function thrown(fn: () => unknown): CredentialsError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CredentialsError);
    return err as CredentialsError;
  }
  throw new Error('expected a CredentialsError');
}

describe('parseCredentials', () => {
  const creds = parseCredentials(FILE, '/etc/crawler/creds');

  it('turns user:password into Basic, Bearer into a bearer token and Name: value into that header, per origin', () => {
    expect(creds.origins).toEqual(['http://lab.example.test:8080', 'https://api.example.test', 'https://intranet.example.test']);
    expect(creds.headersFor(new URL('https://intranet.example.test/members/'))).toEqual({
      authorization: `Basic ${Buffer.from('alice:s3cr#et:with:colons').toString('base64')}`,
    });
    expect(creds.headersFor(new URL('https://api.example.test/v1?q=1'))).toEqual({ authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.tok3n', 'x-api-key': 'k-1234' });
    expect(creds.headersFor(new URL('http://lab.example.test:8080/x'))).toEqual({ 'x-team': 'blue' });
  });

  it('matches the origin exactly: scheme, host and port', () => {
    for (const other of ['http://intranet.example.test/', 'https://intranet.example.test:8443/', 'https://www.intranet.example.test/', 'http://lab.example.test/'])
      expect(creds.headersFor(new URL(other))).toBeNull();
    expect(creds.headersFor(new URL('https://intranet.example.test:443/'))).not.toBeNull();
  });

  it('keeps a login line for the handler: never a header, only loginFor its origin', () => {
    const c = parseCredentials('https://shop.example.test  login alice@example.test:pw with spaces:and colons\nhttps://shop.example.test  X-Team: red\n', '/f');
    expect(c.loginFor(new URL('https://shop.example.test/login'))).toEqual({ user: 'alice@example.test', password: 'pw with spaces:and colons' });
    expect(c.headersFor(new URL('https://shop.example.test/'))).toEqual({ 'x-team': 'red' });
    for (const other of ['http://shop.example.test/', 'https://shop.example.test:8443/', 'https://www.shop.example.test/']) expect(c.loginFor(new URL(other))).toBeNull();
    expect(parseCredentials('https://shop.example.test  login u:p\n', '/f').headersFor(new URL('https://shop.example.test/'))).toBeNull();
    expect(creds.loginFor(new URL('https://intranet.example.test/'))).toBeNull();
  });

  it.each([
    ['no credentials after the origin', 'https://a.test\n', 1],
    ['a path in the origin', '# c\nhttps://a.test/members  u:p\n', 2],
    ['a user name in the origin', 'https://u:p@a.test  u:p\n', 1],
    ['another scheme', 'ftp://a.test  u:p\n', 1],
    ['a bearer of two words', '\n\nhttps://a.test  Bearer two words\n', 3],
    ['neither user:password nor a header', 'https://a.test  justatoken\n', 1],
    ['a header the crawler owns', 'https://a.test  Host: b.test\n', 1],
    ['one header twice for an origin', 'https://a.test  X-Key: 1\nhttps://a.test  x-key: 2\n', 2],
    ['a login without user:password', 'https://a.test  login justatoken\n', 1],
    ['a login with nothing after it', '# c\nhttps://a.test  login\n', 2],
    ['two logins for an origin', 'https://a.test  login u:p\nhttps://a.test  login two words:x\n', 2],
  ])('refuses %s, naming the file and the line and never the credential', (_what, text, line) => {
    const err = thrown(() => parseCredentials(text, '/srv/creds.txt'));
    expect(err.code).toBe('CREDENTIALS_MALFORMED');
    expect(err.line).toBe(line);
    expect(err.message).toMatch(new RegExp(`^/srv/creds\\.txt, line ${line}: `));
    for (const secret of ['u:p', 'two words', 'justatoken', 'X-Key: 1', 'x-key: 2']) expect(err.message).not.toContain(secret);
  });
});

describe('loadCredentialsFile', () => {
  it('reads a file only its owner may read', async () => {
    const file = path.join(tmpDir(), 'creds');
    fs.writeFileSync(file, FILE, { mode: 0o600 });
    expect((await loadCredentialsFile(file)).origins).toHaveLength(3);
  });

  it('refuses a file every user may read, and says how to fix it', async () => {
    const file = path.join(tmpDir(), 'creds');
    fs.writeFileSync(file, FILE);
    fs.chmodSync(file, 0o644);
    await expect(loadCredentialsFile(file)).rejects.toMatchObject({ code: 'CREDENTIALS_EXPOSED', message: expect.stringMatching(/mode 644.*chmod/) });
  });

  it('refuses a file that cannot be read', async () => {
    await expect(loadCredentialsFile(path.join(tmpDir(), 'missing'))).rejects.toMatchObject({ code: 'CREDENTIALS_UNREADABLE' });
    await expect(loadCredentialsFile(tmpDir())).rejects.toMatchObject({ code: 'CREDENTIALS_UNREADABLE' });
  });

  it('refuses a malformed file before anything starts: crawl exits with a usage error naming the line', async () => {
    const { prepareCrawlInput } = await import('../../src/cli/commands/crawl');
    const file = path.join(tmpDir(), 'creds');
    fs.writeFileSync(file, 'https://a.test  alice:pw\nhttps://b.test/x  bob:hunter2\n', { mode: 0o600 });
    const io = { stdin: process.stdin, log: () => undefined };
    const run = prepareCrawlInput(['http://a.test/'], { workers: 0, resolve: [], priority: [], credentialsFile: file }, io);
    await expect(run).rejects.toMatchObject({ name: 'UsageError', message: expect.stringContaining(`${file}, line 2:`) });
    await expect(run).rejects.not.toMatchObject({ message: expect.stringContaining('hunter2') });
  });
});

describe('fetch.headers and fetch.credentialsFile in the campaign input', () => {
  it('takes ordinary headers and refuses credential-looking ones, pointing to the credentials file', () => {
    expect(headerEntryProblem('Accept-Language: fr')).toBeNull();
    expect(headerEntryProblem('X-Crawl-Purpose: archive')).toBeNull();
    for (const h of ['Authorization: Basic YTpi', 'Cookie: a=b', 'Proxy-Authorization: x', 'X-Api-Key: 1', 'X-Auth-Token: t', 'apikey: 1', 'X-Session: s'])
      expect(headerEntryProblem(h)).toMatch(/credentials file \(--credentials-file, fetch\.credentialsFile\)/);
    expect(headerEntryProblem('User-Agent: x')).toMatch(/--user-agent/);
    expect(headerEntryProblem('no colon')).toMatch(/must be "Name: value"/);
    expect(parseHeaderEntries(['Accept-Language: fr', 'X-A: 1', 'accept-language: de'])).toEqual({ 'accept-language': 'de', 'x-a': '1' });
  });

  it('travel as --header and --credentials-file: the path made absolute, never the contents', () => {
    const input = buildCampaignInput(['http://a.test/'], {
      workers: 1,
      resolve: [],
      priority: [],
      header: ['Accept-Language: fr'],
      credentialsFile: 'creds.txt',
      warcKeepSecrets: true,
    });
    expect(input.fetch).toMatchObject({ headers: ['Accept-Language: fr'], credentialsFile: path.resolve('creds.txt') });
    expect(input.output).toMatchObject({ warcKeepSecrets: true });
    expect(() => buildCampaignInput(['http://a.test/'], { workers: 1, resolve: [], priority: [], header: ['Authorization: Bearer abc'] })).toThrow(
      /fetch\.headers\[0\] Authorization looks like a credential/,
    );
  });

  it('refuses a seed with user:password@ (it would land in the history, and is never sent), naming it by position, not by its text', () => {
    const build = () => buildCampaignInput(['http://a.test/', 'https://alice:hunter2@b.test/x'], { workers: 1, resolve: [], priority: [] });
    expect(build).toThrow(/seed 2: holds user:password@.*--credentials-file/);
    expect(build).not.toThrow(/hunter2/);
    expect(() => buildCampaignInput(['https://alice@b.test/'], { workers: 1, resolve: [], priority: [] })).toThrow(/seed 1: holds user:password@/);
  });

  it('refuses a relative credentials path in the input (workers resolve paths against their own folders)', () => {
    expect(() => resolveCampaignSettings({ seeds: ['http://a.test/'], fetch: { credentialsFile: 'creds.txt' } }, 'c')).toThrow(CampaignInputError);
    expect(() => resolveCampaignSettings({ seeds: ['http://a.test/'], fetch: { credentialsFile: 'creds.txt' } }, 'c')).toThrow(/fetch\.credentialsFile must be an absolute path/);
  });
});

describe('the HTTP client with credentials', () => {
  const servers: http.Server[] = [];
  const clients: HttpClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => (s.closeAllConnections(), s.close(r)))));
  });

  /** A loopback server answering with the request headers it got; `/hop` redirects to `to`. */
  async function echo(to?: () => string): Promise<{ port: number; seen: http.IncomingHttpHeaders[] }> {
    const seen: http.IncomingHttpHeaders[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers);
      if (req.url === '/hop' && to) res.writeHead(302, { location: to() }).end();
      else res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    return { port: (server.address() as AddressInfo).port, seen };
  }

  it('sends an origin its own credentials preemptively, every origin the configured headers, and no origin another one’s credentials, not even across a redirect', async () => {
    const other = await echo();
    const own = await echo(() => `http://other.test:${other.port}/landing`);
    const creds = parseCredentials(`http://intranet.test:${own.port}  alice:s3cret\nhttp://intranet.test:${own.port}  X-Api-Key: k-99\n`, 'creds');
    const c = createHttpClient({
      userAgent: 'test-crawler/1.0',
      resolve: [`intranet.test:${own.port}:127.0.0.1`, `other.test:${other.port}:127.0.0.1`],
      headers: parseHeaderEntries(['Accept-Language: fr']),
      credentials: creds,
    });
    clients.push(c);
    const first = await c.fetch(`http://intranet.test:${own.port}/members/`);
    expect(own.seen[0]).toMatchObject({ authorization: `Basic ${Buffer.from('alice:s3cret').toString('base64')}`, 'x-api-key': 'k-99', 'accept-language': 'fr' });
    expect(first.secretHeaders?.sort()).toEqual(['authorization', 'x-api-key']);
    // Followed inside one fetch: the second hop is another origin's request.
    const hopped = await c.fetch(`http://intranet.test:${own.port}/hop`);
    expect(hopped.finalUrl).toBe(`http://other.test:${other.port}/landing`);
    expect(other.seen).toHaveLength(1);
    expect(other.seen[0]).toMatchObject({ 'accept-language': 'fr' });
    expect(other.seen[0].authorization).toBeUndefined();
    expect(other.seen[0]['x-api-key']).toBeUndefined();
    expect(hopped.secretHeaders).toBeUndefined();
    expect(hopped.requestHeaders.authorization).toBeUndefined();
  });
});
