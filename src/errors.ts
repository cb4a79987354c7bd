// The base of the crawler's own errors. `code` is stable and machine-readable:
// logs, reports, exit paths, activity failure types and tests match on it,
// while messages are for people and may change. Pure (imports nothing), so
// the config modules workflows import can raise these too.
export class CrawlerError<Code extends string = string> extends Error {
  constructor(
    readonly code: Code,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CrawlerError';
  }
}
