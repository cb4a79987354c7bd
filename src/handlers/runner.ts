// Running a handler's hook on one response: label routing, the time limit,
// bounded attempts on the same response (never a refetch), and a check of
// what the hook returned. Runs in the worker's own thread: see
// docs/handlers.md for why, and EventLoopWatch for how a hook that blocks
// the thread is reported.
import * as cheerio from 'cheerio';
import type { Handler, HandlerLink, HandlerLog, LoginContext, PageContext, PageHook, DatasetItem } from './api';
import { LABEL_PATTERN } from './api';
import { CrawlerError } from '../errors';

/** Attempts a hook gets on one response before the URL is recorded as HANDLER_ERROR. */
export const HANDLER_ATTEMPTS = 3;
/** Most items and links one page may return: a runaway hook must not fill a worker's memory or a frontier. */
export const MAX_ITEMS_PER_PAGE = 10_000;
export const MAX_LINKS_PER_PAGE = 10_000;

export interface HookInput {
  url: string;
  finalUrl: string;
  depth: number;
  label: string | null;
  status: number;
  headers: Record<string, string>;
  contentType: string | null;
  body: Buffer;
  text: string;
  log: HandlerLog;
}

export interface HookOutput {
  items: DatasetItem[];
  links: { url: string; label: string | null }[];
  skipDefaultLinks: boolean;
}

export type HookRun =
  | { ok: true; output: HookOutput; attempts: number; ctx: PageContext }
  /** `code`: the page's error code when not HANDLER_ERROR (a render hook's, src/browser/page-hook.ts). */
  | { ok: false; message: string; attempts: number; ctx: PageContext; code?: string };

/** The hook a page runs: its label's route, else onPage; null when the handler has neither. */
export function hookFor(h: Handler, label: string | null): PageHook | null {
  if (label !== null && h.routes && Object.prototype.hasOwnProperty.call(h.routes, label)) return h.routes[label];
  return h.onPage ?? null;
}

export function pageContext(input: HookInput): PageContext {
  let $: cheerio.CheerioAPI | undefined;
  return {
    url: input.url,
    finalUrl: input.finalUrl,
    depth: input.depth,
    label: input.label,
    status: input.status,
    headers: input.headers,
    contentType: input.contentType,
    body: input.body,
    text: input.text,
    get $() {
      $ ??= cheerio.load(input.text, { scriptingEnabled: false });
      return $;
    },
    log: input.log,
  };
}

class HandlerTimeoutError extends CrawlerError<'HANDLER_TIMEOUT'> {
  constructor(ms: number) {
    super('HANDLER_TIMEOUT', `the hook ran past its time limit of ${ms} ms`);
    this.name = 'HandlerTimeoutError';
  }
}

/**
 * Runs the page's hook up to HANDLER_ATTEMPTS times on the same response.
 * A hook that throws, rejects, returns something that is not a result, or
 * runs past `timeoutMs` fails its attempt. An asynchronous hook is left
 * behind at its time limit (JavaScript cannot stop it); a synchronous one
 * that blocked past it is caught when it returns.
 */
export async function runHook(h: Handler, input: HookInput, timeoutMs: number): Promise<HookRun | null> {
  const hook = hookFor(h, input.label);
  const ctx = pageContext(input);
  if (!hook) return null;
  let last = '';
  for (let attempt = 1; attempt <= HANDLER_ATTEMPTS; attempt++) {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const ran = Promise.resolve().then(() => hook(ctx));
      const raw = await Promise.race([
        ran,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new HandlerTimeoutError(timeoutMs)), timeoutMs);
        }),
      ]);
      // A synchronous hook holds the thread, so the timer above could not fire while it ran.
      if (performance.now() - started > timeoutMs) throw new HandlerTimeoutError(timeoutMs);
      return { ok: true, output: checkOutput(raw, input.finalUrl), attempts: attempt, ctx };
    } catch (err) {
      last = err instanceof Error ? err.message || err.name : String(err);
      input.log.warn('handler attempt failed', { attempt, of: HANDLER_ATTEMPTS, error: last.slice(0, 500) });
    } finally {
      clearTimeout(timer);
    }
  }
  return { ok: false, message: `handler failed ${HANDLER_ATTEMPTS} times: ${last}`.slice(0, 2000), attempts: HANDLER_ATTEMPTS, ctx };
}

/** How a login ended: in, or why not (a stable code and the hook's message). */
export type LoginRun = { ok: true; ms: number } | { ok: false; code: 'LOGIN_ERROR' | 'LOGIN_TIMEOUT'; message: string; ms: number };

/**
 * Runs the login hook once. Not attempted again at once like a page hook:
 * a login that failed (a wrong password, a changed form) fails the same way
 * a moment later, and each attempt costs the site requests. At `timeoutMs`
 * the hook is left behind and `onTimeout` is called, so its fetch refuses
 * any further request.
 */
