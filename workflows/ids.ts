// Deterministic, readable workflow IDs: the Web UI shows `campaign/host`.
export const domainWorkflowId = (campaignId: string, host: string): string => `${campaignId}/${host}`;
