// Exercises the test web over real HTTP: the integration tests and benchmarks
// trust its expectedPages() as ground truth, so it is checked here against an
// independent crawl of what the server actually serves.
import http from 'node:http';
import * as cheerio from 'cheerio';
import { Agent, request } from 'undici';
import { generateSites, startTestWeb, type LatencySpec, type SiteSpec, type TestWeb } from '../web/test-web';

interface Fetched {
  status: number;
  contentType: string;
  body: string;
}

let web: TestWeb;
let agent: Agent;

async function get(url: string, headers: Record<string, string> = {}): Promise<Fetched> {
  const res = await request(url, { dispatcher: agent, headers });
  return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), body: await res.body.text() };
}

/** Plain node:http with an explicit Host header, for hosts that are not sites. */
function rawGet(port: number, host: string | undefined, path: string): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (host !== undefined) headers.host = host;
    const req = http.get({ host: '127.0.0.1', port, path, headers, setHost: host === undefined ? false : undefined, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body }));
    });
    req.on('error', reject);
  });
}

function normalise(href: string, base: string): URL | undefined {
  let u: URL;
  try {
    u = new URL(href, base);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'http:') return undefined;
  u.hash = '';
  for (const k of [...u.searchParams.keys()]) if (/^utm_/i.test(k)) u.searchParams.delete(k);
  u.search = u.searchParams.toString();
  return u;
}

/** `User-agent: *` prefix rules only; enough for the specs used here. */
function simpleRobots(text: string): (path: string) => boolean {
  const rules: { allow: boolean; p: string }[] = [];
  let applies = false;
  for (const line of text.split('\n')) {
    const [k, ...rest] = line.split(':');
    const v = rest.join(':').trim();
    const key = k.trim().toLowerCase();
    if (key === 'user-agent') applies = v === '*';
    else if (applies && (key === 'allow' || key === 'disallow') && v) rules.push({ allow: key === 'allow', p: v });
  }
  return (path) => {
    let best: { allow: boolean; p: string } | undefined;
    for (const r of rules) if (path.startsWith(r.p) && (!best || r.p.length > best.p.length || (r.p.length === best.p.length && r.allow))) best = r;
    return best ? best.allow : true;
  };
}

interface CrawlResult {
  fetched: Set<string>;
  hrefs: string[];
  statuses: Map<string, number>;
}

/** An independent reference crawler over HTTP, used to validate expectedPages. */
async function httpCrawl(seeds: string[], opts: { hosts: string[]; respectRobots?: boolean; followNofollow?: boolean }): Promise<CrawlResult> {
  const robots = new Map<string, (p: string) => boolean>();
  const fetched = new Set<string>();
  const hrefs: string[] = [];
  const statuses = new Map<string, number>();
  const queue: URL[] = [];
  const enqueue = async (u: URL): Promise<void> => {
    const key = u.href;
    if (fetched.has(key) || !opts.hosts.includes(u.hostname)) return;
    if (opts.respectRobots ?? true) {
      let allows = robots.get(u.hostname);
      if (!allows) {
        const r = await get(`${u.origin}/robots.txt`);
        allows = r.status === 200 ? simpleRobots(r.body) : () => true;
        robots.set(u.hostname, allows);
      }
      if (!allows(u.pathname + u.search)) return;
    }
    fetched.add(key);
    queue.push(u);
  };
  for (const s of seeds) await enqueue(normalise(s, s)!);
  while (queue.length > 0) {
    const u = queue.shift()!;
    const res = await get(u.href);
    statuses.set(u.href, res.status);
    if (res.status !== 200) continue;
    const $ = cheerio.load(res.body);
    for (const a of $('a[href]').toArray()) {
      const href = $(a).attr('href')!;
      hrefs.push(href);
      const rel = ($(a).attr('rel') ?? '').toLowerCase().split(/\s+/);
      if (rel.includes('nofollow') && !opts.followNofollow) continue;
      const target = normalise(href, u.href);
      if (target) await enqueue(target);
    }
  }
  return { fetched, hrefs, statuses };
}

function addAll(specs: SiteSpec[]): void {
  for (const s of specs) web.addSite(s);
}

beforeEach(async () => {
  web = await startTestWeb();
  agent = new Agent({ connect: { lookup: web.lookup } });
});

afterEach(async () => {
  await agent.close();
  await web.close();
});

