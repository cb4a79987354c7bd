// The crawler as a library: `npm pack` makes a package that installs into
// an empty project, type-checks against its declarations, and starts,
// steers and awaits a campaign over a Temporal client the application owns.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { generateSites } from '../web/test-web';
import { createHarness, type Harness } from '../support/harness';
import { PROJECT_ROOT } from '../../src/config/project-root';

jest.setTimeout(600_000);
const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let h: Harness;
let app: string;
const HOST = 'lib.package.test';

beforeAll(async () => {
  h = await createHarness('library', { workers: 1 });
  for (const spec of generateSites({ count: 1, pages: 10, fanOut: 2, crossPerPage: 0, hostPattern: () => HOST, seed: 21 })) h.web.addSite(spec);
  // Pack as a publisher would (prepack compiles the library), install into an empty project.
  app = fs.mkdtempSync(path.join(h.outDir, 'app-'));
  const packed = await run(npm, ['pack', '--silent', '--pack-destination', app], { cwd: PROJECT_ROOT, maxBuffer: 16 * 1024 * 1024 });
  const tarball = path.join(app, packed.stdout.trim().split('\n').pop()!);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'crawler-app', version: '1.0.0', private: true }));
  // Every dependency is in npm's cache after the project's own install: no download needed.
  await run(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], { cwd: app, maxBuffer: 64 * 1024 * 1024 });
});
afterAll(() => h?.close());

test('the packed library installs, type-checks, and runs a campaign over the caller’s client', async () => {
  const installed = JSON.parse(fs.readFileSync(path.join(app, 'node_modules', 'durable-crawler', 'package.json'), 'utf8')) as { main: string; types: string };
  expect(fs.existsSync(path.join(app, 'node_modules', 'durable-crawler', installed.types))).toBe(true);

  // The application as a user writes it, in TypeScript against the package's declarations.
  const source = `
import { Client, Connection } from '@temporalio/client';
import { CampaignInputError, defineHandler, startCampaign, campaignHandle, type CampaignInput, type CampaignResult, type Handler } from 'durable-crawler';

const handler: Handler = defineHandler({ onPage: ({ url }) => ({ items: [{ url }] }) });
void handler;

async function main(): Promise<void> {
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const client = new Client({ connection });
  try {
    // A bad input is refused before anything reaches Temporal, with every problem listed.
    try {
      await startCampaign(client, { seeds: ['http://example.test/'], budgets: { maxPages: -1 } }, { taskQueue: process.env.TASK_QUEUE });
      throw new Error('a bad campaign was accepted');
    } catch (err) {
      if (!(err instanceof CampaignInputError)) throw err;
      console.log('REFUSED ' + err.problems.join(' | '));
    }
    const input: CampaignInput = JSON.parse(process.env.CAMPAIGN!);
    const campaign = await startCampaign(client, input, { taskQueue: process.env.TASK_QUEUE });
    const status = await campaignHandle(client, campaign.campaignId).status();
    console.log('STATUS ' + status.campaignId);
    const result: CampaignResult = await campaign.result();
    console.log('RESULT ' + JSON.stringify(result));
  } finally {
    await connection.close();
  }
}
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
`;
  fs.writeFileSync(path.join(app, 'app.ts'), source);
  const tsc = path.join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await run(
    process.execPath,
    [
      tsc,
      '--strict',
      '--skipLibCheck',
      '--esModuleInterop',
      '--target',
      'ES2022',
      '--module',
      'commonjs',
      '--moduleResolution',
      'node',
      '--typeRoots',
      path.join(PROJECT_ROOT, 'node_modules', '@types'),
      '--types',
      'node',
      '--lib',
      'ES2022',
      'app.ts',
    ],
    { cwd: app },
  ).catch((err: { stdout?: string }) => {
    throw new Error(`the application does not type-check against the package:\n${err.stdout}`);
  });

  const seed = h.web.url(HOST, '/');
  const campaign = {
    campaignId: `lib-${process.pid}`,
    seeds: [seed],
    politeness: { minDelayMs: 50 },
    fetch: { resolve: h.web.resolveArgs() },
    output: { dir: path.join(h.outDir, 'lib-out') },
  };
  const { stdout } = await run(process.execPath, ['app.js'], {
    cwd: app,
    env: { ...process.env, TASK_QUEUE: h.taskQueue, CAMPAIGN: JSON.stringify(campaign) },
  });
  expect(stdout).toMatch(/^REFUSED .*budgets\.maxPages/m);
  expect(stdout).toContain(`STATUS ${campaign.campaignId}`);
  const result = JSON.parse(
    stdout
      .split('\n')
      .find((l) => l.startsWith('RESULT '))!
      .slice(7),
  ) as { status: string; pages: number; failed: number };
  expect(result).toMatchObject({ status: 'completed', pages: h.web.expectedPages([seed]).size, failed: 0 });
});
