// Every activity the workflows call has a bounded retry policy (issue: a
// robots.txt or page step retried without limit kept its host from ever
// finishing), taken from the one retry table (src/config/retry-policy.ts).
// Read from the workflow sources: each proxyActivities /
// proxyLocalActivities call must take its retry policy from
// ACTIVITY_RETRY, so an activity added with Temporal's default (unlimited
// attempts) or a policy of its own fails here.
import fs from 'node:fs';
import path from 'node:path';
import { ACTIVITY_RETRY } from '../../src/config/retry-policy';

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

test.each(proxies.map((p, i) => [`${p.file} #${i}`, p] as const))('%s takes its retry policy from the retry table, bounded', (_name, p) => {
  const ref = /retry:\s*(?:\{\s*\.\.\.)?ACTIVITY_RETRY\.(\w+)/.exec(p.options);
  expect({ file: p.file, policy: ref?.[1] ?? null }).toEqual({ file: p.file, policy: expect.any(String) });
  // No field of the policy written beside the table's (only which errors are final is the call's own).
  expect(p.options).not.toMatch(/maximumAttempts|initialInterval|maximumInterval|backoffCoefficient/);
  const policy = (ACTIVITY_RETRY as Record<string, { maximumAttempts: number }>)[ref![1]];
  expect(policy.maximumAttempts).toBeGreaterThan(0);
});

test('every policy in the table is bounded', () => {
  for (const [name, p] of Object.entries(ACTIVITY_RETRY)) expect({ name, bounded: Number.isInteger(p.maximumAttempts) && p.maximumAttempts > 0 }).toEqual({ name, bounded: true });
});
