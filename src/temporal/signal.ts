import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';

/**
 * Signals a workflow that may have ended already (a host workflow that
 * completed, a campaign that finished): a workflow that is not running is
 * nobody to tell, so "workflow not found" returns false. Anything else (the
 * server unreachable, a refused payload) is thrown, for the caller's retries.
 */
export async function signalIfRunning<Args extends unknown[]>(client: Client, workflowId: string, signal: SignalDefinition<Args>, ...args: Args): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).signal(signal, ...args);
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
