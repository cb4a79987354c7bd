// How much memory a process tree holds, read from /proc (Linux): the
// worker's Chromium is one process for the browser and one for each
// renderer, GPU and utility helper, all under it. Read asynchronously, so a
// walk of /proc (a few hundred small files) never blocks the worker's thread.
import { readdir, readFile } from 'node:fs/promises';

/** The parent of every process, from /proc/<pid>/stat (empty off Linux). */
async function parents(): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return out;
  }
  await Promise.all(
    names.map(async (d) => {
      if (!/^\d+$/.test(d)) return;
      const stat = await readFile(`/proc/${d}/stat`, 'utf8').catch(() => null);
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
      if (stat) out.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    }),
  );
  return out;
}

/** `root` and every process under it (children, theirs…). */
export async function processTree(root: number): Promise<number[]> {
  const byParent = new Map<number, number[]>();
  for (const [pid, ppid] of await parents()) byParent.set(ppid, [...(byParent.get(ppid) ?? []), pid]);
  const out: number[] = [];
  const walk = (pid: number) => {
    out.push(pid);
    for (const c of byParent.get(pid) ?? []) walk(c);
  };
  walk(root);
  return out;
}

/**
 * Whether a /proc cmdline holds `arg`. Its arguments are separated by NULs,
 * or by spaces once the process rewrote its title (Chromium's helpers do).
 */
export function hasArg(cmdline: string, arg: string): boolean {
  return cmdline.split(/[\0 ]/).includes(arg);
}

/** The child of `parent` whose command line holds `marker` (a switch given to it at launch), or null. */
export async function childWithArg(parent: number, marker: string): Promise<number | null> {
  for (const [pid, ppid] of await parents()) {
    if (ppid !== parent) continue;
    if (hasArg(await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''), marker)) return pid;
  }
  return null;
}

/**
 * One process's memory in bytes: its PSS (proportional set size: each page
 * shared with other processes counted as its share), so the sum over a tree
 * is what the tree holds. Chromium's processes share most of their code:
 * summing their RSS counts it once per process, about three times the truth
 * (measured: 1.8 GB of RSS for 0.55 GB of PSS with four pages rendering).
 * RSS where smaps_rollup cannot be read (kernels before 4.14).
 */
async function processMemory(pid: number): Promise<number> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => null);
  const pss = rollup ? /^Pss:\s+(\d+) kB/m.exec(rollup) : null;
  if (pss) return Number(pss[1]) * 1024;
  const statm = await readFile(`/proc/${pid}/statm`, 'utf8').catch(() => null);
  return statm ? Number(statm.split(' ')[1]) * 4096 : 0;
}

/** The memory a process tree holds (PSS summed, see processMemory), and its processes; 0 when it is gone. */
export async function treeMemory(root: number): Promise<{ bytes: number; processes: number }> {
  const pids = await processTree(root);
  const each = await Promise.all(pids.map(processMemory));
  return { bytes: each.reduce((a, b) => a + b, 0), processes: each.filter((b) => b > 0).length };
}
