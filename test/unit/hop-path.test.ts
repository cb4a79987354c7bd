// Hop paths (Heritrix's crawl-log column): how each URL was reached, short
// whatever the depth, and the embed hops in a row that decide whether an
// embed outside the crawl's scope is still fetched.
import { appendHop, impliedHops, MAX_HOPS, trailingEmbeds } from '../../src/url/hop-path';

test('a path grows a letter a hop: a seed is empty, then links, embeds and redirects', () => {
  expect(appendHop('', 'L')).toBe('L');
  expect(appendHop(appendHop('L', 'E'), 'E')).toBe('LEE');
  expect(appendHop('LE', 'R')).toBe('LER');
});

test('past MAX_HOPS letters the path keeps its tail and counts what it cut', () => {
  let p = '';
  for (let i = 0; i < MAX_HOPS + 7; i++) p = appendHop(p, 'L');
  p = appendHop(p, 'E');
  expect(p).toBe(`8+${'L'.repeat(MAX_HOPS - 1)}E`);
  // Cut again: the count adds up.
  expect(appendHop(p, 'E')).toBe(`9+${'L'.repeat(MAX_HOPS - 2)}EE`);
  expect(trailingEmbeds(appendHop(p, 'E'))).toBe(2);
});

test('trailing embeds count the embed hops in a row at the end, redirects between them not counting', () => {
  expect(trailingEmbeds('')).toBe(0);
  expect(trailingEmbeds('LL')).toBe(0);
  expect(trailingEmbeds('LLE')).toBe(1);
  expect(trailingEmbeds('LEE')).toBe(2);
  expect(trailingEmbeds('LERE')).toBe(2);
  expect(trailingEmbeds('ELE')).toBe(1);
  expect(trailingEmbeds('5+EEE')).toBe(3);
});

test('entries written before paths were kept get the path their depth implies', () => {
  expect(impliedHops(0)).toBe('');
  expect(impliedHops(3)).toBe('LLL');
  expect(impliedHops(MAX_HOPS + 2)).toBe(`2+${'L'.repeat(MAX_HOPS)}`);
});
