// main.ts loads only the module that owns the command being run, by the
// names in COMMAND_MODULES: a name missing there would make its command
// "unknown" whenever it is run on its own.
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { Command } from 'commander';
import { COMMAND_MODULES, registerCommands } from '../../src/cli/commands';
import { prepareCrawlInput, registerCrawlCommand } from '../../src/cli/commands/crawl';
import { ADD_SEEDS_PER_UPDATE, addSeedsBatches, registerSteerCommands } from '../../src/cli/commands/steer';
import { crawlerCommand } from '../../src/cli/crawler-command';
import { UsageError } from '../../src/cli/usage-error';

test.each(COMMAND_MODULES.map((m) => [m.names.join(', '), m] as const))('the table lists exactly what the module registers: %s', async (_names, m) => {
  const program = new Command();
  (await m.load())(program);
  expect(program.commands.map((c) => c.name()).sort()).toEqual([...m.names].sort());
});

test('a known command registers its own module only; no or an unknown name registers all', async () => {
  const only = new Command();
  await registerCommands(only, 'set-rate');
  expect(only.commands.map((c) => c.name())).toEqual(['set-rate', 'set-render', 'set-concurrency', 'set-budget', 'add-seeds', 'list']);

  const all = COMMAND_MODULES.flatMap((m) => m.names);
  for (const name of [undefined, 'help', 'no-such-command']) {
    const p = new Command();
    await registerCommands(p, name);
    expect(p.commands.map((c) => c.name())).toEqual(all);
  }
});

