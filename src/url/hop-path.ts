// How a URL was reached, as Heritrix writes it in its crawl log: one letter
// a hop from a seed. L a link (or a URL a sitemap or feed lists), E an embed
// (a page requisite: a stylesheet, script, image, font), R a redirect, P a
// sitemap found from robots.txt or the host root. A seed's path is ''.
// Kept in each frontier entry and index line, so a path must stay short
// whatever the depth: past MAX_HOPS letters only the last MAX_HOPS are kept,
// prefixed by how many were cut (`37+LLLE…`). Only the tail decides
// anything (how many embed hops in a row, docs/crawling-rules.md).

export type Hop = 'L' | 'E' | 'R' | 'P';

/** Letters a path keeps. */
export const MAX_HOPS = 40;

const CUT = /^(\d+)\+/;

/** `path` one hop longer. */
export function appendHop(path: string, hop: Hop): string {
  const m = CUT.exec(path);
  const cut = m ? Number(m[1]) : 0;
  const letters = (m ? path.slice(m[0].length) : path) + hop;
  if (letters.length <= MAX_HOPS) return cut ? `${cut}+${letters}` : letters;
  return `${cut + letters.length - MAX_HOPS}+${letters.slice(-MAX_HOPS)}`;
}

/** Embed hops at the end of the path: 0 for a page, 1 for a page's requisite, 2 for a stylesheet's. Redirects between them do not count. */
export function trailingEmbeds(path: string): number {
  let n = 0;
  for (let i = path.length - 1; i >= 0; i--) {
    const c = path[i];
    if (c === 'E') n++;
    else if (c !== 'R') break;
  }
  return n;
}

/** The path of an entry written before paths were kept: a seed, or links from one. */
export function impliedHops(depth: number): string {
  return depth <= 0 ? '' : depth > MAX_HOPS ? `${depth - MAX_HOPS}+${'L'.repeat(MAX_HOPS)}` : 'L'.repeat(depth);
}
