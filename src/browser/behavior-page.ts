// The in-page half of the browser behaviors (src/browser/behaviors.ts): one
// script installed in the page before the behaviors run, which finds what to
// click, open or scroll and does it, one step per call, so the crawler can
// wait after each step for what it started (its requests, the thread idle).
// A string: this package compiles without the DOM's types, and a page's
// scripts cannot reach it before it is installed.
//
// What it guarantees while it is active:
// - forms are never submitted: a `submit` event is cancelled (capture phase,
//   before the page's own listeners) and form.submit() does nothing; buttons
//   that would submit or reset their form are never clicked;
// - a link to another URL is never clicked: it is a link, and the crawl
//   follows it; what autoclick clicks is what changes the page in place
//   (buttons, role=button, `a[href="#"]`, `javascript:` links);
// - a click that changed the page's URL through the History API is undone
//   (back over the entries it pushed, or the URL put back if it replaced it)
//   and the URL taken as a link; one that set `location`
//   is answered 204 by the page's routes (src/browser/page-routes.ts), so the
//   page stays, and the crawler takes its URL as a link;
// - every link in the DOM when the behaviors start, and every one their
//   changes put there, is remembered, so one the page removes again (a tab's
//   panel replaced by the next tab's) is still followed;
// - a `<video>` or `<audio>` autoplay plays is muted first, and paused
//   again once the crawler has waited for what playing it started.

/** Elements clicked again at most this often, each time only if its last click changed the page (a "load more" button). */
export const MAX_CLICKS_PER_ELEMENT = 20;
/** Links remembered at most: the page's own links are bounded again by budgets.maxLinksPerPage. */
export const MAX_BEHAVIOR_LINKS = 2_000;
/** Inner scrolling boxes scrolled at most, in document order. */
export const MAX_BOXES = 20;
/** Elements looked at for a scrolling box at most: a huge DOM is not walked whole on every step. */
const MAX_ELEMENTS_SCANNED = 20_000;

/** The global the script lives under (not enumerable: a page listing window's keys does not see it). */
export const BEHAVIORS_GLOBAL = '__crawlerBehaviors';

/** What a click did, as the page saw it once the crawler waited for what it started. */
export interface ClickResult {
  /** The page's DOM changed (elements added or removed, or new links). */
  changed: boolean;
  /** The click moved the page's URL with the History API: undone, its URL taken as a link. */
  movedTo: string | null;
}

/** The inner scrolling boxes as the last measure found them. */
export interface BoxesMeasure {
  boxes: number;
  /** Every box is scrolled to its bottom. */
  atBottom: boolean;
  /** All boxes' content heights together: a box that loaded more grew it. */
  height: number;
}

