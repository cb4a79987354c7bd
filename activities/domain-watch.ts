// Domain workflows that ended without telling their campaign: terminated by
// an operator (Web UI, `temporal workflow terminate`), failed, timed out or
// cancelled from outside. Such a domain never sends its closing report, so
// the campaign would wait for it forever and keep its concurrency slot taken.
import { WorkflowNotFoundError } from '@temporalio/client';
import { queryLiteral } from '../src/temporal/search-attributes';
import { DOMAIN_WORKFLOWS } from '../src/temporal/workflow-types';
import type { WorkerRuntime } from './runtime';

/** A host workflow whose latest run ended other than by completing (its host never released its slot). */
export interface ClosedDomain {
  host: string;
  /** TERMINATED, FAILED, TIMED_OUT or CANCELLED. */
  status: string;
}

/** Visibility's names, and the client's for the same ends: an allow-list, so a PAUSED or UNKNOWN run is left alone. */
const ABNORMAL = ['Terminated', 'Failed', 'TimedOut', 'Canceled'];
const ENDED = new Set(['TERMINATED', 'FAILED', 'TIMED_OUT', 'CANCELLED']);
/** Describes in flight at once: a batch terminate of thousands of hosts must fit the activity's timeout. */
const DESCRIBE_CONCURRENCY = 20;

/**
 * Host workflows of the campaign that closed abnormally since `since` (ISO
 * 8601; runs of an earlier campaign with the same ID are not its concern).
 */
export async function findClosedDomains(rt: WorkerRuntime, input: { campaignId: string; since?: string }): Promise<ClosedDomain[]> {
  {
    const client = rt.deps.temporal;
    // Visibility finds candidates cheaply (abnormal ends are rare); the
    // latest run decides, since a host whose old run was terminated may have
    // been started again since.
    const query =
      `(${DOMAIN_WORKFLOWS.map((t) => `WorkflowType = ${queryLiteral(t)}`).join(' OR ')}) AND CrawlCampaign = ${queryLiteral(input.campaignId)}` +
      (input.since ? ` AND CloseTime >= ${queryLiteral(input.since)}` : '') +
      ` AND (${ABNORMAL.map((s) => `ExecutionStatus = '${s}'`).join(' OR ')})`;
    const prefix = `${input.campaignId}/`;
    const ids = new Set<string>();
    for await (const wf of client.workflow.list({ query })) {
      if (DOMAIN_WORKFLOWS.includes(wf.type) && wf.workflowId.startsWith(prefix)) ids.add(wf.workflowId);
    }
    const closed: ClosedDomain[] = [];
    const all = [...ids];
    for (let i = 0; i < all.length; i += DESCRIBE_CONCURRENCY) {
      await Promise.all(
        all.slice(i, i + DESCRIBE_CONCURRENCY).map(async (id) => {
          try {
            const d = await client.workflow.getHandle(id).describe();
            if (ENDED.has(d.status.name)) closed.push({ host: id.slice(prefix.length), status: d.status.name });
          } catch (err) {
            if (!(err instanceof WorkflowNotFoundError)) throw err;
          }
        }),
      );
    }
    return closed.sort((a, b) => a.host.localeCompare(b.host));
  }
}
