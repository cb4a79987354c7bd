// The worker's workflowsPath points here.
export { crawlCampaign } from './crawl-campaign';
export { domainCrawl } from './domain-crawl';
