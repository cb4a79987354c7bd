import { Cluster } from 'ioredis';
import { startRedisCluster } from './stack/redis-cluster';
import { defineScripts } from './redis/scripts';
import { Frontier } from './redis/frontier';
import { HostClock } from './redis/host-clock';
(async () => {
  const c = await startRedisCluster({ dataDir: '/tmp/exp/cl-' + Date.now(), masters: 3 });
  const nodes = c.url.slice('redis+cluster://'.length).split(',').map((hp) => ({ host: hp.split(':')[0], port: Number(hp.split(':')[1]) }));
  let errs = 0, ok = 0; const msgs = new Set<string>();
  for (let round = 0; round < 5; round++) {
    const r = new Cluster(nodes, { enableAutoPipelining: true, redisOptions: { maxRetriesPerRequest: 10 } });
    defineScripts(r);
    for (let k = 0; k < 20; k++) {
      const rs = await Promise.allSettled(Array.from({ length: 50 }, async (_, i) => {
        const host = `h${round}-${k}-${i}.test`;
        const f = new Frontier(r, 'c' + round, host);
        await f.enqueue([{ fp: 'x' + i, url: `http://${host}/`, depth: 0, referrer: null }]);
        await r.exists(`crawl:{c${round}|${host}}:refused`);
        await new HostClock(r, host).acquire('o', 1000, 10);
        await f.claim(); await f.stats(); await f.size();
      }));
      for (const x of rs) { if (x.status === 'rejected') { errs++; msgs.add(String(x.reason)); } else ok++; }
    }
    r.disconnect();
  }
  console.log({ ok, errs, msgs: [...msgs] });
  await c.stop();
})();
