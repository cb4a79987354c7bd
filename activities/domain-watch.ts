// Domain workflows that ended without telling their campaign: terminated by
// an operator (Web UI, `temporal workflow terminate`), failed, timed out or
// cancelled from outside. Such a domain never sends its closing report, so
// the campaign would wait for it forever and keep its concurrency slot taken.
import { WorkflowNotFoundError } from '@temporalio/client';
import type { WorkerRuntime } from './runtime';
import type { ClosedDomain, FindClosedDomainsInput } from './types';

const ABNORMAL = ['Terminated', 'Failed', 'TimedOut', 'Canceled'];

export function findClosedDomainsActivity(rt: WorkerRuntime) {
  return async function findClosedDomains(input: FindClosedDomainsInput): Promise<ClosedDomain[]> {
    const client = rt.deps.temporal;
    const quoted = input.campaignId.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
    // Visibility finds candidates cheaply (abnormal ends are rare); the
    // latest run decides, since a host whose old run was terminated may have
    // been started again since.
    const query = `CrawlCampaign = "${quoted}" AND (${ABNORMAL.map((s) => `ExecutionStatus = "${s}"`).join(' OR ')})`;
    const prefix = `${input.campaignId}/`;
    const ids = new Set<string>();
    for await (const wf of client.workflow.list({ query })) {
      if (wf.type === 'domainCrawl' && wf.workflowId.startsWith(prefix)) ids.add(wf.workflowId);
    }
    const closed: ClosedDomain[] = [];
    for (const id of ids) {
      const host = id.slice(prefix.length);
      try {
        const d = await client.workflow.getHandle(id).describe();
        if (d.status.name !== 'RUNNING' && d.status.name !== 'COMPLETED' && d.status.name !== 'CONTINUED_AS_NEW') {
          closed.push({ host, status: d.status.name });
        }
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    }
    return closed;
  };
}
