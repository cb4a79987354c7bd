// Process-level settings of workers, clients and the embedded stack: one
// typed table, read from the environment once, with defaults. Nothing else
// reads process.env (the lint refuses it; handing the whole environment to a
// child process is fine). Campaign settings live in campaign.ts.
import path from 'node:path';
import { parseLogLevel, type LogLevel } from '../log/logger';
import { CrawlerError } from '../errors';
import { s3EndpointProblem, s3RegionProblem } from '../storage/output-location-rules';

export interface ProcessSettings {
  temporalAddress: string;
  temporalNamespace: string;
  /**
   * TLS to the Temporal frontend: true / false, or null for "on when any
   * other TLS setting or an API key is given" (Temporal Cloud needs one of those).
   */
  temporalTls: boolean | null;
  /** mTLS client certificate and its private key (PEM files); both or neither. */
  temporalTlsCertPath: string | null;
  temporalTlsKeyPath: string | null;
  /** CA that signed the server's certificate (PEM), when the system's roots do not cover it. */
  temporalTlsCaPath: string | null;
  /** Name the server's certificate is checked against (and SNI), when it differs from the address's host. */
  temporalTlsServerName: string | null;
  /** Sent as `Authorization: Bearer <key>` (Temporal Cloud API keys). */
  temporalApiKey: string | null;
  taskQueue: string;
  redisUrl: string;
  /** Concurrent activities per worker process (fetches are I/O bound). */
  activitySlots: number;
  /** Activity task polls a worker keeps open at once (a burst of sessions is spread over the workers that poll). */
  activityPolls: number;
  /** Workflow executions kept in a worker's sticky cache. */
  workflowCacheSize: number;
  /** How long a cached workflow's next task waits for this worker before any worker may take it (ms). */
  stickyTimeoutMs: number;
  /** Workflow tasks a worker runs at once (a host's first session holds its task's slot while it runs as a local activity). */
  workflowTaskSlots: number;
  /** How often a worker process gives freed native memory back (glibc malloc_trim), in ms; 0 = never. */
  mallocTrimMs: number;
  /**
   * How long a worker's liveness lease in Redis lasts (ms; renewed six times as often): a worker
   * silent this long is presumed dead and its hosts' sessions start again elsewhere. 0 = off.
   */
  workerLeaseMs: number;
  /** Pre-built workflow bundle to load instead of bundling at start-up. */
  workflowBundlePath: string | null;
  /** Port of the worker's Prometheus /metrics endpoint; null = off, 0 = any free port. */
  metricsPort: number | null;
  /** Address the metrics endpoints bind to (an IP: the SDK exporter needs one). */
  metricsHost: string;
  /** Port of the Temporal SDK's own Prometheus exporter; null = off. */
  sdkMetricsPort: number | null;
  logLevel: LogLevel;
  /** Where the project keeps its tools, the embedded stack's data and bundles; null = .crawler at the project root. */
  crawlerHome: string | null;
  /** A worker's spool of outputs in object storage (files written there, then uploaded); null = `spool` in crawlerHome. */
  spoolDir: string | null;
  /** The local cache of outputs in object storage that sealing, replay, export and reports read; null = `cache` in crawlerHome. */
  cacheDir: string | null;
  /** `temporal` binary for the embedded dev server, instead of finding or installing one. */
  temporalCli: string | null;
  /** `redis-server` binary for the embedded Redis, instead of finding or installing one. */
  redisServer: string | null;
  /** Chromium (or Chrome) for `render: browser`, instead of finding or installing Debian's. */
  chromiumPath: string | null;
  /** `npm run bench`: show every worker's log lines. */
  benchVerbose: boolean;
  /** Hosts file read before the DNS for every name a worker resolves (src/http/dns-cache.ts). */
  hostsFile: string;
  /**
   * The AWS variables an `s3://` output falls back on where `output.s3` says nothing
   * (src/storage/output-location.ts): the S3 endpoint, every service's endpoint, the region.
   * Credentials are no setting of ours: the AWS SDK reads its own variables and files.
   */
  awsEndpointUrlS3: string | null;
  awsEndpointUrl: string | null;
  awsRegion: string | null;
}

interface Field<K extends keyof ProcessSettings> {
  key: K;
  env: string;
  default: ProcessSettings[K];
  parse: (raw: string) => ProcessSettings[K];
  doc: string;
}

