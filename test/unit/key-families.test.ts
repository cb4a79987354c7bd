// The memory bench (bench/redis-memory.ts) sums Redis memory by these
// families: every key keys.ts can build must land in its own family, not in
// `other` by accident, or the bench would misreport where memory goes.
import { CAMPAIGN_KEY_FAMILIES, CONTENT_KEY_FAMILIES, HOST_KEY_FAMILIES, KEY_FAMILIES, SHARED_KEY_FAMILIES, classifyKey } from '../../src/redis/key-families';
import { robotsCacheKey } from '../../src/robots/robots-store';
import { addressKeys, campaignKeys, contentKeys, cookieJarKey, hostKeys, outputKeys, sharedHostKeys, workerKeys } from '../../src/redis/keys';

const CAMPAIGN = 'bench-m1x.0a1b2c3d';
const HOST = 'b12.bench.test:8080';

describe('classifyKey', () => {
  test('every per-host key is its family, with its campaign', () => {
    const keys = hostKeys(CAMPAIGN, HOST);
    expect(Object.keys(keys).sort()).toEqual(Object.keys(HOST_KEY_FAMILIES).sort());
    for (const [kind, name] of Object.entries(keys)) {
      expect({ field: kind, ...classifyKey(name) }).toEqual({
        field: kind,
        kind: `host.${kind}`,
        family: HOST_KEY_FAMILIES[kind as keyof typeof HOST_KEY_FAMILIES],
        scope: 'host',
        campaignKey: CAMPAIGN,
      });
    }
  });

  test('the families the bench reports by name', () => {
    const h = hostKeys(CAMPAIGN, HOST);
    const c = campaignKeys(CAMPAIGN);
    const expected: [string, string][] = [
      [h.frontier, 'frontier'],
      [h.seen, 'seen'],
      [h.committed, 'sealing'],
      [c.hosts, 'host-records'],
      [h.stats, 'counters'],
      [c.totals, 'counters'],
      [h.robots, 'robots'],
      [sharedHostKeys(HOST).robots, 'robots'],
      // The robots.txt cache's real keys go on from the builder's name.
      [robotsCacheKey({ scheme: 'http', host: HOST, port: 8080, pinnedAddress: '127.0.0.1' }), 'robots'],
      [robotsCacheKey({ scheme: 'https', host: 'x.test', port: 443, pinnedAddress: null }), 'robots'],
      [sharedHostKeys(HOST).clock, 'clocks'],
      [sharedHostKeys(HOST).clockFence, 'clocks'],
      [cookieJarKey(CAMPAIGN, HOST), 'cookies'],
      [h.revisit, 'revisits'],
      [contentKeys(CAMPAIGN, 3).verdict, 'content-verdicts'],
      [contentKeys(CAMPAIGN, 3).exact, 'content-exact'],
      [contentKeys(CAMPAIGN, 3).payloads, 'content-payloads'],
      [contentKeys(CAMPAIGN, 3).band(2), 'content-bands'],
      [contentKeys(CAMPAIGN, 15).band(15), 'content-bands'],
      // The compact layout's buckets, by their map's name (src/dedup/compact-store.ts).
      [contentKeys(CAMPAIGN, 3).meta, 'content-pages'],
      [contentKeys(CAMPAIGN, 3).bucket('v', 0), 'content-verdicts'],
      [contentKeys(CAMPAIGN, 3).bucket('x', 12), 'content-exact'],
      [contentKeys(CAMPAIGN, 3).bucket('p', 7), 'content-payloads'],
      [contentKeys(CAMPAIGN, 3).bucket('u', 3), 'content-pages'],
      [contentKeys(CAMPAIGN, 3).bucket('k3b2', 40), 'content-bands'],
      [contentKeys(CAMPAIGN, 15).bucket('k15b15', 1), 'content-bands'],
      // Format 3: the SimHash table is the bands', the origin table and map the page table's.
      [contentKeys(CAMPAIGN, 3).bucket('s', 2), 'content-bands'],
      [contentKeys(CAMPAIGN, 3).bucket('h', 0), 'content-pages'],
      [contentKeys(CAMPAIGN, 3).bucket('o', 5), 'content-pages'],
    ];
    for (const [name, family] of expected) expect([name, classifyKey(name).family]).toEqual([name, family]);
  });

  test('every campaign key and content-index key is its family, with its campaign', () => {
    const keys = campaignKeys(CAMPAIGN);
    expect(Object.keys(keys).sort()).toEqual(Object.keys(CAMPAIGN_KEY_FAMILIES).sort());
    for (const [kind, name] of Object.entries(keys)) {
      expect({ field: kind, ...classifyKey(name) }).toEqual({
        field: kind,
        kind: `campaign.${kind}`,
        family: CAMPAIGN_KEY_FAMILIES[kind as keyof typeof CAMPAIGN_KEY_FAMILIES],
        scope: 'campaign',
        campaignKey: CAMPAIGN,
      });
    }
    const content = contentKeys(CAMPAIGN, 3);
    expect(Object.keys(content).sort()).toEqual(Object.keys(CONTENT_KEY_FAMILIES).sort());
    for (const [kind, v] of Object.entries(content)) {
      if (kind === 'bucket') continue; // a bucket's kind names its map: above
      const name = typeof v === 'string' ? v : (v as (i: number) => string)(1);
      expect(classifyKey(name)).toEqual({
        kind: `content.${kind}`,
        family: CONTENT_KEY_FAMILIES[kind as keyof typeof CONTENT_KEY_FAMILIES],
        scope: 'campaign',
        campaignKey: CAMPAIGN,
      });
    }
  });

  test('state shared by campaigns is known and belongs to none', () => {
    const shared = sharedHostKeys(HOST);
    expect(Object.keys(shared).sort()).toEqual(Object.keys(SHARED_KEY_FAMILIES).sort());
    for (const [kind, name] of Object.entries(shared))
      expect(classifyKey(name)).toEqual({ kind: `shared.${kind}`, family: SHARED_KEY_FAMILIES[kind as keyof typeof SHARED_KEY_FAMILIES], scope: 'shared', campaignKey: null });
    const w = workerKeys();
    const g = workerKeys('test-group');
    const names: [string, string][] = [
      [w.leases, 'worker.leases'],
      [w.lastBeat, 'worker.lastBeat'],
      [w.sessions('host:1234:ab'), 'worker.sessions'],
      [g.reaping('w1'), 'worker.reaping'],
      [addressKeys('127.0.0.1').slots, 'address.slots'],
      [outputKeys('9f3a').spoolers, 'output.spoolers'],
      [outputKeys('9f3a').flush, 'output.flush'],
      [outputKeys('9f3a').flushed, 'output.flushed'],
    ];
    for (const [name, kind] of names) expect(classifyKey(name)).toEqual({ kind, family: 'other', scope: 'shared', campaignKey: null });
  });

  test('a key nothing names is `other`, of no campaign', () => {
    for (const name of ['something', 'crawl:{c.1|h}:no-such-key', 'crawl:{c.1}:content:k3:band:x', 'crawl:{c.1}:nope', 'other:{c.1}:config', 'crawl:clock:{h}:nope']) {
      expect(classifyKey(name)).toEqual({ family: 'other', kind: 'unknown', scope: null, campaignKey: null });
    }
  });

  test('every family the tables name is a reported family', () => {
    for (const f of [...Object.values(HOST_KEY_FAMILIES), ...Object.values(CAMPAIGN_KEY_FAMILIES), ...Object.values(CONTENT_KEY_FAMILIES), ...Object.values(SHARED_KEY_FAMILIES)]) {
      expect(KEY_FAMILIES).toContain(f);
    }
  });
});