export async function runLogin(h: Handler, ctx: LoginContext, timeoutMs: number, onTimeout: () => void): Promise<LoginRun> {
  const login = h.login;
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  if (!login) return { ok: true, ms: 0 };
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.resolve().then(() => login(ctx)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new HandlerTimeoutError(timeoutMs)), timeoutMs);
      }),
    ]);
    if (performance.now() - started > timeoutMs) throw new HandlerTimeoutError(timeoutMs);
    return { ok: true, ms: ms() };
  } catch (err) {
    const timedOut = err instanceof HandlerTimeoutError;
    if (timedOut) onTimeout();
    const message = err instanceof Error ? err.message || err.name : String(err);
    return { ok: false, code: timedOut ? 'LOGIN_TIMEOUT' : 'LOGIN_ERROR', message: `login hook ${timedOut ? 'timed out' : 'failed'}: ${message}`.slice(0, 2000), ms: ms() };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether a response says the crawler is logged out: any 401, and a 403 the
 * handler's isLoggedOut recognises (a 403 may also be an honest "forbidden",
 * which no login changes). An isLoggedOut that throws counts as "no".
 */
export function isLoggedOutResponse(h: Handler, input: HookInput): boolean {
  if (!h.login) return false;
  if (input.status === 401) return true;
  if (input.status !== 403 || !h.isLoggedOut) return false;
  try {
    return h.isLoggedOut(pageContext(input)) === true;
  } catch (err) {
    input.log.warn('isLoggedOut threw; the page is taken as not logged out', { error: String(err).slice(0, 500) });
    return false;
  }
}

/** What a hook returned, checked and brought to one shape; anything wrong fails the attempt. */
export function checkOutput(raw: unknown, base: string): HookOutput {
  if (raw === undefined || raw === null) return { items: [], links: [], skipDefaultLinks: false };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new TypeError('a hook must return { items?, links?, skipDefaultLinks? } or nothing');
  const r = raw as { items?: unknown; links?: unknown; skipDefaultLinks?: unknown };
  const items: DatasetItem[] = [];
  if (r.items !== undefined) {
    if (!Array.isArray(r.items)) throw new TypeError('items must be a list of objects');
    if (r.items.length > MAX_ITEMS_PER_PAGE) throw new RangeError(`${r.items.length} items from one page; at most ${MAX_ITEMS_PER_PAGE}`);
    for (const it of r.items) {
      if (!it || typeof it !== 'object' || Array.isArray(it)) throw new TypeError('every item must be an object');
      // Serialisable now, so a bad item fails the hook, not the dataset write.
      JSON.stringify(it);
      items.push(it as DatasetItem);
    }
  }
  const links: HookOutput['links'] = [];
  if (r.links !== undefined) {
    if (!Array.isArray(r.links)) throw new TypeError('links must be a list of URLs or { url, label }');
    if (r.links.length > MAX_LINKS_PER_PAGE) throw new RangeError(`${r.links.length} links from one page; at most ${MAX_LINKS_PER_PAGE}`);
    for (const l of r.links as HandlerLink[]) {
      const raw = typeof l === 'string' ? l : l && typeof l === 'object' ? l.url : undefined;
      const label = typeof l === 'object' && l ? (l.label ?? null) : null;
      if (typeof raw !== 'string') throw new TypeError('every link must be a URL string or { url, label }');
      if (label !== null && (typeof label !== 'string' || !LABEL_PATTERN.test(label))) throw new TypeError(`link label ${JSON.stringify(label)} must match ${LABEL_PATTERN}`);
      let url: string;
      try {
        url = new URL(raw, base).href;
      } catch {
        // An unparseable link is dropped like one in the page would be, not a failure of the hook.
        continue;
      }
      links.push({ url, label });
    }
  }
  if (r.skipDefaultLinks !== undefined && typeof r.skipDefaultLinks !== 'boolean') throw new TypeError('skipDefaultLinks must be true or false');
  return { items, links, skipDefaultLinks: r.skipDefaultLinks === true };
}

/**
 * Reports a blocked event loop: a timer every `everyMs` measures how late
 * it fires; a lateness of `thresholdMs` or more is reported with the hook
 * that was running (if any). Reporting only: a synchronous hook cannot be
 * stopped from its own thread.
 */
export class EventLoopWatch {
  private timer: NodeJS.Timeout | null = null;
  private running = new Map<number, string>();
  /** Hooks that ended lately: a synchronous hook ends before the late timer can fire. */
  private ended: { url: string; at: number }[] = [];
  private nextId = 0;

  constructor(
    private readonly report: (blockedMs: number, during: string[]) => void,
    private readonly everyMs = 500,
    private readonly thresholdMs = 1_000,
  ) {}

  /** Marks a hook running on `url` until the returned function is called. */
  enter(url: string): () => void {
    this.start();
    const id = this.nextId++;
    this.running.set(id, url);
    return () => {
      this.running.delete(id);
      this.ended.push({ url, at: performance.now() });
      if (this.ended.length > 100) this.ended.shift();
    };
  }

  private start(): void {
    if (this.timer) return;
    let last = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      const late = now - last - this.everyMs;
      const since = last;
      last = now;
      const recent = this.ended.filter((e) => e.at >= since).map((e) => e.url);
      this.ended = [];
      if (late >= this.thresholdMs) this.report(Math.round(late), [...new Set([...this.running.values(), ...recent])]);
    }, this.everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
