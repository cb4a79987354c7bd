// The workflow types (the workflow functions' names, test/unit/signal.test.ts
// checks they match), for the code that starts, signals or lists workflows
// by type: a misspelt type starts nothing and lists nothing, silently.
export const CAMPAIGN_WORKFLOW = 'crawlCampaign';
export const DOMAIN_WORKFLOW = 'domainCrawl';
