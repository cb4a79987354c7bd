// Proxy lists (src/http/proxies.ts) and what the CLI makes of --proxy and
// --proxy-file (src/cli/proxy-files.ts): parsing that never quotes a
// password, files refused before anything starts, and the choice of a
// host's proxy (rendezvous hashing: even, stable, minimal moves).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveCampaignSettings } from '../../src/config/campaign';
import { checkProxyFlags, proxyFilesFor, removeProxySecrets } from '../../src/cli/proxy-files';
import { UsageError } from '../../src/cli/usage-error';
import { MemoryProxyHealth, ProxyConfigError, loadProxyFiles, parseProxyList, parseProxyUrl, rankProxies, readProxyFile, withIds } from '../../src/http/proxies';

const SECRET = 'Sup3r-s3cret';
let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'proxies-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string, mode = 0o600): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, text, { mode });
  fs.chmodSync(f, mode);
  return f;
}

function problem(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a problem');
}

async function asyncProblem(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a problem');
}

describe('proxy URLs', () => {
  it('reads the schemes, default ports and percent-encoded credentials', () => {
    expect(parseProxyUrl(`http://alice:${encodeURIComponent('p@ss:w/rd')}@proxy.example:3128`, 'x')).toEqual({
      protocol: 'http',
      host: 'proxy.example',
      port: 3128,
      username: 'alice',
      password: 'p@ss:w/rd',
    });
    expect(parseProxyUrl('https://proxy.example', 'x')).toMatchObject({ protocol: 'https', port: 443, username: null, password: null });
    expect(parseProxyUrl('http://proxy.example:80', 'x').port).toBe(80);
    expect(parseProxyUrl('SOCKS5h://[::1]:1080', 'x')).toMatchObject({ protocol: 'socks5h', host: '::1', port: 1080 });
    expect(parseProxyUrl('socks5://10.0.0.1', 'x')).toMatchObject({ protocol: 'socks5', port: 1080 });
  });

  it.each([
    [`ftp://u:${SECRET}@proxy:21`, 'unsupported proxy scheme'],
    [`u:${SECRET}@proxy:3128`, 'not a proxy URL'],
    [`http://u:${SECRET}@proxy:3128/path`, 'no path'],
    [`http://u:${SECRET}@proxy:99999`, 'not a proxy URL'],
    [`http://u:${SECRET}@:3128`, 'not a proxy URL'],
    [`http://u:%ZZ${SECRET}@proxy:3128`, 'percent-encoding'],
  ])('refuses %s, saying where and why but never quoting it', (url, why) => {
    const message = problem(() => parseProxyUrl(url, 'proxies.txt line 7'));
    expect(message).toContain('proxies.txt line 7');
    expect(message).toContain(why);
    expect(message).not.toContain(SECRET);
  });

  it('names proxies without their credentials, numbering the later entries of one host and port', () => {
    const list = withIds(parseProxyList(`http://a:${SECRET}@p.example:8000\nhttp://b:${SECRET}@p.example:8000\nhttp://a:${SECRET}@p.example:8000\nsocks5://q.example`, 'l'));
    expect(list.map((p) => p.id)).toEqual(['http://p.example:8000', 'http://p.example:8000#2', 'socks5://q.example:1080']);
    for (const p of list) expect(p.id).not.toContain(SECRET);
  });
});

describe('proxy files', () => {
  it('takes one URL a line with # comments and blank lines', async () => {
    const f = file('p.txt', `# our egress\n\nhttp://u:${SECRET}@p1.example:3128   # the first\n  socks5://p2.example:1080\n`);
    expect((await readProxyFile(f)).map((p) => `${p.protocol}://${p.host}:${p.port}`)).toEqual(['http://p1.example:3128', 'socks5://p2.example:1080']);
  });

  it('refuses a malformed line naming its number, never its text', async () => {
    const f = file('p.txt', `http://ok.example:3128\nhttp//u:${SECRET}@bad.example\n`);
    const err = await asyncProblem(readProxyFile(f));
    expect(err).toBeInstanceOf(ProxyConfigError);
    expect(err.message).toContain(`${f} line 2`);
    expect(err.message).not.toContain(SECRET);
  });

  it('refuses a file every user may read, one that cannot be read, and one without a proxy', async () => {
    const open = file('open.txt', 'http://p.example:3128\n', 0o644);
    expect((await asyncProblem(readProxyFile(open))).message).toContain('readable by every user');
    expect((await asyncProblem(readProxyFile(path.join(dir, 'missing.txt')))).message).toContain('cannot be read');
    expect((await asyncProblem(readProxyFile(file('empty.txt', '# nothing yet\n')))).message).toContain('names no proxy');
    // Group-readable is the operator's call (a group of crawler accounts).
    expect(await readProxyFile(file('group.txt', 'http://p.example:3128\n', 0o640))).toHaveLength(1);
  });

  it('loads several files into one list', async () => {
    const list = await loadProxyFiles([file('a.txt', 'http://a.example:1\n'), file('b.txt', 'http://b.example:2\nhttp://a.example:1\n')]);
    expect(list.map((p) => p.id)).toEqual(['http://a.example:1', 'http://b.example:2']);
  });
});

