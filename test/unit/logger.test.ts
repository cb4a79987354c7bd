// The JSON logger and its Temporal SDK adapter, writing into an array.
import { createLogger, parseLogLevel, TemporalLoggerAdapter, type LoggerOptions } from '../../src/log/logger';

const NOW = Date.parse('2025-01-02T03:04:05.678Z');

function capture(opts: LoggerOptions = {}) {
  const lines: string[] = [];
  const logger = createLogger({ now: () => NOW, write: (l) => lines.push(l), ...opts });
  const records = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, lines, records };
}

test('one JSON object per line: time, level, msg, then context fields in order, then the rest', () => {
  const { logger, lines, records } = capture();
  logger.info('page fetched', { status: 200, url: 'https://a.test/x', campaign: 'c1', attempt: 2, host: 'a.test', workflowId: 'c1/a.test', activity: 'crawlStep' });
  expect(lines).toHaveLength(1);
  expect(lines[0].endsWith('\n')).toBe(true);
  expect(lines[0].indexOf('\n')).toBe(lines[0].length - 1);
  const [r] = records();
  expect(Object.keys(r)).toEqual(['time', 'level', 'msg', 'campaign', 'host', 'url', 'workflowId', 'activity', 'attempt', 'status']);
  expect(r).toEqual({
    time: '2025-01-02T03:04:05.678Z',
    level: 'info',
    msg: 'page fetched',
    campaign: 'c1',
    host: 'a.test',
    url: 'https://a.test/x',
    workflowId: 'c1/a.test',
    activity: 'crawlStep',
    attempt: 2,
    status: 200,
  });
});

test('child fields merge: parent < child < call site; time, level and msg cannot be overridden', () => {
  const { logger, records } = capture();
  const campaign = logger.child({ campaign: 'c1', host: 'a.test' });
  const step = campaign.child({ host: 'b.test', url: 'https://b.test/' });
  step.warn('slow', { url: 'https://b.test/slow', msg: 'spoof', level: 'error', time: 'never' });
  campaign.info('plain');
  logger.info('bare');
  expect(records()).toEqual([
    { time: '2025-01-02T03:04:05.678Z', level: 'warn', msg: 'slow', campaign: 'c1', host: 'b.test', url: 'https://b.test/slow' },
    { time: '2025-01-02T03:04:05.678Z', level: 'info', msg: 'plain', campaign: 'c1', host: 'a.test' },
    { time: '2025-01-02T03:04:05.678Z', level: 'info', msg: 'bare' },
  ]);
});

test('level filtering, inherited by children', () => {
  const { logger, records } = capture({ level: 'warn' });
  const child = logger.child({ campaign: 'c1' });
  for (const l of [logger, child]) {
    l.trace('t');
    l.debug('d');
    l.info('i');
    l.warn('w');
    l.error('e');
  }
  expect(records().map((r) => `${r.level}:${r.msg}`)).toEqual(['warn:w', 'error:e', 'warn:w', 'error:e']);
  expect(logger.isEnabled('info')).toBe(false);

  const silent = capture({ level: 'silent' });
  silent.logger.error('nothing');
  expect(silent.lines).toEqual([]);

  const all = capture({ level: 'trace' });
  all.logger.trace('t');
  expect(all.records()).toEqual([{ time: '2025-01-02T03:04:05.678Z', level: 'trace', msg: 't' }]);
});

test('parseLogLevel accepts any case and rejects unknown levels', () => {
  expect(parseLogLevel('WARN')).toBe('warn');
  expect(parseLogLevel(' debug ')).toBe('debug');
  expect(parseLogLevel('Silent')).toBe('silent');
  expect(() => parseLogLevel('verbose')).toThrow(/trace, debug, info, warn, error, silent/);
});

test('errors, bigints and cycles serialise without throwing', () => {
  const { logger, records } = capture();
  const err = Object.assign(new Error('boom', { cause: new Error('root') }), { code: 'ECONNRESET' });
  const loop: Record<string, unknown> = { name: 'loop' };
  loop.self = loop;
  const shared = { n: 1 };
  logger.error('failed', { err, big: 10n ** 20n, loop, a: shared, b: shared });
  const [r] = records();
  expect(r.err).toMatchObject({ name: 'Error', message: 'boom', code: 'ECONNRESET', cause: { name: 'Error', message: 'root' } });
  expect((r.err as { stack: string }).stack).toContain('boom');
  expect(r.big).toBe('100000000000000000000');
  expect(r.loop).toEqual({ name: 'loop', self: '[Circular]' });
  expect([r.a, r.b]).toEqual([{ n: 1 }, { n: 1 }]); // shared, not circular
});

describe('TemporalLoggerAdapter', () => {
  test('SDK log calls become the same JSON lines, with the SDK timestamp and activity attributes', () => {
    const { logger, records } = capture({ level: 'debug' });
    const sdk = new TemporalLoggerAdapter(logger.child({ worker: 'w1' }));
    const at = BigInt(Date.parse('2024-06-01T00:00:00.123Z')) * 1_000_000n + 456n;
    sdk.info('Activity completed', {
      [Symbol.for('log_timestamp')]: at,
      sdkComponent: 'activity',
      namespace: 'default',
      taskQueue: 'crawler',
      activityType: 'crawlStep',
      activityId: '7',
      attempt: 3,
      workflowId: 'c1/a.test',
      taskToken: 'c2VjcmV0',
    });
    sdk.log('WARN', 'Worker state changed', { sdkComponent: 'worker' });
    sdk.trace('dropped: below debug');
    sdk.error('no meta');
    expect(records()).toEqual([
      {
        time: '2024-06-01T00:00:00.123Z',
        level: 'info',
        msg: 'Activity completed',
        workflowId: 'c1/a.test',
        activity: 'crawlStep',
        attempt: 3,
        worker: 'w1',
        sdkComponent: 'activity',
        namespace: 'default',
        taskQueue: 'crawler',
        activityId: '7',
      },
      { time: '2025-01-02T03:04:05.678Z', level: 'warn', msg: 'Worker state changed', worker: 'w1', sdkComponent: 'worker' },
      { time: '2025-01-02T03:04:05.678Z', level: 'error', msg: 'no meta', worker: 'w1' },
    ]);
  });
});
