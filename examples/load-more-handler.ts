// A site-specific behavior: one site's "Load more" button clicked until the
// list is whole, in the browser, before the page's DOM is taken
// (docs/handlers.md, "In the browser"; docs/rendering.md, "Behaviors").
// browser.autoclick does this for buttons it can recognise by itself; a hook
// like this one is for a site whose button autoclick would not find (a
// `<div>` with a click listener, a handler on `mousedown`), or whose list
// must be read in a way of its own. Each click's data and the images it adds
// are routed through the crawler's HTTP client and archived, and the links it
// adds are in the DOM the crawl reads. Run it against the test web's
// behaviors site (test/web/behaviors-site.ts):
//   npm run crawl -- http://behaviors.test:PORT/ --render browser --resolve … --handler examples/load-more-handler.ts
import type { Handler } from '../src/handlers/api';

/** Clicks at most: a list that never ends must not hold the page until its deadline. */
const MAX_CLICKS = 20;
/** How long one click's items may take to appear. */
const CLICK_WAIT_MS = 5_000;

const handler: Handler = {
  async onRender({ page, log }) {
    let clicks = 0;
    // The button goes away (or stops adding items) once the list is whole.
    while (clicks < MAX_CLICKS && (await page.locator('#more').count()) > 0) {
      const before = await page.locator('#items .item').count();
      await page.click('#more');
      clicks++;
      try {
        // A string: it runs in the page (and this file compiles without the DOM's types).
        await page.waitForFunction(`document.querySelectorAll('#items .item').length > ${before}`, undefined, { timeout: CLICK_WAIT_MS });
      } catch {
        log.info('the list stopped growing', { clicks });
        break;
      }
    }
    return clicks > 0 ? { items: [{ clicks, items: await page.locator('#items .item').count() }] } : undefined;
  },
};

export default handler;
