// The worker's workflowsPath points here.
export { crawlCampaign } from './crawl-campaign';
export { domainCrawl, hostCrawl } from './domain-crawl';
