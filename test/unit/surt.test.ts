// SURT keys against the Internet Archive's own `surt` (Python, the one pywb
// computes its lookup keys with): every URL here must key the same, or pywb
// cannot find the page in our CDXJ. The list holds what crawls meet
// (trailing slashes, escapes, default ports, IDN, IPs, session IDs) and what
// a parser trips on. warcio.js's getSurt disagrees on about 25 of them.
import { spawnSync } from 'node:child_process';
import { surt } from '../../src/storage/surt';
import { findOrInstallPyReplayTools } from '../../src/stack/tools';

jest.setTimeout(300_000);

const URLS = [
  'http://example.com/',
  'http://www.example.com/a/b?z=1&a=2',
  'https://example.com:443/x',
  'http://example.com:80/x',
  'http://Example.COM/Path/Up',
  'http://example.com/a%20b?q=%7E',
  'http://example.com/?',
  'http://example.com/a?b',
  'http://example.com/caf%C3%A9',
  'http://example.com/a#frag',
  'http://www2.example.com/',
  'http://example.com/a?jsessionid=123&x=1',
  'http://example.com/a;jsessionid=ABCDEF0123456789ABCDEF0123456789?x',
  'http://127.0.0.1:8080/a',
  'http://xn--caf-dma.test/',
  'http://example.com/a//b',
  'http://example.com/a/./b/../c',
  'http://example.com/a?x=1&x=0',
  'http://example.com/%7Euser/',
  'http://example.com/a?q=a+b',
  'http://café.test/menü?ä=ö',
  'http://example.com/dir/',
  'http://example.com/dir//',
  'https://example.com:8443/',
  'http://2130706433/',
  'http://0177.0.0.1/',
  'http://127.1/',
  'http://999.1.1.1/',
  'http://[::1]:8080/x',
  'http://user:pw@example.com/x',
  'http://example.com/%2525',
  'http://example.com/a%2Fb',
  'http://example.com/a b',
  'http://example.com/?a=1&a',
  'http://example.com/?b&a=',
  'http://example.com/x?PHPSESSID=0123456789abcdef0123456789abcdef&y=2',
  'http://example.com/x?sid=0123456789abcdef0123456789abcdef',
  'http://example.com/(S(abcdefghijklmnopqrstuvwx))/page.aspx?x',
  'http://example.com/..',
  'http://example.com/../a',
  'http://example.com:/x',
  'http://example..com./x',
  'http://WWW.EXAMPLE.COM/',
  'http://www.example.com',
  'https://https://example.com/x',
  'example.com/path',
  'http://example.com/a?q=%C3%A9&Z=1',
  'http://example.com/a?q=%e9',
  'http://example.com/%zz',
  'http://example.com/a%',
  'http://site0.test:8080/page/3',
  'http://example.com/#',
  'http://example.com/a?#x',
  'http://example.com/a?x=%26y',
  'http://example.com/~a/',
  'http://example.com/a/b/',
  'dns:example.com',
  'ftp://example.com/x/',
  'http://example.com/A?B=C',
  'http://example.com:99999/',
  'http://ex%41mple.com/',
];

test('a few keys, spelled out', () => {
  expect(surt('http://www.Example.com:80/a//b/?z=1&a=%7E#top')).toBe('com,example)/a/b?a=~&z=1');
  expect(surt('http://site0.test:8080/')).toBe('test,site0:8080)/');
  expect(surt('https://example.com/dir/')).toBe('com,example)/dir');
  expect(surt('http://café.test/menü')).toBe('test,xn--caf-dma)/men%c3%bc');
  expect(surt('http://2130706433/x')).toBe('1,0,0,127)/x');
  expect(surt('http://example.com:99999/')).toBe('http://example.com:99999/');
});

test("every key equals Python surt's", async () => {
  const tools = await findOrInstallPyReplayTools();
  const py = String.raw`
import sys, json, surt
out = []
for u in json.load(sys.stdin):
    try: out.append(surt.surt(u))
    except Exception: out.append(u)
print(json.dumps(out))
`;
  const res = spawnSync(tools.python, ['-c', py], { input: JSON.stringify(URLS), encoding: 'utf8' });
  expect(res.stderr).toBe('');
  const theirs = JSON.parse(res.stdout) as string[];
  expect(URLS.map((u) => ({ u, key: surt(u) }))).toEqual(URLS.map((u, i) => ({ u, key: theirs[i] })));
});
