// A campaign's host sessions on a worker share one browser context (issue
// 41): held while a session renders, replaced after pagesPerContext pages or
// once its browser died, closed when its last session leaves a replaced one
// or after a while unused. Chromium is stood in for by objects that count
// what was made and closed; the real one is in test/acceptance/browser-pool.test.ts.
import type { Browser, BrowserContext } from 'playwright-core';
import { SharedContexts } from '../../src/browser/shared-contexts';

function fakeBrowser() {
  const made: { closed: boolean; userAgent: string }[] = [];
  const start = () => {
    const b = { connected: true };
    const browser = {
      isConnected: () => b.connected,
      newContext: async (o: { userAgent: string }) => {
        const c = { closed: false, userAgent: o.userAgent };
        made.push(c);
        return { close: async () => void (c.closed = true), _c: c } as unknown as BrowserContext;
      },
    } as unknown as Browser;
    return { b, browser };
  };
  let current = start();
  return {
    get browser() {
      return current.browser;
    },
    made,
    /** The browser dies; the pool starts another on the next ask. */
    die: () => {
      current.b.connected = false;
      current = start();
    },
  };
}
const of = (ctx: BrowserContext) => (ctx as unknown as { _c: { closed: boolean; userAgent: string } })._c;
const UA = { userAgent: 'ua' };

test("sessions of a campaign share its context; another campaign's, or another user agent, get their own", async () => {
  const b = fakeBrowser();
  const share = new SharedContexts(async () => b.browser);
  const [a1, a2] = await Promise.all([share.lease('c1', UA, 100), share.lease('c1', UA, 100)]);
  const other = await share.lease('c2', UA, 100);
  const agent = await share.lease('c1', { userAgent: 'other' }, 100);
  expect(a1.context).toBe(a2.context);
  expect(other.context).not.toBe(a1.context);
  expect(agent.context).not.toBe(a1.context);
  expect(b.made.map((c) => c.userAgent)).toEqual(['ua', 'ua', 'other']);
  await share.close();
  expect(b.made.every((c) => c.closed)).toBe(true);
});

test('after pagesPerContext pages the context retires: new sessions get a new one, and the old closes when its last session leaves', async () => {
  const b = fakeBrowser();
  const share = new SharedContexts(async () => b.browser);
  const first = await share.lease('c', UA, 3);
  const second = await share.lease('c', UA, 3);
  first.pageStarted();
  first.pageStarted();
  expect(first.retired).toBe(false);
  second.pageStarted();
  expect(first.retired && second.retired).toBe(true);
  const third = await share.lease('c', UA, 3);
  expect(third.context).not.toBe(first.context);
  await first.leave();
  expect(of(first.context).closed).toBe(false);
  await second.leave();
  // Left twice: counted once.
  await second.leave();
  expect(of(first.context).closed).toBe(true);
  expect(of(third.context).closed).toBe(false);
});

test('a context whose browser died is replaced for the next session; one left unused closes after a while', async () => {
  const b = fakeBrowser();
  const share = new SharedContexts(async () => b.browser, 50);
  const one = await share.lease('c', UA, 100);
  b.die();
  expect(one.retired).toBe(true);
  const two = await share.lease('c', UA, 100);
  expect(two.context).not.toBe(one.context);
  await one.leave();
  expect(of(one.context).closed).toBe(true);
  await two.leave();
  expect(of(two.context).closed).toBe(false);
  await new Promise((r) => setTimeout(r, 200));
  expect(of(two.context).closed).toBe(true);
  // The campaign comes back: a new context.
  const three = await share.lease('c', UA, 100);
  expect(three.context).not.toBe(two.context);
  await share.close();
});

test('a session coming back before the idle close keeps the context', async () => {
  const b = fakeBrowser();
  const share = new SharedContexts(async () => b.browser, 50);
  const one = await share.lease('c', UA, 100);
  await one.leave();
  const two = await share.lease('c', UA, 100);
  await new Promise((r) => setTimeout(r, 200));
  expect(two.context).toBe(one.context);
  expect(of(two.context).closed).toBe(false);
  await share.close();
});
