// Runs every conformance case through the real `crawler robots check` command,
// so argument parsing, file reading and output formatting are covered too.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fixtures from '../fixtures/robots-conformance.json';
import { crawlerCommand } from '../../src/cli/crawler-command';

interface ConformanceCase {
  name: string;
  robots: string;
  agent: string;
  checks: [string, 'allowed' | 'disallowed'][];
  crawlDelay?: string;
}

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

// One process per case; the machines this runs on may have two cores.
const POOL_SIZE = 3;

const cases = fixtures as ConformanceCase[];

function runCli(args: string[]): Promise<RunResult> {
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

async function mapPool<T, R>(items: readonly T[], size: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(size, items.length) }, worker));
  return results;
}

function expectedLines(c: ConformanceCase): string[] {
  const lines = c.checks.map(([url, verdict]) => `${url}\t${verdict}`);
  if (c.crawlDelay !== undefined) lines.push(c.crawlDelay);
  return lines;
}

describe('crawler robots check', () => {
  let dir: string;
  let results: RunResult[];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'robots-check-'));
    results = await mapPool(cases, POOL_SIZE, (c, i) => {
      const file = path.join(dir, `robots-${i}.txt`);
      writeFileSync(file, c.robots, 'utf8');
      const args = ['robots', 'check', '--file', file, '--agent', c.agent];
      if (c.crawlDelay !== undefined) args.push('--crawl-delay');
      // `--` so a URL can never be mistaken for an option.
      args.push('--', ...c.checks.map(([url]) => url));
      return runCli(args);
    });
  }, 300_000);

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

  it('exits 2 with a message on stderr when the file cannot be read', async () => {
    const missing = path.join(dir, 'does-not-exist.txt');
    const r = await runCli(['robots', 'check', '--file', missing, '--agent', 'DurableCrawler', '/']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(missing);
  }, 60_000);
});
