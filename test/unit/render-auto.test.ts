// `render: auto`'s pure parts (src/browser/adaptive.ts): which URLs share a
// pattern, what counts as the browser finding more than HTTP, and which
// page of a pattern is rendered and why as its history grows; plus how the
// sealed index counts rendered pages (src/storage/seal.ts renderTag).
import {
  decided,
  generaliseSegment,
  MAX_PATTERN_CHARS,
  observe,
  parseState,
  planRender,
  rendererFoundMore,
  urlPattern,
  VERDICT_WINDOW,
  type PatternState,
} from '../../src/browser/adaptive';
import { adaptiveFetcher } from '../../src/browser/adaptive-fetcher';
import { sealLines } from '../../src/cli/commands/crawl';
import type { FetchRequest } from '../../src/http/fetcher';
import type { FetchResult } from '../../src/http/http-types';
import type { RenderedDocument } from '../../src/browser/page-fetcher';
import { renderTag } from '../../src/storage/seal';

const o = { samples: 3, recheckEvery: 20 };

describe('urlPattern', () => {
  test('numbers and hash-like segments are generalised; words are kept', () => {
    expect(generaliseSegment('123')).toBe('{n}');
    expect(generaliseSegment('3f2a9c81d0e4')).toBe('{h}');
    expect(generaliseSegment('550e8400-e29b-41d4-a716-446655440000')).toBe('{h}');
    expect(generaliseSegment('Xk9fQ2mZp7Lr4Tw8')).toBe('{h}');
    // Words are chosen, not generated: a hex-looking word without a digit stays.
    expect(generaliseSegment('deadbeefcafe')).toBe('deadbeefcafe');
    expect(generaliseSegment('products')).toBe('products');
    expect(generaliseSegment('v2')).toBe('v2');
  });

  test("pages of one kind share a pattern: the path's last segment of two or more is a slug", () => {
    expect(urlPattern('http://a.test/page/1')).toBe('a.test/page/{n}');
    expect(urlPattern('http://a.test/page/2')).toBe(urlPattern('http://a.test/page/1'));
    expect(urlPattern('http://spa.test:8080/p/one')).toBe('spa.test:8080/p/*');
    expect(urlPattern('http://spa.test:8080/p/three')).toBe(urlPattern('http://spa.test:8080/p/one'));
    expect(urlPattern('http://a.test/blog/2024/05/my-post.html')).toBe('a.test/blog/{n}/{n}/*.html');
    expect(urlPattern('http://a.test/docs/intro/')).toBe('a.test/docs/*/');
    expect(urlPattern('http://a.test/item/3f2a9c81d0e4/reviews')).toBe('a.test/item/{h}/*');
  });

  test('one-segment paths, the root, hosts and query names tell patterns apart; query values do not', () => {
    expect(urlPattern('http://a.test/')).toBe('a.test/');
    expect(urlPattern('http://a.test/about')).toBe('a.test/about');
    expect(urlPattern('http://a.test/about')).not.toBe(urlPattern('http://a.test/contact'));
    expect(urlPattern('http://b.test/page/1')).not.toBe(urlPattern('http://a.test/page/1'));
    expect(urlPattern('http://a.test/s?q=x&page=2')).toBe('a.test/s?page,q');
    expect(urlPattern('http://a.test/s?page=9&q=y')).toBe(urlPattern('http://a.test/s?q=x&page=2'));
    expect(urlPattern(`http://a.test/${'x'.repeat(500)}`).length).toBe(MAX_PATTERN_CHARS);
  });
});

describe('rendererFoundMore', () => {
  const find = (links: string[], textChars: number) => ({ links: new Set(links), textChars });

  test('a shell (no links, little text) against its rendered page: more', () => {
    expect(rendererFoundMore(find([], 0), find(['http://s.test/'], 40))).toBe(true);
  });

  test('a static page rendered the same, or with a link or two more on a large page, or a banner: not more', () => {
    const links = Array.from({ length: 30 }, (_, i) => `http://a.test/page/${i}`);
    expect(rendererFoundMore(find(links, 2000), find(links, 2000))).toBe(false);
    expect(rendererFoundMore(find(links, 2000), find([...links, 'http://a.test/x', 'http://a.test/y'], 2000))).toBe(false);
    expect(rendererFoundMore(find(links, 2000), find(links, 2150))).toBe(false);
    // Fewer in the browser (a script removing things) is never a reason to render.
    expect(rendererFoundMore(find(links, 2000), find([], 0))).toBe(false);
  });

  test('a tenth more links, or much more text, is more', () => {
    const links = Array.from({ length: 30 }, (_, i) => `http://a.test/page/${i}`);
    expect(rendererFoundMore(find(links, 2000), find([...links, 'http://a.test/x', 'http://a.test/y', 'http://a.test/z'], 2000))).toBe(true);
    expect(rendererFoundMore(find(links, 100), find(links, 400))).toBe(true);
  });
});

