// An independent WARC reader for tests: Python's warcio (a different
// implementation from ours), installed into a project-local venv on first use.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { TOOLS_DIR } from '../../src/stack/paths';
import { withFileLock } from '../../src/stack/file-lock';

export const VENV = path.join(TOOLS_DIR, 'pyvenv');
export const VENV_PY = path.join(VENV, 'bin', 'python');

export function run(cmd: string, args: string[], input?: string) {
  return spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 64 * 1024 * 1024 });
}

export async function ensurePythonWarcio(): Promise<void> {
  const probe = () => run(VENV_PY, ['-c', 'import warcio']).status === 0;
  if (probe()) return;
  const sys = run('python3', ['--version']);
  if (sys.error || sys.status !== 0) {
    throw new Error(
      'python3 is required for the independent WARC check (Python warcio) but was not found on PATH; install python3 (with the venv module) and re-run.',
    );
  }
  await withFileLock(path.join(TOOLS_DIR, 'pyvenv.lock'), async () => {
    if (probe()) return;
    const venv = run('python3', ['-m', 'venv', VENV]);
    if (venv.status !== 0) throw new Error(`python3 -m venv ${VENV} failed:\n${venv.stdout}${venv.stderr}`);
    const pip = run(VENV_PY, ['-m', 'pip', 'install', '--quiet', 'warcio']);
    if (pip.status !== 0) throw new Error(`pip install warcio failed:\n${pip.stdout}${pip.stderr}`);
  });
  if (!probe()) throw new Error(`warcio is still not importable from ${VENV_PY}`);
}

// Iterates with warcio's own ArchiveIterator and digest checker; one JSON line per record.
export const PY_DUMP = String.raw`
import sys, json, hashlib
from warcio.archiveiterator import ArchiveIterator
for path in sys.argv[1:]:
    with open(path, 'rb') as fh:
        it = ArchiveIterator(fh, check_digests=True)
        for rec in it:
            h = rec.rec_headers
            data = rec.content_stream().read()
            out = {
                'file': path.rsplit('/', 1)[-1],
                'type': h.get_header('WARC-Type'),
                'id': h.get_header('WARC-Record-ID'),
                'uri': h.get_header('WARC-Target-URI'),
                'concurrentTo': h.get_header('WARC-Concurrent-To'),
                'warcinfoId': h.get_header('WARC-Warcinfo-ID'),
                'truncated': h.get_header('WARC-Truncated'),
                'date': h.get_header('WARC-Date'),
                'protocol': h.protocol,
                'status': rec.http_headers.get_statuscode() if rec.http_headers and rec.rec_type == 'response' else None,
                'sha256': hashlib.sha256(data).hexdigest(),
                'passed': rec.digest_checker.passed,
                'problems': list(rec.digest_checker.problems),
            }
            out['offset'] = it.get_record_offset()
            out['length'] = it.get_record_length()
            print(json.dumps(out))
`;

export interface PyRecord {
  file: string;
  type: string;
  id: string;
  uri: string | null;
  concurrentTo: string | null;
  warcinfoId: string | null;
  truncated: string | null;
  date: string;
  protocol: string;
  status: string | null;
  sha256: string;
  passed: boolean | null;
  problems: string[];
  offset: number;
  length: number;
}


/** Every record of these files as warcio reads them, digests checked. Throws with warcio's stderr on failure. */
export function readWithWarcio(files: string[]): PyRecord[] {
  const res = run(VENV_PY, ['-c', PY_DUMP, ...files]);
  if (res.status !== 0) throw new Error(`warcio failed (${res.status}): ${res.stderr}`);
  return res.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as PyRecord);
}