/** Installs the helper (once per document); true when it is there. */
export const INSTALL = `(() => {
  const KEY = ${JSON.stringify(BEHAVIORS_GLOBAL)};
  if (window[KEY]) return true;
  let active = true;
  const links = new Set();
  const take = (href) => {
    if (links.size < ${MAX_BEHAVIOR_LINKS} && /^https?:/i.test(href)) links.add(href.split('#')[0]);
  };
  const linksIn = (node) => {
    if (node.nodeType !== 1) return;
    if (node.matches('a[href], area[href]')) take(node.href);
    for (const a of node.querySelectorAll('a[href], area[href]')) take(a.href);
  };
  const observer = new MutationObserver((records) => {
    for (const r of records) {
      if (r.type === 'childList') r.addedNodes.forEach(linksIn);
      else if (r.target.nodeType === 1 && r.target.matches('a[href], area[href]')) take(r.target.href);
    }
  });
  observer.observe(document.documentElement, { childList: true, subtree: true, attributes: true, attributeFilter: ['href'] });
  // The links there now too: a tab's panel replaced by the next tab's takes its links out of the DOM.
  linksIn(document.documentElement);
  // Never submitted: cancelled before the page's own listeners see it.
  window.addEventListener('submit', (e) => { if (active) { e.preventDefault(); e.stopImmediatePropagation(); } }, true);
  const submit = HTMLFormElement.prototype.submit;
  HTMLFormElement.prototype.submit = function () { if (!active) return submit.call(this); };
  // History entries a click pushed: undone by going back over them (its replaceState, by replacing the URL again).
  let pushes = 0;
  const pushState = history.pushState;
  history.pushState = function (...args) { if (active) pushes++; return pushState.apply(this, args); };

  const visible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return false;
    const s = getComputedStyle(el);
    return s.visibility !== 'hidden' && s.display !== 'none';
  };
  const usable = (el) => !el.disabled && el.getAttribute('aria-disabled') !== 'true' && !el.closest('[inert]') && visible(el);
  // A link to a URL is followed by the crawl, never clicked; '#' and javascript: change the page in place.
  const inPlace = (el) => {
    if (el.tagName !== 'A' && el.tagName !== 'AREA') return true;
    const h = el.getAttribute('href');
    return h === null || h.trim() === '#' || /^\\s*javascript:/i.test(h);
  };
  // A button of a form submits or resets it (a button's type is submit unless it says otherwise).
  const formButton = (el) => (el.tagName === 'BUTTON' || el.tagName === 'INPUT') && el.form && (el.type === 'submit' || el.type === 'reset' || el.type === 'image');
  const size = () => document.getElementsByTagName('*').length;
  const urlOf = () => location.href.split('#')[0];

  // ---- autoclick
  const CLICKABLE = 'button, input[type=button], [role=button], a[href="#"], a[href^="javascript:" i], a:not([href])[onclick]';
  const clicks = new WeakMap();
  let current = null;
  const clickable = (el) =>
    usable(el) && inPlace(el) && !formButton(el) && el.getAttribute('aria-expanded') !== 'true' && !(el.getAttribute('role') === 'tab' && el.getAttribute('aria-selected') === 'true');
  const nextClick = () => {
    let again = null;
    for (const el of document.querySelectorAll(CLICKABLE)) {
      const c = clicks.get(el);
      if (c && !(c.changed && c.n < ${MAX_CLICKS_PER_ELEMENT})) continue;
      if (!clickable(el)) continue;
      if (!c) return el;
      again = again || el;
    }
    return again;
  };

  // ---- details, accordions, tabs
  const opened = new WeakSet();
  const nextToOpen = () => {
    for (const d of document.querySelectorAll('details:not([open])')) if (!opened.has(d)) return d;
    for (const el of document.querySelectorAll('[aria-expanded="false"], [role="tab"]:not([aria-selected="true"])'))
      if (!opened.has(el) && usable(el) && inPlace(el) && !formButton(el)) return el;
    return null;
  };

  // ---- inner scrolling boxes
  const boxes = () => {
    const out = [];
    const all = document.body ? document.body.getElementsByTagName('*') : [];
    const n = Math.min(all.length, ${MAX_ELEMENTS_SCANNED});
    for (let i = 0; i < n && out.length < ${MAX_BOXES}; i++) {
      const el = all[i];
      if (el.clientHeight === 0 || el.scrollHeight <= el.clientHeight + 1) continue;
      const oy = getComputedStyle(el).overflowY;
      if (oy === 'auto' || oy === 'scroll' || oy === 'overlay') out.push(el);
    }
    return out;
  };
  const atBottom = (el) => Math.ceil(el.scrollTop + el.clientHeight) >= el.scrollHeight - 1;

  // ---- autoplay
  const played = new WeakSet();
  let playing = null;
  const nextMedia = () => {
    for (const m of document.querySelectorAll('video, audio')) if (!played.has(m)) return m;
    return null;
  };

  Object.defineProperty(window, KEY, {
    enumerable: false,
    value: {
      stop() {
        active = false;
        observer.disconnect();
        if (playing) playing.pause();
        playing = null;
      },
      links() { return [...links]; },
      click() {
        const el = nextClick();
        if (!el) return false;
        const c = clicks.get(el) || { n: 0, changed: false };
        c.n++;
        clicks.set(el, c);
        current = { c, size: size(), links: links.size, url: urlOf(), href: location.href };
        pushes = 0;
        el.click();
        return true;
      },
      clicked() {
        if (!current) return { changed: false, movedTo: null };
        const { c } = current;
        let movedTo = null;
        if (urlOf() !== current.url) {
          movedTo = urlOf();
          take(movedTo);
          // Going back further than the click went would leave the page for the tab's last one.
          if (pushes > 0) history.go(-pushes);
          else history.replaceState(history.state, '', current.href);
        }
        c.changed = movedTo === null && (size() !== current.size || links.size !== current.links);
        current = null;
        return { changed: c.changed, movedTo };
      },
      open() {
        const el = nextToOpen();
        if (!el) return false;
        opened.add(el);
        if (el.tagName === 'DETAILS') {
          const summary = el.querySelector(':scope > summary');
          if (summary) summary.click();
          if (!el.open) el.open = true;
        } else el.click();
        return true;
      },
      play() {
        const m = nextMedia();
        if (!m) return false;
        played.add(m);
        // Muted: Chromium lets a muted element play without a user's gesture, and a crawler has no one to hear it.
        m.muted = true;
        playing = m;
        // A player's own play() may fail (no source it can decode): what its 'play' listeners fetched counts all the same.
        try {
          const p = m.play();
          if (p && typeof p.catch === 'function') p.catch(() => undefined);
        } catch (e) {}
        return true;
      },
      pause() {
        if (playing) playing.pause();
        playing = null;
        return true;
      },
      scrollBoxes() {
        let moved = 0;
        for (const el of boxes()) {
          if (atBottom(el)) continue;
          // An observer watching the viewport sees the box's content only while the box is in it.
          const r = el.getBoundingClientRect();
          if (r.bottom < 0 || r.top > innerHeight) el.scrollIntoView({ block: 'nearest' });
          el.scrollTop = el.scrollTop + el.clientHeight;
          moved++;
        }
        return moved;
      },
      measureBoxes() {
        const b = boxes();
        return { boxes: b.length, atBottom: b.every(atBottom), height: b.reduce((s, el) => s + el.scrollHeight, 0) };
      },
    },
  });
  return true;
})()`;

/** Calls one of the helper's methods (installed by INSTALL). */
export const call = (method: 'stop' | 'links' | 'click' | 'clicked' | 'open' | 'play' | 'pause' | 'scrollBoxes' | 'measureBoxes'): string =>
  `window[${JSON.stringify(BEHAVIORS_GLOBAL)}].${method}()`;
