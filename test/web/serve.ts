// Runs the test web by hand, for trying the crawler against a known site graph:
//   npx tsx test/web/serve.ts --hosts 10 --pages 30 --fan-out 4 --cross 1 --delay 1 --port 8080
//   npx tsx test/web/serve.ts --latency 300 --latency-random 700 --slow-share 0.05 --slow-ms 3000
//   npx tsx test/web/serve.ts --hostile hostile.test   (issue 23's host, beside the generated sites)
//   npx tsx test/web/serve.ts --archive   (issue 24's site of pages and their requisites, and its CDN)
//   npx tsx test/web/serve.ts --folder DIR --hosts 8 --host-pattern 'bench{i}.test'   (real files: DIR on every host)
import { parseArgs } from 'node:util';
import { archiveSite } from './archive-site';
import { folderPages, folderSite, loadFolder } from './folder-site';
import { hostileHost } from './hostile-sites';
import { generateSites, startTestWeb } from './test-web';

const usage = `usage: serve.ts [options]
  --hosts N          number of sites (default 10)
  --pages N          pages per site (default 30)
  --fan-out N        same-site links per page (default 4)
  --cross N          cross-site links per page (default 1)
  --delay SEC        robots.txt Crawl-delay in seconds (default: none)
  --disallow PATHS   comma-separated robots.txt Disallow paths (e.g. /private/)
  --nofollow         add rel=nofollow links to nofollow-only pages
  --latency MS       delay every response by MS milliseconds (default 0)
  --latency-random MS  plus a uniform random 0..MS ms per response (default 0)
  --slow-share F     share 0..1 of responses that are slow (default 0)
  --slow-ms MS       extra delay of a slow response (default 0)
  --latency-seed N   seed of the random and slow draws (default: --seed)
  --seed N           link graph seed (default 0)
  --host-pattern P   host name pattern, {i} is the site number (default site{i}.test)
  --port N           port to listen on (default 0 = any free port)
  --bind ADDR        address to bind (default 127.0.0.1)
  --hostile HOST     also serve hostileHost(HOST) of hostile-sites.ts: 5,000 404 sitemaps, a 400,000-deep
                     page, a 150,000-link page, /poison, and 300 subdomains s1.HOST … on this address
  --archive          also serve archive-site.ts: www.archive-site.test, four pages and their requisites
                     (stylesheets, a font, images), and its CDN static.cdn-host.test (Crawl-delay 1)
  --folder DIR       serve the files of DIR (its index.html at /) on every host instead of generated
                     pages (folder-site.ts); --pages, --fan-out, --cross, --delay and the rest of the
                     link-graph options are then ignored
`;

function int(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got ${value}`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      hosts: { type: 'string' },
      pages: { type: 'string' },
      'fan-out': { type: 'string' },
      cross: { type: 'string' },
      delay: { type: 'string' },
      disallow: { type: 'string' },
      nofollow: { type: 'boolean' },
      latency: { type: 'string' },
      'latency-random': { type: 'string' },
      'slow-share': { type: 'string' },
      'slow-ms': { type: 'string' },
      'latency-seed': { type: 'string' },
      seed: { type: 'string' },
      'host-pattern': { type: 'string' },
      port: { type: 'string' },
      bind: { type: 'string' },
      hostile: { type: 'string' },
      archive: { type: 'boolean' },
      folder: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    return;
  }
  const pattern = values['host-pattern'] ?? 'site{i}.test';
  const delay = values.delay === undefined ? undefined : int('delay', values.delay, 0);
  const disallow = values.disallow
    ?.split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const robots = delay !== undefined || disallow ? { disallow, crawlDelaySec: delay } : undefined;

  const seed = int('seed', values.seed, 0);
  const slowShare = int('slow-share', values['slow-share'], 0);
  if (slowShare > 1) throw new Error(`--slow-share must be from 0 to 1, got ${slowShare}`);
  const latency = {
    fixedMs: int('latency', values.latency, 0),
    randomMs: int('latency-random', values['latency-random'], 0),
    slowShare,
    slowMs: int('slow-ms', values['slow-ms'], 0),
    seed: int('latency-seed', values['latency-seed'], seed),
  };
  const web = await startTestWeb({ port: int('port', values.port, 0), host: values.bind, latency });
  const specs = generateSites({
    count: int('hosts', values.hosts, 10),
    pages: int('pages', values.pages, 30),
    fanOut: int('fan-out', values['fan-out'], 4),
    crossPerPage: int('cross', values.cross, 1),
    hostPattern: (i) => pattern.replace(/\{i\}/g, String(i)),
    robots,
    nofollowLinks: values.nofollow ?? false,
    seed,
  });
  if (specs.length === 0) throw new Error('--hosts must be at least 1');
  const folder = values.folder ? loadFolder(values.folder) : null;
  for (const spec of specs) web.addSite(folder ? folderSite(spec.host, folder) : spec);
  if (values.hostile) {
    const hostile = hostileHost(values.hostile);
    for (const spec of [hostile.site, ...hostile.subdomainSites]) web.addSite(spec);
  }

  const archive = values.archive ? archiveSite() : null;
  for (const spec of archive?.specs ?? []) web.addSite(spec);

  const seedUrl = web.url(specs[0].host);
  const expected = folder ? folderPages(folder).length : web.expectedPages([seedUrl]).size;
  const resolve = web.resolveArgs().map((r) => `--resolve ${r}`);
  if (values.hostile) process.stdout.write(`hostile: ${web.url(values.hostile)} and s1…s300.${values.hostile}\n`);
  if (archive) process.stdout.write(`archive: ${web.url(archive.host)} (${archive.pages.length} pages, ${archive.requisites.length} requisites), CDN ${archive.cdnHost}\n`);
  process.stdout.write(
    `test web: ${specs.length} sites × ${folder ? `the ${folder.size} files of ${values.folder}` : `${specs[0].pages} pages`} on ${web.address}:${web.port}\n` +
      `port: ${web.port}\n` +
      `seed: ${seedUrl}\n` +
      `latency: ${latency.fixedMs} ms + 0..${latency.randomMs} ms, ${latency.slowShare * 100} % of responses ${latency.slowMs} ms more (mean ${web.meanLatencyMs()} ms)\n` +
      `expected pages from seed (robots respected, nofollow skipped): ${expected}\n` +
      `resolve flags:\n${resolve.join(' ')}\n` +
      'Ctrl-C to stop.\n',
  );

  const stop = (): void => {
    // First to last request, as the bench counts a crawl's time: what a crawl of these sites made per second.
    const log = web.requests();
    const span = log.length > 1 ? (log[log.length - 1].t - log[0].t) / 1000 : 0;
    const rate = span > 0 ? `, ${(log.length / span).toFixed(1)} a second over the ${span.toFixed(1)} s from the first to the last` : '';
    process.stdout.write(`\nserved ${log.length} requests${rate}; closing\n`);
    web.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`serve: ${err instanceof Error ? err.message : String(err)}\n${usage}`);
  process.exit(2);
});