describe('a host and its proxy', () => {
  const proxies = withIds(Array.from({ length: 5 }, (_, i) => parseProxyUrl(`http://p${i}.example:3128`, 'x')));
  const hosts = Array.from({ length: 5000 }, (_, i) => `site-${i}.example`);

  it('is the same proxy whatever the order of the list', () => {
    const reversed = [...proxies].reverse();
    for (const h of hosts.slice(0, 200)) expect(rankProxies(h, reversed)[0].id).toBe(rankProxies(h, proxies)[0].id);
  });

  it('spreads hosts evenly over the proxies', () => {
    const counts = new Map<string, number>();
    for (const h of hosts) {
      const id = rankProxies(h, proxies)[0].id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    expect(counts.size).toBe(5);
    // 1000 each on average; a spread of ±15% is far beyond chance for 5000 draws.
    for (const n of counts.values()) expect(Math.abs(n - 1000)).toBeLessThan(150);
  });

  it("moves only the set-aside proxy's hosts, each to its next-ranked proxy, spread over the others", () => {
    const gone = proxies[2].id;
    const moved = new Map<string, number>();
    for (const h of hosts) {
      const ranked = rankProxies(h, proxies);
      const after = ranked.filter((p) => p.id !== gone)[0].id;
      if (ranked[0].id !== gone) expect(after).toBe(ranked[0].id);
      else moved.set(after, (moved.get(after) ?? 0) + 1);
    }
    expect([...moved.keys()].sort()).toEqual(
      proxies
        .filter((p) => p.id !== gone)
        .map((p) => p.id)
        .sort(),
    );
  });

  it('is set aside for a while, then back', async () => {
    const health = new MemoryProxyHealth();
    await health.markFailed('http://p0.example:3128', 50);
    expect(await health.setAside()).toEqual(new Set(['http://p0.example:3128']));
    await new Promise((r) => setTimeout(r, 80));
    expect((await health.setAside()).size).toBe(0);
  });
});

describe('the CLI and the campaign input', () => {
  it('writes --proxy values to a private file outside the input, and passes --proxy-file by absolute path', async () => {
    const listed = file('listed.txt', 'socks5://s.example:1080\n');
    const secrets = path.join(dir, 'secrets');
    const files = await proxyFilesFor('camp:1', { proxy: [`http://u:${SECRET}@p.example:3128`], proxyFile: [path.relative(process.cwd(), listed)] }, secrets);
    expect(files[0]).toBe(listed);
    expect(path.dirname(files[1])).toBe(secrets);
    expect(fs.statSync(files[1]).mode & 0o777).toBe(0o600);
    expect(fs.statSync(secrets).mode & 0o077).toBe(0);
    expect((await loadProxyFiles(files)).map((p) => p.password)).toEqual([null, SECRET]);
    // What goes to Temporal: paths.
    const s = resolveCampaignSettings({ seeds: ['http://a.test/'], fetch: { proxyFiles: files } }, 'c');
    expect(JSON.stringify(s)).not.toContain(SECRET);
    // The campaign over, the private file goes; the operator's list stays.
    await removeProxySecrets(files, secrets);
    expect([fs.existsSync(files[0]), fs.existsSync(files[1])]).toEqual([true, false]);
  });

  it('refuses a bad --proxy or --proxy-file before anything starts, without quoting the URL', async () => {
    expect(checkProxyFlags([`http://u:${SECRET}@ok.example:1`, `gopher://u:${SECRET}@p`]).join('\n')).toMatch(/--proxy \(the 2nd\): unsupported proxy scheme/);
    const open = file('open.txt', `http://u:${SECRET}@p.example:3128\n`, 0o644);
    const err = await asyncProblem(proxyFilesFor('c', { proxyFile: [open] }, path.join(dir, 'secrets')));
    expect(err).toBeInstanceOf(UsageError);
    expect(err.message).toContain('readable by every user');
    expect(err.message).not.toContain(SECRET);
    expect(fs.existsSync(path.join(dir, 'secrets'))).toBe(false);
  });

  it('refuses a proxy URL put in the campaign input instead of a file, without echoing it', () => {
    const message = problem(() => resolveCampaignSettings({ seeds: ['http://a.test/'], fetch: { proxyFiles: [`http://u:${SECRET}@p.example:3128`] } }, 'c'));
    expect(message).toContain('fetch.proxyFiles[0] is a URL');
    expect(message).not.toContain(SECRET);
    expect(problem(() => resolveCampaignSettings({ seeds: ['http://a.test/'], fetch: { proxyFiles: ['proxies.txt'] } }, 'c'))).toContain('must be an absolute path');
  });
});
