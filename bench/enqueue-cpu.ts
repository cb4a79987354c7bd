// Redis CPU of the enqueue script (src/redis/scripts.ts, crawlEnqueue), by
// INFO commandstats: 50 hosts × 4,000 links of ~40 characters, in batches of
// 100 (a page's links), each link offered twice (the second time all are
// seen). Run it in two trees to compare their scripts, and here in both
// layouts (src/redis/frontier-layout.ts: 2, new campaigns; 1, the seen SET
// and members campaigns created before keep); it flushes the Redis it is
// given, so give it one of its own.
//   npx tsx bench/enqueue-cpu.ts <redis url of a scratch Redis> [layout 2|1]
import { createRedis } from '../src/redis/client';
import { Frontier } from '../src/redis/frontier';
import { markFrontierLayout } from '../src/redis/frontier-layout';
import { urlFingerprint } from '../src/url/fingerprint';

const [url = 'redis://127.0.0.1:6399', layout = '2'] = process.argv.slice(2);
const HOSTS = 50;
const PER_HOST = 4_000;
const BATCH = 100;

async function main(): Promise<void> {
  const redis = createRedis(url);
  await redis.flushall();
  if (layout === '2') await markFrontierLayout(redis, 'enqueue-cpu');
  await redis.config('RESETSTAT');
  for (let h = 0; h < HOSTS; h++) {
    const host = `h${h}.test`;
    const f = new Frontier(redis, 'enqueue-cpu', host);
    const items = Array.from({ length: PER_HOST }, (_, i) => {
      const u = `http://${host}/section/${i % 50}/page-${i}.html`;
      return { url: u, fp: urlFingerprint(u), depth: 2, referrer: `http://${host}/section/${i % 50}/`, hops: 'LL' };
    });
    for (let pass = 0; pass < 2; pass++) for (let i = 0; i < PER_HOST; i += BATCH) await f.enqueue(items.slice(i, i + BATCH));
  }
  const stats = (await redis.info('commandstats')).split('\n').find((l) => l.startsWith('cmdstat_evalsha:')) ?? '';
  const calls = Number(/calls=(\d+)/.exec(stats)?.[1] ?? 0);
  const usec = Number(/usec=(\d+)/.exec(stats)?.[1] ?? 0);
  process.stdout.write(
    `${JSON.stringify({ layout: Number(layout), calls, usecPerCall: Number((usec / Math.max(1, calls)).toFixed(1)), usecPerLinkOffered: Number((usec / (HOSTS * PER_HOST * 2)).toFixed(2)) })}\n`,
  );
  redis.disconnect();
}

void main();