describe('virtual hosting', () => {
  test('serves each site by Host header and 404s unknown hosts', async () => {
    web.addSite({ host: 'alpha.test', pages: 3, fanOut: 2 });
    web.addSite({ host: 'Beta.TEST', pages: 3, fanOut: 2 });

    const a = await get(web.url('alpha.test'));
    expect(a.status).toBe(200);
    expect(a.contentType).toBe('text/html; charset=utf-8');
    expect(a.body).toContain('<title>alpha.test /</title>');

    const b = await get(web.url('beta.test', '/page/2'));
    expect(b.body).toContain('<title>beta.test /page/2</title>');

    // Port stripped and case folded.
    expect((await rawGet(web.port, 'ALPHA.test', '/')).status).toBe(200);
    expect((await rawGet(web.port, `alpha.test:${web.port}`, '/page/1')).status).toBe(200);

    const unknown = await rawGet(web.port, 'nowhere.test', '/');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toContain('no such site');
    expect((await rawGet(web.port, undefined, '/')).body).toContain('no such site');

    expect((await get(web.url('alpha.test', '/page/3'))).status).toBe(404);
    expect((await get(web.url('alpha.test', '/page/01'))).status).toBe(404);
  });

  test('url, resolveArgs and lookup agree on the bound address', async () => {
    web.addSite({ host: 'a.test', pages: 1, fanOut: 0 });
    web.addSite({ host: 'b.test', pages: 1, fanOut: 0 });
    expect(web.url('a.test', 'page/1')).toBe(`http://a.test:${web.port}/page/1`);
    expect(web.resolveArgs()).toEqual([`a.test:${web.port}:127.0.0.1`, `b.test:${web.port}:127.0.0.1`]);
    expect(() => web.addSite({ host: 'A.test', pages: 1, fanOut: 0 })).toThrow(/already exists/);
  });

  test('HEAD has no body; other methods get 405', async () => {
    web.addSite({ host: 'a.test', pages: 2, fanOut: 1 });
    const head = await request(web.url('a.test'), { method: 'HEAD', dispatcher: agent });
    expect(head.statusCode).toBe(200);
    expect(Number(head.headers['content-length'])).toBeGreaterThan(0);
    expect(await head.body.text()).toBe('');
    const post = await request(web.url('a.test'), { method: 'POST', dispatcher: agent, body: 'x' });
    expect(post.statusCode).toBe(405);
    await post.body.dump();
  });
});

describe('robots.txt', () => {
  test('generated from the spec', async () => {
    web.addSite({
      host: 'r.test',
      pages: 2,
      fanOut: 1,
      robots: { disallow: ['/private/', '/page/1'], allow: ['/private/ok'], crawlDelaySec: 2, agent: 'TestBot' },
    });
    const r = await get(web.url('r.test', '/robots.txt'));
    expect(r.status).toBe(200);
    expect(r.contentType).toBe('text/plain; charset=utf-8');
    expect(r.body).toBe('User-agent: TestBot\nAllow: /private/ok\nDisallow: /private/\nDisallow: /page/1\nCrawl-delay: 2\n');
  });

  test('generated sites can all carry a Crawl-delay', async () => {
    addAll(generateSites({ count: 3, pages: 4, fanOut: 2, robots: { crawlDelaySec: 1 } }));
    for (const host of web.hosts()) {
      const r = await get(web.url(host, '/robots.txt'));
      expect(r.body).toBe('User-agent: *\nDisallow:\nCrawl-delay: 1\n');
    }
    // A delay alone disallows nothing.
    expect(web.expectedPages([web.url('site0.test')]).size).toBe(12);
  });

  test('raw overrides, null is 404, absent allows everything', async () => {
    web.addSite({ host: 'raw.test', pages: 1, fanOut: 0, robots: { raw: 'User-agent: *\nDisallow: /x\n', disallow: ['/ignored'] } });
    web.addSite({ host: 'none.test', pages: 1, fanOut: 0, robots: null });
    web.addSite({ host: 'open.test', pages: 1, fanOut: 0 });
    expect((await get(web.url('raw.test', '/robots.txt'))).body).toBe('User-agent: *\nDisallow: /x\n');
    expect((await get(web.url('none.test', '/robots.txt'))).status).toBe(404);
    const open = await get(web.url('open.test', '/robots.txt'));
    expect(open.status).toBe(200);
    expect(simpleRobots(open.body)('/anything')).toBe(true);
  });

  test('pages link to disallowed paths, which are served', async () => {
    web.addSite({ host: 'p.test', pages: 10, fanOut: 3, robots: { disallow: ['/private/'] } });
    const { hrefs } = await httpCrawl([web.url('p.test')], { hosts: ['p.test'] });
    const traps = hrefs.map((h) => normalise(h, web.url('p.test'))!).filter((u) => u.pathname.startsWith('/private/'));
    expect(traps.length).toBeGreaterThan(0);
    // The reference crawl respected robots, so none was requested.
    expect(web.requests().filter((r) => r.path.startsWith('/private/'))).toEqual([]);
    expect((await get(traps[0].href)).status).toBe(200);
  });
});

