// Which request headers an operator may add, and which of them are secrets.
// Pure (no Node APIs): the campaign schema, which the workflow bundles,
// checks `fetch.headers` with it, and the credentials file reader
// (credentials.ts) checks its `Name: value` lines with it.

/** Headers whose values are credentials: redacted in the WARC (src/storage/warc-writer.ts) unless output.warcKeepSecrets. */
export const SECRET_REQUEST_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization', 'cookie']);
export const SECRET_RESPONSE_HEADERS: ReadonlySet<string> = new Set(['set-cookie']);
/** What a redacted header's value becomes. */
export const REDACTED = '[redacted]';

/**
 * Names that look like they carry a secret (an API key, a token, a session).
 * `fetch.headers` travels in the campaign input, hence in Temporal history
 * and the Web UI: such a header belongs in the credentials file, which only
 * workers read. A heuristic: it errs towards refusing.
 */
const SECRET_LOOKING = /auth|token|secret|passw|cookie|session|sessid|api[-_]?key|(^|[-_])key$/i;

/** Set by the client itself from other settings, or framing it must own: never from configuration. */
const RESERVED = new Map<string, string>([
  ['host', 'the crawler sets Host from the URL'],
  ['user-agent', 'set it with --user-agent (politeness.userAgent): robots.txt is matched against it'],
  ['content-length', 'the crawler owns message framing'],
  ['transfer-encoding', 'the crawler owns message framing'],
  ['connection', 'the crawler owns connection management'],
  ['keep-alive', 'the crawler owns connection management'],
  ['upgrade', 'the crawler owns connection management'],
  ['te', 'the crawler owns message framing'],
  ['trailer', 'the crawler owns message framing'],
  ['accept-encoding', 'the crawler decodes only what it asks for'],
  ['proxy-connection', 'the crawler owns connection management'],
]);

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Visible ASCII and spaces/tabs inside: what a header value may hold on the wire without ambiguity. */
const VALUE = /^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$/;

export const MAX_HEADERS = 50;
export const MAX_HEADER_LENGTH = 8192;

/** Whether a header name looks secret (the credentials file, not the input, is its place). */
export function isSecretHeaderName(name: string): boolean {
  const lower = name.toLowerCase();
  return SECRET_REQUEST_HEADERS.has(lower) || SECRET_LOOKING.test(lower);
}

/** `Name: value` split, or null when it is not that shape. */
export function splitHeaderLine(line: string): { name: string; value: string } | null {
  const colon = line.indexOf(':');
  if (colon <= 0) return null;
  return { name: line.slice(0, colon).trim(), value: line.slice(colon + 1).trim() };
}

/**
 * A header's problem, or null. The value is never quoted in the message:
 * for a credentials line it is a secret.
 */
export function headerProblem(name: string, value: string, opts: { secretsAllowed: boolean }): string | null {
  if (!TOKEN.test(name)) return `${JSON.stringify(name.slice(0, 60))} is not a header name`;
  const lower = name.toLowerCase();
  const reserved = RESERVED.get(lower);
  if (reserved) return `${name} cannot be set: ${reserved}`;
  if (!opts.secretsAllowed && isSecretHeaderName(name))
    return `${name} looks like a credential: the campaign input is stored in Temporal's history and shown in its Web UI, so put it in a credentials file (--credentials-file, fetch.credentialsFile), which only the workers read`;
  if (!VALUE.test(value)) return `the value of ${name} must be non-empty printable ASCII`;
  return null;
}

/** Checks one `Name: value` entry of fetch.headers (the value is no secret there: it is refused before if it looks like one). */
export function headerEntryProblem(entry: string): string | null {
  if (entry.length > MAX_HEADER_LENGTH) return `is ${entry.length} characters long; at most ${MAX_HEADER_LENGTH}`;
  const h = splitHeaderLine(entry);
  if (!h) return `${JSON.stringify(entry.slice(0, 60))} must be "Name: value"`;
  return headerProblem(h.name, h.value, { secretsAllowed: false });
}

/** fetch.headers as the client sends them: lower-cased names, later entries winning. */
export function parseHeaderEntries(entries: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of entries) {
    const h = splitHeaderLine(e);
    if (h) out[h.name.toLowerCase()] = h.value;
  }
  return out;
}
