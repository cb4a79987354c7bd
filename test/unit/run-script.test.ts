// scripts/run.cjs with long command lines. `npm run crawl -- …` cannot carry
// more than 128 KiB (npm joins the line into one `sh -c` argument, and Linux
// caps one argument at 128 KiB; npm then exits 249 without a word): that is
// what --seeds-file and --resolve-file are for. run.cjs itself passes its
// arguments on without a shell, and says so plainly when even that is too much.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const RUN = path.join(__dirname, '..', '..', 'scripts', 'run.cjs');

test('3,000 seeds and 3,000 --resolve flags (over 128 KiB) reach the crawl command through run.cjs intact', () => {
  const args: string[] = [];
  for (let i = 0; i < 3000; i++) args.push(`http://site${i}.test:8080/`, '--resolve', `site${i}.test:8080:127.0.0.1`);
  expect(args.reduce((n, a) => n + a.length + 1, 0)).toBeGreaterThan(128 * 1024);
  // A bad value on the last flag: crawl checks every argument, then stops with exit 2 before starting anything.
  const r = spawnSync(process.execPath, [RUN, 'crawl', ...args, '--resolve', 'site0.test:8080:127.0.0.2'], { encoding: 'utf8' });
  expect(r.stderr).toContain('duplicate entry for site0.test:8080');
  expect(r.status).toBe(2);
});

test('a command line that fits run.cjs but not the process it starts: a plain message and exit 2, not a stack trace', () => {
  // The most arguments of this size the system takes after `node -e 0 run.cjs crawl`:
  // run.cjs then has about one short argument's room to spare, far less than the
  // loader flags it adds for the process it starts.
  const arg = 'http://s.test/xxxxxx';
  const fits = (n: number) => {
    const r = spawnSync(process.execPath, ['-e', '0', RUN, 'crawl', ...Array<string>(n).fill(arg)], { stdio: 'ignore' });
    return (r.error as NodeJS.ErrnoException | undefined)?.code !== 'E2BIG';
  };
  let lo = 1;
  let hi = 1;
  while (fits(hi)) [lo, hi] = [hi, hi * 2];
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  const r = spawnSync(process.execPath, [RUN, 'crawl', ...Array<string>(lo).fill(arg)], { encoding: 'utf8' });
  expect(r.error).toBeUndefined();
  expect(r.stderr).toMatch(/^crawler: the command line is too long for this system \(\d+ arguments, \d+ bytes\)\. Put seed URLs in a file \(crawl --seeds-file FILE/);
  expect(r.status).toBe(2);
});