describe('link graph', () => {
  test('every page is reachable from / over HTTP, in varied href forms, without broken links', async () => {
    const hrefs: string[] = [];
    for (const [i, pages] of [40, 23, 7, 1].entries()) {
      const host = `g${i}.test`;
      web.addSite({ host, pages, fanOut: 3, seed: 3 });
      const crawl = await httpCrawl([web.url(host)], { hosts: [host] });
      const all = new Set(Array.from({ length: pages }, (_, j) => web.url(host, j === 0 ? '/' : `/page/${j}`)));
      expect(crawl.fetched).toEqual(all);
      expect([...crawl.statuses.values()].every((s) => s === 200)).toBe(true);
      expect(web.expectedPages([web.url(host)])).toEqual(all);
      hrefs.push(...crawl.hrefs);
    }

    expect(hrefs.some((h) => /^http:\/\/g\d\.test:\d+\/page\/\d+/.test(h))).toBe(true);
    expect(hrefs.some((h) => /^http:\/\/G\d\.TEST:/.test(h))).toBe(true);
    expect(hrefs.some((h) => /^\/page\/\d+/.test(h))).toBe(true);
    // Relative-to-root spellings only occur on `/` itself.
    expect(hrefs.some((h) => /^(\.\/)?page\/\d+/.test(h))).toBe(true);
    expect(hrefs.some((h) => /^\.\/\d+/.test(h))).toBe(true);
    expect(hrefs.some((h) => /^\.\.\/page\/\d+/.test(h))).toBe(true);
    expect(hrefs.some((h) => /^\d+/.test(h))).toBe(true);
    expect(hrefs.some((h) => h.includes('#section-'))).toBe(true);
    expect(hrefs.some((h) => h.includes('?utm_'))).toBe(true);
  });

  test('each page links to fanOut distinct pages of its own site', async () => {
    web.addSite({ host: 'f.test', pages: 30, fanOut: 4, seed: 1 });
    for (const path of ['/', '/page/7', '/page/29']) {
      const base = web.url('f.test', path);
      const $ = cheerio.load((await get(base)).body);
      const targets = new Set(
        $('a[href]')
          .toArray()
          .map((a) => normalise($(a).attr('href')!, base)!.href)
          .filter((u) => u !== base),
      );
      expect(targets.size).toBe(4);
    }
  });

  test('links are deterministic for equal seeds and differ for different seeds', async () => {
    const spec: SiteSpec = { host: 'd.test', pages: 25, fanOut: 4, seed: 42, robots: { disallow: ['/private/'] }, nofollowLinks: true };
    web.addSite(spec);
    const other = await startTestWeb();
    const otherAgent = new Agent({ connect: { lookup: other.lookup } });
    try {
      other.addSite({ ...spec });
      other.addSite({ ...spec, host: 'e.test', seed: 43 });
      for (const path of ['/', '/page/5', '/page/24']) {
        const mine = (await get(web.url('d.test', path))).body.replaceAll(String(web.port), 'PORT');
        const res = await request(other.url('d.test', path), { dispatcher: otherAgent });
        const theirs = (await res.body.text()).replaceAll(String(other.port), 'PORT');
        expect(theirs).toBe(mine);
      }
      const bodies = await Promise.all(
        ['d.test', 'e.test'].map(async (h) => {
          const res = await request(other.url(h, '/page/5'), { dispatcher: otherAgent });
          return (await res.body.text()).replace(/(d|e)\.test/g, 'X');
        }),
      );
      expect(bodies[0]).not.toBe(bodies[1]);
    } finally {
      await otherAgent.close();
      await other.close();
    }
  });

  test('cross links reach other sites; generated sites form a connected web', async () => {
    addAll(generateSites({ count: 5, pages: 6, fanOut: 2, crossPerPage: 1, seed: 9 }));
    const hosts = web.hosts();
    expect(hosts).toEqual(['site0.test', 'site1.test', 'site2.test', 'site3.test', 'site4.test']);
    const { fetched } = await httpCrawl([web.url('site0.test')], { hosts });
    expect(fetched.size).toBe(30);
    expect(web.expectedPages([web.url('site0.test')])).toEqual(fetched);
  });

  test('words: every page carries its own paragraph of that many words, the same on every run', async () => {
    addAll(generateSites({ count: 2, pages: 4, fanOut: 2, words: 60, seed: 3 }));
    web.addSite({ host: 'plain.test', pages: 2, fanOut: 1 });
    const paragraphs = async (w: TestWeb, a: Agent, host: string, path: string): Promise<string[]> => {
      const res = await request(w.url(host, path), { dispatcher: a });
      const $ = cheerio.load(await res.body.text());
      return $('p')
        .toArray()
        .map((p) => $(p).text());
    };
    const texts: string[] = [];
    for (const host of ['site0.test', 'site1.test']) {
      for (const path of ['/', '/page/1', '/page/2', '/page/3']) {
        const [boilerplate, text] = await paragraphs(web, agent, host, path);
        expect(boilerplate).toBe('Generated page for crawler tests.');
        expect(text.split(' ')).toHaveLength(60);
        texts.push(text);
      }
    }
    expect(new Set(texts).size).toBe(texts.length);
    // Without words, the boilerplate line alone.
    expect(await paragraphs(web, agent, 'plain.test', '/page/1')).toEqual(['Generated page for crawler tests.']);
    const other = await startTestWeb();
    const otherAgent = new Agent({ connect: { lookup: other.lookup } });
    try {
      for (const spec of generateSites({ count: 2, pages: 4, fanOut: 2, words: 60, seed: 3 })) other.addSite(spec);
      expect((await paragraphs(other, otherAgent, 'site1.test', '/page/2'))[1]).toBe(texts[6]);
    } finally {
      await otherAgent.close();
      await other.close();
    }
  });
});

