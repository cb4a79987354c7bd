// What a frontier entry found by a link costs in Redis, in the compact form
// and in the form releases before issue 40 wrote (src/redis/frontier.ts): scenario
// m's seeded frontier has no referrers, and a link's referrer was half of its
// entry. Two campaigns' frontiers get the same URLs through the enqueue script,
// one of layout 2 (compact members, bucketed seen set: src/redis/frontier-layout.ts),
// the other of layout 1, as the older release wrote them (tab-separated
// members, a seen SET of 16-character fingerprints); MEMORY USAGE of every
// key, ÷ URLs.
//   npx tsx bench/frontier-entries.ts <redis url> [urls 200000] [hosts 100]
// Deletes what it wrote.
import { createRedis } from '../src/redis/client';
import { Frontier } from '../src/redis/frontier';
import { markFrontierLayout } from '../src/redis/frontier-layout';
import { contentKeys, hostKeys } from '../src/redis/keys';
import { urlFingerprint } from '../src/url/fingerprint';

const [url = 'redis://127.0.0.1:6379', urlsArg = '200000', hostsArg = '100'] = process.argv.slice(2);
const total = Number(urlsArg);
const hosts = Number(hostsArg);
const perHost = total / hosts;
const redis = createRedis(url);

/** A URL of about 75 characters (near the operations guide's earlier 79), its referrer a page of the same host. */
const urlOf = (h: number, i: number) => `http://www.host-${h}.example.test/section-${i % 40}/an-article-about-things-${i}.html`;

async function usage(keys: string[]): Promise<number> {
  const p = redis.pipeline();
  for (const k of keys) p.call('MEMORY', 'USAGE', k, 'SAMPLES', '0');
  return ((await p.exec()) ?? []).reduce((n, [, v]) => n + Number(v ?? 0), 0);
}

async function main(): Promise<void> {
  const compact = `fe-compact-${Date.now()}`;
  const older = `fe-older-${Date.now()}`;
  await markFrontierLayout(redis, compact);
  let chars = 0;
  for (let h = 0; h < hosts; h++) {
    const host = `www.host-${h}.example.test`;
    const items = Array.from({ length: perHost }, (_, i) => {
      const u = urlOf(h, i);
      chars += u.length;
      return { url: u, fp: urlFingerprint(u), depth: 2, referrer: urlOf(h, Math.floor(i / 10)), hops: 'LL' };
    });
    await new Frontier(redis, compact, host).enqueue(items);
    await new Frontier(redis, older, host).enqueue(items);
  }
  await redis.del(contentKeys(compact, 0).meta);
  const figures: Record<string, number> = {};
  for (const [name, ck] of [
    ['compact', compact],
    ['older', older],
  ] as const) {
    const keysOf = (kind: 'frontier' | 'seen') => Array.from({ length: hosts }, (_, h) => hostKeys(ck, `www.host-${h}.example.test`)[kind]);
    figures[`${name}FrontierEntry`] = Number(((await usage(keysOf('frontier'))) / total).toFixed(1));
    figures[`${name}SeenUrl`] = Number(((await usage(keysOf('seen'))) / total).toFixed(1));
    for (let h = 0; h < hosts; h++) await redis.del(...Object.values(hostKeys(ck, `www.host-${h}.example.test`)));
  }
  process.stdout.write(`${JSON.stringify({ urls: total, hosts, meanUrlChars: Number((chars / total).toFixed(1)), bytesPerUrl: figures })}\n`);
  redis.disconnect();
}

void main();
