// The render modes (docs/rendering.md), in a module of their own: the
// campaign schema and operator steering (set-render) both name them, and
// steering must not import the schema that imports it.

/** off: pages are fetched with HTTP only; browser: every HTML page is also rendered in Chromium; auto: the pages that need it (docs/rendering.md). */
export const RENDER_MODES = ['off', 'browser', 'auto'] as const;
export type RenderMode = (typeof RENDER_MODES)[number];
