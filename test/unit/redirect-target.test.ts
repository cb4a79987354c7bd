// A redirect's target enters the frontier in the same spelling a link to it
// would have, so credentials never reach the index and one host is never
// two politeness keys.
import { redirectTargetOf } from '../../activities/discovery';
import { hostKey, normalizeUrl } from '../../src/url/normalize';

test('a target is normalised as a link is: no credentials, no trailing dot on the host, no tracking parameters, sorted query', () => {
  const to = 'https://admin:s3cret@Example.COM.:443/%7Ea/?utm_source=x&b=2&a=1#top';
  const target = redirectTargetOf(to, 'https://example.com/old')!;
  expect(target).toBe('https://example.com/~a/?a=1&b=2');
  expect(target).toBe(normalizeUrl(to));
  expect(hostKey(target)).toBe('example.com');
});

test('a server that insists on its own spelling of the same URL gets it (minus credentials and fragment), or it could never be followed', () => {
  const from = normalizeUrl('https://example.com/list?b=2&a=1');
  expect(redirectTargetOf('https://user:pw@example.com/list?b=2&a=1#x', from)).toBe('https://example.com/list?b=2&a=1');
  // The very URL that redirected, in its own spelling: a loop, not a target.
  expect(redirectTargetOf(from, from)).toBeNull();
});

test('a target that is not a crawlable URL is none', () => {
  expect(redirectTargetOf('mailto:someone@example.com', 'https://example.com/')).toBeNull();
});
