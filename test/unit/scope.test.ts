import { SCOPE_MODES, ScopeError, createScope, registrableDomain, type ScopeSpec } from '../../src/url/scope';
import { UrlError } from '../../src/url/url-error';

function scopeErrorCode(spec: ScopeSpec, seeds: string[]): string {
  try {
    createScope(spec, seeds);
  } catch (err) {
    if (err instanceof ScopeError) return err.code;
    throw err;
  }
  throw new Error('expected createScope to throw');
}

describe('registrableDomain', () => {
  it.each([
    ['example.com', 'example.com'],
    ['www.example.com', 'example.com'],
    ['a.b.example.co.uk', 'example.co.uk'],
    ['example.co.uk', 'example.co.uk'],
    ['WWW.Example.COM', 'example.com'],
    ['www.example.com:8080', 'example.com'],
    ['www.example.com.', 'example.com'],
    ['sub.bücher.example', 'xn--bcher-kva.example'],
    // Unknown TLDs follow the PSL default rule: last two labels.
    ['site3.test', 'site3.test'],
    ['a.b.site3.test', 'site3.test'],
    // No registrable domain: the hostname itself.
    ['localhost', 'localhost'],
    ['co.uk', 'co.uk'],
    ['127.0.0.1', '127.0.0.1'],
    ['127.0.0.1:3000', '127.0.0.1'],
    ['[::1]:8080', '[::1]'],
  ])('%s → %s', (host, expected) => {
    expect(registrableDomain(host)).toBe(expected);
  });

  it('treats private suffixes as ordinary names unless asked', () => {
    expect(registrableDomain('alice.github.io')).toBe('github.io');
    expect(registrableDomain('alice.github.io', { privateSuffixes: true })).toBe('alice.github.io');
    expect(registrableDomain('a.b.blogspot.com', { privateSuffixes: true })).toBe('b.blogspot.com');
  });

  it('rejects things that are not hosts', () => {
    expect(() => registrableDomain('')).toThrow(UrlError);
    expect(() => registrableDomain('http://example.com/')).toThrow(UrlError);
    expect(() => registrableDomain('exa mple.com')).toThrow(UrlError);
  });
});

