// A folder served as test-web sites over real HTTP: the real-pages bench
// (scenario p) trusts folderPages as the set every crawler must fetch, and
// serves each page's bytes from the folder unchanged on every host.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { folderPages, folderSite, loadFolder, type FolderFiles } from '../web/folder-site';
import { startTestWeb, type TestWeb } from '../web/test-web';

let dir: string;
let files: FolderFiles;
let web: TestWeb;
let agent: Agent;

const page = (body: string): string => `<!doctype html><html><head><link rel="stylesheet" href="style.css"></head><body>${body}</body></html>`;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'folder-site-'));
  const write = (rel: string, body: string | Buffer): void => {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), body);
  };
  write(
    'index.html',
    page(
      '<a href="a.html">a</a> <a href="b.html#part">b</a> <a href="sub/">sub</a> <a href="c.html?v=2">c</a> ' +
        '<a href="my%20page.html">spaced</a> <a href="https://elsewhere.example/x.html">out</a> <a href="missing.html">gone</a> ' +
        '<a href="style.css">css</a> <a href="mailto:someone@example.org">mail</a> <a href="index.html">home</a>',
    ),
  );
  write('a.html', page('<a href="index.html">home</a> <a href="a.html#top">self</a>'));
  write('b.html', page('<p>no links</p>'));
  write('c.html', page('<a href="/b.html">b</a>'));
  write('my page.html', page('<a href="sub/deep.html">deep</a>'));
  write('sub/index.html', page('<a href="../b.html">up</a>'));
  write('sub/deep.html', page('<a href="/orphan-no-more.html">x</a>'));
  write('orphan.html', page('<p>linked from nowhere</p>'));
  write('style.css', 'body { margin: 0 }\n');
  write('img/dot.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]));
  files = loadFolder(dir);
  web = await startTestWeb();
  for (const host of ['one.test', 'two.test']) web.addSite(folderSite(host, files));
  agent = new Agent({ connect: { lookup: web.lookup } });
});

afterAll(async () => {
  await agent.close();
  await web.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function get(url: string): Promise<{ status: number; type: string; body: Buffer }> {
  const res = await request(url, { dispatcher: agent });
  return { status: res.statusCode, type: String(res.headers['content-type'] ?? ''), body: Buffer.from(await res.body.arrayBuffer()) };
}

test('every file is served byte for byte on every host, with its type; a folder path serves its index.html', async () => {
  for (const host of ['one.test', 'two.test']) {
    for (const [rel, target, type] of [
      ['index.html', '/', 'text/html; charset=utf-8'],
      ['index.html', '/index.html', 'text/html; charset=utf-8'],
      ['my page.html', '/my%20page.html', 'text/html; charset=utf-8'],
      ['sub/index.html', '/sub/', 'text/html; charset=utf-8'],
      ['style.css', '/style.css', 'text/css; charset=utf-8'],
      ['img/dot.png', '/img/dot.png', 'image/png'],
    ]) {
      const res = await get(web.url(host, target));
      expect({ target, status: res.status, type: res.type }).toEqual({ target, status: 200, type });
      expect(res.body.equals(fs.readFileSync(path.join(dir, rel)))).toBe(true);
    }
  }
});

test('what the folder lacks is a 404, and robots.txt is the test web’s allow-all', async () => {
  expect((await get(web.url('one.test', '/missing.html'))).status).toBe(404);
  expect((await get(web.url('one.test', '/sub'))).status).toBe(404);
  const robots = await get(web.url('two.test', '/robots.txt'));
  expect(robots.status).toBe(200);
  expect(robots.body.toString()).toBe('User-agent: *\nDisallow:\n');
});

test('folderPages: the HTML pages reachable from / by same-site links, queries kept, fragments dropped', async () => {
  const pages = folderPages(files);
  expect(pages[0]).toBe('/');
  // Not the orphan, the stylesheet, the missing page, the other host or the mail link.
  expect(new Set(pages)).toEqual(new Set(['/', '/a.html', '/b.html', '/sub/', '/c.html?v=2', '/my%20page.html', '/index.html', '/sub/deep.html']));
  expect(pages).toHaveLength(8);
  // And each of them is a page the sites serve.
  for (const target of pages) {
    const res = await get(web.url('two.test', target));
    expect({ target, status: res.status, type: res.type }).toEqual({ target, status: 200, type: 'text/html; charset=utf-8' });
  }
});

test('a folder without files, or without an index.html, is refused with a reason', () => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'folder-site-empty-'));
  try {
    expect(() => loadFolder(empty)).toThrow(/no files to serve/);
    fs.writeFileSync(path.join(empty, 'a.html'), page(''));
    expect(() => folderPages(loadFolder(empty))).toThrow(/no index\.html/);
  } finally {
    fs.rmSync(empty, { recursive: true, force: true });
  }
});
