// Structured logs: one JSON object per line on stderr (stdout carries the
// CLI's output and the worker's ready line). A small module rather than a
// library: pino is not installed, and this needs levels, child fields and
// safe serialisation, nothing more.
import { DOMAIN_WORKFLOW } from '../temporal/workflow-types';
import type { LogLevel as TemporalLogLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
type EmitLevel = Exclude<LogLevel, 'silent'>;

/** Context fields come first in each line, in this order; any other field follows. */
export interface LogFields {
  campaign?: string;
  host?: string;
  url?: string;
  workflowId?: string;
  activity?: string;
  attempt?: number;
  [field: string]: unknown;
}
const CONTEXT_KEYS = ['campaign', 'host', 'url', 'workflowId', 'activity', 'attempt'];
const RESERVED = new Set(['time', 'level', 'msg']);

export interface LoggerOptions {
  level?: LogLevel;
  fields?: LogFields;
  /** Receives each line, newline included. Default: process.stderr. */
  write?: (line: string) => void;
  now?: () => number;
}

/** For the CRAWLER_LOG_LEVEL setting; case-insensitive, so 'WARN' works too. */
export function parseLogLevel(raw: string): LogLevel {
  const level = raw.trim().toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new Error(`log level must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(raw)})`);
  return level as LogLevel;
}

export class Logger {
  readonly level: LogLevel;
  private readonly threshold: number;
  private readonly fields: LogFields;
  private readonly write: (line: string) => void;
  private readonly now: () => number;

  constructor(opts: LoggerOptions = {}) {
    this.level = opts.level ?? 'info';
    this.threshold = LOG_LEVELS.indexOf(this.level);
    this.fields = opts.fields ?? {};
    this.write = opts.write ?? ((line) => void process.stderr.write(line));
    this.now = opts.now ?? Date.now;
  }

  /** Same output and level, with more fields on every line (later fields win). */
  child(fields: LogFields): Logger {
    return new Logger({ level: this.level, fields: { ...this.fields, ...fields }, write: this.write, now: this.now });
  }

  isEnabled(level: EmitLevel): boolean {
    return LOG_LEVELS.indexOf(level) >= this.threshold;
  }

  trace(msg: string, fields?: LogFields): void {
    this.log('trace', msg, fields);
  }
  debug(msg: string, fields?: LogFields): void {
    this.log('debug', msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.log('info', msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.log('warn', msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.log('error', msg, fields);
  }

  /** `timeMs` overrides the clock (for events that carry their own time). */
  log(level: EmitLevel, msg: string, fields?: LogFields, timeMs?: number): void {
    if (!this.isEnabled(level)) return;
    const all: LogFields = fields ? { ...this.fields, ...fields } : this.fields;
    const line: Record<string, unknown> = { time: new Date(timeMs ?? this.now()).toISOString(), level, msg };
    for (const k of CONTEXT_KEYS) if (all[k] !== undefined) line[k] = all[k];
    for (const [k, v] of Object.entries(all)) if (!RESERVED.has(k) && !(k in line)) line[k] = v;
    this.write(`${stringify(line)}\n`);
  }
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  return new Logger(opts);
}

/** Errors as {name, message, code, stack, cause}, bigints as strings, cycles cut: a log call never throws. */
function stringify(line: Record<string, unknown>): string {
  // Objects on the path from the root to the value being written, as given
  // and as written (an Error is written as a plain copy).
  const path: { given: object; written: object }[] = [];
  return JSON.stringify(line, function (this: unknown, _key: string, value: unknown) {
    if (typeof value === 'bigint') return value.toString();
    if (typeof value !== 'object' || value === null) return value;
    while (path.length > 0 && path[path.length - 1].written !== this) path.pop();
    if (path.some((p) => p.given === value)) return '[Circular]';
    const written = value instanceof Error ? errorFields(value) : value;
    path.push({ given: value, written });
    return written;
  });
}

function errorFields(err: Error): Record<string, unknown> {
  const { code } = err as { code?: unknown };
  return { name: err.name, message: err.message, code, stack: err.stack, cause: err.cause };
}

/** Where the SDK puts an event's own time (ns since epoch); Symbol.for, as in the SDK. */
const LOG_TIMESTAMP = Symbol.for('log_timestamp');

/**
 * The Temporal SDK's Logger interface over ours, for
 * `Runtime.install({ logger })`: worker, workflow (`log` from
 * @temporalio/workflow), activity (`Context.current().log`) and forwarded
 * Core logs all come out as the same JSON lines. The SDK's `activityType`
 * becomes `activity`; `taskToken` is dropped (long, and it lets anyone
 * holding it complete the task).
 */
export class TemporalLoggerAdapter implements TemporalLogger {
  constructor(private readonly logger: Logger) {}

  log(level: TemporalLogLevel, message: string, meta?: LogMetadata): void {
    // A host's first session runs inside its workflow's first task (a local
    // activity, up to session.firstLocalMs): the core's warning that the task
    // took over 5 s is expected there, so it is kept for debugging only.
    const expected = level === 'WARN' && meta?.workflowType === DOMAIN_WORKFLOW && message.includes('[TMPRL1104]');
    const l = (expected ? 'debug' : level.toLowerCase()) as EmitLevel;
    if (!this.logger.isEnabled(l)) return;
    const { [LOG_TIMESTAMP]: nanos, taskToken: _token, activityType, ...rest } = meta ?? {};
    const fields: LogFields = activityType !== undefined ? { activity: activityType, ...rest } : rest;
    this.logger.log(l, message, fields, typeof nanos === 'bigint' ? Number(nanos / 1_000_000n) : undefined);
  }

  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}