const int = (name: string) => (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive whole number (got ${JSON.stringify(raw)})`);
  return n;
};
const intOrZero = (name: string, max: number) => (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > max) throw new Error(`${name} must be a whole number from 0 to ${max} (got ${JSON.stringify(raw)})`);
  return n;
};
const str = (raw: string) => raw;
const bool = (name: string) => (raw: string) => {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new Error(`${name} must be true or false (got ${JSON.stringify(raw)})`);
};
const redisUrl = (raw: string) => {
  parseRedisUrl(raw, 'REDIS_URL');
  return raw;
};
const port = (name: string) => (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number 0–65535 (got ${JSON.stringify(raw)})`);
  return n;
};

/** A value `problem` finds nothing wrong with, or an error naming the variable (never echoing credentials: the rules do not). */
const checked = (name: string, problem: (v: string) => string | null) => (raw: string) => {
  const p = problem(raw);
  if (p) throw new Error(`${name} ${p}`);
  return raw;
};

export const PROCESS_SETTINGS: Field<keyof ProcessSettings>[] = [
  { key: 'temporalAddress', env: 'TEMPORAL_ADDRESS', default: '127.0.0.1:7233', parse: str, doc: 'Temporal frontend host:port' },
  { key: 'temporalNamespace', env: 'TEMPORAL_NAMESPACE', default: 'default', parse: str, doc: 'Temporal namespace' },
  {
    key: 'temporalTls',
    env: 'TEMPORAL_TLS',
    default: null,
    parse: bool('TEMPORAL_TLS'),
    doc: 'TLS to Temporal: true/false (default: on when a TEMPORAL_TLS_* path, server name or TEMPORAL_API_KEY is set)',
  },
  { key: 'temporalTlsCertPath', env: 'TEMPORAL_TLS_CLIENT_CERT_PATH', default: null, parse: str, doc: 'mTLS client certificate (PEM file)' },
  { key: 'temporalTlsKeyPath', env: 'TEMPORAL_TLS_CLIENT_KEY_PATH', default: null, parse: str, doc: 'mTLS client private key (PEM file)' },
  {
    key: 'temporalTlsCaPath',
    env: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    default: null,
    parse: str,
    doc: "CA certificate of the server's certificate (PEM file); default: the system's roots",
  },
  { key: 'temporalTlsServerName', env: 'TEMPORAL_TLS_SERVER_NAME', default: null, parse: str, doc: "Name to check the server's certificate against (and SNI)" },
  { key: 'temporalApiKey', env: 'TEMPORAL_API_KEY', default: null, parse: str, doc: 'API key (Temporal Cloud), sent as a bearer token' },
  { key: 'taskQueue', env: 'CRAWLER_TASK_QUEUE', default: 'crawler', parse: str, doc: 'Task queue of workflows and activities' },
  {
    key: 'redisUrl',
    env: 'REDIS_URL',
    default: 'redis://127.0.0.1:6379',
    parse: redisUrl,
    doc: 'redis[s]://[user:pass@]host:port[/db], or redis[s]+cluster://[user:pass@]h1:p1,h2:p2',
  },
  {
    key: 'activitySlots',
    env: 'CRAWLER_ACTIVITY_SLOTS',
    default: 1000,
    parse: int('CRAWLER_ACTIVITY_SLOTS'),
    doc: 'Concurrent activities per worker, mostly host sessions (each one host with a request or a short wait in flight)',
  },
  {
    key: 'activityPolls',
    env: 'CRAWLER_ACTIVITY_POLLS',
    default: 2,
    parse: int('CRAWLER_ACTIVITY_POLLS'),
    doc: 'Activity task polls each worker keeps open: few, so that a burst of sessions is spread over the pool (more: more sessions taken per round trip to a distant server)',
  },
  { key: 'workflowCacheSize', env: 'CRAWLER_WORKFLOW_CACHE', default: 2000, parse: int('CRAWLER_WORKFLOW_CACHE'), doc: 'Sticky workflow cache size per worker' },
  {
    key: 'stickyTimeoutMs',
    env: 'CRAWLER_STICKY_TIMEOUT_MS',
    default: 3000,
    parse: int('CRAWLER_STICKY_TIMEOUT_MS'),
    doc: "How long (ms) a host workflow's next task waits for the worker that has it cached before any worker may take it: after that worker dies, the host waits this long (the SDK's default is 10 s)",
  },
  {
    key: 'workflowTaskSlots',
    env: 'CRAWLER_WORKFLOW_TASK_SLOTS',
    default: 200,
    parse: int('CRAWLER_WORKFLOW_TASK_SLOTS'),
    doc: 'Concurrent workflow tasks per worker; a new host is started on the dispatching worker only while one is free',
  },
  {
    key: 'mallocTrimMs',
    env: 'CRAWLER_MALLOC_TRIM_MS',
    default: 1000,
    parse: intOrZero('CRAWLER_MALLOC_TRIM_MS', 3_600_000),
    doc: 'How often a worker process gives freed native memory back to the system (glibc malloc_trim), in ms; 0 = never',
  },
  {
    key: 'workerLeaseMs',
    env: 'CRAWLER_WORKER_LEASE_MS',
    default: 3_000,
    parse: intOrZero('CRAWLER_WORKER_LEASE_MS', 600_000),
    doc: "A worker's liveness lease in Redis: silent this long (ms), its hosts' sessions start again on live workers; 0 = off (Temporal's heartbeat timeout only)",
  },
  { key: 'workflowBundlePath', env: 'CRAWLER_WORKFLOW_BUNDLE', default: null, parse: str, doc: 'Pre-built workflow bundle (set by `crawl` for the workers it starts)' },
  {
    key: 'metricsPort',
    env: 'CRAWLER_METRICS_PORT',
    default: null,
    parse: port('CRAWLER_METRICS_PORT'),
    doc: 'Prometheus /metrics port of each worker (0: any free port, printed at start)',
  },
  { key: 'metricsHost', env: 'CRAWLER_METRICS_HOST', default: '127.0.0.1', parse: str, doc: 'IP address the metrics endpoints bind to' },
  { key: 'sdkMetricsPort', env: 'CRAWLER_SDK_METRICS_PORT', default: null, parse: port('CRAWLER_SDK_METRICS_PORT'), doc: "Port of the Temporal SDK's own Prometheus exporter" },
  { key: 'logLevel', env: 'CRAWLER_LOG_LEVEL', default: 'warn', parse: parseLogLevel, doc: 'JSON log level on stderr: trace, debug, info, warn, error, silent' },
  { key: 'crawlerHome', env: 'CRAWLER_HOME', default: null, parse: str, doc: "Folder for tools, the embedded stack's data and bundles (default: .crawler at the project root)" },
  {
    key: 'spoolDir',
    env: 'CRAWLER_SPOOL_DIR',
    default: null,
    parse: str,
    doc: "Folder on the worker machine's own disk where a worker writes the outputs of campaigns in object storage before uploading them (default: spool in CRAWLER_HOME)",
  },
  {
    key: 'cacheDir',
    env: 'CRAWLER_CACHE_DIR',
    default: null,
    parse: str,
    doc: 'Folder where the objects of outputs in object storage are brought down to be sealed, indexed, exported, reported on and replayed (default: cache in CRAWLER_HOME)',
  },
  { key: 'temporalCli', env: 'TEMPORAL_CLI', default: null, parse: str, doc: '`temporal` binary for the embedded dev server (default: found or installed)' },
  { key: 'redisServer', env: 'REDIS_SERVER', default: null, parse: str, doc: '`redis-server` binary for the embedded Redis (default: found or installed)' },
  { key: 'chromiumPath', env: 'CHROMIUM_PATH', default: null, parse: str, doc: 'Chromium or Chrome executable of `render: browser` (default: found or installed)' },
  {
    key: 'hostsFile',
    env: 'CRAWLER_HOSTS_FILE',
    default: '/etc/hosts',
    parse: str,
    doc: 'Hosts file whose names workers resolve before asking the DNS (re-read when it changes)',
  },
  { key: 'benchVerbose', env: 'CRAWLER_BENCH_VERBOSE', default: false, parse: bool('CRAWLER_BENCH_VERBOSE'), doc: "npm run bench: show every worker's log lines" },
  {
    key: 'awsEndpointUrlS3',
    env: 'AWS_ENDPOINT_URL_S3',
    default: null,
    parse: checked('AWS_ENDPOINT_URL_S3', s3EndpointProblem),
    doc: 'S3-compatible endpoint of an s3:// output.dir when output.s3.endpoint is null',
  },
  {
    key: 'awsEndpointUrl',
    env: 'AWS_ENDPOINT_URL',
    default: null,
    parse: checked('AWS_ENDPOINT_URL', s3EndpointProblem),
    doc: 'The same, when AWS_ENDPOINT_URL_S3 is unset (AWS tools take it for every service)',
  },
  { key: 'awsRegion', env: 'AWS_REGION', default: null, parse: checked('AWS_REGION', s3RegionProblem), doc: 'Region of an s3:// output.dir when output.s3.region is null' },
] as Field<keyof ProcessSettings>[];

