// Response headers as undici hands them over (a value, or a list of values
// of a repeated header) and as FetchResult keeps them.

export function headerValue(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : value;
}

export function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    // Cookies may contain ', ' (Expires=Wed, 21 Oct ...), so join them on a
    // character that cannot occur inside a header value.
    flat[key] = Array.isArray(value) ? value.join(key === 'set-cookie' ? '\n' : ', ') : value;
  }
  return flat;
}