/** Feeds a pattern's pages through plan → verdict → observe, as the fetcher does; returns each page's plan. */
function run(pages: ('D' | 'S')[], start: { p?: PatternState | null; h?: PatternState | null } = {}) {
  let p = start.p ?? null;
  let h = start.h ?? null;
  const plans = pages.map((truth) => {
    const plan = planRender(p, h, o);
    const verdict = plan.compare ? truth : null;
    p = observe(p, verdict);
    h = observe(h, verdict);
    return plan;
  });
  return { plans, p: p!, h: h! };
}

describe('planRender', () => {
  test("a pattern's first pages are sampled (rendered and compared); a static one then stops rendering", () => {
    const { plans } = run(Array(10).fill('S'));
    expect(plans.slice(0, 3)).toEqual(Array(3).fill({ render: true, reason: 'sample', compare: true }));
    expect(plans.slice(3)).toEqual(Array(7).fill({ render: false, reason: null, compare: false }));
  });

  test('a client-rendered pattern keeps rendering, without comparing again until a re-check', () => {
    const { plans } = run(Array(10).fill('D'));
    expect(plans.slice(0, 3).every((p) => p.reason === 'sample')).toBe(true);
    expect(plans.slice(3)).toEqual(Array(7).fill({ render: true, reason: 'pattern-differs', compare: false }));
  });

  test('every recheckEvery-th page of a decided pattern is rendered and compared again, and enough changed verdicts change the decision', () => {
    // Static for its first 3 samples, then the site turns into a client-rendered one.
    const pages: ('D' | 'S')[] = [...Array(3).fill('S'), ...Array(80).fill('D')];
    const { plans } = run(pages);
    const rechecks = plans.map((p, i) => (p.reason === 'recheck' ? i + 1 : null)).filter((i) => i !== null);
    expect(rechecks.slice(0, 2)).toEqual([20, 40]);
    // Two re-checks that found more make the majority of the last three: from page 41 on, every page is rendered.
    expect(plans.slice(40).every((p) => p.render)).toBe(true);
    expect(plans[40]).toEqual({ render: true, reason: 'pattern-differs', compare: false });
    expect(plans.slice(3, 19).some((p) => p.render)).toBe(false);
    // recheckEvery 0: a decision is never re-checked.
    expect(planRender({ n: 19, v: 'SSS' }, null, { samples: 3, recheckEvery: 0 })).toEqual({ render: false, reason: null, compare: false });
  });

  test('a tie renders (a page not rendered loses its links); one odd verdict does not decide', () => {
    expect(decided({ n: 2, v: 'DS' }, null, { samples: 2, recheckEvery: 20 })).toEqual({ verdict: 'D', by: 'pattern' });
    expect(decided({ n: 3, v: 'SDS' }, null, o)).toEqual({ verdict: 'S', by: 'pattern' });
    expect(decided({ n: 2, v: 'DS' }, null, o)).toBeNull();
  });

  test('a new pattern of a host whose last verdicts agree follows the host after one sample that agrees too; one that disagrees is sampled', () => {
    const staticHost = { n: 10, v: 'SSSS' };
    expect(planRender(null, staticHost, o).reason).toBe('sample');
    expect(planRender({ n: 1, v: 'S' }, staticHost, o)).toEqual({ render: false, reason: null, compare: false });
    expect(planRender({ n: 1, v: 'D' }, staticHost, o).reason).toBe('sample');
    expect(planRender({ n: 1, v: 'D' }, { n: 10, v: 'DDD' }, o)).toEqual({ render: true, reason: 'host-differs', compare: false });
    // A host of mixed verdicts decides nothing for its patterns.
    expect(planRender({ n: 1, v: 'S' }, { n: 10, v: 'SDS' }, o).reason).toBe('sample');
  });

  test('a pattern the host has no room for follows the host; sampled while the host has no verdict', () => {
    expect(planRender(null, null, { ...o, untracked: true }).reason).toBe('sample');
    expect(planRender(null, { n: 7, v: 'DDS' }, { ...o, untracked: true })).toEqual({ render: true, reason: 'host-differs', compare: false });
    expect(planRender(null, { n: 7, v: 'SSS' }, { ...o, untracked: true })).toEqual({ render: false, reason: null, compare: false });
    expect(planRender(null, { n: 19, v: 'SSS' }, { ...o, untracked: true }).reason).toBe('recheck');
  });
});

describe('state', () => {
  test('observe counts every page and keeps the last verdicts only', () => {
    let s: PatternState | null = null;
    for (let i = 0; i < 20; i++) s = observe(s, i % 2 ? 'D' : null);
    expect(s).toEqual({ n: 20, v: 'D'.repeat(VERDICT_WINDOW) });
  });

  test('a stored state that is not one counts as none', () => {
    expect(parseState(JSON.stringify({ n: 4, v: 'DSD' }))).toEqual({ n: 4, v: 'DSD' });
    expect(parseState(null)).toBeNull();
    expect(parseState('{')).toBeNull();
    expect(parseState(JSON.stringify({ n: 'x', v: 'D' }))).toBeNull();
    expect(parseState(JSON.stringify({ n: 1, v: 'DX' }))).toBeNull();
  });
});

