// The credentials file (`--credentials-file`, fetch.credentialsFile): one
// origin and its credentials a line, `#` comments.
//
//   https://intranet.example.com  alice:s3cret        # HTTP Basic user:password
//   https://api.example.com       Bearer eyJhbGci…    # a bearer token
//   https://api.example.com       X-Api-Key: 1234     # any header
//   https://shop.example.com      login alice:s3cret  # for the handler's login hook, never sent as a header
//
// The campaign input carries the file's path; the secrets stay on the
// workers' disks and in their memory, so they never reach Temporal history,
// the Web UI, logs, the index, the report or metrics. Errors name the file
// and the line, never what the line holds.
import { readFile, stat } from 'node:fs/promises';
import { CrawlerError } from '../errors';
import { headerProblem, splitHeaderLine } from './header-rules';

export type CredentialsErrorCode = 'CREDENTIALS_UNREADABLE' | 'CREDENTIALS_EXPOSED' | 'CREDENTIALS_MALFORMED';

/** A credentials file that cannot be used. The message names the file and line; it never quotes a credential. */
export class CredentialsError extends CrawlerError<CredentialsErrorCode> {
  constructor(
    code: CredentialsErrorCode,
    readonly file: string,
    readonly line: number | null,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = 'CredentialsError';
  }
}

/** Largest credentials file read: it is a list of origins, not data. */
export const MAX_CREDENTIALS_FILE_BYTES = 1024 * 1024;

export interface Credentials {
  /** Origins with credentials (`https://host[:port]`), sorted: safe to show. */
  readonly origins: readonly string[];
  /**
   * Headers to send to `url`'s origin (lower-cased names), or null when it
   * has none. The origin is scheme, host and port exactly: a redirect to
   * another origin is another request, and gets that origin's (or none).
   */
  headersFor(url: URL): Readonly<Record<string, string>> | null;
  /**
   * The `login user:password` of `url`'s origin, or null: what a handler's
   * login hook gets as `ctx.credentials` (src/handlers/api.ts). Sent by no
   * request of the crawler's own: the hook puts it in its login form.
   */
  loginFor(url: URL): LoginCredentials | null;
}

export interface LoginCredentials {
  readonly user: string;
  readonly password: string;
}

export const NO_CREDENTIALS: Credentials = { origins: [], headersFor: () => null, loginFor: () => null };

/** Parses the text of a credentials file; `file` names it in errors. */
export function parseCredentials(text: string, file: string): Credentials {
  const byOrigin = new Map<string, Record<string, string>>();
  const logins = new Map<string, { login: LoginCredentials; line: number }>();
  /** Where each origin's header was set, to name both lines of a duplicate. */
  const setAt = new Map<string, number>();
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const n = i + 1;
    const bad = (why: string) => new CredentialsError('CREDENTIALS_MALFORMED', file, n, `${file}, line ${n}: ${why}`);
    // A comment starts at a `#` that begins the line or follows blank space, so a `#` inside a token or password stays.
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '') return;
    const m = /^(\S+)\s+(\S.*)$/.exec(line);
    if (!m) throw bad('expected an origin (such as https://intranet.example.com) followed by credentials: user:password, Bearer TOKEN, or Name: value');
    const origin = originOf(m[1]);
    if (!origin) throw bad('the first field must be an origin: http(s)://host[:port], with no path, query or user name');
    const login = /^login\s+(\S.*)$/i.exec(m[2]);
    if (login || /^login$/i.test(m[2])) {
      const colon = login ? login[1].indexOf(':') : -1;
      if (!login || colon <= 0) throw bad('a login line is "login user:password"');
      if (logins.has(origin)) throw bad(`${origin} already has a login from line ${logins.get(origin)!.line}`);
      logins.set(origin, { login: Object.freeze({ user: login[1].slice(0, colon), password: login[1].slice(colon + 1) }), line: n });
      return;
    }
    const header = credentialHeader(m[2]);
    if (typeof header === 'string') throw bad(header);
    const headers = byOrigin.get(origin) ?? {};
    const key = `${origin} ${header.name}`;
    if (headers[header.name] !== undefined) throw bad(`${origin} already has ${header.name} from line ${setAt.get(key)}`);
    headers[header.name] = header.value;
    setAt.set(key, n);
    byOrigin.set(origin, headers);
  });
  const frozen = new Map([...byOrigin].map(([o, h]) => [o, Object.freeze(h)]));
  return {
    origins: [...new Set([...frozen.keys(), ...logins.keys()])].sort(),
    headersFor: (url) => frozen.get(url.origin) ?? null,
    loginFor: (url) => logins.get(url.origin)?.login ?? null,
  };
}

/**
 * Reads and checks a credentials file. Refused, before anything uses it:
 * a file that cannot be read, one other users may read (mode & 0o004: a
 * password in a world-readable file is no longer the operator's), and a
 * malformed one (naming the line).
 */
export async function loadCredentialsFile(file: string): Promise<Credentials> {
  let mode: number;
  let size: number;
  try {
    const st = await stat(file);
    if (!st.isFile()) throw new Error('not a regular file');
    mode = st.mode;
    size = st.size;
  } catch (cause) {
    throw new CredentialsError('CREDENTIALS_UNREADABLE', file, null, `credentials file ${file} cannot be read: ${(cause as Error).message}`, { cause });
  }
  if ((mode & 0o004) !== 0)
    throw new CredentialsError(
      'CREDENTIALS_EXPOSED',
      file,
      null,
      `credentials file ${file} is readable by every user of this machine (mode ${(mode & 0o777).toString(8)}): run chmod o-r (or chmod 600) on it first`,
    );
  if (size > MAX_CREDENTIALS_FILE_BYTES)
    throw new CredentialsError('CREDENTIALS_MALFORMED', file, null, `credentials file ${file} is ${size} bytes; at most ${MAX_CREDENTIALS_FILE_BYTES}`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    throw new CredentialsError('CREDENTIALS_UNREADABLE', file, null, `credentials file ${file} cannot be read: ${(cause as Error).message}`, { cause });
  }
  return parseCredentials(text, file);
}

/** `https://host[:port]` (a trailing `/` allowed) as URL.origin spells it, or null. */
function originOf(field: string): string | null {
  let u: URL;
  try {
    u = new URL(field);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  if (u.username || u.password || u.search || u.hash || (u.pathname !== '/' && u.pathname !== '')) return null;
  if (/[?#]/.test(field)) return null;
  return u.origin;
}

/** The header a credential becomes, or what is wrong with it (in words that never quote it). */
function credentialHeader(credential: string): { name: string; value: string } | string {
  const bearer = /^Bearer\s+(\S+)$/i.exec(credential);
  if (bearer) return { name: 'authorization', value: `Bearer ${bearer[1]}` };
  if (/^Bearer(\s|$)/i.test(credential)) return 'a bearer token is one word after "Bearer"';
  // `Name: value` has blank space after its colon; `user:password` has none (RFC 7617 forbids a colon in the user).
  const header = /^[^\s:]+:\s/.test(credential) ? splitHeaderLine(credential) : null;
  if (header) {
    const problem = headerProblem(header.name, header.value, { secretsAllowed: true });
    return problem ?? { name: header.name.toLowerCase(), value: header.value };
  }
  const colon = credential.indexOf(':');
  if (colon <= 0) return 'credentials must be user:password, Bearer TOKEN, or Name: value';
  if ([...credential].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f)) return 'user:password must not hold control characters';
  return { name: 'authorization', value: `Basic ${Buffer.from(credential, 'utf8').toString('base64')}` };
}
