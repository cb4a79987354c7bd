// The handler's onRender (src/browser/page-hook.ts): which render hook a page
// runs, how a run ends (typed, once, within its time), how its result joins
// onPage's, and a handler module with render hooks only being accepted.
import type { Page } from 'playwright-core';
import type { Handler, RenderContext } from '../../src/handlers/api';
import { handlerOf } from '../../src/handlers/loader';
import { pageContext, type HookInput, type HookRun } from '../../src/handlers/runner';
import { hasRenderHooks, hookReserveMs, RENDER_HOOK_CODE, renderHookFor, runRenderHook, withRenderHook, type RenderHookRun } from '../../src/browser/page-hook';

const URL_ = 'https://spa.test/list';
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
// The hooks here never touch the page: what they get is passed through as it is.
const ctx = (over: Partial<RenderContext> = {}): RenderContext => ({ page: {} as Page, url: URL_, label: null, depth: 1, log: quiet, ...over });
const input: HookInput = {
  url: URL_,
  finalUrl: URL_,
  depth: 1,
  label: null,
  status: 200,
  headers: {},
  contentType: 'text/html',
  body: Buffer.from(''),
  text: '',
  log: quiet,
};

describe('renderHookFor', () => {
  const onRender = () => undefined;
  const detail = () => undefined;
  test("a label's renderRoute, else onRender (as onPage's routes); none without either", () => {
    const h: Handler = { onRender, renderRoutes: { detail } };
    expect(renderHookFor(h, 'detail')).toBe(detail);
    expect(renderHookFor(h, 'other')).toBe(onRender);
    expect(renderHookFor(h, null)).toBe(onRender);
    expect(renderHookFor({ renderRoutes: { detail } }, null)).toBeNull();
    // A label named like an object's own property is no route.
    expect(renderHookFor({ renderRoutes: { detail } }, 'toString')).toBeNull();
    expect(renderHookFor({ onPage: () => undefined }, null)).toBeNull();
  });
  test('hasRenderHooks', () => {
    expect(hasRenderHooks({ onRender })).toBe(true);
    expect(hasRenderHooks({ renderRoutes: { detail } })).toBe(true);
    expect(hasRenderHooks({ renderRoutes: {}, onPage: () => undefined })).toBe(false);
  });
});

test("hookReserveMs: the hook's share of the deadline is handlerTimeoutMs, at most half the deadline", () => {
  expect(hookReserveMs(30_000, 30_000)).toBe(15_000);
  expect(hookReserveMs(30_000, 5_000)).toBe(5_000);
});

describe('runRenderHook', () => {
  test('runs the hook once with the page, URL, label and depth; its result checked like onPage’s', async () => {
    let calls = 0;
    let seen: RenderContext | null = null;
    const run = await runRenderHook(
      (c) => {
        calls++;
        seen = c;
        return { items: [{ clicked: true }], links: ['/p/next', { url: 'detail/1', label: 'detail' }] };
      },
      ctx({ label: 'list', depth: 2 }),
      1_000,
    );
    expect(run).toMatchObject({
      ok: true,
      output: {
        items: [{ clicked: true }],
        links: [
          { url: 'https://spa.test/p/next', label: null },
          { url: 'https://spa.test/detail/1', label: 'detail' },
        ],
        skipDefaultLinks: false,
      },
    });
    expect({ calls, label: seen!.label, depth: seen!.depth }).toEqual({ calls: 1, label: 'list', depth: 2 });
  });

  test('a hook that throws or returns a bad shape: RENDER_HOOK_ERROR, not attempted again', async () => {
    let calls = 0;
    const thrown = await runRenderHook(
      async () => {
        calls++;
        throw new Error('no button');
      },
      ctx(),
      1_000,
    );
    expect(thrown).toMatchObject({ ok: false, code: RENDER_HOOK_CODE.error, message: 'onRender failed: no button' });
    expect(calls).toBe(1);
    expect(await runRenderHook(() => ({ items: 'x' }) as never, ctx(), 1_000)).toMatchObject({ ok: false, code: RENDER_HOOK_CODE.error });
  });

  test('a hook that never ends: RENDER_HOOK_TIMEOUT at its limit, left behind; one that rejects afterwards is no unhandled rejection', async () => {
    let reject: (e: Error) => void = () => undefined;
    const run = await runRenderHook(() => new Promise<void>((_, r) => (reject = r)), ctx(), 30);
    expect(run).toMatchObject({ ok: false, code: RENDER_HOOK_CODE.timeout, message: 'onRender ran past its time limit of 30 ms' });
    // Its page closed under it: its Playwright call rejects later (jest fails the test on an unhandled rejection).
    reject(new Error('Target page, context or browser has been closed'));
    await new Promise((r) => setTimeout(r, 10));
  });

  test('a synchronous hook that blocked past its limit fails when it returns', async () => {
    const run = await runRenderHook(
      () => {
        const t = Date.now();
        while (Date.now() - t < 40);
      },
      ctx(),
      10,
    );
    expect(run).toMatchObject({ ok: false, code: RENDER_HOOK_CODE.timeout });
  });
});