export function processSettings(env: NodeJS.ProcessEnv = process.env, overrides: Partial<ProcessSettings> = {}): ProcessSettings {
  const out: Record<string, unknown> = {};
  for (const f of PROCESS_SETTINGS) out[f.key] = explicitSetting(f.key, env) ?? f.default;
  const settings = { ...(out as unknown as ProcessSettings), ...overrides };
  checkTemporalTls(settings);
  return settings;
}

const field = <K extends keyof ProcessSettings>(key: K) => PROCESS_SETTINGS.find((f) => f.key === key) as Field<K>;

/** The variable a setting is read from (for messages). */
export function settingVariable(key: keyof ProcessSettings): string {
  return field(key).env;
}

/**
 * One setting as the environment gives it, parsed, or null when its variable
 * is unset or empty: what the user chose, where a command must tell that
 * apart from the default (a server named by TEMPORAL_ADDRESS is used as is,
 * none named means find or start one).
 */
export function explicitSetting<K extends keyof ProcessSettings>(key: K, env: NodeJS.ProcessEnv = process.env): ProcessSettings[K] | null {
  const f = field(key);
  const raw = env[f.env];
  return raw !== undefined && raw !== '' ? f.parse(raw) : null;
}

/**
 * One setting with its default, read on its own: code that needs only this
 * one (a path at module load) does not fail on another variable's bad value,
 * which processSettings() reports where the settings are used.
 */
