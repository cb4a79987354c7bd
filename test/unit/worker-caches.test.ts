// A long-lived worker sees many campaigns come and go: what it keeps per
// campaign (the runtime with its HTTP agent, open WARC and index files) is
// closed once the campaign has not been used for a while. The clock is
// Date.now, stepped here instead of waited out.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { WorkerRuntime } from '../../activities/runtime';
import { resolveCampaignSettings } from '../../src/config/campaign';
import { campaignKeys } from '../../src/redis/keys';
import type { RedisLike } from '../../src/redis/scripts';
import { campaignWarcFiles } from '../../src/storage/cdxj';
import { readIndex, type IndexEntry } from '../../src/storage/index-writer';
import { IDLE_CLOSE_MS, OutputRegistry } from '../../src/storage/output-registry';

let now = 1_800_000_000_000;
beforeEach(() => jest.spyOn(Date, 'now').mockImplementation(() => now));
afterEach(() => jest.restoreAllMocks());

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'worker-caches-'));

test('output writers idle for IDLE_CLOSE_MS are closed at the next lookup; what they wrote stays, and the folder reopens', async () => {
  const reg = new OutputRegistry();
  const [a, b] = [tmp(), tmp()];
  const first = await reg.index(a);
  await first.append({ url: 'http://a.test/1' } as IndexEntry);
  await reg.warc(a, 'camp-a');
  expect(reg.size).toBe(2);

  now += IDLE_CLOSE_MS - 1;
  expect(await reg.index(a)).toBe(first); // still in use: kept
  now += IDLE_CLOSE_MS;
  await reg.index(b);
  // a's index writer was used IDLE_CLOSE_MS ago, its WARC writer before that: both closed.
  expect(reg.size).toBe(1);
  await expect(first.append({ url: 'http://a.test/late' } as IndexEntry)).rejects.toMatchObject({ code: 'CLOSED' });
  const again = await reg.index(a);
  expect(again).not.toBe(first);
  await again.append({ url: 'http://a.test/2' } as IndexEntry);
  await reg.closeAll();
  expect((await readIndex(path.join(a, 'index'))).map((e) => e.url).sort()).toEqual(['http://a.test/1', 'http://a.test/2']);
});

test("campaigns sharing an output folder each write their own WARC files: the seal finds a campaign's records by its files' names", async () => {
  const reg = new OutputRegistry();
  const dir = tmp();
  const shop = await reg.warc(dir, 'shop');
  const news = await reg.warc(dir, 'news');
  expect(news).not.toBe(shop);
  const exchange = (url: string) => ({
    url,
    fetchedAt: new Date(now),
    request: { method: 'GET', headers: { host: 'x.test' } },
    response: { status: 200, statusText: 'OK', headers: { 'content-type': 'text/html' }, body: Buffer.from('<p>hi</p>') },
  });
  await shop.writeExchange(exchange('http://shop.test/'));
  await news.writeExchange(exchange('http://news.test/'));
  await reg.closeAll();
  expect((await campaignWarcFiles(dir, 'news')).length).toBe(1);
  expect((await campaignWarcFiles(dir, 'shop')).length).toBe(1);
});

test('a campaign runtime (settings, HTTP agent) unused for 10 minutes is dropped at the next lookup of any campaign, its HTTP agent closed 10 minutes later (a session may still hold it)', async () => {
  // Timers fake (the agent's delayed close), Date.now stepped as above.
  jest.useFakeTimers({ doNotFake: ['Date', 'nextTick', 'setImmediate', 'queueMicrotask'] });
  // Only the settings read goes to "Redis".
  const stored = (id: string) => JSON.stringify({ version: 1, settings: resolveCampaignSettings({ seeds: [`http://${id}.test/`], output: { dir: tmp() } }, id) });
  const redis = {
    get: async (key: string) => (key === campaignKeys('a.1').config ? stored('a') : key === campaignKeys('b.1').config ? stored('b') : null),
  } as unknown as RedisLike;
  const rt = new WorkerRuntime({ redis, temporal: {} as Client });
  const a = await rt.campaign('a.1', 1);
  const closeA = jest.spyOn(a.http, 'close');
  expect(await rt.campaign('a.1', 1)).toBe(a);

  now += 10 * 60_000 - 1;
  await rt.campaign('b.1', 1);
  expect(closeA).not.toHaveBeenCalled();
  now += 1;
  const b = await rt.campaign('b.1', 1);
  // b was used just now: kept; a comes back as a new runtime.
  const a2 = await rt.campaign('a.1', 1);
  expect(a2).not.toBe(a);
  expect(await rt.campaign('b.1', 1)).toBe(b);
  // The old agent goes ten minutes after it was dropped, not under a session still using it.
  expect(closeA).not.toHaveBeenCalled();
  jest.advanceTimersByTime(10 * 60_000 - 1);
  expect(closeA).not.toHaveBeenCalled();
  jest.advanceTimersByTime(1);
  expect(closeA).toHaveBeenCalledTimes(1);
  const closeA2 = jest.spyOn(a2.http, 'close');
  await rt.close();
  expect(closeA2).toHaveBeenCalledTimes(1);
  jest.useRealTimers();
});