describe('withRenderHook: onRender’s result with onPage’s', () => {
  const ok = (items: unknown[], links: string[], skip = false): RenderHookRun => ({
    ok: true,
    output: { items: items as never, links: links.map((url) => ({ url, label: null })), skipDefaultLinks: skip },
    ms: 1,
  });
  const pageRun = (items: unknown[], links: string[], skip = false): HookRun => ({
    ok: true,
    output: { items: items as never, links: links.map((url) => ({ url, label: 'p' })), skipDefaultLinks: skip },
    attempts: 1,
    ctx: pageContext(input),
  });
  const make = () => pageContext(input);

  test('no render hook: onPage’s run as it is (null stays null)', () => {
    const run = pageRun([{ a: 1 }], []);
    expect(withRenderHook(run, undefined, make)).toBe(run);
    expect(withRenderHook(null, undefined, make)).toBeNull();
  });

  test('both ran: the render hook’s items and links first, then onPage’s; skipDefaultLinks if either says so', () => {
    const merged = withRenderHook(pageRun([{ from: 'page' }], ['https://spa.test/x'], false), ok([{ from: 'render' }], ['https://spa.test/x', 'https://spa.test/y'], true), make);
    expect(merged).toMatchObject({
      ok: true,
      output: {
        items: [{ from: 'render' }, { from: 'page' }],
        // The first link to a URL decides its label: the render hook's.
        links: [
          { url: 'https://spa.test/x', label: null },
          { url: 'https://spa.test/y', label: null },
          { url: 'https://spa.test/x', label: 'p' },
        ],
        skipDefaultLinks: true,
      },
    });
  });

  test('onRender alone (no onPage for the label): its result is the page’s handler result', () => {
    const merged = withRenderHook(null, ok([{ only: 'render' }], []), make);
    expect(merged).toMatchObject({ ok: true, output: { items: [{ only: 'render' }] }, attempts: 1 });
    expect(merged!.ctx.url).toBe(URL_);
  });

  test('a failed render hook fails the page’s handler with its code, whatever onPage did; a failed onPage fails it with HANDLER_ERROR', () => {
    const failed: RenderHookRun = { ok: false, code: RENDER_HOOK_CODE.timeout, message: 'onRender ran past its time limit of 10 ms', ms: 10 };
    expect(withRenderHook(pageRun([{ a: 1 }], []), failed, make)).toMatchObject({ ok: false, code: 'RENDER_HOOK_TIMEOUT', message: failed.message });
    expect(withRenderHook(null, failed, make)).toMatchObject({ ok: false, code: 'RENDER_HOOK_TIMEOUT' });
    const pageFailed: HookRun = { ok: false, message: 'handler failed 3 times: x', attempts: 3, ctx: pageContext(input) };
    expect(withRenderHook(pageFailed, failed, make)).toMatchObject({ ok: false, code: 'RENDER_HOOK_TIMEOUT', message: `${failed.message}; handler failed 3 times: x` });
    const kept = withRenderHook(pageFailed, ok([{ a: 1 }], []), make);
    expect(kept).toBe(pageFailed);
    expect(kept!.ok === false && kept!.code).toBeUndefined();
  });
});

describe('a handler module with render hooks', () => {
  test('onRender or renderRoutes alone is a handler; bad ones are refused with what is wrong', () => {
    expect(handlerOf('x', { default: { onRender: () => undefined } }).onRender).toBeDefined();
    expect(handlerOf('x', { default: { renderRoutes: { detail: () => undefined } } }).renderRoutes).toBeDefined();
    expect(() => handlerOf('x', { default: { onRender: 'click' } })).toThrow(/onRender must be a function/);
    expect(() => handlerOf('x', { default: { renderRoutes: { 'bad label': () => undefined } } })).toThrow(/renderRoutes label "bad label" must match/);
    expect(() => handlerOf('x', { default: { renderRoutes: { detail: 1 } } })).toThrow(/renderRoutes\["detail"\] must be a function/);
  });
});