describe('expectedPages', () => {
  test('matches an independent HTTP crawl with robots, nofollow and host scope', async () => {
    addAll(
      generateSites({
        count: 4,
        pages: 12,
        fanOut: 3,
        crossPerPage: 2,
        seed: 5,
        robots: { disallow: ['/private/', '/page/1'] },
        nofollowLinks: true,
      }),
    );
    const seeds = [web.url('site0.test'), web.url('site2.test', '/page/3#x?')];
    for (const hosts of [web.hosts(), ['site0.test', 'site1.test']]) {
      for (const followNofollow of [false, true]) {
        const crawl = await httpCrawl(seeds, { hosts, followNofollow });
        const expected = web.expectedPages(seeds, { hosts, followNofollow });
        expect(expected).toEqual(crawl.fetched);
      }
    }
    const crawl = await httpCrawl(seeds, { hosts: web.hosts(), respectRobots: false, followNofollow: true });
    expect(web.expectedPages(seeds, { respectRobots: false, followNofollow: true })).toEqual(crawl.fetched);
  });

  test('skips disallowed paths and nofollow-only pages unless asked', () => {
    web.addSite({ host: 'x.test', pages: 20, fanOut: 3, robots: { disallow: ['/private/', '/page/1'], allow: ['/page/1$'] }, nofollowLinks: true });
    const seed = web.url('x.test');
    const paths = (s: Set<string>): string[] => [...s].map((u) => new URL(u).pathname);

    const strict = paths(web.expectedPages([seed]));
    expect(strict).toContain('/page/1'); // Allow /page/1$ is longer than Disallow /page/1
    expect(strict.filter((p) => /^\/page\/1\d$/.test(p))).toEqual([]);
    expect(strict.filter((p) => p.startsWith('/private/') || p.startsWith('/nofollow/'))).toEqual([]);

    const nofollow = paths(web.expectedPages([seed], { followNofollow: true }));
    expect(nofollow).toEqual(expect.arrayContaining(['/nofollow/0', '/nofollow/1']));

    const noRobots = paths(web.expectedPages([seed], { respectRobots: false }));
    expect(noRobots.some((p) => p.startsWith('/private/'))).toBe(true);
    expect(noRobots).toContain('/page/10');
  });

  test('user-agent specific groups only bind the named crawler', () => {
    web.addSite({ host: 'ua.test', pages: 10, fanOut: 2, robots: { disallow: ['/page/'], agent: 'TestBot' } });
    const seed = web.url('ua.test');
    expect(web.expectedPages([seed], { userAgent: 'Mozilla/5.0 (compatible; TestBot/1.0)' }).size).toBe(1);
    expect(web.expectedPages([seed], { userAgent: 'OtherBot/2' }).size).toBe(10);
    expect(web.expectedPages([seed]).size).toBe(1);
  });

  test('host scope, seed normalisation and maxDepth', () => {
    addAll(generateSites({ count: 3, pages: 15, fanOut: 2, crossPerPage: 1, seed: 2 }));
    const seed = `http://SITE0.test:${web.port}/?utm_source=a#frag`;
    expect(web.expectedPages([seed]).size).toBe(45);
    const one = web.expectedPages([seed], { hosts: ['site0.test'] });
    expect(one.size).toBe(15);
    expect([...one].every((u) => u.startsWith(`http://site0.test:${web.port}/`))).toBe(true);
    expect(web.expectedPages([seed], { hosts: ['site0.test'], maxDepth: 0 })).toEqual(new Set([web.url('site0.test')]));
    const d1 = web.expectedPages([seed], { hosts: ['site0.test'], maxDepth: 1 });
    // fanOut 2 → two children of / (plus nothing else at depth 1)
    expect(d1.size).toBe(3);
    expect(web.expectedPages([web.url('elsewhere.test')]).size).toBe(0);
  });
});

