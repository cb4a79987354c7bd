import { DEFAULT_MAX_ROBOTS_BYTES, RobotsError, RobotsTxt, allowedInAnyQueryOrder, normalisePath, parseRobotsTxt, productToken } from '../../src/robots/robots-txt';
import { RobotsStore, robotsCacheKey, robotsSource, type StoredRobots } from '../../src/robots/robots-store';
import { parseResolveEntries } from '../../src/http/resolve-overrides';
import type { RedisLike } from '../../src/redis/scripts';
import { conformanceCases as cases } from '../support/robots-conformance';
import { pseudoRandomBytes } from '../support/pseudo-random';

const UA = 'DurableCrawler/0.1 (+https://example.com/bot)';

function verdict(robots: RobotsTxt, agent: string, url: string): 'allowed' | 'disallowed' {
  return robots.rulesFor(agent).isAllowed(url) ? 'allowed' : 'disallowed';
}

function delayText(robots: RobotsTxt, agent: string): string {
  const d = robots.rulesFor(agent).crawlDelaySec;
  return d === undefined ? 'none' : String(d);
}

describe('conformance fixture', () => {
  it('has at least 70 cases with unique names', () => {
    expect(cases.length).toBeGreaterThanOrEqual(70);
    expect(new Set(cases.map((c) => c.name)).size).toBe(cases.length);
  });

  describe.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    it('gives the expected verdicts and crawl-delay', () => {
      const robots = parseRobotsTxt(c.robots);
      for (const [url, expected] of c.checks) {
        expect([url, verdict(robots, c.agent, url)]).toEqual([url, expected]);
      }
      if (c.crawlDelay !== undefined) expect(delayText(robots, c.agent)).toBe(c.crawlDelay);
    });

    it('gives the same answers after a JSON round trip', () => {
      const original = parseRobotsTxt(c.robots);
      const restored = RobotsTxt.fromJSON(JSON.parse(JSON.stringify(original)));
      expect(restored.toJSON()).toEqual(original.toJSON());
      for (const [url, expected] of c.checks) expect(verdict(restored, c.agent, url)).toBe(expected);
      if (c.crawlDelay !== undefined) expect(delayText(restored, c.agent)).toBe(c.crawlDelay);
    });

    it('gives the same answers from UTF-8 bytes', () => {
      const robots = parseRobotsTxt(new TextEncoder().encode(c.robots));
      for (const [url, expected] of c.checks) expect(verdict(robots, c.agent, url)).toBe(expected);
    });
  });
});

describe("allowedInAnyQueryOrder: our URLs have their query sorted, robots.txt rules follow the site's order", () => {
  const rules = parseRobotsTxt('User-agent: *\nDisallow: /?s=\nDisallow: /search?q=\nAllow: /search?page=\n').rulesFor('durablecrawler');
  it('a rule on a parameter that sorting moved from the front still applies', () => {
    // The site linked /?s=shoes&post_type=product; we fetch it sorted.
    expect(rules.isAllowed('http://shop.example/?post_type=product&s=shoes')).toBe(true);
    expect(allowedInAnyQueryOrder(rules, 'http://shop.example/?post_type=product&s=shoes')).toBe(false);
    expect(allowedInAnyQueryOrder(rules, 'http://shop.example/search?page=2&q=a')).toBe(false);
  });
  it('URLs no order of theirs disallows stay allowed', () => {
    expect(allowedInAnyQueryOrder(rules, 'http://shop.example/?a=1&b=2')).toBe(true);
    expect(allowedInAnyQueryOrder(rules, 'http://shop.example/search?page=2')).toBe(true);
    expect(allowedInAnyQueryOrder(rules, 'http://shop.example/page#s=1')).toBe(true);
  });
});

describe('productToken', () => {
  it.each([
    ['DurableCrawler/0.1 (+info)', 'durablecrawler'],
    ['Googlebot-Image/1.0', 'googlebot-image'],
    ['my_bot', 'my_bot'],
    ['  Spaced/1', 'spaced'],
    ['Mozilla/5.0 (compatible; Foo/1.0)', 'mozilla'],
    ['*', ''],
    ['', ''],
    ['123bot', ''],
  ])('%j → %j', (ua, token) => {
    expect(productToken(ua)).toBe(token);
  });
});