describe('renderTag (the sealed index counts rendered pages with it)', () => {
  test('rendered pages by why; HTML pages not rendered; anything else not an HTML page', () => {
    const page = { status: 200, contentType: 'text/html; charset=utf-8' };
    expect(renderTag({ ...page, render: { done: 'quiet', reason: 'sample' } })).toBe('sample');
    expect(renderTag({ ...page, render: { done: 'quiet' } })).toBe('browser');
    expect(renderTag(page)).toBe('-');
    expect(renderTag({ ...page, kind: 'embed' })).toBe('');
    expect(renderTag({ ...page, status: 301 })).toBe('');
    expect(renderTag({ status: 200, contentType: 'application/json' })).toBe('');
  });
});

test("crawl's summary prints the rendered pages, their share and why; nothing when the campaign rendered nothing", () => {
  expect(sealLines({ rendered: { pages: 8, htmlPages: 34, share: 0.235, reasons: { sample: 6, recheck: 1, 'host-differs': 1 } } })).toEqual([
    '  rendered 8 of 34 HTML pages (23.5 %): host-differs 1, recheck 1, sample 6',
  ]);
  expect(sealLines({})).toEqual([]);
});

describe('adaptiveFetcher (the decisions wired to a fetcher, a renderer and the stored history)', () => {
  const SHELL = '<html><body><div id="app"></div><script src="/app.js"></script></body></html>';
  const STATIC = '<html><body><h1>Static</h1><a href="/page/2">next</a></body></html>';
  const doc = (url: string, html: string): FetchResult =>
    ({ status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: Buffer.from(html), finalUrl: url }) as unknown as FetchResult;

  /** A site whose /app/ pages are shells rendering to a page with a link, and whose other pages are static. */
  function setup(o: { renderFails?: boolean } = {}) {
    const store = new Map<string, PatternState>();
    const rendered: string[] = [];
    const plans = {
      read: async (pattern: string) => ({ pattern: store.get(pattern) ?? null, host: store.get('*') ?? null, untracked: false }),
      write: async (pattern: string, state: PatternState | null, host: PatternState) => {
        if (state) store.set(pattern, state);
        store.set('*', host);
      },
    };
    const inner = { fetch: async (r: FetchRequest) => ({ ok: true as const, response: doc(r.url, r.url.includes('/app/') ? SHELL : STATIC) }) };
    const renderer = {
      fetch: inner.fetch,
      close: async () => undefined,
      render: async (d: FetchResult, url: string): Promise<RenderedDocument> => {
        rendered.push(url);
        if (o.renderFails) return { html: null, url, done: 'failed', ms: 1, requests: 0, error: { code: 'RENDER_FAILED', message: 'x' } };
        const html = url.includes('/app/') ? '<html><body><h1>App</h1><a href="/app/other">other</a></body></html>' : d.body.toString();
        return { html, url, done: 'quiet', ms: 1, requests: 0 };
      },
    };
    const f = adaptiveFetcher({ inner, renderer, plans, options: o2 });
    const get = async (url: string) => {
      const got = await f.fetch({ url, kind: 'page' }, { signal: new AbortController().signal });
      return got.ok ? got.response.rendered : undefined;
    };
    return { store, rendered, get };
  }
  const o2 = { samples: 2, recheckEvery: 0 };

  test('samples each pattern, then renders the client-rendered one only; the history is written for each page', async () => {
    const { store, rendered, get } = setup();
    for (let i = 1; i <= 4; i++) await get(`http://a.test/app/${'x'.repeat(i)}`);
    for (let i = 1; i <= 4; i++) await get(`http://a.test/page/${i}`);
    expect(rendered).toEqual(['http://a.test/app/x', 'http://a.test/app/xx', 'http://a.test/app/xxx', 'http://a.test/app/xxxx', 'http://a.test/page/1', 'http://a.test/page/2']);
    expect(store.get('a.test/app/*')).toEqual({ n: 4, v: 'DD' });
    expect(store.get('a.test/page/{n}')).toEqual({ n: 4, v: 'SS' });
    expect(store.get('*')).toEqual({ n: 8, v: 'DDSS' });
    // Why travels with the rendered document to the index line.
    expect((await get('http://a.test/app/y'))?.reason).toBe('pattern-differs');
    expect(await get('http://a.test/page/9')).toBeUndefined();
  });

  test('a failed render gives no verdict: the pattern is sampled again', async () => {
    const { store, rendered, get } = setup({ renderFails: true });
    for (let i = 1; i <= 3; i++) expect((await get(`http://a.test/page/${i}`))?.reason).toBe('sample');
    expect(rendered).toHaveLength(3);
    expect(store.get('a.test/page/{n}')).toEqual({ n: 3, v: '' });
  });
});
