// The log a handler's hooks get: the worker's JSON logger, marked as the handler's.
import { handlerLog } from '../../src/handlers/handler-log';
import { createLogger } from '../../src/log/logger';

const NOW = Date.parse('2025-01-02T03:04:05.678Z');

function capture() {
  const lines: string[] = [];
  const worker = createLogger({ level: 'debug', now: () => NOW, write: (l) => lines.push(l), fields: { campaign: 'c1', host: 'a.test' } });
  return { worker, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

test("each level writes a line of the worker's log, with the page's fields and handler: true", () => {
  const { worker, records } = capture();
  const log = handlerLog(worker, { url: 'https://a.test/p', label: 'detail' });
  log.debug('d', { n: 1 });
  log.info('i');
  log.warn('w', { n: 3 });
  log.error('e');
  expect(records().map((r) => [r.level, r.msg, r.n])).toEqual([
    ['debug', 'd', 1],
    ['info', 'i', undefined],
    ['warn', 'w', 3],
    ['error', 'e', undefined],
  ]);
  for (const r of records()) expect(r).toMatchObject({ campaign: 'c1', host: 'a.test', url: 'https://a.test/p', handler: true, label: 'detail' });
  // The fields the crawler adds (campaign, host, url) come first, then the handler's mark and the caller's.
  expect(Object.keys(records()[0]!)).toEqual(['time', 'level', 'msg', 'campaign', 'host', 'url', 'handler', 'label', 'n']);
});

test('methods work taken apart from the log, as a hook may use them', () => {
  const { worker, records } = capture();
  const { info, warn } = handlerLog(worker, { login: true });
  info('logging in');
  warn('slow');
  expect(records().map((r) => [r.level, r.msg, r.handler, r.login])).toEqual([
    ['info', 'logging in', true, true],
    ['warn', 'slow', true, true],
  ]);
});

test("the worker's level holds: lines below it are not written", () => {
  const lines: string[] = [];
  const log = handlerLog(createLogger({ level: 'warn', write: (l) => lines.push(l) }), {});
  log.debug('hidden');
  log.info('hidden');
  log.warn('shown');
  expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['shown']);
});
