import fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  await globalThis.__CRAWLER_TEST_STACK__?.stop();
  const dir = process.env.CRAWLER_TEST_DATA_DIR;
  if (dir && !process.env.CRAWLER_KEEP_TEST_DATA) fs.rmSync(dir, { recursive: true, force: true });
}