describe('RobotsRules.matchedAgent', () => {
  const robots = parseRobotsTxt('User-agent: DurableCrawler\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n');

  it('names the matched token, the fallback, or nothing', () => {
    expect(robots.rulesFor(UA).matchedAgent).toBe('durablecrawler');
    expect(robots.rulesFor('OtherBot').matchedAgent).toBe('*');
    expect(parseRobotsTxt('User-agent: x\nDisallow: /\n').rulesFor(UA).matchedAgent).toBeNull();
    expect(parseRobotsTxt('').rulesFor(UA).matchedAgent).toBeNull();
  });

  it('treats an agent without a product token as any other crawler', () => {
    expect(robots.rulesFor('*').matchedAgent).toBe('*');
    expect(robots.rulesFor('*').isAllowed('/b')).toBe(false);
  });
});

describe('allowAll / disallowAll', () => {
  it('allowAll allows everything for everyone', () => {
    const rules = RobotsTxt.allowAll().rulesFor(UA);
    expect(rules.isAllowed('/')).toBe(true);
    expect(rules.isAllowed('https://example.com/private?x=1')).toBe(true);
    expect(rules.crawlDelaySec).toBeUndefined();
  });

  it('disallowAll disallows everything but robots.txt for everyone', () => {
    const robots = RobotsTxt.disallowAll();
    for (const agent of [UA, 'OtherBot', '']) {
      expect(robots.rulesFor(agent).isAllowed('/')).toBe(false);
      expect(robots.rulesFor(agent).isAllowed('https://example.com/a?b')).toBe(false);
      expect(robots.rulesFor(agent).isAllowed('/robots.txt')).toBe(true);
    }
  });

  it('both survive a JSON round trip', () => {
    const deny = RobotsTxt.fromJSON(JSON.stringify(RobotsTxt.disallowAll()));
    expect(deny.rulesFor(UA).isAllowed('/x')).toBe(false);
    const allow = RobotsTxt.fromJSON(JSON.stringify(RobotsTxt.allowAll()));
    expect(allow.rulesFor(UA).isAllowed('/x')).toBe(true);
  });
});

describe('sitemaps', () => {
  it('collects absolute http(s) URLs from anywhere in the file, once each', () => {
    const robots = parseRobotsTxt(
      [
        'Sitemap: https://example.com/sitemap.xml',
        'User-agent: *',
        'Disallow: /x',
        'sitemap: http://example.com/news.xml # comment',
        'Site-map: https://example.com/other.xml',
        'Sitemap https://example.com/nocolon.xml',
        'Sitemap: /relative.xml',
        'Sitemap: not a url',
        'Sitemap: ftp://example.com/s.xml',
        'Sitemap: https://example.com/sitemap.xml',
      ].join('\n'),
    );
    expect(robots.sitemaps).toEqual(['https://example.com/sitemap.xml', 'http://example.com/news.xml', 'https://example.com/other.xml', 'https://example.com/nocolon.xml']);
    expect(RobotsTxt.fromJSON(robots.toJSON()).sitemaps).toEqual(robots.sitemaps);
  });
});

