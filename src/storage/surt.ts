import { domainToASCII } from 'node:url';

// SURT keys as the Internet Archive's `surt` library (Python, PyPI `surt`)
// computes them with its default canonicalizer (Google's, then the IA's),
// which is what pywb computes for every URL it is asked to replay and then
// looks up in the CDXJ: a key computed any other way is a page pywb cannot
// find. warcio.js's getSurt is close but not the same (it keeps trailing
// slashes, `//` and escaped unreserved characters such as `%7E`), and no
// npm package implements the IA's rules, so this is a port of the Python
// code, rule for rule. It works on bytes, as the Python does: a URL is taken
// as UTF-8, each byte held in one char of a "binary string".
//
//   surt('http://www.Example.com:80/a//b/?z=1&a=%7E#top') === 'com,example)/a/b?a=~&z=1'

const bytesOf = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
// Python's bytes.lower(): ASCII letters only (a byte above 0x7f is not a Latin-1 letter here).
const lowerAscii = (s: string) => s.replace(/[A-Z]+/g, (c) => c.toLowerCase());

function unescapeRepeatedly(s: string): string {
  for (;;) {
    const un = s.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
    if (un === s) return s;
    s = un;
  }
}

// Python's quote_from_bytes with surt's safe set: everything printable stays except '#' and '%'.
const SAFE = new Set([...`!"$&'()*+,-./:;<=>?@[\\]^_\`{|}~`, ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789']);
function escapeOnce(s: string): string {
  let out = '';
  for (const c of s) out += SAFE.has(c) ? c : `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

const minimalEscape = (s: string) => escapeOnce(unescapeRepeatedly(s));

function normalizePath(path: string): string {
  if (!path) return '/';
  const kept: string[] = [];
  for (const p of path.split('/').slice(1)) {
    if (p === '.') continue;
    if (p === '..') {
      if (kept.length) kept.pop();
      else kept.push(p);
    } else kept.push(p);
  }
  let out = '/';
  for (let i = 0; i < kept.length - 1; i++) if (kept[i]!.length) out += `${kept[i]}/`;
  if (kept.length) out += kept[kept.length - 1];
  return out;
}

const OCTAL_IP = /^(0[0-7]*)(\.[0-7]+)?(\.[0-7]+)?(\.[0-7]+)?$/;
const DECIMAL_IP = /^([1-9][0-9]*)(\.[0-9]+)?(\.[0-9]+)?(\.[0-9]+)?$/;

/** IPv4 hosts in any of the forms inet_aton takes, as a dotted quad; null for a name. */
function ipFormat(host: string): string | null {
  if (/^[0-9]+$/.test(host)) {
    const n = Number(BigInt(host) & 0xffffffffn);
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  }
  if (!DECIMAL_IP.test(host) && !OCTAL_IP.test(host)) return null;
  // The Python asks the resolver, which parses the numeric forms the way the URL standard does.
  try {
    const h = new URL(`http://${host}/`).hostname;
    return /^\d+\.\d+\.\d+\.\d+$/.test(h) ? h : null;
  } catch {
    return null;
  }
}

const PATH_SESSION_IDS = [/^(.*\/)(\((?:[a-z]\([0-9a-z]{24}\))+\)\/)([^?]+\.aspx.*)$/i, /^(.*\/)(\([0-9a-z]{24}\)\/)([^?]+\.aspx.*)$/i];
const QUERY_SESSION_IDS = [
  /^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$/i,
  /^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$/i,
  /^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$/i,
  /^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$/i,
  /^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$/i,
];

function stripPathSessionId(path: string): string {
  for (const re of PATH_SESSION_IDS) {
    const m = re.exec(path);
    if (m) path = m[1]! + m[3]!;
  }
  return path;
}

function stripQuerySessionId(query: string): string {
  for (const re of QUERY_SESSION_IDS) {
    const m = re.exec(query);
    if (m) query = m[2] ? m[1]! + m[2] : m[1]!;
  }
  return query;
}

// Python compares byte strings; for our binary strings that is plain code-unit order.
function alphaReorderQuery(q: string): string {
  if (q.length <= 1) return q;
  const args = q.split('&').map((a) => {
    const eq = a.indexOf('=');
    return eq < 0 ? [a] : [a.slice(0, eq), a.slice(eq + 1)];
  });
  args.sort((a, b) => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
    return a.length - b.length;
  });
  return args.map((t) => t.join('=')).join('&');
}

