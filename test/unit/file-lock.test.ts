// The lock the embedded stack (and the tool installs) take: one holder at a
// time, and a lock left by a holder that died (or whose pid another process
// got since) is taken over instead of waited for until the timeout.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { withFileLock } from '../../src/stack/file-lock';
import { processIdentity } from '../../src/stack/process-identity';
import { tempDirs } from '../support/temp-dirs';

const tempDir = tempDirs('file-lock-');

/** A lock directory as a holder with this pid (and start time) leaves it. */
function heldBy(pidText: string): string {
  const lock = path.join(tempDir(), 'x.lock');
  fs.mkdirSync(lock);
  fs.writeFileSync(path.join(lock, 'pid'), pidText);
  return lock;
}

test('holders take turns', async () => {
  const lock = path.join(tempDir(), 'x.lock');
  let inside = 0;
  let most = 0;
  const hold = () =>
    withFileLock(lock, async () => {
      most = Math.max(most, ++inside);
      await new Promise((r) => setTimeout(r, 30));
      inside--;
    });
  await Promise.all([hold(), hold(), hold()]);
  expect(most).toBe(1);
  expect(fs.existsSync(lock)).toBe(false);
});

test('a lock whose holder exited is taken over', async () => {
  const dead = spawn('true', { stdio: 'ignore' });
  await new Promise((r) => dead.once('exit', r));
  const lock = heldBy(String(dead.pid));
  await expect(withFileLock(lock, async () => 'ran', 5_000)).resolves.toBe('ran');
});

test('a lock whose pid another process has now (another start time) is taken over', async () => {
  const lock = heldBy(`${process.pid} 1`);
  await expect(withFileLock(lock, async () => 'ran', 5_000)).resolves.toBe('ran');
});

test('a lock its live holder keeps is waited for', async () => {
  const lock = heldBy(`${process.pid} ${processIdentity(process.pid)!.startTime}`);
  await expect(withFileLock(lock, async () => 'ran', 600)).rejects.toThrow(/timed out waiting for lock/);
  expect(fs.existsSync(lock)).toBe(true);
});