describe('crawl-delay', () => {
  it('is a number in seconds and undefined when absent or invalid', () => {
    expect(parseRobotsTxt('User-agent: *\nCrawl-delay: 1.5\n').rulesFor(UA).crawlDelaySec).toBe(1.5);
    expect(parseRobotsTxt('User-agent: *\nCrawl-delay: -3\n').rulesFor(UA).crawlDelaySec).toBeUndefined();
    expect(parseRobotsTxt('User-agent: *\nCrawl-delay: 1,5\n').rulesFor(UA).crawlDelaySec).toBeUndefined();
    expect(parseRobotsTxt('User-agent: *\n').rulesFor(UA).crawlDelaySec).toBeUndefined();
  });

  describe('belongs to the group that names our agent', () => {
    // The shape sites use to give one crawler its own delay: a `*` run with a
    // delay, then a run for a named crawler. Crawl-delay does not end a group
    // (§2.2.4), so both runs share the allow/disallow rules, but each keeps its
    // own delay.
    const robots = parseRobotsTxt('User-agent: *\nCrawl-delay: 10\n\nUser-agent: DurableCrawler\nCrawl-delay: 1\nDisallow: /x\n');

    it('a specific shorter delay wins over the * delay', () => {
      expect(robots.rulesFor(UA).crawlDelaySec).toBe(1);
      expect(robots.rulesFor('OtherBot').crawlDelaySec).toBe(10);
      expect(robots.rulesFor(UA).isAllowed('/x')).toBe(false);
      expect(robots.rulesFor('OtherBot').isAllowed('/x')).toBe(false);
    });

    it('a specific group without a delay gets none from *', () => {
      for (const body of [
        'User-agent: *\nCrawl-delay: 10\n\nUser-agent: DurableCrawler\nDisallow: /x\n',
        'User-agent: *\nCrawl-delay: 10\nDisallow: /y\n\nUser-agent: DurableCrawler\nDisallow: /x\n',
        'User-agent: DurableCrawler\nDisallow: /x\n\nUser-agent: *\nCrawl-delay: 10\n',
      ]) {
        const parsed = parseRobotsTxt(body);
        expect([body, parsed.rulesFor(UA).crawlDelaySec]).toEqual([body, undefined]);
        expect([body, parsed.rulesFor('OtherBot').crawlDelaySec]).toEqual([body, 10]);
      }
    });

    it('keeps the per-run delays through JSON', () => {
      const json = robots.toJSON();
      expect(json.groups).toEqual([
        { agents: ['*', 'durablecrawler'], rules: [{ allow: false, pattern: '/x' }] },
        { agents: ['*'], rules: [], crawlDelaySec: 10 },
        { agents: ['durablecrawler'], rules: [], crawlDelaySec: 1 },
      ]);
      const restored = RobotsTxt.fromJSON(JSON.stringify(json));
      expect(restored.rulesFor(UA).crawlDelaySec).toBe(1);
      expect(restored.rulesFor('OtherBot').crawlDelaySec).toBe(10);
    });
  });

  it('is not capped by the parser', () => {
    expect(parseRobotsTxt('User-agent: *\nCrawl-delay: 86400\n').rulesFor(UA).crawlDelaySec).toBe(86400);
  });
});

describe('normalisation', () => {
  it.each([
    ['/a%3cd', '/a%3Cd'],
    ['/%7Euser', '/~user'],
    ['/\u00fc', '/%C3%BC'],
    ['/a b', '/a%20b'],
    ['/a*b$', '/a%2Ab%24'],
    ['/a%2fb', '/a%2Fb'],
    ['/100%', '/100%25'],
    ['/\u{1F600}', '/%F0%9F%98%80'],
    ['/lone\ud800', '/lone%EF%BF%BD'],
    ['https://example.com', '/'],
    ['https://example.com?q', '/?q'],
    ['https://user@example.com:8080/p?q=1#frag', '/p?q=1'],
    ['//example.com/p', '/p'],
    ['example.com/p', '/p'],
    ['/p#/q', '/p'],
    ['?q=1', '/?q=1'],
    ['', '/'],
  ])('%j → %j', (input, expected) => {
    expect(normalisePath(input)).toBe(expected);
  });

  it('measures specificity on the normalised pattern', () => {
    // `/%C3%BC` and `/ü` are the same 7 octets once normalised, so allow wins the tie.
    const robots = parseRobotsTxt('User-agent: *\nDisallow: /%c3%bc\nAllow: /\u00fc\n');
    expect(robots.rulesFor(UA).isAllowed('/\u00fcber')).toBe(true);
  });
});

