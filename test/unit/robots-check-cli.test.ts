// Runs every conformance case through the real `crawler robots check`
// command, so argument parsing, file reading and output formatting are
// covered too: in this process, through the same commander program and exit
// code mapping the command line uses (test/support/in-process-cli.ts),
// because a process per case cost about a second of CPU each. A few cases also run
// as real processes, which must print exactly what the in-process run
// printed and end with the same exit code: the process plumbing itself.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { conformanceCases as cases, type ConformanceCase } from '../support/robots-conformance';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { runCrawlerInProcess as runInProcess } from '../support/in-process-cli';

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `crawler <args>` as a child process. */
function runProcess(args: string[]): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const cmd = crawlerCommand(args);
    const child = spawn(cmd.command, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function expectedLines(c: ConformanceCase): string[] {
  const lines = c.checks.map(([url, verdict]) => `${url}\t${verdict}`);
  if (c.crawlDelay !== undefined) lines.push(c.crawlDelay);
  return lines;
}

describe('crawler robots check', () => {
  let dir: string;
  /** The command line of each case, its robots.txt written to a file. */
  let argsOf: string[][];
  let results: RunResult[];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'robots-check-'));
    argsOf = cases.map((c, i) => {
      const file = path.join(dir, `robots-${i}.txt`);
      writeFileSync(file, c.robots, 'utf8');
      const args = ['robots', 'check', '--file', file, '--agent', c.agent];
      if (c.crawlDelay !== undefined) args.push('--crawl-delay');
      // `--` so a URL can never be mistaken for an option.
      args.push('--', ...c.checks.map(([url]) => url));
      return args;
    });
    results = [];
    for (const args of argsOf) results.push(await runInProcess(args));
  });

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('has cases to run', () => {
    expect(cases.length).toBeGreaterThanOrEqual(70);
  });

  it.each(cases.map((c, i) => [c.name, i] as const))('%s', (_name, i) => {
    const c = cases[i];
    const r = results[i];
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = r.stdout === '' ? [] : r.stdout.replace(/\n$/, '').split('\n');
    expect(lines).toEqual(expectedLines(c));
  });

  it('as a process, prints what the command printed in-process, and exits 0', async () => {
    // The case with the most URLs, and one that also prints its Crawl-delay.
    const most = cases.reduce((best, c, i) => (c.crawlDelay === undefined && c.checks.length > cases[best].checks.length ? i : best), 0);
    const delayed = cases.findIndex((c) => c.crawlDelay !== undefined && c.checks.length > 0);
    expect(cases[delayed].crawlDelay).toBeDefined();
    const runs = await Promise.all([most, delayed].map((i) => runProcess(argsOf[i])));
    for (const [n, i] of [most, delayed].entries()) {
      expect({ name: cases[i].name, ...runs[n] }).toEqual({ name: cases[i].name, code: 0, stdout: `${expectedLines(cases[i]).join('\n')}\n`, stderr: '' });
      expect(runs[n]).toEqual(results[i]);
    }
  }, 60_000);

  it('exits 2 with a message on stderr when the file cannot be read, in-process and as a process', async () => {
    const missing = path.join(dir, 'does-not-exist.txt');
    const args = ['robots', 'check', '--file', missing, '--agent', 'DurableCrawler', '/'];
    for (const r of [await runInProcess(args), await runProcess(args)]) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(missing);
    }
  }, 60_000);

  it('exits 2 on a usage error (a required option missing), in-process and as a process', async () => {
    const args = ['robots', 'check', '--file', path.join(dir, 'robots-0.txt'), '/'];
    for (const r of [await runInProcess(args), await runProcess(args)]) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain("required option '--agent <name>' not specified");
    }
  }, 60_000);
});
