// A product catalogue: list pages lead to detail pages, detail pages give one
// product each. Label routing keeps the two apart: the list hook enqueues
// product links with the label 'detail', and the crawler hands those pages
// to routes.detail. Run it against the test web's catalogue site:
//   npm run crawl -- http://shop.test:PORT/ --resolve … --handler examples/catalogue-handler.ts
//   npm run crawler -- dataset <campaign> --csv
import type { Handler, HandlerLink } from '../src/handlers/api';

const handler: Handler = {
  // Pages without a label: the home page and the list pages.
  onPage({ $ }) {
    const links: HandlerLink[] = [];
    $('a.product').each((_, a) => {
      const href = $(a).attr('href');
      if (href) links.push({ url: href, label: 'detail' });
    });
    // The home page's link to the list, and each list page's next page: default route.
    $('a.list, a.next').each((_, a) => {
      const href = $(a).attr('href');
      if (href) links.push(href);
    });
    // Only these: the crawl stays on the catalogue's paths.
    return { links, skipDefaultLinks: true };
  },
  routes: {
    detail({ $, url }) {
      const price = Number($('.price').attr('data-cents'));
      return {
        items: [{ sku: $('.sku').text().trim(), name: $('h1').text().trim(), priceCents: price, url }],
        // Related products are reached from the lists already.
        skipDefaultLinks: true,
      };
    },
  },
};

export default handler;
