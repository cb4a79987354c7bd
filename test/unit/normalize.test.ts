import { NORMALIZATION_RULES, hostKey, isTrackingParam, normalizeUrl, type NormalizeOptions } from '../../src/url/normalize';
import { FINGERPRINT_LENGTH, urlFingerprint } from '../../src/url/fingerprint';
import { UrlError, type UrlErrorCode } from '../../src/url/url-error';

function errorOf(input: string, base?: string, opts?: NormalizeOptions): UrlError {
  try {
    normalizeUrl(input, base, opts);
  } catch (err) {
    if (err instanceof UrlError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
}

function codeOf(input: string, base?: string, opts?: NormalizeOptions): UrlErrorCode {
  return errorOf(input, base, opts).code;
}

describe('NORMALIZATION_RULES', () => {
  it('has unique ids and a description for each rule', () => {
    const ids = NORMALIZATION_RULES.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const r of NORMALIZATION_RULES) expect(r.description.length).toBeGreaterThan(10);
  });

  // The docs print these examples, so each one must be true.
  it.each(NORMALIZATION_RULES.map((r) => [r.id, r] as const))('example of %s holds', (_id, rule) => {
    const { input, base, opts, output, error } = rule.example;
    if (error) expect(codeOf(input, base, opts)).toBe(error);
    else expect(normalizeUrl(input, base, opts)).toBe(output);
  });
});

describe('normalizeUrl', () => {
  describe('case', () => {
    it('lower-cases scheme and host but not path or query', () => {
      expect(normalizeUrl('HTTPS://WWW.Example.COM/A/B?Q=X')).toBe('https://www.example.com/A/B?Q=X');
    });
  });

  describe('host', () => {
    it('converts IDN to punycode', () => {
      expect(normalizeUrl('http://BÜcher.example/')).toBe('http://xn--bcher-kva.example/');
      expect(normalizeUrl('http://münchen.de/straße')).toBe('http://xn--mnchen-3ya.de/stra%C3%9Fe');
    });

    it('canonicalises IP addresses', () => {
      expect(normalizeUrl('http://0x7f.0.0.1/')).toBe('http://127.0.0.1/');
      expect(normalizeUrl('http://[0:0:0:0:0:0:0:1]:8080/')).toBe('http://[::1]:8080/');
    });

    it('drops one trailing dot', () => {
      expect(normalizeUrl('https://example.com./')).toBe('https://example.com/');
      expect(codeOf('http://./')).toBe('INVALID_URL');
    });

    it('drops userinfo', () => {
      expect(normalizeUrl('https://alice:pw@example.com/x')).toBe('https://example.com/x');
      expect(normalizeUrl('https://alice@example.com/x')).toBe('https://example.com/x');
    });
  });

  describe('ports', () => {
    it('removes default ports only', () => {
      expect(normalizeUrl('http://example.com:80/')).toBe('http://example.com/');
      expect(normalizeUrl('https://example.com:443/')).toBe('https://example.com/');
      expect(normalizeUrl('http://example.com:443/')).toBe('http://example.com:443/');
      expect(normalizeUrl('https://example.com:80/')).toBe('https://example.com:80/');
      expect(normalizeUrl('http://example.com:8080/')).toBe('http://example.com:8080/');
    });

    it('rejects invalid ports', () => {
      expect(codeOf('http://example.com:99999/')).toBe('INVALID_URL');
    });
  });

  describe('path', () => {
    it('turns an empty path into /', () => {
      expect(normalizeUrl('http://example.com')).toBe('http://example.com/');
      expect(normalizeUrl('http://example.com?a=1')).toBe('http://example.com/?a=1');
    });

    it('resolves dot segments, including encoded ones, and backslashes', () => {
      expect(normalizeUrl('http://example.com/a/b/../../c/./d')).toBe('http://example.com/c/d');
      expect(normalizeUrl('http://example.com/a/%2e%2E/b/%2e/c')).toBe('http://example.com/b/c');
      expect(normalizeUrl('http://example.com/../../x')).toBe('http://example.com/x');
      expect(normalizeUrl('http://example.com\\a\\b')).toBe('http://example.com/a/b');
    });

    it('keeps a trailing slash distinct', () => {
      expect(normalizeUrl('http://example.com/a/')).toBe('http://example.com/a/');
      expect(normalizeUrl('http://example.com/a')).toBe('http://example.com/a');
    });
  });

  describe('percent-encoding', () => {
    it('upper-cases hex and decodes unreserved characters', () => {
      expect(normalizeUrl('http://example.com/%7Euser/%41%2d%2E%5f%7e%30')).toBe('http://example.com/~user/A-._~0');
      expect(normalizeUrl('http://example.com/a%2fb%3a?x=%2f%3d%26')).toBe('http://example.com/a%2Fb%3A?x=%2F%3D%26');
    });

    it('encodes characters that must be encoded', () => {
      expect(normalizeUrl('http://example.com/a b/é?q=a b')).toBe('http://example.com/a%20b/%C3%A9?q=a%20b');
    });

    it('leaves malformed escapes and + alone', () => {
      expect(normalizeUrl('http://example.com/%zz%4?q=a+b')).toBe('http://example.com/%zz%4?q=a+b');
    });

    it('does not create dot segments by decoding', () => {
      const once = normalizeUrl('http://example.com/x/a%2E%2E%2Fb');
      expect(once).toBe('http://example.com/x/a..%2Fb');
      expect(normalizeUrl(once)).toBe(once);
    });
  });

  describe('fragments', () => {
    it('drops the fragment', () => {
      expect(normalizeUrl('http://example.com/a?b=1#c')).toBe('http://example.com/a?b=1');
      expect(normalizeUrl('http://example.com/#')).toBe('http://example.com/');
      expect(normalizeUrl('#frag', 'http://example.com/p?q=1')).toBe('http://example.com/p?q=1');
    });
  });

  describe('tracking parameters', () => {
    it('removes known trackers by default, case-insensitively and when encoded', () => {
      const url =
        'http://example.com/p?utm_source=a&UTM_Medium=b&utm%5Fcampaign=c&gclid=1&fbclid=2&msclkid=3&dclid=4' +
        '&gbraid=5&wbraid=6&yclid=7&mc_cid=8&mc_eid=9&_hsenc=10&_hsmi=11&igshid=12&id=42';
      expect(normalizeUrl(url)).toBe('http://example.com/p?id=42');
    });

    it('keeps look-alike parameters', () => {
      expect(normalizeUrl('http://example.com/?utm=1&xutm_source=2&gclid_x=3')).toBe('http://example.com/?gclid_x=3&utm=1&xutm_source=2');
    });

    it('drops the ? when only trackers were present', () => {
      expect(normalizeUrl('http://example.com/p?utm_source=x')).toBe('http://example.com/p');
    });

    it('can be turned off', () => {
      expect(normalizeUrl('http://example.com/p?utm_source=x&a=1', undefined, { stripTracking: false })).toBe('http://example.com/p?a=1&utm_source=x');
    });

    it('isTrackingParam covers prefixes and the list', () => {
      expect(isTrackingParam('utm_id')).toBe(true);
      expect(isTrackingParam('FBCLID')).toBe(true);
      expect(isTrackingParam('page')).toBe(false);
    });
  });

  describe('session identifiers', () => {
    it('removes a ;jsessionid path parameter in any case, wherever the segment is', () => {
      expect(normalizeUrl('http://example.com/shop/item;jsessionid=A9E9C3255D1B?id=2')).toBe('http://example.com/shop/item?id=2');
      expect(normalizeUrl('http://example.com/a;JSESSIONID=abc.node1/b')).toBe('http://example.com/a/b');
      expect(normalizeUrl('http://example.com/;JSessionId=abc')).toBe('http://example.com/');
      expect(normalizeUrl('http://example.com/a/;jsessionid=abc')).toBe('http://example.com/a/');
    });

    it('removes only the session parameter from a segment, not the other path parameters', () => {
      expect(normalizeUrl('http://example.com/doc;jsessionid=abc;v=2/page')).toBe('http://example.com/doc;v=2/page');
      expect(normalizeUrl('http://example.com/doc;v=2;jsessionid=abc')).toBe('http://example.com/doc;v=2');
    });

    it('removes the listed query parameters, names in any case and percent-encoded', () => {
      const url = 'http://example.com/p?JSESSIONID=1&PhpSessId=2&SESSIONID=3&ASPSESSIONIDQACTCRBA=4&aspsessionid=5' + '&CFID=6&CFTOKEN=7&%4Asessionid=8&id=42';
      expect(normalizeUrl(url)).toBe('http://example.com/p?id=42');
    });

    it('removes sid only when its value looks like a session token', () => {
      expect(normalizeUrl('http://example.com/p?sid=0123456789abcdef0123&id=1')).toBe('http://example.com/p?id=1');
      expect(normalizeUrl('http://example.com/p?SID=Qx-9_aZ0bY8cX7dW&id=1')).toBe('http://example.com/p?id=1');
      expect(normalizeUrl('http://example.com/radio?sid=42')).toBe('http://example.com/radio?sid=42');
      expect(normalizeUrl('http://example.com/p?sid')).toBe('http://example.com/p?sid');
    });

    it('keeps names that are not on the list', () => {
      expect(normalizeUrl('http://example.com/p?session=1&session_id=2&sessid=3&xsid=0123456789abcdef0123')).toBe(
        'http://example.com/p?sessid=3&session=1&session_id=2&xsid=0123456789abcdef0123',
      );
      expect(normalizeUrl('http://example.com/a;sessionid=1')).toBe('http://example.com/a;sessionid=1');
    });

    it('makes the session variants of one page a single URL', () => {
      const variants = [
        'http://example.com/item?id=7',
        'http://example.com/item;jsessionid=AAA?id=7',
        'http://example.com/item;jsessionid=BBB?id=7',
        'http://example.com/item?PHPSESSID=c0ffee&id=7',
        'http://example.com/item?id=7&CFID=1&CFTOKEN=2',
      ];
      expect(new Set(variants.map((u) => normalizeUrl(u)))).toEqual(new Set(['http://example.com/item?id=7']));
    });

    it('is off with stripTracking: false', () => {
      expect(normalizeUrl('http://example.com/a;jsessionid=x?PHPSESSID=y', undefined, { stripTracking: false })).toBe('http://example.com/a;jsessionid=x?PHPSESSID=y');
    });
  });

  describe('query sorting', () => {
    it('sorts by key, keeping the order of duplicate keys', () => {
      expect(normalizeUrl('http://example.com/?z=1&b=2&a=9&b=1&a=3')).toBe('http://example.com/?a=9&a=3&b=2&b=1&z=1');
    });

    it('sorts by key only, not by value, and keeps valueless keys as written', () => {
      expect(normalizeUrl('http://example.com/?b&a=&c=1')).toBe('http://example.com/?a=&b&c=1');
    });

    it('can be turned off', () => {
      expect(normalizeUrl('http://example.com/?b=2&a=1', undefined, { sortQuery: false })).toBe('http://example.com/?b=2&a=1');
    });

    it('drops a lone ? and empty segments', () => {
      expect(normalizeUrl('http://example.com/a?')).toBe('http://example.com/a');
      expect(normalizeUrl('http://example.com/a?&&')).toBe('http://example.com/a');
      expect(normalizeUrl('http://example.com/a?b=1&&a=2&')).toBe('http://example.com/a?a=2&b=1');
    });
  });

  describe('relative resolution', () => {
    const base = 'https://example.com/dir/page.html?x=1';
    it.each([
      ['other.html', 'https://example.com/dir/other.html'],
      ['./sub/', 'https://example.com/dir/sub/'],
      ['../up', 'https://example.com/up'],
      ['/abs', 'https://example.com/abs'],
      ['?y=2', 'https://example.com/dir/page.html?y=2'],
      ['//cdn.example.net/a', 'https://cdn.example.net/a'],
      ['  http://other.example/  ', 'http://other.example/'],
    ])('%s', (input, expected) => {
      expect(normalizeUrl(input, base)).toBe(expected);
    });

    it('reports an invalid base', () => {
      expect(codeOf('a', 'not a url')).toBe('INVALID_URL');
    });
  });

  describe('schemes', () => {
    it.each([
      'mailto:a@example.com',
      'javascript:void(0)',
      'JavaScript:alert(1)',
      'tel:+123',
      'data:text/html,hi',
      'ftp://example.com/',
      'file:///etc/passwd',
      'java\tscript:alert(1)',
    ])('rejects %s', (input) => {
      expect(codeOf(input, 'http://example.com/')).toBe('UNSUPPORTED_SCHEME');
    });

    it('rejects huge data: URLs by scheme without parsing', () => {
      expect(codeOf(`data:image/png;base64,${'A'.repeat(5_000_000)}`)).toBe('UNSUPPORTED_SCHEME');
    });
  });

  describe('length', () => {
    it('accepts exactly maxLength and rejects one more', () => {
      const url = `http://example.com/${'a'.repeat(2048 - 'http://example.com/'.length)}`;
      expect(normalizeUrl(url)).toHaveLength(2048);
      expect(codeOf(`${url}b`)).toBe('URL_TOO_LONG');
    });

    it('measures the normalised form, not the input', () => {
      const longTracker = `http://example.com/?utm_content=${'x'.repeat(3000)}`;
      expect(normalizeUrl(longTracker)).toBe('http://example.com/');
    });

    it('honours opts.maxLength and rejects absurd input early', () => {
      expect(codeOf('http://example.com/abcdef', undefined, { maxLength: 20 })).toBe('URL_TOO_LONG');
      expect(codeOf(`http://example.com/${'a'.repeat(100_000)}`)).toBe('URL_TOO_LONG');
    });

    it('truncates the offending URL carried by the error', () => {
      const err = errorOf(`http://example.com/${'a'.repeat(10_000)}`);
      expect(err.url.length).toBeLessThan(2100);
      expect(err.url.startsWith('http://example.com/aaa')).toBe(true);
    });
  });

  describe('garbage input', () => {
    it.each(['', '   ', '\n\t'])('rejects %j as EMPTY', (input) => {
      expect(codeOf(input)).toBe('EMPTY');
    });

    it.each(['not a url', 'http://', 'http://exa mple.com/', 'http://[::1/', '://x', 'example.com/path', '%%%'])('rejects %j as INVALID_URL', (input) => {
      expect(codeOf(input)).toBe('INVALID_URL');
    });

    it('carries code, url, message and cause', () => {
      const err = errorOf('not a url');
      expect(err).toBeInstanceOf(UrlError);
      expect(err).toBeInstanceOf(Error);
      expect(err.name).toBe('UrlError');
      expect(err.url).toBe('not a url');
      expect(err.message).toContain('not a url');
      expect(err.cause).toBeDefined();
    });
  });

  it('is idempotent', () => {
    const inputs = ['HTTP://User@BÜcher.Example.:80/a/./b/../%7e%2f?utm_source=x&b=2&a=%41#f', 'https://example.com/a%20b?q=%e2%82%ac&&z', 'http://0x7f.1:8080/x?b=1&a=2&b=0'];
    for (const input of inputs) {
      const once = normalizeUrl(input);
      expect(normalizeUrl(once)).toBe(once);
    }
  });
});

describe('hostKey', () => {
  it('returns host plus non-default port', () => {
    expect(hostKey('http://example.com/a')).toBe('example.com');
    expect(hostKey('http://example.com:8080/a')).toBe('example.com:8080');
    expect(hostKey(normalizeUrl('https://Example.com:443/'))).toBe('example.com');
    expect(hostKey('http://[::1]:3000/')).toBe('[::1]:3000');
  });

  it('throws UrlError on garbage', () => {
    expect(() => hostKey('nope')).toThrow(UrlError);
  });
});

describe('urlFingerprint', () => {
  it('is a 16-character base64url string, stable across calls', () => {
    const fp = urlFingerprint('http://example.com/');
    expect(fp).toHaveLength(FINGERPRINT_LENGTH);
    expect(fp).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(urlFingerprint('http://example.com/')).toBe(fp);
  });

  it('is the base64url sha256 prefix (pinned: fingerprints are persisted in Redis)', () => {
    expect(urlFingerprint('http://example.com/')).toBe('KhtAJCDvRld0cc3H');
  });

  it('differs for different URLs', () => {
    expect(urlFingerprint('http://example.com/a')).not.toBe(urlFingerprint('http://example.com/b'));
  });
});
