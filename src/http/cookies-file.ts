// A Netscape cookies.txt (what curl -c, wget --save-cookies and browser
// extensions export), read by the workers so a crawl can start logged in.
// The file holds secrets: the campaign input names its path only, and
// nothing here ever puts a cookie's value in an error message (a malformed
// line is named by its number and what is wrong with its shape).
//
// One cookie a line, seven fields separated by tabs:
//   domain  includeSubdomains  path  secure  expiry  name  value
// `#` starts a comment, except `#HttpOnly_` before a domain (curl's mark of
// an HttpOnly cookie). Expiry is epoch seconds; 0 is a session cookie.
import { constants as fsConstants } from 'node:fs';
import { access, readFile, stat } from 'node:fs/promises';
import { Cookie } from 'tough-cookie';
import { CrawlerError } from '../errors';

export type CookiesFileCode = 'COOKIES_FILE_UNREADABLE' | 'COOKIES_FILE_WORLD_READABLE' | 'COOKIES_FILE_MALFORMED';

export class CookiesFileError extends CrawlerError<CookiesFileCode> {
  constructor(
    code: CookiesFileCode,
    message: string,
    /** The 1-based line at fault, for COOKIES_FILE_MALFORMED. */
    readonly line: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = 'CookiesFileError';
  }
}

/** A cookies file this big is not an export of a browser's session: refused rather than held in every worker's memory. */
export const MAX_COOKIES_FILE_BYTES = 4 * 1024 * 1024;

const HTTP_ONLY_PREFIX = '#HttpOnly_';
const BOOL = new Map([
  ['TRUE', true],
  ['FALSE', false],
]);
// A cookie name is an RFC 9110 token; a value has no controls, whitespace, '"', ',', ';' or '\' (RFC 6265 cookie-octet, quotes allowed around it).
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VALUE = /^(?:"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*"|[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*)$/;
const DOMAIN = /^\.?[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$|^\[[0-9a-f:.]+\]$/i;

/**
 * The cookies of a cookies.txt, as tough-cookie cookies. Throws
 * COOKIES_FILE_MALFORMED naming the first bad line; blank lines and
 * comments are skipped.
 */
export function parseCookiesFile(text: string, source = 'cookies file'): Cookie[] {
  const cookies: Cookie[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((raw, i) => {
    const n = i + 1;
    let line = raw;
    let httpOnly = false;
    if (line.startsWith(HTTP_ONLY_PREFIX)) {
      httpOnly = true;
      line = line.slice(HTTP_ONLY_PREFIX.length);
    } else if (line.trim() === '' || line.trimStart().startsWith('#')) return;
    const bad = (why: string): never => {
      throw new CookiesFileError('COOKIES_FILE_MALFORMED', `${source} line ${n}: ${why}`, n);
    };
    const fields = line.split('\t');
    // Some exporters drop the tab before an empty value.
    if (fields.length === 6) fields.push('');
    if (fields.length !== 7) bad(`has ${fields.length} tab-separated fields; a cookie line has 7 (domain, include subdomains, path, secure, expiry, name, value)`);
    const [domainField, subdomainsField, path, secureField, expiryField, name, value] = fields;
    const domain = domainField.trim().toLowerCase();
    if (!DOMAIN.test(domain)) bad('the domain (field 1) is not a host name');
    const includeSubdomains = BOOL.get(subdomainsField.trim().toUpperCase()) ?? bad('field 2 (include subdomains) must be TRUE or FALSE');
    if (!path.startsWith('/')) bad('the path (field 3) must start with /');
    const secure = BOOL.get(secureField.trim().toUpperCase()) ?? bad('field 4 (secure) must be TRUE or FALSE');
    if (!/^\d{1,12}$/.test(expiryField.trim())) bad('the expiry (field 5) must be whole seconds since 1970, 0 for a session cookie');
    const expiry = Number(expiryField.trim());
    if (!TOKEN.test(name)) bad('the name (field 6) is empty or has characters a cookie name may not have');
    if (!VALUE.test(value)) bad('the value (field 7) has characters a cookie value may not have (spaces, quotes, commas, semicolons, backslashes or controls)');
    const bare = domain.replace(/^\./, '');
    cookies.push(
      new Cookie({
        key: name,
        value,
        domain: bare,
        path,
        secure,
        httpOnly,
        // A leading dot or TRUE: the cookie goes to subdomains too (a Domain attribute); else to the host only.
        hostOnly: !(includeSubdomains || domain.startsWith('.')),
        expires: expiry === 0 ? 'Infinity' : new Date(expiry * 1000),
      }),
    );
  });
  return cookies;
}

/**
 * Reads and parses a cookies file as a worker (or the CLI, before anything
 * starts) does: refused when it cannot be read, when anyone may read it
 * (the world-read bit: it holds live sessions), or when a line is malformed.
 */
export async function readCookiesFile(file: string): Promise<Cookie[]> {
  let size: number;
  try {
    const st = await stat(file);
    if (!st.isFile()) throw new CookiesFileError('COOKIES_FILE_UNREADABLE', `cookies file ${file} is not a regular file`);
    if (process.platform !== 'win32' && (st.mode & 0o004) !== 0) {
      throw new CookiesFileError(
        'COOKIES_FILE_WORLD_READABLE',
        `cookies file ${file} may be read by anyone (mode ${(st.mode & 0o777).toString(8)}): it holds live sessions; chmod o-r it first`,
      );
    }
    await access(file, fsConstants.R_OK);
    size = st.size;
  } catch (err) {
    if (err instanceof CookiesFileError) throw err;
    throw new CookiesFileError('COOKIES_FILE_UNREADABLE', `cookies file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, null, {
      cause: err,
    });
  }
  if (size > MAX_COOKIES_FILE_BYTES) throw new CookiesFileError('COOKIES_FILE_MALFORMED', `cookies file ${file} is ${size} bytes; at most ${MAX_COOKIES_FILE_BYTES}`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new CookiesFileError('COOKIES_FILE_UNREADABLE', `cookies file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, null, {
      cause: err,
    });
  }
  return parseCookiesFile(text, `cookies file ${file}`);
}