describe('createScope', () => {
  describe('same-domain', () => {
    const scope = createScope({ mode: 'same-domain' }, ['https://www.example.co.uk/start', 'http://site3.test:8080/']);

    it.each([
      'https://www.example.co.uk/other',
      'http://example.co.uk/',
      'http://a.b.example.co.uk/deep',
      'https://example.co.uk:8443/',
      'http://site3.test/',
      'http://x.site3.test:9999/',
      'HTTP://WWW.EXAMPLE.CO.UK/',
    ])('allows %s', (url) => {
      expect(scope.allows(url)).toBe(true);
    });

    it.each([
      'http://other.co.uk/',
      'http://co.uk/',
      'http://example.com/',
      'http://notexample.co.uk/',
      'http://example.co.uk.evil.com/',
      'http://site4.test/',
      'mailto:x@example.co.uk',
      'ftp://example.co.uk/',
      'not a url',
    ])('rejects %s', (url) => {
      expect(scope.allows(url)).toBe(false);
    });

    it('describes itself with the registrable domains', () => {
      expect(scope.roots).toEqual(['example.co.uk', 'site3.test']);
      expect(scope.describe()).toBe('same-domain: example.co.uk, site3.test and subdomains');
    });

    it('keeps a private-suffix site whole by default, split when asked', () => {
      const loose = createScope({ mode: 'same-domain' }, ['https://alice.github.io/']);
      expect(loose.allows('https://bob.github.io/')).toBe(true);
      const strict = createScope({ mode: 'same-domain', privateSuffixes: true }, ['https://alice.github.io/']);
      expect(strict.allows('https://alice.github.io/x')).toBe(true);
      expect(strict.allows('https://bob.github.io/')).toBe(false);
    });

    it('keeps IP and single-label seeds to exactly that host', () => {
      const ip = createScope({ mode: 'same-domain' }, ['http://127.0.0.1:3000/']);
      expect(ip.allows('http://127.0.0.1:4000/')).toBe(true);
      expect(ip.allows('http://127.0.0.2/')).toBe(false);
      const local = createScope({ mode: 'same-domain' }, ['http://localhost:3000/']);
      expect(local.allows('http://localhost/')).toBe(true);
      expect(local.allows('http://example.com/')).toBe(false);
    });
  });

  describe('same-host', () => {
    const scope = createScope({ mode: 'same-host' }, ['https://www.example.com/', 'http://b.example.org./x']);

    it('allows the seed hosts, whatever the scheme, port or path', () => {
      expect(scope.allows('http://www.example.com/a')).toBe(true);
      expect(scope.allows('https://www.example.com:8443/a')).toBe(true);
      expect(scope.allows('https://b.example.org/')).toBe(true);
      expect(scope.allows('https://b.example.org./')).toBe(true);
    });

    it('rejects parents, siblings and subdomains', () => {
      expect(scope.allows('https://example.com/')).toBe(false);
      expect(scope.allows('https://api.www.example.com/')).toBe(false);
      expect(scope.allows('https://a.example.org/')).toBe(false);
    });

    it('describes itself', () => {
      expect(scope.describe()).toBe('same-host: b.example.org, www.example.com');
    });
  });

  describe('domains', () => {
    const scope = createScope({ mode: 'domains', domains: ['*.Example.ORG', '.bücher.example', 'news.example.net.', 'https://docs.example.io/path'] }, [
      'https://ignored.example.com/',
    ]);

    it('normalises the listed entries', () => {
      expect(scope.roots).toEqual(['docs.example.io', 'example.org', 'news.example.net', 'xn--bcher-kva.example']);
    });

    it('allows listed domains and their subdomains', () => {
      expect(scope.allows('http://example.org/')).toBe(true);
      expect(scope.allows('http://a.b.example.org/')).toBe(true);
      expect(scope.allows('http://xn--bcher-kva.example/')).toBe(true);
      expect(scope.allows('http://shop.bücher.example/')).toBe(true);
      expect(scope.allows('https://news.example.net/x')).toBe(true);
      expect(scope.allows('https://v2.docs.example.io/x')).toBe(true);
    });

    it('rejects everything else, including seeds and parents of listed subdomains', () => {
      expect(scope.allows('https://ignored.example.com/')).toBe(false);
      expect(scope.allows('https://example.net/')).toBe(false);
      expect(scope.allows('https://badexample.org/')).toBe(false);
      expect(scope.allows('https://example.io/')).toBe(false);
    });

    it('needs a non-empty, valid list', () => {
      expect(scopeErrorCode({ mode: 'domains' }, [])).toBe('INVALID_SCOPE');
      expect(scopeErrorCode({ mode: 'domains', domains: [] }, [])).toBe('INVALID_SCOPE');
      expect(scopeErrorCode({ mode: 'domains', domains: ['*.'] }, [])).toBe('INVALID_DOMAIN');
      expect(scopeErrorCode({ mode: 'domains', domains: ['exa mple.com'] }, [])).toBe('INVALID_DOMAIN');
    });

    it('reports the offending entry', () => {
      try {
        createScope({ mode: 'domains', domains: ['ok.example', 'bad host'] }, []);
        throw new Error('expected a ScopeError');
      } catch (err) {
        expect(err).toBeInstanceOf(ScopeError);
        expect((err as ScopeError).url).toBe('bad host');
      }
    });
  });

  describe('any', () => {
    const scope = createScope({ mode: 'any' }, []);
    it('allows every http(s) URL and nothing else', () => {
      expect(scope.allows('http://anything.example/')).toBe(true);
      expect(scope.allows('https://10.0.0.1:8443/x')).toBe(true);
      expect(scope.allows('javascript:alert(1)')).toBe(false);
      expect(scope.allows('garbage')).toBe(false);
      expect(scope.describe()).toBe('any: every http(s) URL');
    });
  });

  it('round-trips the spec through JSON', () => {
    const spec: ScopeSpec = JSON.parse(JSON.stringify({ mode: 'same-domain', privateSuffixes: false }));
    expect(createScope(spec, ['http://example.com/']).allows('http://www.example.com/')).toBe(true);
  });

  it('rejects bad specs and seeds with typed errors', () => {
    expect(scopeErrorCode({ mode: 'same-domain' }, [])).toBe('NO_SEEDS');
    expect(scopeErrorCode({ mode: 'same-host' }, [])).toBe('NO_SEEDS');
    expect(scopeErrorCode({ mode: 'same-host' }, ['mailto:a@example.com'])).toBe('INVALID_SEED');
    expect(scopeErrorCode({ mode: 'same-domain' }, ['not a url'])).toBe('INVALID_SEED');
    expect(scopeErrorCode({ mode: 'everything' } as unknown as ScopeSpec, [])).toBe('INVALID_SCOPE');
  });

  it('documents every mode', () => {
    expect(SCOPE_MODES.map((m) => m.mode).sort()).toEqual(['any', 'domains', 'same-domain', 'same-host']);
  });
});
