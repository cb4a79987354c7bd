// What a session takes for Redis serving again after an outage (activities/redis-outage.ts):
// on a cluster, every node that answers must say that every slot is served.
import { clusterHealthy } from '../../activities/redis-outage';

const info = (state: string, fail: number, pfail: number) =>
  [
    'cluster_enabled:1',
    `cluster_state:${state}`,
    'cluster_slots_assigned:16384',
    `cluster_slots_ok:${16384 - fail - pfail}`,
    `cluster_slots_pfail:${pfail}`,
    `cluster_slots_fail:${fail}`,
    'cluster_known_nodes:6',
    '',
  ].join('\r\n');

test('a cluster serves again once no slot is failing or suspected of it', () => {
  expect(clusterHealthy(info('ok', 0, 0))).toBe(true);
  // A master found failed: its slots are down until its replica takes over.
  expect(clusterHealthy(info('fail', 5461, 0))).toBe(false);
  // A master silent past the node timeout but not yet agreed failed: its slots are suspected.
  expect(clusterHealthy(info('ok', 0, 5461))).toBe(false);
  expect(clusterHealthy('')).toBe(false);
});