describe('request log', () => {
  test('records host, port, method, path with query, user agent and time', async () => {
    web.addSite({ host: 'log.test', pages: 3, fanOut: 1 });
    const before = performance.timeOrigin + performance.now();
    await get(web.url('log.test', '/page/1?utm_source=x'), { 'user-agent': 'TestBot/1.0' });
    await get(web.url('log.test', '/robots.txt'));
    const after = performance.timeOrigin + performance.now();
    const log = web.requests();
    expect(log).toHaveLength(2);
    expect(log[0]).toMatchObject({ host: 'log.test', port: web.port, method: 'GET', path: '/page/1?utm_source=x', userAgent: 'TestBot/1.0' });
    expect(log[1].path).toBe('/robots.txt');
    expect(log[0].t).toBeGreaterThanOrEqual(before);
    expect(log[1].t).toBeGreaterThanOrEqual(log[0].t);
    expect(log[1].t).toBeLessThanOrEqual(after);
    expect(Number.isInteger(log[0].t) && Number.isInteger(log[1].t)).toBe(false);

    log.pop();
    expect(web.requests()).toHaveLength(2);
    web.clearRequests();
    expect(web.requests()).toEqual([]);
  });
});

describe('hooks and timing', () => {
  test('latencyMs delays responses', async () => {
    web.addSite({ host: 'slow.test', pages: 1, fanOut: 0, latencyMs: 80 });
    const t0 = performance.now();
    expect((await get(web.url('slow.test'))).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(75);
  });

  test('holdUntil answers a request, as usual, only once its promise settles', async () => {
    web.addSite({ host: 'held.test', pages: 2, fanOut: 1 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let answered = false;
    web.site('held.test')!.holdUntil = (path) => (path === '/' ? gate : undefined);
    const held = get(web.url('held.test')).then((r) => {
      answered = true;
      return r;
    });
    // Other paths are not held: one answered while `/` waits shows it is waiting.
    expect((await get(web.url('held.test', '/page/1'))).status).toBe(200);
    expect(
      web
        .requests()
        .filter((r) => r.host === 'held.test')
        .map((r) => r.path)
        .sort(),
    ).toEqual(['/', '/page/1']);
    expect(answered).toBe(false);
    release();
    const res = await held;
    expect(res.status).toBe(200);
    expect(res.body).toContain('/page/1');
  });

  test('statusFor injects statuses by path and attempt', async () => {
    web.addSite({ host: 'flaky.test', pages: 3, fanOut: 1, statusFor: (p, n) => (p === '/page/1' && n <= 2 ? 503 : undefined) });
    expect((await get(web.url('flaky.test', '/page/1'))).status).toBe(503);
    expect((await get(web.url('flaky.test', '/page/1?a=1'))).status).toBe(503);
    expect((await get(web.url('flaky.test', '/page/1'))).status).toBe(200);
    expect((await get(web.url('flaky.test', '/page/2'))).status).toBe(200);
  });
});

describe('web-wide latency', () => {
  /** A test web with the given latency and one site, its own undici agent, closed afterwards. */
  async function withLatency(latency: LatencySpec, pages: number, fn: (w: TestWeb, fetch: (url: string) => Promise<number>) => Promise<void>): Promise<void> {
    const w = await startTestWeb({ latency });
    const a = new Agent({ connect: { lookup: w.lookup } });
    try {
      w.addSite({ host: 'lat.test', pages, fanOut: 2 });
      await fn(w, async (url) => {
        const res = await request(url, { dispatcher: a });
        await res.body.dump();
        return res.statusCode;
      });
    } finally {
      await a.close();
      await w.close();
    }
  }

  // Node's timers count whole milliseconds on the loop clock, so a timer can
  // fire a fraction of a millisecond "early" on performance.now().
  const TIMER_SLACK = 2;

  test('a fixed latency delays every response, and the log keeps the arrival time', async () => {
    await withLatency({ fixedMs: 300 }, 3, async (w, fetch) => {
      const sent = performance.timeOrigin + performance.now();
      const pending = fetch(w.url('lat.test', '/page/1'));
      // Logged on arrival, while the response is still being held back.
      while (w.requests().length === 0) await new Promise((r) => setTimeout(r, 5));
      expect(await pending).toBe(200);
      const received = performance.timeOrigin + performance.now();
      const arrival = w.requests()[0].t;
      expect(received - sent).toBeGreaterThanOrEqual(300 - TIMER_SLACK);
      expect(arrival).toBeGreaterThanOrEqual(sent);
      expect(received - arrival).toBeGreaterThanOrEqual(300 - TIMER_SLACK);
      // Unknown hosts and robots.txt are answered by the same slow server.
      const t0 = performance.now();
      expect((await rawGet(w.port, 'nowhere.test', '/')).status).toBe(404);
      expect(await fetch(w.url('lat.test', '/robots.txt'))).toBe(200);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(600 - TIMER_SLACK);
      expect(w.latencyFor('lat.test', '/anything')).toBe(300);
      expect(w.meanLatencyMs()).toBe(300);
    });
  });

  test('a random latency is uniform over 0..randomMs, seeded, drawn afresh per repeat, and served', async () => {
    await withLatency({ fixedMs: 20, randomMs: 200, seed: 7 }, 40, async (w, fetch) => {
      const targets = Array.from({ length: 2_000 }, (_, i) => `/page/${i}`);
      const draws = targets.map((t) => w.latencyFor('lat.test', t));
      expect(Math.min(...draws)).toBeGreaterThanOrEqual(20);
      expect(Math.max(...draws)).toBeLessThanOrEqual(220);
      expect(Math.min(...draws)).toBeLessThan(30);
      expect(Math.max(...draws)).toBeGreaterThan(210);
      const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
      expect(mean).toBeGreaterThan(110);
      expect(mean).toBeLessThan(130);
      expect(w.meanLatencyMs()).toBe(120);
      // The second request for a target is a new draw, not the same delay again.
      const again = targets.map((t) => w.latencyFor('lat.test', t, 2));
      expect(again.filter((d, i) => d !== draws[i]).length).toBeGreaterThan(1_800);

      // Over HTTP each response takes at least its draw: a path drawn slow the
      // first time, and one drawn fast the first time and slow the second.
      const pages = Array.from({ length: 40 }, (_, i) => (i === 0 ? '/' : `/page/${i}`));
      const slowFirst = pages.find((p) => w.latencyFor('lat.test', p) >= 150)!;
      const slowSecond = pages.find((p) => w.latencyFor('lat.test', p) < 60 && w.latencyFor('lat.test', p, 2) >= 150)!;
      expect(slowFirst && slowSecond).toBeTruthy();
      for (const [path, nth] of [
        [slowFirst, 1],
        [slowSecond, 1],
        [slowSecond, 2],
      ] as const) {
        const t0 = performance.now();
        expect(await fetch(w.url('lat.test', path))).toBe(200);
        expect(performance.now() - t0).toBeGreaterThanOrEqual(w.latencyFor('lat.test', path, nth) - TIMER_SLACK);
      }
      const same = await startTestWeb({ latency: { fixedMs: 20, randomMs: 200, seed: 7 } });
      const other = await startTestWeb({ latency: { fixedMs: 20, randomMs: 200, seed: 8 } });
      try {
        expect(targets.map((t) => same.latencyFor('lat.test', t))).toEqual(draws);
        expect(targets.map((t) => other.latencyFor('lat.test', t))).not.toEqual(draws);
      } finally {
        await same.close();
        await other.close();
      }
    });
  });

  test('slowShare makes about that share of responses slow, the same ones for the same seed', async () => {
    const latency = { slowShare: 0.1, slowMs: 400, seed: 3 };
    await withLatency(latency, 300, async (w, fetch) => {
      const paths = ['/', ...Array.from({ length: 299 }, (_, i) => `/page/${i + 1}`)];
      const slow = paths.filter((p) => w.latencyFor('lat.test', p) === 400);
      expect(paths.every((p) => [0, 400].includes(w.latencyFor('lat.test', p)))).toBe(true);
      expect(slow.length).toBeGreaterThanOrEqual(18);
      expect(slow.length).toBeLessThanOrEqual(42);
      expect(w.meanLatencyMs()).toBe(40);

      // A seeded run over HTTP: every response predicted slow was slow.
      const took = new Map<string, number>();
      await Promise.all(
        paths.map(async (p) => {
          const t0 = performance.now();
          expect(await fetch(w.url('lat.test', p))).toBe(200);
          took.set(p, performance.now() - t0);
        }),
      );
      for (const p of slow) expect(took.get(p)).toBeGreaterThanOrEqual(400 - TIMER_SLACK);
      expect([...took.values()].filter((ms) => ms >= 400 - TIMER_SLACK).length).toBeGreaterThanOrEqual(slow.length);

      const again = await startTestWeb({ latency });
      try {
        expect(paths.filter((p) => again.latencyFor('lat.test', p) === 400)).toEqual(slow);
      } finally {
        await again.close();
      }
    });
  });

  test('a latency spec out of range is refused before anything listens', async () => {
    await expect(startTestWeb({ latency: { slowShare: 1.5, slowMs: 10 } })).rejects.toThrow(/slowShare/);
    await expect(startTestWeb({ latency: { fixedMs: -1 } })).rejects.toThrow(/fixedMs/);
    await expect(startTestWeb({ latency: { randomMs: 2.5 } })).rejects.toThrow(/randomMs/);
  });
});

describe('close', () => {
  test('closes keep-alive sockets and releases the port', async () => {
    web.addSite({ host: 'c.test', pages: 2, fanOut: 1, latencyMs: 60_000 });
    web.addSite({ host: 'k.test', pages: 2, fanOut: 1 });
    const keepAlive = new http.Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: web.port, path: '/', headers: { host: 'k.test' }, agent: keepAlive }, (res) => {
          res.resume();
          res.on('end', resolve);
        })
        .on('error', reject);
    });
    const idle = Object.values(keepAlive.freeSockets).flat();
    expect(idle).toHaveLength(1);
    const closed = new Promise<void>((resolve) => idle[0]!.once('close', () => resolve()));

    // A request stuck in latency must not hold close() hostage: close cuts
    // it off (an error, not its 200 a minute later).
    const pending = get(web.url('c.test')).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 50));
    await web.close();
    await closed;
    expect(await pending).toBeInstanceOf(Error);
    await expect(rawGet(web.port, 'k.test', '/')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    keepAlive.destroy();
    await web.close(); // idempotent
  });
});

describe('scale', () => {
  // How fast is for the benchmark to show; here only that it works at this size.
  test('2,000 sites × 20 pages can be added, served and enumerated', async () => {
    addAll(generateSites({ count: 2_000, pages: 20, fanOut: 4, crossPerPage: 1, seed: 1, robots: { disallow: ['/private/'] } }));
    const expected = web.expectedPages([web.url('site0.test')]);
    expect(expected.size).toBe(40_000);
    expect(web.resolveArgs()).toHaveLength(2_000);
    const res = await Promise.all(['site1999.test', 'site1000.test'].map((h) => get(web.url(h, '/page/19'))));
    expect(res.map((r) => r.status)).toEqual([200, 200]);
  }, 60_000);
});