export function processSetting<K extends keyof ProcessSettings>(key: K, env: NodeJS.ProcessEnv = process.env): ProcessSettings[K] {
  return explicitSetting(key, env) ?? field(key).default;
}

/** The folders PATH names, where tools are looked for. */
export function executableSearchPath(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.PATH ?? '').split(path.delimiter).filter(Boolean);
}

/** TLS or an API key: a server of the operator's (Temporal Cloud, a cluster), never the embedded dev server. */
export function temporalIsRemote(s: ProcessSettings): boolean {
  return temporalTlsEnabled(s) || s.temporalApiKey !== null;
}

/** Whether connections to Temporal use TLS under these settings. */
export function temporalTlsEnabled(s: ProcessSettings): boolean {
  if (s.temporalTls !== null) return s.temporalTls;
  return [s.temporalTlsCertPath, s.temporalTlsKeyPath, s.temporalTlsCaPath, s.temporalTlsServerName, s.temporalApiKey].some((v) => v !== null);
}

/** Combinations the single variables cannot rule out, refused before any connection is tried. */
function checkTemporalTls(s: ProcessSettings): void {
  if ((s.temporalTlsCertPath === null) !== (s.temporalTlsKeyPath === null)) {
    throw new Error('TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH go together: set both for mTLS, or neither');
  }
  if (s.temporalTls === false) {
    const set = (['temporalTlsCertPath', 'temporalTlsKeyPath', 'temporalTlsCaPath', 'temporalTlsServerName'] as const)
      .filter((k) => s[k] !== null)
      .map((k) => PROCESS_SETTINGS.find((f) => f.key === k)!.env);
    if (set.length > 0) throw new Error(`TEMPORAL_TLS is false, but ${set.join(', ')} only apply with TLS: remove them or set TEMPORAL_TLS=true`);
  }
}

// ---- REDIS_URL ----
// Parsed strictly: ioredis accepts almost any string (a typo becomes a
// connection to localhost), and the cluster form is our own, so a bad URL is
// reported here, naming what is wrong with it. src/redis/client.ts connects.

export interface RedisNode {
  host: string;
  port: number;
}

export interface RedisAuth {
  /** ACL user; absent = the `default` user (a `requirepass` password). */
  username?: string;
  password?: string;
}

export type RedisTarget = ({ kind: 'single'; tls: boolean; node: RedisNode; db: number } & RedisAuth) | ({ kind: 'cluster'; tls: boolean; nodes: RedisNode[] } & RedisAuth);

export class RedisUrlError extends CrawlerError<'INVALID_REDIS_URL'> {
  constructor(message: string) {
    super('INVALID_REDIS_URL', message);
    this.name = 'RedisUrlError';
  }
}

const SCHEMES: Record<string, { kind: RedisTarget['kind']; tls: boolean }> = {
  'redis:': { kind: 'single', tls: false },
  'rediss:': { kind: 'single', tls: true },
  'redis+cluster:': { kind: 'cluster', tls: false },
  'rediss+cluster:': { kind: 'cluster', tls: true },
};

const DEFAULT_PORT = 6379;