describe('crawl --seeds-file / --resolve-file', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-seeds-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, content: string | Buffer) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, content);
    return p;
  };
  const noStdin = { isTTY: true } as unknown as NodeJS.ReadableStream;
  const logs: string[] = [];
  const io = (stdin: NodeJS.ReadableStream = noStdin) => ({ stdin, log: (m: string) => void logs.push(m) });
  beforeEach(() => (logs.length = 0));
  const opts = (o: Record<string, unknown>) => ({ workers: 1, resolve: [] as string[], priority: [] as string[], id: 'c1', out: path.join(dir, 'out'), ...o });
  const usageError = async (p: Promise<unknown>): Promise<UsageError> => {
    try {
      await p;
    } catch (err) {
      if (err instanceof UsageError) return err;
      throw err;
    }
    throw new Error('expected a UsageError');
  };

  /** The crawl command's parsed arguments, its action replaced (the real one starts a stack). */
  function parseCrawl(args: string[]): { seeds: string[]; o: Record<string, unknown> } {
    const program = new Command().exitOverride();
    registerCrawlCommand(program);
    let got: { seeds: string[]; o: Record<string, unknown> } | undefined;
    program.commands[0].action((seeds: string[], o: Record<string, unknown>) => void (got = { seeds, o }));
    program.parse(['node', 'crawler', 'crawl', ...args]);
    return got!;
  }

  test('a positional seed is optional with --seeds-file; "-" is a value', () => {
    expect(parseCrawl(['--seeds-file', '-', '--resolve-file', 'pins.txt'])).toEqual({
      seeds: [],
      o: expect.objectContaining({ seedsFile: '-', resolveFile: 'pins.txt' }),
    });
    expect(parseCrawl(['http://a.test/', '--seeds-file', 'more.txt.gz']).seeds).toEqual(['http://a.test/']);
  });

  test("--revisit with its bounds (s, m, h, d) becomes the campaign's revisit settings; bounds alone or without a unit are refused", async () => {
    const { seeds, o } = parseCrawl(['http://a.test/', '--revisit', '--revisit-min', '90m', '--revisit-max', '7d']);
    expect(o).toMatchObject({ revisit: true, revisitMin: 90 * 60_000, revisitMax: 7 * 86_400_000 });
    const input = await prepareCrawlInput(seeds, opts(o), io());
    expect(input.revisit).toEqual({ enabled: true, minMs: 90 * 60_000, maxMs: 7 * 86_400_000 });
    expect(parseCrawl(['http://a.test/', '--revisit', '--revisit-min', '1s']).o.revisitMin).toBe(1_000);
    expect(() => parseCrawl(['http://a.test/', '--revisit', '--revisit-min', '10'])).toThrow(/--revisit-min must be a whole number above 0 with a unit/);
    expect((await usageError(prepareCrawlInput(['http://a.test/'], opts({ revisitMax: 1_000 }), io()))).message).toContain('--revisit-min and --revisit-max need --revisit');
    expect((await usageError(prepareCrawlInput(['http://a.test/'], opts({ revisit: true, revisitMin: 60_000, revisitMax: 1_000 }), io()))).message).toContain(
      'revisit.maxMs must be ≥ revisit.minMs',
    );
    expect((await prepareCrawlInput(['http://a.test/'], opts({}), io())).revisit).toBeUndefined();
  });

  test('neither seeds nor --seeds-file: a usage error (exit code 2)', async () => {
    const err = await usageError(prepareCrawlInput([], opts({}), io()));
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain('--seeds-file');
  });

  test('a relative seed list path becomes absolute in the campaign input; its seeds are not copied into it', async () => {
    const file = write('list.txt', '# three seeds\nhttp://a.test/\nhttp://b.test/\n\nhttp://c.test/\n');
    const input = await prepareCrawlInput([], opts({ seedsFile: path.relative(process.cwd(), file) }), io());
    expect(input.seedsFile).toBe(file);
    expect(input.seeds).toEqual([]);
    expect(logs).toEqual([`seed list ${file}: 3 seed(s)`]);
    // With inline seeds too, both are kept.
    const both = await prepareCrawlInput(['http://z.test/'], opts({ seedsFile: file }), io());
    expect([both.seeds, both.seedsFile]).toEqual([['http://z.test/'], file]);
  });

  test('--seeds-file - copies standard input into the output folder (gzip stays gzip) and names that copy', async () => {
    const out = path.join(dir, 'stdin-out');
    const input = await prepareCrawlInput([], opts({ seedsFile: '-', out, id: 'from-stdin' }), io(Readable.from([Buffer.from('http://a.test/\nhttp://b.test/\n')])));
    expect(input.seedsFile).toBe(path.join(out, 'seeds-from-stdin.txt'));
    expect(fs.readFileSync(input.seedsFile!, 'utf8')).toBe('http://a.test/\nhttp://b.test/\n');
    const gz = await prepareCrawlInput([], opts({ seedsFile: '-', out, id: 'gz' }), io(Readable.from([zlib.gzipSync('http://a.test/\n')])));
    expect(gz.seedsFile).toBe(path.join(out, 'seeds-gz.txt.gz'));
    expect(zlib.gunzipSync(fs.readFileSync(gz.seedsFile!)).toString()).toBe('http://a.test/\n');
    // A copy that turns out unusable is not left behind.
    const err = await usageError(prepareCrawlInput([], opts({ seedsFile: '-', out, id: 'junk' }), io(Readable.from([Buffer.from('apple\n')]))));
    expect(err.message).toMatch(/--seeds-file -: no usable seed URL in it: line 1 "apple"/);
    expect(fs.readdirSync(out).sort()).toEqual(['seeds-from-stdin.txt', 'seeds-gz.txt.gz']);
  });

  test('--seeds-file - from a terminal, or with a bad flag, is refused before standard input is read', async () => {
    expect((await usageError(prepareCrawlInput([], opts({ seedsFile: '-' }), io()))).message).toContain('standard input is a terminal');
    const stdin = Readable.from([Buffer.from('http://a.test/\n')]);
    const out = path.join(dir, 'never');
    const err = await usageError(prepareCrawlInput([], opts({ seedsFile: '-', out, dedup: 'sometimes' }), io(stdin)));
    expect(err.message).toContain('content.dedup');
    expect(stdin.readableDidRead).toBe(false);
    expect(fs.existsSync(out)).toBe(false);
  });

  test.each([
    ['a missing list', () => path.join(dir, 'missing.txt'), /SEEDS_NOT_FOUND/],
    ['a binary list', () => write('binary.txt', Buffer.from([0x50, 0x4b, 3, 4, 0, 0, 0x0a])), /line 1 .*NUL byte.*SEEDS_NOT_TEXT/],
    ['a list with no seeds', () => write('empty.txt', '# nothing\n'), /no seed URLs in it/],
    ['a list of non-URLs', () => write('words.txt', 'apple\npear\n'), /no usable seed URL in it: line 1 "apple"/],
  ])('%s is a usage error naming the list', async (_name, make, message) => {
    const file = make();
    const err = await usageError(prepareCrawlInput([], opts({ seedsFile: file }), io()));
    expect(err.message).toMatch(message);
    expect(err.message).toContain(`--seeds-file ${file}`);
  });

  test('unusable lines in a list with good ones are reported with their line numbers, not fatal', async () => {
    const file = write('mixed.txt', 'http://a.test/\nnot a url\nhttp://b.test/\nftp://c.test/\n');
    const input = await prepareCrawlInput([], opts({ seedsFile: file }), io());
    expect(input.seedsFile).toBe(file);
    expect(logs[0]).toMatch(/2 of 4 seeds are not usable URLs and will be skipped: line 2 "not a url": .*; line 4 "ftp:\/\/c.test\/"/);
  });

  test('--resolve-file entries join the --resolve flags; bad lines and duplicates are usage errors naming the line', async () => {
    const pins = write('pins.txt', '# test web\nsite1.test:8080:127.0.0.1\n\nsite2.test:8080:[::1]\n');
    const input = await prepareCrawlInput(['http://site1.test:8080/'], opts({ resolve: ['site0.test:8080:127.0.0.1'], resolveFile: pins }), io());
    expect(input.fetch?.resolve).toEqual(['site0.test:8080:127.0.0.1', 'site1.test:8080:127.0.0.1', 'site2.test:8080:[::1]']);

    const bad = write('bad-pins.txt', 'site1.test:8080:127.0.0.1\nsite2.test:80\n');
    expect((await usageError(prepareCrawlInput(['http://site1.test:8080/'], opts({ resolveFile: bad }), io()))).message).toMatch(
      new RegExp(`--resolve-file ${bad} line 2: Invalid resolve entry "site2.test:80": missing ADDR`),
    );
    const dup = await usageError(prepareCrawlInput(['http://site1.test:8080/'], opts({ resolve: ['site1.test:8080:10.0.0.1'], resolveFile: pins }), io()));
    expect(dup.message).toContain('duplicate entry for site1.test:8080');
    expect((await usageError(prepareCrawlInput(['http://a.test/'], opts({ resolveFile: path.join(dir, 'nope') }), io()))).message).toMatch(/--resolve-file .*SEEDS_NOT_FOUND/);
  });

  test('--cookies and --cookies-file: the input carries the mode and the absolute path, never a cookie; a file others may read or with a bad line is a usage error', async () => {
    const { seeds, o } = parseCrawl(['http://a.test/', '--cookies', 'off']);
    expect((await prepareCrawlInput(seeds, opts(o), io())).cookies).toBe('off');
    expect(() => parseCrawl(['http://a.test/', '--cookies', 'maybe'])).toThrow(/--cookies must be one of on, off/);
    const good = write('cookies.txt', '.a.test\tTRUE\t/\tFALSE\t0\tsid\ts3cret\n');
    fs.chmodSync(good, 0o600);
    const input = await prepareCrawlInput(['http://a.test/'], opts({ cookiesFile: path.relative(process.cwd(), good) }), io());
    expect(input.cookiesFile).toBe(good);
    expect(JSON.stringify(input)).not.toContain('s3cret');
    const open = write('open-cookies.txt', '.a.test\tTRUE\t/\tFALSE\t0\tsid\ts3cret\n');
    fs.chmodSync(open, 0o644);
    expect((await usageError(prepareCrawlInput(['http://a.test/'], opts({ cookiesFile: open }), io()))).message).toContain('may be read by anyone');
    const bad = write('bad-cookies.txt', '.a.test\tTRUE\t/\tFALSE\t0\tsid\ts3cret\n.a.test\tTRUE\t/\tFALSE\tsoon\tsid\ts3cret\n');
    fs.chmodSync(bad, 0o600);
    const err = await usageError(prepareCrawlInput(['http://a.test/'], opts({ cookiesFile: bad }), io()));
    expect(err.message).toContain(`cookies file ${bad} line 2: the expiry (field 5)`);
    expect(err.message).not.toContain('s3cret');
    expect((await usageError(prepareCrawlInput(['http://a.test/'], opts({ cookies: 'off', cookiesFile: good }), io()))).message).toContain('cookiesFile needs cookies "on"');
  });

  describe('a URL list', () => {
    let server: http.Server;
    let base: string;
    beforeAll(async () => {
      server = http.createServer((req, res) => {
        if (req.url === '/seeds.txt') res.end('http://a.test/\nhttp://b.test/\n');
        else res.writeHead(404).end();
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => server.close());

    test('is kept as a URL (workers download it) after its first batch was read; a 404 is a usage error', async () => {
      const input = await prepareCrawlInput([], opts({ seedsFile: `${base}/seeds.txt` }), io());
      expect(input.seedsFile).toBe(`${base}/seeds.txt`);
      expect((await usageError(prepareCrawlInput([], opts({ seedsFile: `${base}/gone.txt` }), io()))).message).toMatch(/HTTP 404.*SEEDS_NOT_FOUND/);
    });
  });

  test('end to end: a bad --seeds-file ends `crawl` with exit code 2 and the reason, before anything starts', () => {
    const { command, args } = crawlerCommand(['crawl', '--seeds-file', path.join(dir, 'absent.txt'), '--workers', '0']);
    const r = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1', REDIS_URL: 'redis://127.0.0.1:1' } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('SEEDS_NOT_FOUND');
  });
});

describe('crawl --render browser: Chromium checked before anything starts', () => {
  // Unreachable servers: nothing could start anyway, and exit code 2 says the refusal came first.
  const crawl = (chromium: string) => {
    const { command, args } = crawlerCommand(['crawl', 'http://a.test/', '--render', 'browser', '--out', path.join(os.tmpdir(), `render-check-${process.pid}`)]);
    return spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, CHROMIUM_PATH: chromium, TEMPORAL_ADDRESS: '127.0.0.1:1', REDIS_URL: 'redis://127.0.0.1:1' } });
  };

  test('CHROMIUM_PATH naming no file: exit code 2, saying what to install', () => {
    const r = crawl('/nonexistent/chromium');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('CHROMIUM_PATH=/nonexistent/chromium is not an executable file');
    expect(r.stderr).toContain('apt-get install chromium');
  });

  test('a Chromium that does not start: exit code 2, saying so and what to install', () => {
    const r = crawl('/bin/true');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('Chromium (/bin/true) does not start');
    expect(r.stderr).toContain('apt-get install chromium');
  });
});

