// The links the browser behaviors hand to the crawl (src/browser/behaviors.ts,
// activities/pipeline/frame-links.ts): normalised as the page's own links,
// those the DOM already gave left out, within what is left of the page's
// link budget (the rest counted as dropped), bad URLs skipped.
import { behaviorLinks } from '../../activities/pipeline/frame-links';
import { normalizeUrl } from '../../src/url/normalize';

const n = (u: string) => normalizeUrl(u);

describe('behaviorLinks', () => {
  test("normalised as the page's links: the same URL spelled twice is one link", () => {
    const got = behaviorLinks(['HTTP://Shop.test/a?b=2&a=1', 'http://shop.test/a?a=1&b=2'], { maxLinks: 10, maxLength: 2048, known: new Set() });
    expect(got).toEqual({ links: [n('http://shop.test/a?a=1&b=2')], dropped: 0 });
  });

  test('links the DOM already gave are not counted again', () => {
    const known = new Set([n('http://shop.test/in-dom')]);
    expect(behaviorLinks(['http://shop.test/in-dom', 'http://shop.test/panel-removed'], { maxLinks: 10, maxLength: 2048, known })).toEqual({
      links: [n('http://shop.test/panel-removed')],
      dropped: 0,
    });
  });

  test("within the page's remaining link budget: the rest are dropped and counted", () => {
    const urls = ['http://shop.test/1', 'http://shop.test/2', 'http://shop.test/3'];
    expect(behaviorLinks(urls, { maxLinks: 2, maxLength: 2048, known: new Set() })).toEqual({ links: urls.slice(0, 2).map(n), dropped: 1 });
    expect(behaviorLinks(urls, { maxLinks: 0, maxLength: 2048, known: new Set() })).toEqual({ links: [], dropped: 3 });
  });

  test('a URL that does not normalise (too long, not http) is skipped', () => {
    const long = `http://shop.test/${'x'.repeat(100)}`;
    expect(behaviorLinks([long, 'mailto:a@shop.test', 'http://shop.test/ok'], { maxLinks: 10, maxLength: 50, known: new Set() })).toEqual({
      links: [n('http://shop.test/ok')],
      dropped: 0,
    });
  });
});
