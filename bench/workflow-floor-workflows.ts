// The workflow of the bench's floor scenario (bench/workflow-floor.ts): it
// does nothing, so what it costs is what any workflow costs.
export async function emptyWorkflow(): Promise<void> {
  // Nothing: one workflow task, then completion.
}
