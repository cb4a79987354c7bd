import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';

/**
 * Signals a workflow that may have ended already (a host workflow that
 * completed, a campaign that finished): a workflow that is not running is
 * nobody to tell, so "workflow not found" returns false. Anything else (the
 * server unreachable, a refused payload) is thrown, for the caller's retries.
 */
export async function signalIfRunning<Args extends unknown[]>(client: Client, workflowId: string, signal: SignalDefinition<Args>, ...args: Args): Promise<boolean> {
  return signalRunIfRunning(client, { workflowId }, signal, ...args);
}

/**
 * The same, to one run of the workflow (`runId`): a message about that run (one of its sessions)
 * is for nobody once it ended, even when a newer run of the workflow is open.
 */
export async function signalRunIfRunning<Args extends unknown[]>(
  client: Client,
  run: { workflowId: string; runId?: string },
  signal: SignalDefinition<Args>,
  ...args: Args
): Promise<boolean> {
  try {
    await client.workflow.getHandle(run.workflowId, run.runId).signal(signal, ...args);
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