const RFC2396 = /^(([a-zA-Z][a-zA-Z0-9+.-]*):)?((\/\/([^/?#]*))?([^?#]*)(\?([^#]*))?)?(#(.*))?$/s;

/** Splits netloc as urllib does: hostname (lower case, no brackets), port. */
function splitNetloc(netloc: string): { host: string | null; port: number | null } {
  const hostinfo = netloc.slice(netloc.lastIndexOf('@') + 1);
  let host: string;
  let port: string;
  const bracket = /^\[([^\]]*)\](?::(.*))?$/.exec(hostinfo);
  if (bracket) {
    host = bracket[1]!;
    port = bracket[2] ?? '';
  } else {
    const colon = hostinfo.indexOf(':');
    host = colon < 0 ? hostinfo : hostinfo.slice(0, colon);
    port = colon < 0 ? '' : hostinfo.slice(colon + 1);
  }
  if (port && !/^[0-9]+$/.test(port)) throw new Error(`bad port ${port}`);
  const p = port ? Number(port) : null;
  if (p !== null && p > 65535) throw new Error(`bad port ${port}`);
  return { host: host ? lowerAscii(host) : null, port: p || null };
}

/**
 * The SURT key of a URL, as Python's `surt.surt(url)` gives it (and pywb
 * looks it up). A URL the Python could not parse keys as itself, as pywb's
 * indexer then does.
 */
export function surt(url: string): string {
  try {
    return surtOf(url);
  } catch {
    return url;
  }
}

function surtOf(input: string): string {
  if (!input) return '-';
  // bytes.strip(): ASCII whitespace only.
  let url = bytesOf(input)
    .replace(/^[ \t\n\r\v\f]+|[ \t\n\r\v\f]+$/g, '')
    .replace(/[\n\r\t]/g, '');
  if (url.startsWith('filedesc')) return url;
  if (!/^([a-zA-Z][a-zA-Z0-9+\-.]*):/.test(url)) url = `http://${url}`;
  url = url.replace(/^(https?:\/\/)+/, (_all, last: string) => last);
  const m = RFC2396.exec(url);
  if (!m) throw new Error('unparsable');
  const scheme = m[2] ?? '';
  let netloc = m[5] ?? '';
  let path: string | null = m[6] || null;
  let query: string | null = m[8] || null;
  if (netloc.endsWith(':')) netloc = netloc.replace(/:+$/, '');
  let { host, port } = splitNetloc(netloc);
  if (scheme.startsWith('http') && host === null && path !== null) {
    const rest = path.replace(/^\/+/, '');
    const slash = rest.indexOf('/');
    host = slash < 0 ? rest : rest.slice(0, slash);
    path = `/${slash < 0 ? '' : rest.slice(slash + 1)}`;
  }

  // Google's canonicalizer.
  if (query) query = minimalEscape(query);
  if (host) {
    let h = unescapeRepeatedly(host);
    // Not ASCII (a byte above 0x7f): an internationalised name, to punycode.
    if (/[\u0080-\u00ff]/.test(h)) {
      const ascii = domainToASCII(Buffer.from(h, 'latin1').toString('utf8'));
      if (ascii) h = ascii;
    }
    h = h.replace(/\.\./g, '.').replace(/^\.+|\.+$/g, '');
    host = ipFormat(h) ?? escapeOnce(lowerAscii(h));
  }
  let p = unescapeRepeatedly(path ?? '');
  if (host) p = normalizePath(p);
  path = escapeOnce(p) || null;

  // The IA's canonicalizer.
  if (host) {
    host = lowerAscii(host);
    const www = /^www\d*\./.exec(host);
    if (www) host = host.slice(www[0].length);
  }
  const defaultPort = scheme.toLowerCase() === 'http' ? 80 : scheme.toLowerCase() === 'https' ? 443 : 0;
  if (scheme && port === defaultPort) port = null;
  if (path) {
    path = stripPathSessionId(lowerAscii(path));
    if (path.endsWith('/') && path.length > 1) path = path.slice(0, -1);
  }
  if (query) {
    query = alphaReorderQuery(lowerAscii(stripQuerySessionId(query)));
    if (query === '') query = null;
  }

  // SURT form, without the scheme.
  let s = '';
  if (host) s += host.split('.').reverse().join(',') + (port !== null ? `:${port}` : '') + ')';
  else s = `${scheme}:`;
  if (path) s += path;
  else if (query !== null) s += '/';
  if (query !== null) s += `?${query}`;
  return Buffer.from(s, 'latin1').toString('utf8');
}
