// Include and exclude patterns from the campaign input (scope.include,
// scope.exclude; `--include` / `--exclude` on `crawl`): the URL rules every
// peer has in configuration, so narrowing a crawl needs no handler code.
// Pure: the campaign schema (which the workflow bundles) validates patterns
// with checkUrlPattern, and activities compile them once per campaign.
//
// What a rule applies to (docs/url-rules.md):
// - exclude: every URL the crawler would enqueue — links, redirect targets,
//   handler links, sitemaps, seeds and page requisites (an operator excluding
//   /ads/ wants no ads, whatever the page that shows them);
// - include: links, redirect targets and handler links only. Seeds, sitemaps
//   and feeds are how the crawler reaches the included pages, and a page's
//   requisites are what make it whole: an include of /docs/ must not cost the
//   docs their /static/ stylesheet, nor the crawl its entry point.

/** Patterns in one list: they run on every discovered URL, so their cost stays bounded. */
export const MAX_URL_RULES = 100;
export const MAX_URL_RULE_LENGTH = 500;

/** What a URL is being enqueued as; only 'link' (a page reached by a link, a redirect or a handler) is held to the includes. */
export type UrlRuleTarget = 'link' | 'seed' | 'list' | 'embed';

/** Why a URL was turned away: the index's rejectedLinks codes. */
export type UrlRuleCode = 'EXCLUDED' | 'NOT_INCLUDED';

export interface UrlRuleSpec {
  include?: readonly string[];
  exclude?: readonly string[];
}

export interface UrlRules {
  /** True when neither list has a pattern: callers may skip the check. */
  readonly empty: boolean;
  /** null: the URL may be enqueued; otherwise why not. `url` is the normalised URL. */
  verdict(url: string, target: UrlRuleTarget): UrlRuleCode | null;
}

/** A pattern's problem in the words of the campaign input's errors, or null. The pattern is named: it is configuration, never a secret. */
export function checkUrlPattern(pattern: string): string | null {
  if (pattern.length > MAX_URL_RULE_LENGTH) return `is ${pattern.length} characters long; at most ${MAX_URL_RULE_LENGTH}`;
  try {
    new RegExp(pattern);
  } catch (err) {
    return `${JSON.stringify(pattern)} is not a valid regular expression: ${(err as Error).message}`;
  }
  return null;
}

const NO_RULES: UrlRules = { empty: true, verdict: () => null };

/**
 * Compiles the lists (already validated by the campaign schema). Patterns
 * are JavaScript regular expressions without flags, unanchored, matched
 * against the normalised URL, as frontier priorities are.
 */
export function compileUrlRules(spec: UrlRuleSpec | undefined): UrlRules {
  const include = (spec?.include ?? []).map((p) => new RegExp(p));
  const exclude = (spec?.exclude ?? []).map((p) => new RegExp(p));
  if (include.length === 0 && exclude.length === 0) return NO_RULES;
  return {
    empty: false,
    verdict(url, target) {
      for (const re of exclude) if (re.test(url)) return 'EXCLUDED';
      if (target !== 'link' || include.length === 0) return null;
      for (const re of include) if (re.test(url)) return null;
      return 'NOT_INCLUDED';
    },
  };
}
