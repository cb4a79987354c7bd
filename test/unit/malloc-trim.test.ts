// malloc_trim gives freed native memory back: checked in a child process of
// its own (its RSS alone, with the worker's malloc settings), where memory
// freed below a block still in use stays in the process until trimmed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { processSettings } from '../../src/config/env';
import { startMallocTrim } from '../../src/worker/malloc-trim';

const PROJECT_ROOT = path.resolve(__dirname, '../..');

function runChild(body: string): { status: number | null; stdout: string; stderr: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'malloc-trim-'));
  const script = path.join(dir, 'child.ts');
  fs.writeFileSync(
    script,
    `import { startMallocTrim } from ${JSON.stringify(path.join(PROJECT_ROOT, 'src/worker/malloc-trim'))};
const rssMb = () => Number(/VmRSS:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;
(async () => {
${body}
})().catch((err) => { console.error(err); process.exit(1); });
`,
  );
  const tsxDir = path.join(PROJECT_ROOT, 'node_modules', 'tsx', 'dist');
  const res = spawnSync(
    process.execPath,
    ['--expose-gc', '--require', path.join(tsxDir, 'preflight.cjs'), '--import', pathToFileURL(path.join(tsxDir, 'loader.mjs')).href, script],
    {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, MALLOC_ARENA_MAX: '2' },
    },
  );
  fs.rmSync(dir, { recursive: true, force: true });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe('malloc trim', () => {
  it('gives back memory freed below a block still in use, which the allocator otherwise keeps', () => {
    // 1,500 blocks of 100 KB (under glibc's mmap threshold: they come from its heap), all
    // freed but the last, which keeps glibc from returning them as the heap's top.
    const res = runChild(`
  const trim = await startMallocTrim(60_000);
  const blocks = [];
  for (let i = 0; i < 1500; i++) blocks.push(Buffer.allocUnsafeSlow(100_000).fill(i & 0xff));
  const last = blocks.pop();
  blocks.length = 0;
  for (let i = 0; i < 3; i++) { global.gc(); await new Promise((r) => setTimeout(r, 50)); }
  const held = rssMb();
  const released = trim.trimNow();
  const after = rssMb();
  trim.stop();
  console.log(JSON.stringify({ active: trim.active, released, held, after, last: last.length }));
`);
    expect(res).toMatchObject({ status: 0 });
    const r = JSON.parse(res.stdout.trim()) as { active: boolean; released: boolean; held: number; after: number };
    expect(r.active).toBe(true);
    expect(r.released).toBe(true);
    // Without the trim the 150 MB freed stay in the process's RSS.
    expect(r.held - r.after).toBeGreaterThan(100);
  });

  it('takes its interval from CRAWLER_MALLOC_TRIM_MS: every second unless set, 0 turns it off, nonsense is refused', () => {
    expect(processSettings({}).mallocTrimMs).toBe(1000);
    expect(processSettings({ CRAWLER_MALLOC_TRIM_MS: '0' }).mallocTrimMs).toBe(0);
    expect(processSettings({ CRAWLER_MALLOC_TRIM_MS: '250' }).mallocTrimMs).toBe(250);
    for (const bad of ['-1', '1.5', 'often', '3600001'])
      expect(() => processSettings({ CRAWLER_MALLOC_TRIM_MS: bad })).toThrow(/CRAWLER_MALLOC_TRIM_MS must be a whole number from 0 to 3600000/);
  });

  it('does nothing when turned off (0)', async () => {
    const t = await startMallocTrim(0);
    expect(t.active).toBe(false);
    expect(t.trimNow()).toBe(false);
    t.stop();
  });
});
