// A site's structure as a graph: one item per page with its title, headings
// and outlinks (absolute URLs, as the page has them). The crawler follows the
// page's links as usual; the dataset is the graph's node and edge list.
//   npm run crawl -- https://example.org/ --handler examples/link-graph-handler.ts
//   npm run crawler -- dataset <campaign>
import type { Handler } from '../src/handlers/api';

const handler: Handler = {
  onPage({ url, $, contentType }) {
    if (!contentType?.includes('html')) return;
    const headings = $('h1, h2, h3')
      .map((_, h) => ({ level: Number(h.tagName.slice(1)), text: $(h).text().trim() }))
      .get();
    const outlinks = new Set<string>();
    $('a[href]').each((_, a) => {
      try {
        const target = new URL($(a).attr('href')!, url);
        target.hash = '';
        if (target.protocol === 'http:' || target.protocol === 'https:') outlinks.add(target.href);
      } catch {
        /* not a URL: not an edge */
      }
    });
    return { items: [{ page: url, title: $('title').text().trim(), headings, outlinks: [...outlinks].sort() }] };
  },
};

export default handler;
