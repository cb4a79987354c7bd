// An independent WARC reader for tests: Python's warcio (a different
// implementation from ours), installed into a project-local venv of its own
// (.crawler/tools/pyvenv, not the Temporal CLI's) on first use.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ensurePythonVenv, PY_REPLAY_TOOLS, PY_TOOLS_VENV, withInstallLock } from '../../src/stack/tools';

export const VENV = PY_TOOLS_VENV;
export const VENV_PY = path.join(VENV, 'bin', 'python');
/** Pinned so every machine checks our WARCs with the same reader; the one pin the replay tools' venv shares. */
export const WARCIO_VERSION = PY_REPLAY_TOOLS.warcio!;

export function run(cmd: string, args: string[], input?: string) {
  return spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 64 * 1024 * 1024 });
}

/** The warcio version importable from the venv, or null. */
function installedWarcio(): string | null {
  const res = run(VENV_PY, ['-c', "import warcio, importlib.metadata as m; print(m.version('warcio'))"]);
  return res.status === 0 ? res.stdout.trim() : null;
}

export async function ensurePythonWarcio(): Promise<void> {
  if (installedWarcio() === WARCIO_VERSION) return;
  await withInstallLock(async () => {
    if (installedWarcio() === WARCIO_VERSION) return;
    const python = ensurePythonVenv(VENV, { purpose: 'the independent WARC check (Python warcio)' });
    const pip = run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `warcio==${WARCIO_VERSION}`]);
    if (pip.status !== 0) throw new Error(`pip install warcio==${WARCIO_VERSION} failed:\n${pip.stdout}${pip.stderr}`);
  });
  const version = installedWarcio();
  if (version !== WARCIO_VERSION) throw new Error(`warcio ${WARCIO_VERSION} is still not importable from ${VENV_PY} (found ${version ?? 'none'})`);
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
  return res.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as PyRecord);
}

// One exchange's records as warcio reads them, with the payload digest
// recomputed here from the payload bytes warcio hands over (SHA-1, base32,
// the form WARC-Payload-Digest takes), not taken from our header.
export const PY_EXCHANGES = String.raw`
import sys, json, hashlib, base64
from warcio.archiveiterator import ArchiveIterator
prefix = sys.argv[1]
for path in sys.argv[2:]:
    with open(path, 'rb') as fh:
        for rec in ArchiveIterator(fh, check_digests=True):
            h = rec.rec_headers
            uri = h.get_header('WARC-Target-URI') or ''
            if not uri.startswith(prefix) or rec.rec_type not in ('request', 'response'):
                continue
            payload = rec.content_stream().read()
            out = {
                'type': rec.rec_type,
                'id': h.get_header('WARC-Record-ID'),
                'uri': uri,
                'concurrentTo': h.get_header('WARC-Concurrent-To'),
                'payloadDigest': h.get_header('WARC-Payload-Digest'),
                'recomputed': 'sha1:' + base64.b32encode(hashlib.sha1(payload).digest()).decode('ascii'),
                'passed': rec.digest_checker.passed,
            }
            if rec.rec_type == 'response':
                out['status'] = rec.http_headers.get_statuscode()
                out['location'] = rec.http_headers.get_header('Location')
                out['body'] = payload.decode('utf-8', 'replace')
            else:
                out['requestLine'] = rec.http_headers.protocol + ' ' + rec.http_headers.statusline
            print(json.dumps(out))
`;

export interface PyExchangeRecord {
  type: 'request' | 'response';
  id: string;
  uri: string;
  concurrentTo: string | null;
  payloadDigest: string | null;
  recomputed: string;
  passed: boolean | null;
  status?: string;
  location?: string | null;
  body?: string;
  requestLine?: string;
}

/** The request and response records whose WARC-Target-URI starts with `prefix`, in file order. */
export function readExchangesWithWarcio(files: string[], prefix: string): PyExchangeRecord[] {
  const res = run(VENV_PY, ['-c', PY_EXCHANGES, prefix, ...files]);
  if (res.status !== 0) throw new Error(`warcio failed (${res.status}): ${res.stderr}`);
  return res.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as PyExchangeRecord);
}
