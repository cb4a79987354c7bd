// Every activity the workflows call has a bounded retry policy (issue: a
// robots.txt or page step retried without limit kept its host from ever
// finishing). Read from the workflow sources: each proxyActivities /
// proxyLocalActivities call must name maximumAttempts, so an activity added
// with Temporal's default (unlimited attempts) fails here.
import fs from 'node:fs';
import path from 'node:path';

const DIR = path.join(__dirname, '..', '..', 'workflows');

const proxies = fs
  .readdirSync(DIR)
  .filter((f) => f.endsWith('.ts'))
  .flatMap((f) => {
    const src = fs.readFileSync(path.join(DIR, f), 'utf8');
    const out: { file: string; options: string }[] = [];
    for (const m of src.matchAll(/proxy(?:Local)?Activities<[^>]+>\(\{/g)) {
      // The options object: from its brace to the matching one.
      let depth = 0;
      let end = m.index! + m[0].length - 1;
      for (; end < src.length; end++) {
        if (src[end] === '{') depth++;
        else if (src[end] === '}' && --depth === 0) break;
      }
      let options = src.slice(m.index! + m[0].length - 1, end + 1);
      // Options shared by several proxies (`{ ...sessionOptions, … }`) count as written out.
      for (const [, name] of options.matchAll(/\.\.\.(\w+)/g)) {
        const decl = new RegExp(`const ${name}(?::[^=]+)? = (\\{[\\s\\S]*?\\n\\});`).exec(src);
        if (decl) options += decl[1];
      }
      out.push({ file: f, options });
    }
    return out;
  });

test('the workflows proxy their activities in several places', () => {
  expect(proxies.length).toBeGreaterThanOrEqual(4);
});

test.each(proxies.map((p, i) => [`${p.file} #${i}`, p] as const))('%s has a bounded retry policy', (_name, p) => {
  const attempts = /maximumAttempts:\s*(\d+)/.exec(p.options);
  expect({ file: p.file, maximumAttempts: attempts ? Number(attempts[1]) : null }).toEqual({ file: p.file, maximumAttempts: expect.any(Number) });
  expect(Number(attempts![1])).toBeGreaterThan(0);
});
