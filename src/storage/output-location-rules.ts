// What `output.dir` may name, and the S3 connection settings beside it, as
// pure string rules: the campaign schema (src/config/campaign.ts) checks them
// at the edge, and the campaign workflow imports that schema, so this module
// imports nothing and uses no URL parser. Opening a store, and the errors of a
// location that does not parse, are src/storage/output-location.ts's business.

/** Where a campaign's archive goes: a folder every worker mounts, or a prefix of an S3-compatible bucket. */
export type OutputLocation = { kind: 'folder'; dir: string } | S3Location;

export interface S3Location {
  kind: 's3';
  bucket: string;
  /** '' or segments ending in '/': no leading slash, no empty, `.` or `..` segment. */
  prefix: string;
  /** `s3://bucket/prefix/`: how the location is named to the operator (the form a listing would show). */
  url: string;
}

/**
 * Longest prefix, in UTF-8 bytes: S3 keys are at most 1024 bytes, and the
 * prefix leaves room for `warc/<worker's file name>` (about 100) and more.
 */
export const MAX_S3_PREFIX_BYTES = 512;
export const MAX_S3_ENDPOINT_LENGTH = 2048;

/** `scheme://` at the start: a URL, not a folder (no folder anyone means starts so). */
const URL_SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
/** A control character (a line break, a tab, NUL, DEL): spelt out, as a regular expression of them is what lint refuses. */
const hasControl = (s: string): boolean => [...s].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f);

const utf8Bytes = (s: string): number => {
  let n = 0;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return n;
};

/**
 * S3's rules for a general purpose bucket's name (the AWS S3 user guide,
 * "Bucket naming rules"): what a self-hosted store accepts is a superset, so
 * a name that passes here works on any of them.
 */
export function bucketNameProblem(name: string): string | null {
  const shown = JSON.stringify(name);
  if (name.includes('{campaign}')) return `has {campaign} in the bucket name ${shown}: it belongs in the prefix (s3://bucket/prefix/{campaign})`;
  if (name.length < 3 || name.length > 63) return `has a bucket name ${shown} of ${name.length} characters; S3 takes 3 to 63`;
  if (!/^[a-z0-9.-]+$/.test(name)) return `has a bucket name ${shown} S3 refuses: lowercase letters, digits, dots and hyphens only`;
  if (!/^[a-z0-9]/.test(name) || !/[a-z0-9]$/.test(name)) return `has a bucket name ${shown} S3 refuses: it must begin and end with a letter or digit`;
  if (name.includes('..')) return `has a bucket name ${shown} S3 refuses: two dots in a row`;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return `has a bucket name ${shown} S3 refuses: it has the form of an IP address`;
  const start = ['xn--', 'sthree-', 'amzn-s3-demo-'].find((p) => name.startsWith(p));
  if (start) return `has a bucket name ${shown} S3 refuses: names starting with ${start} are reserved`;
  const end = ['-s3alias', '--ol-s3', '.mrap', '--x-s3', '--table-s3'].find((s) => name.endsWith(s));
  if (end) return `has a bucket name ${shown} S3 refuses: names ending with ${end} are reserved`;
  return null;
}

/** The prefix's segments, each checked: null and the normalised prefix, or the problem. */
function normalisedPrefix(raw: string): { prefix: string } | { problem: string } {
  if (hasControl(raw)) return { problem: 'has a control character (a line break, a tab, NUL) in the prefix' };
  if (/[?#\\]/.test(raw))
    return { problem: `has ${JSON.stringify(raw.match(/[?#\\]/)![0])} in the prefix: a query, a fragment or a backslash is surely a mistake in a bucket path` };
  // Empty segments (a leading slash, `a//b`, the trailing slash) fall away: `s3://b//x/` and `s3://b/x` are one location.
  const segments = raw.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '.' || s === '..'))
    return { problem: 'has a "." or ".." segment in the prefix: keys are not paths, and a store that treats them as paths would resolve them elsewhere' };
  const prefix = segments.length ? `${segments.join('/')}/` : '';
  if (utf8Bytes(prefix) > MAX_S3_PREFIX_BYTES) return { problem: `has a prefix of ${utf8Bytes(prefix)} bytes; at most ${MAX_S3_PREFIX_BYTES} (S3 keys are at most 1024)` };
  return { prefix };
}