/** The URL with its password replaced, for error messages and logs. */
export function redactRedisUrl(url: string): string {
  // The same split as parseRedisUrl: the last @ ends the credentials, so a
  // password holding an unencoded @ or / is hidden whole.
  const sep = url.indexOf('://');
  if (sep < 0) return url;
  const rest = url.slice(sep + 3);
  const at = rest.lastIndexOf('@');
  const colon = at < 0 ? -1 : rest.slice(0, at).indexOf(':');
  if (colon < 0) return url;
  return `${url.slice(0, sep + 3)}${rest.slice(0, colon)}:***${rest.slice(at)}`;
}

/**
 * `redis://[user[:password]@]host[:port][/db]`, `rediss://…` (TLS),
 * `redis+cluster://[user[:password]@]host[:port],host[:port]…` and
 * `rediss+cluster://…`. User and password are percent-decoded (encode `@`,
 * `:`, `/` and `,` in them). `what` names the setting in error messages.
 */
export function parseRedisUrl(url: string, what = 'Redis URL'): RedisTarget {
  const fail = (why: string): never => {
    throw new RedisUrlError(`${what} ${JSON.stringify(redactRedisUrl(url))}: ${why}`);
  };
  const m = /^([a-z][a-z0-9+.-]*:)\/\/(.*)$/i.exec(url.trim());
  if (!m) fail('expected redis://host:port, rediss://host:port, redis+cluster://h1:p1,h2:p2 or rediss+cluster://h1:p1,h2:p2');
  const scheme = SCHEMES[m![1].toLowerCase()];
  if (!scheme) fail(`unsupported scheme ${m![1]}// (use redis://, rediss://, redis+cluster:// or rediss+cluster://)`);
  let rest = m![2];
  if (/[?#]/.test(rest)) fail('query strings and fragments are not supported');

  // The last @ ends the credentials, so one left unencoded in a password still parses.
  const at = rest.lastIndexOf('@');
  const auth: RedisAuth = {};
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = userinfo.indexOf(':');
    const decode = (s: string, part: string) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return fail(`the ${part} has a malformed %-escape`);
      }
    };
    const user = decode(colon < 0 ? userinfo : userinfo.slice(0, colon), 'user name');
    const password = colon < 0 ? undefined : decode(userinfo.slice(colon + 1), 'password');
    if (user) auth.username = user;
    if (password) auth.password = password;
    if (auth.username && auth.password === undefined) fail('a user name needs a password (user:password@host)');
  }

  const slash = rest.indexOf('/');
  const hostPart = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash + 1);
  const nodes = hostPart.split(',').map((hp) => parseNode(hp, fail));
  if (scheme.kind === 'single') {
    if (nodes.length !== 1) fail(`one host expected; for a Redis Cluster use ${scheme.tls ? 'rediss' : 'redis'}+cluster://`);
    if (path !== '' && !/^\d+$/.test(path)) fail(`the path must be a database number (got /${path})`);
    return { kind: 'single', tls: scheme.tls, node: nodes[0], db: path === '' ? 0 : Number(path), ...auth };
  }
  if (path !== '') fail('a Redis Cluster has no databases to select: drop the /path');
  return { kind: 'cluster', tls: scheme.tls, nodes, ...auth };
}

function parseNode(hp: string, fail: (why: string) => never): RedisNode {
  let host: string;
  let port: string | undefined;
  if (hp.startsWith('[')) {
    const end = hp.indexOf(']');
    if (end < 0) fail(`unclosed [ in ${JSON.stringify(hp)}`);
    host = hp.slice(1, end);
    const after = hp.slice(end + 1);
    if (after !== '' && !after.startsWith(':')) fail(`unexpected ${JSON.stringify(after)} after [${host}]`);
    port = after === '' ? undefined : after.slice(1);
  } else {
    const parts = hp.split(':');
    if (parts.length > 2) fail(`${JSON.stringify(hp)}: write an IPv6 address in brackets, e.g. [::1]:6379`);
    [host, port] = parts;
  }
  if (!host) fail(hp === '' ? 'a host is missing' : `no host in ${JSON.stringify(hp)}`);
  // Underscores too: container and compose service names use them (redis_cache).
  if (!/^[\w.:-]+$/.test(host)) fail(`${JSON.stringify(host)} is not a host name or address`);
  if (port === undefined) return { host, port: DEFAULT_PORT };
  const n = Number(port);
  if (!/^\d+$/.test(port) || n < 1 || n > 65535) fail(`port ${JSON.stringify(port)} of ${host} is not a number 1–65535`);
  return { host, port: n };
}
