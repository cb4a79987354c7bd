// Names only a hosts file knows are crawled: the workers read the hosts file
// (CRAWLER_HOSTS_FILE, here a temp file instead of the machine's /etc/hosts)
// before asking the DNS, which has never heard of them. N hosts, each mapped
// to the test web on 127.0.0.1, one page each, no delay: every page is
// stored, none fails with DNS_FAILURE. `npm test` runs it over a few dozen
// hosts (test/integration/hosts-file.test.ts), `npm run test:acceptance`
// over 3,000 (test/acceptance/hosts-file.test.ts).
import fs from 'node:fs';
import path from 'node:path';
import { createHarness, fetchedUrls, launch, outputOf, type Harness } from './harness';
import { tempDirs } from './temp-dirs';

export function hostsFileCampaign(count: number): void {
  const hostName = (i: number) => `h${String(i).padStart(4, '0')}.hosts-file.test`;
  const hosts = Array.from({ length: count }, (_, i) => hostName(i));
  let h: Harness;
  const dirs = tempDirs('hosts-file-');

  beforeAll(async () => {
    const file = path.join(dirs(), 'hosts');
    fs.writeFileSync(file, ['# written by test/support/hosts-file-campaign.ts', '127.0.0.1 localhost', ...hosts.map((host) => `127.0.0.1 ${host}`), ''].join('\n'));
    h = await createHarness('hosts-file', { workers: 2, env: { CRAWLER_HOSTS_FILE: file } });
    for (const host of hosts) h.web.addSite({ host, pages: 1, fanOut: 0 });
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  test(`a campaign over ${count} hosts that only the hosts file names stores every host's page`, async () => {
    const handle = await launch(h, {
      seeds: hosts.map((host) => h.web.url(host, '/')),
      scope: { mode: 'any' },
      politeness: { minDelayMs: 0, respectRobots: false },
      sitemaps: 'off',
      // No --resolve pins: the names go through the workers' resolver. The
      // hosts file maps them to loopback, which the address policy refuses
      // unless allowed.
      fetch: { resolve: [], allowAddresses: ['127.0.0.1/32'] },
    });
    const result = await handle.result();
    const index = await outputOf(h, handle.workflowId).index();
    const failed = index.filter((e) => e.outcome !== 'fetched').map((e) => `${e.url}: ${e.outcome} ${e.error?.code ?? ''}`);
    expect(failed.slice(0, 5)).toEqual([]);
    expect(result.status).toBe('completed');
    expect(result.pages).toBe(count);
    expect(new Set(fetchedUrls(index))).toEqual(new Set(hosts.map((host) => h.web.url(host, '/'))));
  }, 600_000);
}
