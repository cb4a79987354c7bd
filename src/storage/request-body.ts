// What of a request body the WARC keeps. Pages are GETs without a body; the
// bodies are those of a handler's login requests (activities/login.ts), and a
// login form holds a password: the request record would put it in every copy
// of the archive. By default the values of fields that look secret are
// replaced, field by field, where the body's type says what a field is (a
// form, JSON), and a body of any other type is replaced whole: the crawler
// cannot tell which of its bytes are the password. output.warcKeepSecrets
// keeps bodies as sent, like the secret headers.
import { REDACTED } from '../http/header-rules';
import { mediaTypeOf } from '../http/media-type';

/**
 * Field names whose values are secrets: passwords, one-time codes, tokens
 * (CSRF tokens included: they are tied to the session), keys. A heuristic
 * that errs towards redacting; user names and other fields stay readable.
 */
export const SECRET_FIELD = /pass|pwd|secret|token|otp|auth|credential|session|sessid|api[-_]?key|(^|[-_])key$|(^|[-_])pin$|csrf|xsrf|captcha/i;

export function isSecretField(name: string): boolean {
  return SECRET_FIELD.test(name);
}

/** The body as stored: unchanged when nothing in it is secret. */
export function redactRequestBody(body: Uint8Array, contentType: string | undefined): Uint8Array {
  if (body.length === 0) return body;
  const type = mediaTypeOf(contentType);
  const text = Buffer.from(body).toString('utf8');
  let out: string;
  if (type === 'application/x-www-form-urlencoded') out = redactForm(text);
  else if (type === 'application/json' || type.endsWith('+json')) out = redactJson(text);
  else out = REDACTED;
  return out === text ? body : Buffer.from(out, 'utf8');
}

/** Each `name=value` pair whose name looks secret gets `[redacted]` as its value; the rest stays byte for byte. */
function redactForm(text: string): string {
  return text
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq === -1 ? pair : pair.slice(0, eq);
      if (!isSecretField(formDecode(rawName))) return pair;
      return `${rawName}=${encodeURIComponent(REDACTED)}`;
    })
    .join('&');
}

function formDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

/** Values of secret-looking keys, at any depth, become `[redacted]`; a body that is not JSON is replaced whole. */
function redactJson(text: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return REDACTED;
  }
  let changed = false;
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (isSecretField(k) && (x === null || typeof x !== 'object')) {
        o[k] = REDACTED;
        changed = true;
      } else o[k] = walk(x);
    }
    return o;
  };
  const out = walk(parsed);
  return changed ? JSON.stringify(out) : text;
}