describe('body limits and garbage', () => {
  it('ignores content past maxBytes, including a cut-off final line', () => {
    const body = 'User-agent: *\nDisallow: /first\nDisallow: /secondrule\n';
    const cut = body.indexOf('/secondrule') + 4; // ends inside "Disallow: /sec"
    for (const input of [body, new TextEncoder().encode(body)]) {
      const rules = parseRobotsTxt(input, { maxBytes: cut }).rulesFor(UA);
      expect(rules.isAllowed('/first')).toBe(false);
      // A truncated "Disallow: /sec" would wrongly block /sec.
      expect(rules.isAllowed('/sec')).toBe(true);
      expect(rules.isAllowed('/secondrule')).toBe(true);
    }
  });

  it('counts the limit in UTF-8 bytes, not characters', () => {
    const body = `User-agent: *\n# ${'\u00e9'.repeat(100)}\nDisallow: /x\n`;
    const bytes = new TextEncoder().encode(body).length;
    expect(parseRobotsTxt(body, { maxBytes: bytes }).rulesFor(UA).isAllowed('/x')).toBe(false);
    expect(
      parseRobotsTxt(body, { maxBytes: bytes - 2 })
        .rulesFor(UA)
        .isAllowed('/x'),
    ).toBe(true);
    expect(parseRobotsTxt(body, { maxBytes: body.length }).rulesFor(UA).isAllowed('/x')).toBe(true);
  });

  it('parses at least 500 KiB by default and nothing past it', () => {
    expect(DEFAULT_MAX_ROBOTS_BYTES).toBe(512000);
    const filler = `# ${'x'.repeat(98)}\n`.repeat(5000); // 500 000 bytes
    const within = `User-agent: *\n${filler}Disallow: /within\n`;
    expect(parseRobotsTxt(within).rulesFor(UA).isAllowed('/within')).toBe(false);
    const past = `User-agent: *\n${filler}${filler}Disallow: /past\n`;
    expect(parseRobotsTxt(past).rulesFor(UA).isAllowed('/past')).toBe(true);
    expect(parseRobotsTxt(past, { maxBytes: 2_000_000 }).rulesFor(UA).isAllowed('/past')).toBe(false);
  });

  it('parses a 10 MB body without throwing', () => {
    const line = 'Disallow: /dir/*/file$ # a comment\n';
    const text = `User-agent: *\n${line.repeat(Math.ceil(10_000_000 / line.length))}`;
    expect(text.length).toBeGreaterThanOrEqual(10_000_000);
    const bytes = new TextEncoder().encode(text);
    for (const body of [text, bytes]) {
      const rules = parseRobotsTxt(body).rulesFor(UA);
      expect(rules.isAllowed('/dir/a/file')).toBe(false);
      expect(rules.isAllowed('/other')).toBe(true);
    }
    // And with the limit lifted the whole body is parsed.
    expect(parseRobotsTxt(bytes, { maxBytes: Infinity }).rulesFor(UA).isAllowed('/dir/x/file')).toBe(false);
  });

  it('parses binary garbage without throwing', () => {
    for (const seed of [1, 2, 3, 42, 1234567]) {
      const bytes = pseudoRandomBytes(1_000_000, seed);
      const robots = parseRobotsTxt(bytes);
      expect(typeof robots.rulesFor(UA).isAllowed('/')).toBe('boolean');
      const asText = Array.from(bytes.subarray(0, 200_000), (b) => String.fromCharCode(b)).join('');
      expect(typeof parseRobotsTxt(asText).rulesFor(UA).isAllowed('/x')).toBe('boolean');
      expect(() => RobotsTxt.fromJSON(JSON.parse(JSON.stringify(robots)))).not.toThrow();
    }
  });

  it('handles a UTF-8 BOM and invalid UTF-8 in bytes', () => {
    const enc = new TextEncoder();
    const bom = Uint8Array.from([0xef, 0xbb, 0xbf, ...enc.encode('User-agent: *\nDisallow: /bom\n')]);
    expect(parseRobotsTxt(bom).rulesFor(UA).isAllowed('/bom')).toBe(false);
    const invalid = Uint8Array.from([...enc.encode('User-agent: *\nDisallow: /'), 0xff, 0xfe, ...enc.encode('\nDisallow: /ok-after\n')]);
    const rules = parseRobotsTxt(invalid).rulesFor(UA);
    expect(rules.isAllowed('/ok-after')).toBe(false);
    expect(rules.isAllowed('/')).toBe(true);
  });

  it('copes with very long lines', () => {
    const long = `/${'a'.repeat(200_000)}`;
    const robots = parseRobotsTxt(`User-agent: *\nDisallow: ${long}\nDisallow: /short\n`);
    const rules = robots.rulesFor(UA);
    expect(rules.isAllowed(long)).toBe(false);
    expect(rules.isAllowed(long.slice(0, -1))).toBe(true);
    expect(rules.isAllowed('/short')).toBe(false);
  });
});

