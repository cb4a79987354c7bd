// The log a handler's hooks get (HandlerLog in ./api): the worker's logger
// with the fields of the page or login the hook runs for, every line marked
// `handler: true` so an operator tells the user's lines from the crawler's.
import type { LogFields, Logger } from '../log/logger';
import type { HandlerLog } from './api';

/** Bound methods, so a hook may take `log.info` apart from `log`. */
export function handlerLog(parent: Logger, fields: LogFields): HandlerLog {
  const log = parent.child({ handler: true, ...fields });
  return {
    debug: (m, f) => log.debug(m, f),
    info: (m, f) => log.info(m, f),
    warn: (m, f) => log.warn(m, f),
    error: (m, f) => log.error(m, f),
  };
}
