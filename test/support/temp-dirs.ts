// Temporary folders for a test file, removed after its last test.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Returns a maker of fresh folders named `<prefix>…` under the OS temp dir; all of them go after the file's tests. */
export function tempDirs(prefix: string): () => string {
  const made: string[] = [];
  afterAll(() => {
    for (const d of made) fs.rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    made.push(d);
    return d;
  };
}
