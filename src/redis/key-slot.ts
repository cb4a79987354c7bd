// The Redis Cluster hash slot of a key (the cluster specification's CRC16 of
// the key's hash tag if it has one, modulo 16384): which keys one script may
// touch together on a cluster. Computed by `cluster-key-slot`, the function
// ioredis's Cluster routes every command by (pinned to the version ioredis
// pins), so a call grouped by slot here is one the cluster takes; no cluster
// is asked, and a single Redis, which has no slots, gets calls of the same
// shape (src/redis/keys.ts).
// It ships no types: the one function called here, typed.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const calculateSlot = require('cluster-key-slot') as (key: string) => number;

/** Hash slots of a Redis Cluster. */
export const KEY_SLOTS = 16_384;

/** The slot of `key`. */
export function keySlot(key: string): number {
  return calculateSlot(key);
}