describe('pathological patterns', () => {
  // These would take exponential or high-polynomial time in a backtracking
  // regex; they only need to finish here, so no timing is asserted.
  it('matches many-wildcard patterns against long paths', () => {
    const star = `/${'*a'.repeat(2000)}b`;
    const robots = parseRobotsTxt(`User-agent: *\nDisallow: ${star}\nDisallow: ${star}$\nDisallow: /*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n`);
    const rules = robots.rulesFor(UA);
    expect(rules.isAllowed(`/${'a'.repeat(4000)}`)).toBe(true);
    expect(rules.isAllowed(`/${'a'.repeat(4000)}c`)).toBe(true);
    expect(rules.isAllowed(`/${'a'.repeat(4000)}b`)).toBe(false);
    for (let i = 0; i < 200; i++) expect(rules.isAllowed(`/${'a'.repeat(3000)}${i}`)).toBe(true);
  });

  it('handles thousands of rules', () => {
    const lines = ['User-agent: *'];
    for (let i = 0; i < 5000; i++) lines.push(`Disallow: /p${i}/*/x*y$`);
    lines.push('Allow: /p42/');
    const rules = parseRobotsTxt(lines.join('\n')).rulesFor(UA);
    expect(rules.isAllowed('/p42/a/x1y')).toBe(false);
    expect(rules.isAllowed('/p42/a')).toBe(true);
    expect(rules.isAllowed('/p4999/b/xzy')).toBe(false);
    expect(rules.isAllowed('/p5000/b/xzy')).toBe(true);
  });
});

describe('toJSON / fromJSON', () => {
  const body = [
    'User-agent: DurableCrawler',
    'User-agent: other',
    'Crawl-delay: 2.5',
    'Disallow: /\u00fc*$',
    'Allow: /a%2a',
    'Disallow:',
    '',
    'User-agent: *',
    'Disallow: /',
    'Sitemap: https://example.com/s.xml',
  ].join('\n');

  it('is plain JSON with normalised patterns', () => {
    expect(JSON.parse(JSON.stringify(parseRobotsTxt(body)))).toEqual({
      v: 2,
      groups: [
        {
          agents: ['durablecrawler', 'other'],
          rules: [
            { allow: false, pattern: '/%C3%BC*$' },
            { allow: true, pattern: '/a%2A' },
          ],
          crawlDelaySec: 2.5,
        },
        { agents: ['*'], rules: [{ allow: false, pattern: '/' }] },
      ],
      sitemaps: ['https://example.com/s.xml'],
    });
  });

  it('round-trips through a string as well as an object', () => {
    const original = parseRobotsTxt(body);
    const restored = RobotsTxt.fromJSON(JSON.stringify(original));
    expect(restored.toJSON()).toEqual(original.toJSON());
    expect(restored.rulesFor(UA).crawlDelaySec).toBe(2.5);
    expect(restored.rulesFor(UA).isAllowed('/%C3%BCber')).toBe(false);
    expect(restored.rulesFor(UA).isAllowed('/uber')).toBe(true);
    expect(restored.rulesFor('x').isAllowed('/a')).toBe(false);
  });

  it.each([
    ['not JSON', '{'],
    ['null', null],
    ['wrong version', { v: 3, groups: [], sitemaps: [] }],
    // Version 1 gave a run's crawl-delay to every agent of its group.
    ['version 1', { v: 1, groups: [], sitemaps: [] }],
    ['groups missing', { v: 1, sitemaps: [] }],
    ['bad sitemaps', { v: 1, groups: [], sitemaps: [1] }],
    ['bad agents', { v: 1, groups: [{ agents: 'x', rules: [] }], sitemaps: [] }],
    ['bad rule', { v: 1, groups: [{ agents: ['*'], rules: [{ allow: 'yes', pattern: '/' }] }], sitemaps: [] }],
    ['empty pattern', { v: 1, groups: [{ agents: ['*'], rules: [{ allow: false, pattern: '' }] }], sitemaps: [] }],
    ['bad delay', { v: 1, groups: [{ agents: ['*'], rules: [], crawlDelaySec: -1 }], sitemaps: [] }],
  ])('rejects %s with a RobotsError', (_why, input) => {
    expect(() => RobotsTxt.fromJSON(input)).toThrow(RobotsError);
    try {
      RobotsTxt.fromJSON(input);
    } catch (err) {
      expect((err as RobotsError).code).toBe('INVALID_JSON');
    }
  });
});

