// The workflow types (the workflow functions' names, test/unit/signal.test.ts
// checks they match), for the code that starts, signals or lists workflows
// by type: a misspelt type starts nothing and lists nothing, silently.
export const CAMPAIGN_WORKFLOW = 'crawlCampaign';
/** A host's workflow, as the dispatch starts it. */
export const DOMAIN_WORKFLOW = 'hostCrawl';
/**
 * The host workflow of releases before the first session ran locally
 * (workflows/domain-crawl.ts): runs started as it keep their commands, so
 * their histories replay; nothing starts it any more.
 */
export const LEGACY_DOMAIN_WORKFLOW = 'domainCrawl';
/** Every type a host's workflow may run as (lists and watches look for both). */
export const DOMAIN_WORKFLOWS: readonly string[] = [DOMAIN_WORKFLOW, LEGACY_DOMAIN_WORKFLOW];