describe('add-seeds --file', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-add-seeds-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tty = { isTTY: true } as unknown as NodeJS.ReadableStream;
  const collect = async (it: AsyncIterable<string[]>) => {
    const out: string[][] = [];
    for await (const b of it) out.push(b);
    return out;
  };
  const list = (from: number, n: number) => Array.from({ length: n }, (_, i) => `http://h${from + i}.test/`);

  test(`arguments first, then the list, ${ADD_SEEDS_PER_UPDATE} seeds per update at most`, async () => {
    const file = path.join(dir, 'more.txt.gz');
    fs.writeFileSync(file, zlib.gzipSync(`# more\n${list(0, 2500).join('\n')}\n`));
    const batches = await collect(addSeedsBatches(['http://x.test/'], file, tty));
    expect(batches.map((b) => b.length)).toEqual([1, 1000, 1000, 500]);
    expect(batches.flat()).toEqual(['http://x.test/', ...list(0, 2500)]);
  });

  test('"-" reads standard input as a stream; from a terminal it is refused', async () => {
    const stdin = Readable.from([Buffer.from(`${list(0, 3).join('\n')}\n`)]);
    expect(await collect(addSeedsBatches([], '-', stdin))).toEqual([list(0, 3)]);
    await expect(collect(addSeedsBatches([], '-', tty))).rejects.toThrow(UsageError);
  });

  test('the command takes --file without URL arguments', () => {
    const program = new Command().exitOverride();
    registerSteerCommands(program);
    const addSeeds = program.commands.find((c) => c.name() === 'add-seeds')!;
    let got: unknown;
    addSeeds.action((campaign: string, urls: string[], o: object) => void (got = { campaign, urls, o }));
    program.parse(['node', 'crawler', 'add-seeds', 'c1', '--file', '-']);
    expect(got).toEqual({ campaign: 'c1', urls: [], o: { file: '-' } });
  });
});
