// Every error of the crawler extends CrawlerError (src/errors.ts; the lint
// refuses other Error subclasses): a stable code beside the message, while
// instanceof and name still tell the classes apart, as callers rely on.
import { CrawlerError } from '../../src/errors';
import { UsageError } from '../../src/cli/usage-error';
import { SteeringRejected } from '../../src/cli/commands/campaign-control';
import { CampaignRunningError } from '../../src/cli/commands/purge';
import { CampaignInputError } from '../../src/config/campaign';
import { RedisUrlError } from '../../src/config/env';
import { SteeringError } from '../../src/config/steering';
import { AddressPolicyError, AddressRefusedError } from '../../src/http/address-policy';
import { FetchError } from '../../src/http/fetch-error';
import { ResolveOverrideError } from '../../src/http/resolve-overrides';
import { CampaignConfigMissingError } from '../../src/redis/campaign-store';
import { RedisUnavailableError } from '../../src/redis/client';
import { SessionSupersededError } from '../../src/redis/frontier';
import { RobotsFileError } from '../../src/robots/robots-check';
import { RobotsError } from '../../src/robots/robots-txt';
import { SeedSourceError } from '../../src/seeds/seed-source';
import { StackError } from '../../src/stack/stack-error';
import { StorageError } from '../../src/storage/storage-error';
import { TemporalUnavailableError } from '../../src/temporal/connect';
import { ScheduleError } from '../../src/temporal/schedules';
import { ScopeError } from '../../src/url/scope';
import { UrlError } from '../../src/url/url-error';
import { WorkerCrashLoopError } from '../../src/worker/worker-pool';

const cause = new Error('connection refused');
const cases: [Error, new (...args: never[]) => Error, string, string][] = [
  [new UsageError('bad flag'), UsageError, 'UsageError', 'USAGE'],
  [new SteeringRejected('no such host'), UsageError, 'UsageError', 'STEERING_REFUSED'],
  [new CampaignInputError(['seeds: none']), CampaignInputError, 'CampaignInputError', 'INVALID_CAMPAIGN_INPUT'],
  [new RedisUrlError('bad url'), RedisUrlError, 'RedisUrlError', 'INVALID_REDIS_URL'],
  [new SteeringError('no'), SteeringError, 'SteeringError', 'STEERING_REFUSED'],
  [new AddressPolicyError('10.0.0.0/99', 'bad prefix'), AddressPolicyError, 'AddressPolicyError', 'INVALID_ALLOW_ADDRESS'],
  [new AddressRefusedError('a.test', '10.0.0.1', { class: 'private' }), AddressRefusedError, 'AddressRefusedError', 'ERR_ADDRESS_REFUSED'],
  [new FetchError('CONNECT_TIMEOUT', 'http://a.test/'), FetchError, 'FetchError', 'CONNECT_TIMEOUT'],
  [new ResolveOverrideError('x', 'bad'), ResolveOverrideError, 'ResolveOverrideError', 'INVALID_RESOLVE_ENTRY'],
  [new CampaignConfigMissingError('c1'), CampaignConfigMissingError, 'CampaignConfigMissingError', 'CAMPAIGN_CONFIG_MISSING'],
  [new RedisUnavailableError('redis://127.0.0.1:1', cause), RedisUnavailableError, 'RedisUnavailableError', 'REDIS_UNAVAILABLE'],
  [new SessionSupersededError('a.test'), SessionSupersededError, 'SessionSupersededError', 'SESSION_SUPERSEDED'],
  [new RobotsFileError('/nope', { cause }), RobotsFileError, 'RobotsFileError', 'UNREADABLE_FILE'],
  [new RobotsError('INVALID_JSON', 'bad'), RobotsError, 'RobotsError', 'INVALID_JSON'],
  [new SeedSourceError('SEEDS_CHANGED', 'seeds.txt', 'changed'), SeedSourceError, 'SeedSourceError', 'SEEDS_CHANGED'],
  [new StackError('TOOL_MISSING', 'no python3'), StackError, 'StackError', 'TOOL_MISSING'],
  [new StorageError('WRITE_FAILED', '/out/a.warc', 'disk full'), StorageError, 'StorageError', 'WRITE_FAILED'],
  [new TemporalUnavailableError('127.0.0.1:1', cause), TemporalUnavailableError, 'TemporalUnavailableError', 'TEMPORAL_UNAVAILABLE'],
  [new ScopeError('NO_SEEDS', '', 'no seeds'), ScopeError, 'ScopeError', 'NO_SEEDS'],
  [new UrlError('EMPTY', '', 'empty'), UrlError, 'UrlError', 'EMPTY'],
  [new CampaignRunningError('c1'), CampaignRunningError, 'CampaignRunningError', 'CAMPAIGN_RUNNING'],
  [new ScheduleError('SCHEDULE_EXISTS', 'exists'), ScheduleError, 'ScheduleError', 'SCHEDULE_EXISTS'],
  [new WorkerCrashLoopError(5, 60_000, []), WorkerCrashLoopError, 'WorkerCrashLoopError', 'WORKER_CRASH_LOOP'],
];

test.each(cases)('%p: a CrawlerError with its own class, name and stable code', (err, cls, name, code) => {
  expect(err).toBeInstanceOf(CrawlerError);
  expect(err).toBeInstanceOf(Error);
  expect(err).toBeInstanceOf(cls);
  expect(err.name).toBe(name);
  expect((err as CrawlerError).code).toBe(code);
  expect(err.message.length).toBeGreaterThan(0);
});

test('the cause is kept', () => {
  expect(new TemporalUnavailableError('127.0.0.1:1', cause).cause).toBe(cause);
  expect(new StorageError('READ_FAILED', null, 'x', { cause }).cause).toBe(cause);
  expect(new StorageError('READ_FAILED', null, 'x').cause).toBeUndefined();
});
