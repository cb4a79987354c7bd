import fs from 'node:fs';
import path from 'node:path';

// Test runners and several CLI invocations may try to install the same tool
// at once; a directory created with mkdir is an atomic, portable lock.
export async function withFileLock<T>(lockPath: string, fn: () => Promise<T>, timeoutMs = 15 * 60_000): Promise<T> {
  fs.mkdirSync(path.dirname(lockPath), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      fs.mkdirSync(lockPath);
      fs.writeFileSync(path.join(lockPath, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (staleLock(lockPath)) {
        fs.rmSync(lockPath, { recursive: true, force: true });
        continue;
      }
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

function staleLock(lockPath: string): boolean {
  try {
    const pid = Number(fs.readFileSync(path.join(lockPath, 'pid'), 'utf8'));
    if (!pid) return false;
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
