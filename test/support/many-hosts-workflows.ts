// Workflow module of test/integration/many-hosts.test.ts: the real campaign
// workflow, and under the real domain workflow's type name a stand-in that
// fetches nothing and closes at once, sending the campaign the report a
// domainCrawl sends when it closes (workflows/domain-crawl.ts: kind
// `closed`, its host's counters, the wake sequence it has seen, state
// `done`). The campaign cannot tell the difference, so its bookkeeping,
// dispatch and continue-as-new run for real at a host count a real crawl
// could not reach in a test's time. (Idle-then-close would cost each host
// two more workflow tasks and a timer, doubling the test on a 2-core box;
// the idle path is covered by the crawl tests.)
import { getExternalWorkflowHandle } from '@temporalio/workflow';
import type { DomainCrawlInput, DomainCrawlResult } from '../../workflows/domain-crawl';
import { domainReportSignal, type HostStats } from '../../workflows/messages';

export { crawlCampaign } from '../../workflows/crawl-campaign';

export async function domainCrawl(input: DomainCrawlInput): Promise<DomainCrawlResult> {
  // One page of as many bytes as the host name is long, so the campaign's sums tell hosts apart.
  const stats: HostStats = { fetched: 1, failed: 0, skipped: 0, bytes: input.host.length };
  await getExternalWorkflowHandle(input.campaignWorkflowId).signal(domainReportSignal, {
    host: input.host,
    kind: 'closed',
    seq: input.carry?.seq ?? 0,
    stats,
    state: 'done',
    frontier: 0,
  });
  return { host: input.host, stats, reason: 'idle' };
}