// Only get and set are used by the store; a Map stands in for Redis here.
function mapRedis(data: Map<string, string>): RedisLike {
  return {
    get: async (key: string) => data.get(key) ?? null,
    set: async (key: string, value: string) => {
      data.set(key, value);
      return 'OK';
    },
  } as unknown as RedisLike;
}

describe('RobotsStore and older cached JSON', () => {
  it('treats a version 1 entry as a miss, so robots.txt is fetched again', async () => {
    const data = new Map<string, string>();
    const old = robotsSource('http://old.test/robots.txt', new Map());
    const v1 = { v: 1, groups: [{ agents: ['*', 'durablecrawler'], rules: [], crawlDelaySec: 10 }], sitemaps: [] };
    data.set(robotsCacheKey(old), JSON.stringify({ state: 'ok', robots: v1, status: 200, fetchedAt: 'x' }));
    const store = new RobotsStore(mapRedis(data));
    expect(await store.get(old)).toBeNull();

    const fresh = parseRobotsTxt('User-agent: *\nCrawl-delay: 10\n\nUser-agent: DurableCrawler\nDisallow: /x\n');
    await store.put(old, { state: 'ok', robots: fresh.toJSON(), status: 200, fetchedAt: 'y' });
    const again = await new RobotsStore(mapRedis(data)).get(old);
    expect(again?.parsed?.rulesFor(UA).crawlDelaySec).toBeUndefined();
    expect(again?.parsed?.rulesFor('OtherBot').crawlDelaySec).toBe(10);
  });
});

describe('RobotsStore keys an entry by scheme, host, port and address pin', () => {
  const stored = (text: string): StoredRobots => ({ state: 'ok', robots: parseRobotsTxt(text).toJSON(), status: 200, fetchedAt: 'x' });
  const NO_PINS = parseResolveEntries([]);
  /** What a store on this worker (its local cache warm) and one on another worker (Redis only) answer. */
  const lookUp = async (data: Map<string, string>, warm: RobotsStore, url: string, pins = NO_PINS) => {
    const source = robotsSource(url, pins);
    const here = await warm.get(source);
    const elsewhere = await new RobotsStore(mapRedis(data)).get(source);
    expect(elsewhere?.value ?? null).toEqual(here?.value ?? null);
    return here?.parsed?.rulesFor(UA).isAllowed('/private') ?? 'miss';
  };

  it('http and https (and another port) of one host are separate entries', async () => {
    const data = new Map<string, string>();
    const store = new RobotsStore(mapRedis(data));
    await store.put(robotsSource('http://shop.test/robots.txt', NO_PINS), stored('User-agent: *\nDisallow: /private\n'));
    expect(await lookUp(data, store, 'http://shop.test/robots.txt')).toBe(false);
    expect(await lookUp(data, store, 'http://shop.test:80/robots.txt')).toBe(false);
    expect(await lookUp(data, store, 'https://shop.test/robots.txt')).toBe('miss');
    expect(await lookUp(data, store, 'http://shop.test:8080/robots.txt')).toBe('miss');

    await store.put(robotsSource('https://shop.test/robots.txt', NO_PINS), stored('User-agent: *\nAllow: /\n'));
    expect(await lookUp(data, store, 'https://shop.test/robots.txt')).toBe(true);
    expect(await lookUp(data, store, 'http://shop.test/robots.txt')).toBe(false);
    expect(data.size).toBe(2);
  });

  it('a campaign that pins the host to an address never serves its robots.txt to one that does not (or pins elsewhere)', async () => {
    const data = new Map<string, string>();
    const store = new RobotsStore(mapRedis(data));
    const staging = parseResolveEntries(['shop.test:443:127.0.0.2']);
    // The staging box forbids everything: were it served to the production campaign, that one would crawl nothing for a day.
    await store.put(robotsSource('https://shop.test/robots.txt', staging), stored('User-agent: *\nDisallow: /\n'));
    expect(await lookUp(data, store, 'https://shop.test/robots.txt', staging)).toBe(false);
    expect(await lookUp(data, store, 'https://shop.test/robots.txt')).toBe('miss');
    expect(await lookUp(data, store, 'https://shop.test/robots.txt', parseResolveEntries(['shop.test:443:127.0.0.3']))).toBe('miss');
    // A pin for another port or another host is not a pin of this origin: the campaign reads what DNS gives everybody.
    await store.put(robotsSource('https://shop.test/robots.txt', NO_PINS), stored('User-agent: *\nAllow: /\n'));
    expect(await lookUp(data, store, 'https://shop.test/robots.txt', parseResolveEntries(['shop.test:80:127.0.0.2', 'other.test:443:127.0.0.2']))).toBe(true);
    expect(await lookUp(data, store, 'https://shop.test/robots.txt', staging)).toBe(false);
  });
});

