import fs from 'node:fs';
import path from 'node:path';
import { pidAlive, processIdentity } from './process-identity';

// Test runners and several CLI invocations may try to install the same tool,
// or start the same embedded stack, at once; a directory created with mkdir
// is an atomic, portable lock. Its `pid` file names the holder (and its start
// time, where procfs tells it), so a lock whose holder died is taken over.
export async function withFileLock<T>(lockPath: string, fn: () => Promise<T>, timeoutMs = 15 * 60_000): Promise<T> {
  fs.mkdirSync(path.dirname(lockPath), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      fs.mkdirSync(lockPath);
      const startTime = processIdentity(process.pid)?.startTime;
      fs.writeFileSync(path.join(lockPath, 'pid'), startTime ? `${process.pid} ${startTime}` : String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (staleLock(lockPath) && breakStaleLock(lockPath)) continue;
      if (Date.now() > deadline) throw new Error(`timed out waiting for lock ${lockPath}`, { cause: err });
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lockPath, { recursive: true, force: true });
  }
}

/** A holder that has not written its pid within this long died between mkdir and the write. */
const UNNAMED_LOCK_MS = 10_000;

function staleLock(lockPath: string): boolean {
  let text: string;
  try {
    text = fs.readFileSync(path.join(lockPath, 'pid'), 'utf8');
  } catch {
    try {
      return Date.now() - fs.statSync(lockPath).mtimeMs > UNNAMED_LOCK_MS;
    } catch {
      return false; // released meanwhile: the next mkdir decides
    }
  }
  const [pid, startTime] = text.trim().split(/\s+/);
  if (!Number(pid)) return false;
  if (!pidAlive(Number(pid))) return true;
  // The pid lives, but perhaps as another process that got it after the holder died.
  const now = processIdentity(Number(pid));
  return startTime !== undefined && now !== null && now.startTime !== startTime;
}

/**
 * Removes a stale lock so that only one waiter does it: two that both saw it
 * stale must not have the slower one remove the lock the faster one has just
 * taken. The breaker checks again while it holds `<lock>.break`. False when
 * another waiter is at it.
 */
function breakStaleLock(lockPath: string): boolean {
  const breaker = `${lockPath}.break`;
  try {
    fs.mkdirSync(breaker);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // Another waiter is breaking it; one that died doing so (a moment's work) left this behind.
    try {
      if (Date.now() - fs.statSync(breaker).mtimeMs > UNNAMED_LOCK_MS) fs.rmSync(breaker, { recursive: true, force: true });
    } catch {
      /* removed meanwhile */
    }
    return false;
  }
  try {
    if (staleLock(lockPath)) fs.rmSync(lockPath, { recursive: true, force: true });
    return true;
  } finally {
    fs.rmSync(breaker, { recursive: true, force: true });
  }
}
