// Process-level settings of workers and clients: one typed table, read from
// the environment once, with defaults. Campaign settings live in campaign.ts.
import { parseLogLevel, type LogLevel } from '../log/logger';

export interface ProcessSettings {
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  redisUrl: string;
  /** Concurrent activities per worker process (fetches are I/O bound). */
  activitySlots: number;
  /** Workflow executions kept in a worker's sticky cache. */
  workflowCacheSize: number;
  /** Pre-built workflow bundle to load instead of bundling at start-up. */
  workflowBundlePath: string | null;
  /** Port of the worker's Prometheus /metrics endpoint; null = off, 0 = any free port. */
  metricsPort: number | null;
  /** Address the metrics endpoints bind to (an IP: the SDK exporter needs one). */
  metricsHost: string;
  /** Port of the Temporal SDK's own Prometheus exporter; null = off. */
  sdkMetricsPort: number | null;
  logLevel: LogLevel;
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
const str = (raw: string) => raw;
const port = (name: string) => (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number 0–65535 (got ${JSON.stringify(raw)})`);
  return n;
};

export const PROCESS_SETTINGS: Field<keyof ProcessSettings>[] = [
  { key: 'temporalAddress', env: 'TEMPORAL_ADDRESS', default: '127.0.0.1:7233', parse: str, doc: 'Temporal frontend host:port' },
  { key: 'temporalNamespace', env: 'TEMPORAL_NAMESPACE', default: 'default', parse: str, doc: 'Temporal namespace' },
  { key: 'taskQueue', env: 'CRAWLER_TASK_QUEUE', default: 'crawler', parse: str, doc: 'Task queue of workflows and activities' },
  { key: 'redisUrl', env: 'REDIS_URL', default: 'redis://127.0.0.1:6379', parse: str, doc: 'redis://host:port, or redis+cluster://h1:p1,h2:p2' },
  { key: 'activitySlots', env: 'CRAWLER_ACTIVITY_SLOTS', default: 100, parse: int('CRAWLER_ACTIVITY_SLOTS'), doc: 'Concurrent activities per worker' },
  { key: 'workflowCacheSize', env: 'CRAWLER_WORKFLOW_CACHE', default: 2000, parse: int('CRAWLER_WORKFLOW_CACHE'), doc: 'Sticky workflow cache size per worker' },
  { key: 'workflowBundlePath', env: 'CRAWLER_WORKFLOW_BUNDLE', default: null, parse: str, doc: 'Pre-built workflow bundle (set by `crawl` for the workers it starts)' },
  { key: 'metricsPort', env: 'CRAWLER_METRICS_PORT', default: null, parse: port('CRAWLER_METRICS_PORT'), doc: 'Prometheus /metrics port of each worker (0: any free port, printed at start)' },
  { key: 'metricsHost', env: 'CRAWLER_METRICS_HOST', default: '127.0.0.1', parse: str, doc: 'IP address the metrics endpoints bind to' },
  { key: 'sdkMetricsPort', env: 'CRAWLER_SDK_METRICS_PORT', default: null, parse: port('CRAWLER_SDK_METRICS_PORT'), doc: "Port of the Temporal SDK's own Prometheus exporter" },
  { key: 'logLevel', env: 'CRAWLER_LOG_LEVEL', default: 'warn', parse: parseLogLevel, doc: 'JSON log level on stderr: trace, debug, info, warn, error, silent' },
] as Field<keyof ProcessSettings>[];

export function processSettings(env: NodeJS.ProcessEnv = process.env, overrides: Partial<ProcessSettings> = {}): ProcessSettings {
  const out: Record<string, unknown> = {};
  for (const f of PROCESS_SETTINGS) {
    const raw = env[f.env];
    out[f.key] = raw !== undefined && raw !== '' ? f.parse(raw) : f.default;
  }
  return { ...(out as unknown as ProcessSettings), ...overrides };
}
