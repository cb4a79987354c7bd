// Telling whether a recorded pid is still the process that was recorded, not
// one that got the pid after a crash or a reboot. Shared by the embedded
// stack (stack.json, its users) and the cluster (cluster.json), which is
// why it sits in a module of its own: each of them may import it.
import fs from 'node:fs';
import path from 'node:path';

/**
 * How to tell, later, that a pid is still the process we saw: its command
 * line as /proc showed it (redis-server rewrites its own once it is up), and
 * its start time in clock ticks after boot.
 */
export interface ProcessIdentity {
  cmdline: string;
  startTime: string;
}

/** Whether this process may signal a process with this pid (perhaps a zombie, perhaps not ours). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A running process's identity from procfs; null when it is gone (or a zombie) or there is no procfs. */
export function processIdentity(pid: number, procRoot = '/proc'): ProcessIdentity | null {
  try {
    const stat = fs.readFileSync(path.join(procRoot, String(pid), 'stat'), 'utf8');
    // Fields after the command name, which is in parentheses and may itself contain ") ".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return null;
    const raw = fs.readFileSync(path.join(procRoot, String(pid), 'cmdline'), 'utf8');
    // NUL-separated argv; a retitled process (redis-server) pads with NULs.
    const cmdline = raw.split('\0').filter(Boolean).join(' ').trim();
    return { cmdline, startTime: fields[19] };
  } catch {
    return null;
  }
}

/**
 * Whether `pid` still runs (a zombie does not: it has exited and only waits
 * to be reaped). Without procfs (macOS) a pid that exists is all there is.
 */
export function processRunning(pid: number, procRoot = '/proc'): boolean {
  return fs.existsSync(procRoot) ? processIdentity(pid, procRoot) !== null : pidAlive(pid);
}
