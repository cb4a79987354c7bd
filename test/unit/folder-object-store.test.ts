// A folder as an object store: the uploader's store in tests, and a real one
// for workers sharing a mount. What matters is the object store's contract:
// whole objects or none, never one overwritten, ranges, sizes, listings in
// key order under a prefix.
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { FolderObjectStore, objectKeyProblem } from '../../src/storage/folder-object-store';
import { tempDirs } from '../support/temp-dirs';

const tmpDir = tempDirs('folder-store-');

async function text(r: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

async function listed(store: FolderObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(`${o.key}:${o.size}`);
  return out;
}

/** Every file under `dir`, relative, so a test sees what a put left behind. */
function filesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

test('putFile and putBytes store objects under their keys; read gives them back whole or by range; size says how big', async () => {
  const root = tmpDir();
  const store = new FolderObjectStore(path.join(root, 'store'));
  const src = path.join(root, 'a.warc.gz');
  fs.writeFileSync(src, '0123456789abcdef');
  await store.putFile('warc/a.warc.gz', src);
  await store.putBytes('sealed/report.json', Buffer.from('{"pages":3}'));

  expect(await text(await store.read('warc/a.warc.gz'))).toBe('0123456789abcdef');
  expect(await text(await store.read('warc/a.warc.gz', { start: 10 }))).toBe('abcdef');
  expect(await text(await store.read('warc/a.warc.gz', { start: 3, length: 4 }))).toBe('3456');
  expect(await text(await store.read('warc/a.warc.gz', { start: 3, length: 0 }))).toBe('');
  expect(await text(await store.read('sealed/report.json'))).toBe('{"pages":3}');
  expect(await store.size('warc/a.warc.gz')).toBe(16);
  expect(await store.size('warc/none.warc.gz')).toBeNull();
  expect(await store.size('warc')).toBeNull(); // a folder is no object
  // Nothing but the objects: no temporary file left.
  expect(filesUnder(path.join(root, 'store'))).toEqual([path.join('sealed', 'report.json'), path.join('warc', 'a.warc.gz')]);
});

test('an object is never overwritten: the same size again is the same upload; another size is OBJECT_EXISTS and the object stays', async () => {
  const root = tmpDir();
  const store = new FolderObjectStore(path.join(root, 'store'));
  const src = path.join(root, 'f');
  fs.writeFileSync(src, 'first');
  await store.putFile('index/f.jsonl', src);
  // A retried upload after a crash: the same file again.
  await expect(store.putFile('index/f.jsonl', src)).resolves.toBeUndefined();
  fs.writeFileSync(src, 'something longer');
  await expect(store.putFile('index/f.jsonl', src)).rejects.toMatchObject({ name: 'StorageError', code: 'OBJECT_EXISTS' });
  await expect(store.putBytes('index/f.jsonl', Buffer.from('xx'))).rejects.toMatchObject({ code: 'OBJECT_EXISTS' });
  expect(await text(await store.read('index/f.jsonl'))).toBe('first');
  expect(filesUnder(path.join(root, 'store'))).toEqual([path.join('index', 'f.jsonl')]);
});

test('reading a key with no object is OBJECT_MISSING; keys that could leave the folder are refused', async () => {
  const store = new FolderObjectStore(tmpDir());
  await expect(store.read('warc/missing.warc.gz')).rejects.toMatchObject({ code: 'OBJECT_MISSING' });
  for (const key of ['', '/abs', '../up', 'a/../../b', 'a//b', 'a/./b', 'a\\b', 'warc/']) {
    expect(objectKeyProblem(key)).not.toBeNull();
    await expect(store.putBytes(key, Buffer.from('x'))).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  }
  expect(objectKeyProblem('datasets/default/dataset-1.jsonl')).toBeNull();
});

test('list: every object under a prefix (a string prefix, as in S3), in key order, in folders walked as their keys sort', async () => {
  const store = new FolderObjectStore(tmpDir());
  const keys = ['warc/b.warc.gz', 'warc/a.warc.gz', 'warc-x', 'warc/sub/c', 'index/i.jsonl', 'warc.txt', 'w'];
  for (const k of keys) await store.putBytes(k, Buffer.from(k));
  // `warc-x` and `warc.txt` sort before `warc/…` ('-' and '.' come before '/').
  expect(await listed(store, '')).toEqual(['index/i.jsonl:13', 'w:1', 'warc-x:6', 'warc.txt:8', 'warc/a.warc.gz:14', 'warc/b.warc.gz:14', 'warc/sub/c:10']);
  expect(await listed(store, 'warc/')).toEqual(['warc/a.warc.gz:14', 'warc/b.warc.gz:14', 'warc/sub/c:10']);
  expect(await listed(store, 'warc')).toEqual(['warc-x:6', 'warc.txt:8', 'warc/a.warc.gz:14', 'warc/b.warc.gz:14', 'warc/sub/c:10']);
  expect(await listed(store, 'warc/b')).toEqual(['warc/b.warc.gz:14']);
  expect(await listed(store, 'nothing/')).toEqual([]);
});

test('a write in progress is never an object: its temporary file is not listed', async () => {
  const root = tmpDir();
  const store = new FolderObjectStore(root);
  await store.putBytes('warc/a', Buffer.from('a'));
  // What a put killed mid-copy leaves: a temporary name beside the target.
  fs.writeFileSync(path.join(root, 'warc', '.put-0123456789abcdef.tmp'), 'half');
  expect(await listed(store, '')).toEqual(['warc/a:1']);
});

test('remove deletes an object, and a key with no object is no error', async () => {
  const dir = tmpDir();
  const store = new FolderObjectStore(dir);
  await store.putBytes('sealed/a/x.json', Buffer.from('{}'));
  await store.putBytes('sealed/a/y.json', Buffer.from('{}'));
  await store.remove('sealed/a/x.json');
  await store.remove('sealed/a/x.json');
  expect(await listed(store, 'sealed/')).toEqual(['sealed/a/y.json:2']);
  await expect(store.remove('../outside')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
});