describe("RobotsStore's local cache is bounded", () => {
  const NO_PINS = parseResolveEntries([]);
  const stored = (text: string): StoredRobots => ({ state: 'ok', robots: parseRobotsTxt(text).toJSON(), status: 200, fetchedAt: 'x' });
  /** A Map standing in for Redis that counts reads: a local hit reads nothing. */
  const countingRedis = (data: Map<string, string>) => {
    const reads = { n: 0 };
    const redis = mapRedis(data);
    const get = redis.get.bind(redis);
    (redis as unknown as { get: (k: string) => Promise<string | null> }).get = async (k: string) => {
      reads.n++;
      return get(k);
    };
    return { redis, reads };
  };
  const src = (host: string) => robotsSource(`http://${host}/robots.txt`, NO_PINS);

  it('past its count, the oldest file leaves first and is read from Redis again', async () => {
    const data = new Map<string, string>();
    const { redis, reads } = countingRedis(data);
    const store = new RobotsStore(redis, { maxEntries: 3 });
    for (const host of ['a.test', 'b.test', 'c.test', 'd.test']) await store.put(src(host), stored('User-agent: *\nDisallow: /private\n'));
    expect(store.localEntries).toBe(3);
    await store.get(src('d.test'));
    await store.get(src('b.test'));
    expect(reads.n).toBe(0);
    const a = await store.get(src('a.test'));
    expect(reads.n).toBe(1);
    expect(a?.parsed?.rulesFor(UA).isAllowed('/private')).toBe(false);
  });

  it('past its bytes, older files leave, and one file larger than all of it is not kept', async () => {
    const data = new Map<string, string>();
    const { redis, reads } = countingRedis(data);
    const small = stored('User-agent: *\nDisallow: /a\n');
    const big = stored(`User-agent: *\n${Array.from({ length: 200 }, (_, i) => `Disallow: /path-${i}\n`).join('')}`);
    const smallBytes = JSON.stringify(small).length;
    const store = new RobotsStore(redis, { maxBytes: smallBytes * 3 });
    for (const host of ['a.test', 'b.test', 'c.test']) await store.put(src(host), small);
    expect(store.localEntries).toBe(3);
    await store.put(src('huge.test'), big);
    expect(store.localEntries).toBe(0);
    expect((await store.get(src('huge.test')))?.parsed?.rulesFor(UA).isAllowed('/path-7')).toBe(false);
    expect(reads.n).toBe(1);
  });

  it('files past their minute are dropped when the next one comes in, not kept until the count is reached', async () => {
    const data = new Map<string, string>();
    const { redis } = countingRedis(data);
    let now = 1_000_000;
    const store = new RobotsStore(redis, { now: () => now });
    for (let i = 0; i < 50; i++) await store.put(src(`old${i}.test`), stored('User-agent: *\nAllow: /\n'));
    expect(store.localEntries).toBe(50);
    now += 30_000;
    await store.put(src('mid.test'), stored('User-agent: *\nAllow: /\n'));
    expect(store.localEntries).toBe(51);
    now += 31_000;
    await store.put(src('new.test'), stored('User-agent: *\nAllow: /\n'));
    expect(store.localEntries).toBe(2);
  });
});
