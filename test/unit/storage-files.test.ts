// The file helpers every storage writer shares (src/storage/files.ts) and the
// storage error (src/storage/storage-error.ts), used on their own: the
// writers of indexes, the dataset, the seal and ZIPs need them, not the WARC
// writer.
import fs from 'node:fs';
import path from 'node:path';
import { createUniqueFile, ensureWritableDir, writeFully } from '../../src/storage/files';
import { isStorageError, StorageError } from '../../src/storage/storage-error';
import { tempDirs } from '../support/temp-dirs';

const ROOT = path.resolve(__dirname, '..', '..');
const tmpDir = tempDirs('storage-files-test-');

test('createUniqueFile never hands out a name twice and never opens a file that exists', async () => {
  const dir = tmpDir();
  const made = await Promise.all(Array.from({ length: 20 }, () => createUniqueFile(dir, 'idx', '.cdxj')));
  try {
    expect(new Set(made.map((m) => m.name)).size).toBe(20);
    for (const m of made) {
      expect(m.name).toMatch(/^idx-\d{17}-.+-\d+-\d{5}\.cdxj$/);
      expect(m.path).toBe(path.join(dir, m.name));
    }
  } finally {
    await Promise.all(made.map((m) => m.fh.close()));
  }
  expect(fs.readdirSync(dir).sort()).toEqual(made.map((m) => m.name).sort());
  await expect(createUniqueFile(path.join(dir, 'missing'), 'idx', '.cdxj')).rejects.toMatchObject({ code: 'OPEN_FAILED' });
});

test('writeFully puts every byte at the position asked for', async () => {
  const dir = tmpDir();
  const { path: file, fh } = await createUniqueFile(dir, 'data', '.bin');
  try {
    await writeFully(fh, Buffer.from('hello world'), 0);
    await writeFully(fh, Buffer.from('WORLD'), 6);
  } finally {
    await fh.close();
  }
  expect(fs.readFileSync(file, 'utf8')).toBe('hello WORLD');
});

test('ensureWritableDir makes the folder, and names the path when it cannot', async () => {
  const dir = tmpDir();
  await ensureWritableDir(path.join(dir, 'a', 'b'));
  expect(fs.statSync(path.join(dir, 'a', 'b')).isDirectory()).toBe(true);
  const notADir = path.join(dir, 'file');
  fs.writeFileSync(notADir, 'x');
  const err = await ensureWritableDir(path.join(notADir, 'sub')).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(StorageError);
  expect(isStorageError(err)).toBe(true);
  expect(err).toMatchObject({ code: 'OPEN_FAILED', file: path.join(notADir, 'sub') });
});

test('writers that need only the file helpers or the error do not load the WARC writer', () => {
  // The move's point: these modules once imported src/storage/warc-writer.ts for StorageError and the file helpers.
  for (const rel of ['index-writer', 'index-tally', 'seal', 'seal-dataset', 'zip-store', 'wacz', 'files', 'storage-error']) {
    const source = fs.readFileSync(path.join(ROOT, 'src', 'storage', `${rel}.ts`), 'utf8');
    expect({ rel, importsWarcWriter: /from '\.\/warc-writer'/.test(source) }).toEqual({ rel, importsWarcWriter: false });
  }
  // And no shim left behind: the WARC writer no longer exports them.
  const writer = fs.readFileSync(path.join(ROOT, 'src', 'storage', 'warc-writer.ts'), 'utf8');
  for (const name of ['StorageError', 'isStorageError', 'createUniqueFile', 'ensureWritableDir', 'writeFully', 'uniqueFileStem']) {
    expect({ name, exported: new RegExp(`export (?:async )?(?:function|class|type) ${name}\\b|export \\{[^}]*\\b${name}\\b`).test(writer) }).toEqual({
      name,
      exported: false,
    });
  }
});
