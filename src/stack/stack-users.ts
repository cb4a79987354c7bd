// Who uses the embedded stack of a project folder: one file per `crawl`
// process under .crawler/stack/users, named by its pid. A user that exits
// removes its file; one that died (kill -9, a crash, a reboot) leaves it
// behind, and is told from a live one by its pid and start time, so the last
// live user can stop the servers instead of leaving them to nobody. Callers
// hold the stack lock (src/stack/stack.ts) around every change.
import fs from 'node:fs';
import path from 'node:path';
import { pidAlive, processIdentity, type ProcessIdentity } from './process-identity';

interface UserRecord {
  pid: number;
  /** Null without procfs: then a live pid is all there is to go on. */
  identity: ProcessIdentity | null;
}

export const usersDir = (stackDir: string) => path.join(stackDir, 'users');
const userFile = (stackDir: string, pid: number) => path.join(usersDir(stackDir), `${pid}.json`);

/** Records `pid` (this process by default) as a user of the stack in `stackDir`. */
export function addStackUser(stackDir: string, pid = process.pid, procRoot = '/proc'): void {
  fs.mkdirSync(usersDir(stackDir), { recursive: true });
  const record: UserRecord = { pid, identity: processIdentity(pid, procRoot) };
  fs.writeFileSync(userFile(stackDir, pid), JSON.stringify(record));
}

export function removeStackUser(stackDir: string, pid = process.pid): void {
  fs.rmSync(userFile(stackDir, pid), { force: true });
}

function stillThere(record: UserRecord, procRoot: string): boolean {
  if (!record.identity || !fs.existsSync(procRoot)) return pidAlive(record.pid);
  // The start time alone tells a reused pid apart; the command line of a node process may change (process.title).
  return processIdentity(record.pid, procRoot)?.startTime === record.identity.startTime;
}

/** The pids of the users still running; the files of those that are gone are removed. */
export function liveStackUsers(stackDir: string, procRoot = '/proc'): number[] {
  let names: string[];
  try {
    names = fs.readdirSync(usersDir(stackDir));
  } catch {
    return [];
  }
  const live: number[] = [];
  for (const name of names) {
    if (!/^\d+\.json$/.test(name)) continue;
    const file = path.join(usersDir(stackDir), name);
    let record: UserRecord | null;
    try {
      record = JSON.parse(fs.readFileSync(file, 'utf8')) as UserRecord;
    } catch {
      // Written under the lock in one call: a torn file is from a user that died while writing it.
      record = null;
    }
    if (record && stillThere(record, procRoot)) live.push(record.pid);
    else fs.rmSync(file, { force: true });
  }
  return live.sort((a, b) => a - b);
}