/** `dir` as a location, or what is wrong with it (the words follow the setting's name: "output.dir …"). */
export function outputLocationOf(dir: string): { location: OutputLocation } | { problem: string } {
  const scheme = URL_SCHEME.exec(dir);
  if (!scheme) return { location: { kind: 'folder', dir } };
  if (scheme[1].toLowerCase() !== 's3') return { problem: `is a ${scheme[1]}:// URL; an output location is a folder or s3://bucket/prefix` };
  const rest = dir.slice(scheme[0].length);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  // Credentials never travel in settings (they would land in Temporal history): refused without being echoed.
  if (bucket.includes('@'))
    return { problem: "holds user:password@ or a key before the bucket: credentials come from the AWS SDK's default chain on each machine, never from settings" };
  if (bucket === '') return { problem: 'names no bucket: s3://bucket/prefix' };
  if (/:\d*$/.test(bucket)) return { problem: `names a server (${JSON.stringify(bucket)}) where the bucket goes: s3://bucket/prefix, and the server in output.s3.endpoint` };
  const bad = bucketNameProblem(bucket);
  if (bad) return { problem: bad };
  const p = normalisedPrefix(slash < 0 ? '' : rest.slice(slash + 1));
  if ('problem' in p) return p;
  return { location: { kind: 's3', bucket, prefix: p.prefix, url: `s3://${bucket}/${p.prefix}` } };
}

/** What is wrong with `dir` as an output location (null: fine), in words that follow "output.dir". */
export function outputDirProblem(dir: string): string | null {
  const r = outputLocationOf(dir);
  return 'problem' in r ? r.problem : null;
}

/** Whether `dir` is written as a URL (`s3://…`, or another scheme the schema refuses) rather than a folder path. */
export const isLocationUrl = (dir: string): boolean => URL_SCHEME.test(dir);

export const S3_ENDPOINT_SHAPE = 'must be an http:// or https:// URL of an S3-compatible endpoint, such as http://127.0.0.1:8333';

/**
 * An endpoint: http(s), a host (a name, an IPv4 or a bracketed IPv6
 * address), an optional port and path; no credentials, query or fragment.
 */
export function s3EndpointProblem(v: string): string | null {
  if (v.length > MAX_S3_ENDPOINT_LENGTH) return `is ${v.length} characters long; at most ${MAX_S3_ENDPOINT_LENGTH}`;
  if (hasControl(v) || /\s/.test(v)) return 'must not contain spaces or control characters';
  const m = /^https?:\/\/([^/?#]*)([^?#]*)$/i.exec(v);
  if (!m) return `${S3_ENDPOINT_SHAPE} (got ${JSON.stringify(v)})`;
  // Refused without being echoed: the part before @ may be a secret.
  if (m[1].includes('@')) return "holds user:password@: credentials come from the AWS SDK's default chain on each machine, never from settings";
  const host = /^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)(:(\d{1,5}))?$/i.exec(m[1]);
  if (!host) return `has no valid host name: ${S3_ENDPOINT_SHAPE} (got ${JSON.stringify(v)})`;
  if (host[6] !== undefined && (Number(host[6]) < 1 || Number(host[6]) > 65535)) return `has port ${host[6]}; ports are 1 to 65535`;
  return null;
}

export const S3_REGION_SHAPE = 'must be a region name such as us-east-1 (letters, digits, dots, hyphens, underscores; at most 64)';

/** A region as signatures name it: AWS's are `us-east-1`; self-hosted stores take names of their own (`garage`, `local`). */
export function s3RegionProblem(v: string): string | null {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(v) ? null : `${S3_REGION_SHAPE} (got ${JSON.stringify(v)})`;
}
