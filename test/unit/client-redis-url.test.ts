// `crawler status` reads its host table from the Redis the user named, or
// else from the running stack's: a newcomer who ran `stack up` (or whose
// `crawl` started the servers) sees the table without setting REDIS_URL.
import fs from 'node:fs';
import path from 'node:path';
import { clientRedisUrl } from '../../src/stack/stack';
import { tempDirs } from '../support/temp-dirs';

const dirs = tempDirs('client-redis-url-');
let saved: string | undefined;
beforeEach(() => {
  saved = process.env.REDIS_URL;
  delete process.env.REDIS_URL;
});
afterEach(() => {
  if (saved === undefined) delete process.env.REDIS_URL;
  else process.env.REDIS_URL = saved;
});

test("the running stack's Redis, when REDIS_URL names none", () => {
  const stack = dirs();
  fs.writeFileSync(path.join(stack, 'stack.json'), JSON.stringify({ redis: { pid: 1, url: 'redis://127.0.0.1:6390' } }));
  expect(clientRedisUrl({ stack, cluster: dirs() })).toBe('redis://127.0.0.1:6390');
});

test('REDIS_URL wins over the stack', () => {
  const stack = dirs();
  fs.writeFileSync(path.join(stack, 'stack.json'), JSON.stringify({ redis: { pid: 1, url: 'redis://127.0.0.1:6390' } }));
  process.env.REDIS_URL = 'redis://10.0.0.5:6379';
  expect(clientRedisUrl({ stack, cluster: dirs() })).toBe('redis://10.0.0.5:6379');
});

test('none named and nothing running: null, not a guess at the default port', () => {
  expect(clientRedisUrl({ stack: dirs(), cluster: dirs() })).toBeNull();
});
