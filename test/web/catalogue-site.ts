// A product catalogue for handler tests and examples: a home page, N products
// spread over paginated list pages, one detail page per product. Detail pages
// link back to their list and to two other products (so a crawler that only
// followed links would find every product several ways), and robots.txt
// disallows /private/. Deterministic for a given seed.
import type { SiteSpec } from './test-web';
import { mulberry32, hashString } from './seeded';

export interface CatalogueProduct {
  sku: string;
  name: string;
  /** In cents. */
  price: number;
  path: string;
}

export interface CatalogueSite {
  spec: SiteSpec;
  products: CatalogueProduct[];
  /** Paths of the list pages, first to last. */
  listPaths: string[];
}

const WORDS = ['Alpine', 'Copper', 'Linen', 'Harbor', 'Maple', 'Quartz', 'Saffron', 'Tidal', 'Willow', 'Ember'];
const THINGS = ['Kettle', 'Lamp', 'Chair', 'Notebook', 'Scarf', 'Mug', 'Clock', 'Basket', 'Blanket', 'Vase'];

export function catalogueSite(host: string, opts: { products: number; perPage: number; seed?: number }): CatalogueSite {
  const rng = mulberry32(hashString(`${opts.seed ?? 0}|${host}`));
  const products: CatalogueProduct[] = Array.from({ length: opts.products }, (_, i) => {
    const sku = `SKU-${String(i + 1).padStart(4, '0')}`;
    return { sku, name: `${WORDS[rng.int(WORDS.length)]} ${THINGS[i % THINGS.length]} ${i + 1}`, price: 100 + rng.int(9900), path: `/product/${sku.toLowerCase()}` };
  });
  const pages = Math.max(1, Math.ceil(products.length / opts.perPage));
  const listPaths = Array.from({ length: pages }, (_, i) => `/list/${i + 1}`);
  const bySku = new Map(products.map((p, i) => [p.path, i]));
  const html = (title: string, body: string) =>
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>\n<body>\n<h1>${title}</h1>\n${body}\n</body></html>\n`;
  const spec: SiteSpec = {
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      const p = ctx.path;
      if (p === '/robots.txt') {
        ctx.send(200, 'text/plain; charset=utf-8', 'User-agent: *\nDisallow: /private/\n');
        return true;
      }
      if (p === '/') {
        ctx.send(200, 'text/html; charset=utf-8', html('Catalogue', `<nav><a class="list" href="/list/1">All products</a> <a href="/about">About</a></nav>`));
        return true;
      }
      if (p === '/about') {
        ctx.send(200, 'text/html; charset=utf-8', html('About', '<p>A shop for tests.</p><a href="/">Home</a>'));
        return true;
      }
      const list = /^\/list\/([1-9]\d*)$/.exec(p);
      if (list && Number(list[1]) <= pages) {
        const n = Number(list[1]);
        const items = products.slice((n - 1) * opts.perPage, n * opts.perPage);
        const body =
          `<ul>${items.map((it) => `<li><a class="product" href="${it.path}">${it.name}</a></li>`).join('\n')}</ul>\n` +
          (n < pages ? `<a class="next" rel="next" href="/list/${n + 1}">Next</a>` : '') +
          (n > 1 ? ` <a class="prev" href="/list/${n - 1}">Previous</a>` : '');
        {
          ctx.send(200, 'text/html; charset=utf-8', html(`Products, page ${n}`, body));
          return true;
        }
      }
      const i = bySku.get(p);
      if (i !== undefined) {
        const it = products[i];
        const related = [products[(i + 1) % products.length], products[(i + 7) % products.length]];
        const body =
          `<div class="product"><span class="sku">${it.sku}</span> <span class="price" data-cents="${it.price}">$${(it.price / 100).toFixed(2)}</span></div>\n` +
          `<a class="list" href="/list/${Math.floor(i / opts.perPage) + 1}">Back to the list</a>\n` +
          `<ul class="related">${related.map((r) => `<li><a href="${r.path}">${r.name}</a></li>`).join('')}</ul>`;
        {
          ctx.send(200, 'text/html; charset=utf-8', html(it.name, body));
          return true;
        }
      }
      {
        ctx.send(404, 'text/plain; charset=utf-8', 'not found\n');
        return true;
      }
    },
  };
  return { spec, products, listPaths };
}
