// The workflow of the bench's floor scenario (bench/workflow-floor.ts): it
// does nothing, so what it costs is what any workflow costs.
import { proxySinks, type Sinks } from '@temporalio/workflow';

export interface FloorSinks extends Sinks {
  floor: { done(): void };
}

const { floor } = proxySinks<FloorSinks>();

export async function emptyWorkflow(): Promise<void> {
  // Tells the bench's worker it ran (a sink call rides on the activation's
  // completion: no round trip), so the bench needs no long poll of its result.
  floor.done();
}
