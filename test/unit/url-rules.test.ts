// scope.include / scope.exclude: what each applies to, and how the campaign
// input refuses a bad pattern (naming it) or too many of them.
import { resolveCampaignSettings, CampaignInputError } from '../../src/config/campaign';
import { buildCampaignInput } from '../../src/cli/commands/crawl';
import { UsageError } from '../../src/cli/usage-error';
import { compileUrlRules, MAX_URL_RULE_LENGTH, MAX_URL_RULES } from '../../src/url/url-rules';
import { ruleTarget } from '../../activities/discovery';

const problems = (scope: object): string[] => {
  try {
    resolveCampaignSettings({ seeds: ['http://a.test/'], scope } as never, 'c');
  } catch (err) {
    if (err instanceof CampaignInputError) return err.problems;
    throw err;
  }
  return [];
};

describe('compileUrlRules', () => {
  const rules = compileUrlRules({ include: ['/docs/', '\\.pdf$'], exclude: ['/ads/', '[?&]print=1'] });

  it('lets a link through only when an include matches and no exclude does', () => {
    expect(rules.verdict('http://a.test/docs/intro', 'link')).toBeNull();
    expect(rules.verdict('http://a.test/files/x.pdf', 'link')).toBeNull();
    expect(rules.verdict('http://a.test/blog/', 'link')).toBe('NOT_INCLUDED');
    expect(rules.verdict('http://a.test/docs/ads/x', 'link')).toBe('EXCLUDED');
    expect(rules.verdict('http://a.test/docs/intro?print=1', 'link')).toBe('EXCLUDED');
  });

  it('holds seeds, sitemaps and requisites to the excludes only', () => {
    for (const target of ['seed', 'list', 'embed'] as const) {
      expect(rules.verdict('http://a.test/static/site.css', target)).toBeNull();
      expect(rules.verdict('http://a.test/ads/banner.png', target)).toBe('EXCLUDED');
    }
  });

  it('is unanchored, like frontier priorities, and lets everything through when empty', () => {
    expect(compileUrlRules({ include: ['a\\.test/docs'] }).verdict('http://a.test/docs/', 'link')).toBeNull();
    expect(compileUrlRules({ include: ['^/docs/'] }).verdict('http://a.test/docs/', 'link')).toBe('NOT_INCLUDED');
    const none = compileUrlRules({});
    expect(none.empty).toBe(true);
    expect(none.verdict('http://a.test/anything', 'link')).toBeNull();
  });

  it('tells seeds and their redirects from links, and lists and embeds from pages', () => {
    expect(ruleTarget(undefined, '')).toBe('link');
    expect(ruleTarget('page', 'R')).toBe('seed');
    expect(ruleTarget('page', 'RR')).toBe('seed');
    expect(ruleTarget('page', 'LR')).toBe('link');
    expect(ruleTarget('embed', 'LE')).toBe('embed');
    expect(ruleTarget('sitemap', 'P')).toBe('list');
    expect(ruleTarget('feed', 'L')).toBe('list');
  });
});

describe('scope.include / scope.exclude in the campaign input', () => {
  it('defaults to no rules', () => {
    const s = resolveCampaignSettings({ seeds: ['http://a.test/'] }, 'c');
    expect(s.scope).toMatchObject({ include: [], exclude: [] });
  });

  it('refuses a pattern that is not a regular expression, naming it and its field', () => {
    const p = problems({ include: ['/docs/', '(unclosed'], exclude: ['[z-a]'] });
    expect(p).toEqual([
      expect.stringMatching(/^scope\.include\[1\] "\(unclosed" is not a valid regular expression/),
      expect.stringMatching(/^scope\.exclude\[0\] "\[z-a\]" is not a valid regular expression/),
    ]);
  });

  it('bounds the number and the length of patterns', () => {
    expect(problems({ exclude: Array.from({ length: MAX_URL_RULES + 1 }, (_, i) => `/p${i}/`) })).toEqual([
      `scope.exclude has ${MAX_URL_RULES + 1} exclude patterns; at most ${MAX_URL_RULES}`,
    ]);
    expect(problems({ include: ['x'.repeat(MAX_URL_RULE_LENGTH + 1)] })).toEqual([
      `scope.include[0] is ${MAX_URL_RULE_LENGTH + 1} characters long; at most ${MAX_URL_RULE_LENGTH}`,
    ]);
    expect(problems({ include: [''] })).toEqual([expect.stringMatching(/^scope\.include\[0\] must be a non-empty regular expression/)]);
    expect(problems({ include: '/docs/' })).toEqual([expect.stringMatching(/^scope\.include must be a list of regular expressions/)]);
  });

  it('comes from repeatable --include / --exclude, beside the scope mode; a bad one is a usage error', () => {
    const input = buildCampaignInput(['http://a.test/'], { workers: 1, resolve: [], priority: [], sameHost: true, include: ['/docs/', '/api/'], exclude: ['/ads/'] });
    expect(input.scope).toEqual({ mode: 'same-host', include: ['/docs/', '/api/'], exclude: ['/ads/'] });
    expect(() => buildCampaignInput(['http://a.test/'], { workers: 1, resolve: [], priority: [], exclude: ['(('] })).toThrow(UsageError);
    expect(() => buildCampaignInput(['http://a.test/'], { workers: 1, resolve: [], priority: [], exclude: ['(('] })).toThrow(/scope\.exclude\[0\] "\(\(" is not a valid/);
  });
});
