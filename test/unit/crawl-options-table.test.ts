// docs/crawl-options.md lists every flag of `crawl` as the commander
// definitions declare them; these tests fail when the file and the code part.
import fs from 'node:fs';
import { buildCampaignInput, type CrawlOptions } from '../../src/cli/commands/crawl';
import { CRAWL_OPTIONS_DOC, crawlCommand, crawlOptionsTable, SETTING_OF_FLAG, TABLE_END, TABLE_START, tableIn, withTable } from '../../src/cli/crawl-options-table';
import { resolveCampaignSettings } from '../../src/config/campaign';

const REGENERATE = 'npx tsx src/cli/crawl-options-table.ts --write';

/** Every leaf setting of a resolved campaign, as docs/settings.md lists them. */
function settingPaths(o: object, prefix = ''): string[] {
  return Object.entries(o).flatMap(([k, v]) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? settingPaths(v as object, `${prefix}${k}.`) : [`${prefix}${k}`]));
}

const at = (o: unknown, dotted: string): unknown => dotted.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], o);

test('docs/crawl-options.md holds the table of flags exactly as the generator builds it from crawl.ts', () => {
  const table = crawlOptionsTable();
  const inDoc = tableIn(fs.readFileSync(CRAWL_OPTIONS_DOC, 'utf8'));
  if (inDoc !== table) {
    const docLines = (inDoc ?? '').split('\n');
    const first = table.split('\n').findIndex((line, i) => line !== docLines[i]);
    throw new Error(
      inDoc === null
        ? `docs/crawl-options.md lacks its crawl-options markers`
        : `docs/crawl-options.md is out of date with src/cli/commands/crawl.ts (first difference at table line ${first + 1}): run ${REGENERATE}`,
    );
  }
});

test('the table has a row per flag of crawl, in --help order, with its argument, description and default', () => {
  const table = crawlOptionsTable();
  const rows = table.trim().split('\n').slice(2);
  const flags = crawlCommand().options.map((o) => o.long);
  // The seeds argument first, then one row per flag.
  expect(rows[0]).toBe('| | `[seeds...]` | seed URLs (optional with --seeds-file) | `seeds` |');
  expect(rows.slice(1).map((r) => /^\| `([^`]+)`/.exec(r)?.[1])).toEqual(flags);
  expect(flags).toEqual(expect.arrayContaining(['--max-pages', '--render', '--handler', '--workers', '--json', '--seeds-file']));
  // A default commander applies is shown; a `|` in an argument does not end the cell; `<out>` is not read as a tag.
  expect(table).toContain('| `--workers` | `<n>` | worker processes to start (0: use workers running elsewhere) (default 1) |  |');
  expect(table).toContain('| `--seeds-file` | `<file\\|url\\|->` |');
  expect(table).toContain('items go to &lt;out&gt;/datasets');
});

test('every flag with a setting names a real campaign setting and a real flag of crawl', () => {
  const settings = settingPaths(resolveCampaignSettings({ seeds: ['http://a.test/'] }, 'c1'));
  const flags = crawlCommand().options.map((o) => o.long);
  for (const [flag, setting] of Object.entries(SETTING_OF_FLAG)) {
    expect({ flag, known: flags.includes(flag) }).toEqual({ flag, known: true });
    expect({ flag, setting, known: settings.includes(setting) }).toEqual({ flag, setting, known: true });
  }
});

test('a numeric flag parsed by crawl lands in the setting the table names for it', async () => {
  const numeric = crawlCommand()
    .options.filter((o) => o.flags.endsWith('<n>') && o.long && SETTING_OF_FLAG[o.long])
    .map((o) => o.long!);
  expect(numeric.length).toBeGreaterThan(10);
  for (const flag of numeric) {
    // A fresh command each time (commander keeps parsed values), its action swapped for one that only keeps the options.
    const crawl = crawlCommand().exitOverride();
    let parsed: CrawlOptions | undefined;
    crawl.action((_seeds: string[], o: CrawlOptions) => {
      parsed = o;
    });
    await crawl.parseAsync(['http://a.test/', flag, '7'], { from: 'user' });
    const input = buildCampaignInput(['http://a.test/'], parsed!);
    expect({ flag, value: at(input, SETTING_OF_FLAG[flag]) }).toEqual({ flag, value: 7 });
  }
});

test('the table is written between the markers, the prose around it kept', () => {
  const doc = `intro\n${TABLE_START}\nold\n${TABLE_END}\nafter\n`;
  const written = withTable(doc, '| new |\n');
  expect(written).toBe(doc.replace('old\n', '| new |\n'));
  expect(tableIn(written)).toBe('| new |\n');
  expect(() => withTable('no markers', '| x |\n')).toThrow(/lacks the markers/);
});
