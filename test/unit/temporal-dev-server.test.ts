import { CRAWL_SEARCH_ATTRIBUTES } from '../../src/temporal/search-attributes';
import { devServerArgs } from '../../src/stack/temporal-dev-server';

/** The values of every `--flag value` pair of a command line. */
function valuesOf(args: string[], flag: string): string[] {
  return args.flatMap((a, i) => (a === flag ? [args[i + 1]] : []));
}

describe('the dev server command line', () => {
  const args = devServerArgs({ port: 7233, uiPort: 8233, dataDir: '/data' });

  test('keeps the search attribute registry cached instead of re-reading it on every start and visibility record', () => {
    const dynamic = valuesOf(args, '--dynamic-config-value');
    expect(dynamic).toContain('system.forceSearchAttributesCacheRefreshOnRead=false');
  });

  test("closes a connection whose worker stops answering pings within 2 s (a frozen worker's polls stop taking tasks before its lease runs out)", () => {
    const dynamic = valuesOf(args, '--dynamic-config-value');
    expect(dynamic).toEqual(expect.arrayContaining(['frontend.keepAliveTime="1s"', 'frontend.keepAliveTimeout="1s"']));
  });

  test("has the server end a stopping worker's polls, so no task handed to one at that instant is lost", () => {
    expect(valuesOf(args, '--dynamic-config-value')).toContain('frontend.enableCancelWorkerPollsOnShutdown=true');
  });

  test('registers every crawler search attribute before the server serves, which is what makes the cached registry complete', () => {
    const registered = valuesOf(args, '--search-attribute');
    expect(registered.sort()).toEqual(CRAWL_SEARCH_ATTRIBUTES.map((sa) => `${sa.name}=${sa.cliType}`).sort());
  });

  test('persists to SQLite in WAL mode under the data directory', () => {
    expect(valuesOf(args, '--db-filename')).toEqual(['/data/temporal.sqlite']);
    expect(valuesOf(args, '--sqlite-pragma')).toEqual(['journal_mode=wal', 'synchronous=normal']);
  });

  test('passes a caller’s dynamic config after the defaults, as JSON', () => {
    const withOwn = devServerArgs({ port: 7233, dataDir: '/data', headless: true, dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 40 } });
    const dynamic = valuesOf(withOwn, '--dynamic-config-value');
    expect(dynamic[dynamic.length - 1]).toBe('limit.historyCount.suggestContinueAsNew=40');
    expect(withOwn).toContain('--headless');
    expect(withOwn).not.toContain('--ui-port');
  });
});
