// Reading a Content-Type (a response's header, an index entry's, a <link
// type> attribute): its essence (type/subtype, lower-cased, without
// parameters) and its charset parameter. One reading for every place that
// looks at one, so they agree on case, white space and parameters.

/** `Text/HTML ; charset=x` → `text/html`; '' when there is none (missing or empty). */
export function mediaTypeOf(contentType: string | null | undefined): string {
  if (!contentType) return '';
  const semi = contentType.indexOf(';');
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

/**
 * The charset parameter's value as written (its case kept, quotes and
 * white space around it left out), or undefined when there is none. Only
 * the characters an encoding label may have are read: what follows them is
 * not part of it.
 */
export function charsetOf(contentType: string | null | undefined): string | undefined {
  const m = contentType ? /charset\s*=\s*["']?([\w.:-]+)/i.exec(contentType) : null;
  return m ? m[1] : undefined;
}

const HTML_TYPES: ReadonlySet<string> = new Set(['text/html', 'application/xhtml+xml']);

/** An HTML page's type (XHTML included). */
export function isHtml(contentType: string | null | undefined): boolean {
  return HTML_TYPES.has(mediaTypeOf(contentType));
}
