// The worker's activity slots, handed out by load (issue 38). The SDK polls
// the task queue for an activity only once it holds a slot for it; with a
// fixed pool of slots (hundreds, as I/O-bound sessions need) a worker always
// had one, so it polled whatever its load, and the task queue, which gives a
// task to the longest-waiting poll, handed a burst of sessions to whichever
// worker had polled first: every session of a few-host campaign on one
// worker, one core busy and the others idle. Here a worker whose thread is
// saturated (src/worker/worker-load.ts) stops asking for more until its load
// falls, and the sessions go to the workers that poll meanwhile.
import type { ActivitySlotInfo, CustomSlotSupplier, SlotPermit } from '@temporalio/worker';
import type { WorkerLoad } from './worker-load';

/** How often a waiting reservation looks at the load again. */
const RECHECK_MS = 100;

export function sessionSlotSupplier(load: Pick<WorkerLoad, 'full' | 'started' | 'ended'>, slots: number): CustomSlotSupplier<ActivitySlotInfo> & { readonly issued: number } {
  let issued = 0;
  const free = (): boolean => issued < slots && !load.full();
  const permit = (): SlotPermit => {
    issued++;
    return {};
  };
  return {
    type: 'custom',
    get issued() {
      return issued;
    },
    reserveSlot(_ctx, abortSignal) {
      if (free()) return Promise.resolve(permit());
      return new Promise<SlotPermit>((resolve, reject) => {
        const timer = setInterval(() => {
          if (!free()) return;
          done();
          resolve(permit());
        }, RECHECK_MS);
        const onAbort = () => {
          done();
          // The only rejection the SDK accepts: the reservation is no longer wanted (shutdown, fewer polls).
          const err = new Error('slot reservation aborted');
          err.name = 'AbortError';
          reject(err);
        };
        const done = () => {
          clearInterval(timer);
          abortSignal.removeEventListener('abort', onAbort);
        };
        if (abortSignal.aborted) onAbort();
        else abortSignal.addEventListener('abort', onAbort);
      });
    },
    // Eager activities (handed back with a workflow task's completion): a slot only when one is free now.
    tryReserveSlot: () => (free() ? permit() : null),
    // A task in hand counts as this worker's load at once, before its activity runs: the next poll's slot is asked for meanwhile.
    markSlotUsed: () => load.started(),
    releaseSlot: (ctx) => {
      issued = Math.max(0, issued - 1);
      // A slot released unused (a poll that timed out) carried no task.
      if (ctx.slotInfo) load.ended();
    },
  };
}
