import type { Command } from 'commander';
import { clusterDown, clusterStatus, clusterUp, readClusterState } from '../../worker/cluster';
import { OBJECT_STORE, REDIS_CLUSTER, TEMPORAL_SERVER_VERSION } from '../../stack/topology';
import { clusterCredentialsFile } from '../../stack/cluster-credentials';
import { CLUSTER_DIR } from '../../stack/cluster-state';
import { UsageError } from '../usage-error';

export function registerClusterCommands(program: Command): void {
  const cluster = program
    .command('cluster')
    .description(
      `the production topology on this machine: PostgreSQL, Temporal server ${TEMPORAL_SERVER_VERSION}, a ${REDIS_CLUSTER.masters}-master Redis Cluster with replicas, an S3 object store (bucket ${OBJECT_STORE.bucket}) and workers with no shared folder (data under .crawler/cluster)`,
    );
  cluster
    .command('up')
    .description('build what is missing and start what is not running, in the background')
    .option('--workers <n>', 'worker processes to run', '1')
    .option('--free-ports', "any free loopback ports instead of the deployment's (7233, 7001–7006, 5432, …)")
    .action(async (o: { workers: string; freePorts?: boolean }) => {
      const workers = Number(o.workers);
      if (!Number.isInteger(workers) || workers < 0) throw new UsageError(`--workers must be a whole number, got ${JSON.stringify(o.workers)}`);
      const started = Date.now();
      const first = readClusterState() === null;
      const s = await clusterUp({ workers, freePorts: o.freePorts, log: (m) => process.stderr.write(`${m}\n`) });
      const timings = Object.entries(s.timings)
        .map(([k, v]) => `${k} ${v} s`)
        .join(', ');
      process.stderr.write(`cluster up in ${Math.round((Date.now() - started) / 1000)} s${first && timings ? ` (${timings})` : ''}\n`);
      process.stdout.write(`TEMPORAL_ADDRESS=${s.temporalAddress}\nREDIS_URL=${s.redisUrl}\n`);
      // Where campaigns go, and where the key is: never the key itself.
      if (s.objectStore) {
        process.stderr.write(
          `campaigns started here write to s3://${s.objectStore.bucket}/<campaign> at ${s.objectStore.endpoint} (path-style); its credentials: ${clusterCredentialsFile(CLUSTER_DIR)} (mode 600)\n`,
        );
      }
    });
  cluster
    .command('down')
    .description('stop everything `cluster up` started; data is kept and the next `up` starts the same cluster again')
    .option('--delete-data', "also delete .crawler/cluster (databases, Redis data, the object store's bucket and credentials, workers' spools, logs): the next `up` starts afresh")
    .action(async (o: { deleteData?: boolean }) => {
      const stopped = await clusterDown({ deleteData: o.deleteData, log: (m) => process.stderr.write(`${m}\n`) });
      process.stdout.write(stopped.length ? `stopped ${stopped.join(', ')}\n` : 'nothing was running\n');
    });
  cluster
    .command('status')
    .description('what runs and whether it serves; exit code 1 unless all of it does')
    .option('--json', 'as JSON')
    .action(async (o: { json?: boolean }) => {
      const s = await clusterStatus();
      if (o.json) process.stdout.write(`${JSON.stringify(s)}\n`);
      else if (s.processes.length === 0) process.stdout.write('no cluster (crawler cluster up starts one)\n');
      else {
        process.stdout.write(`TEMPORAL_ADDRESS=${s.temporalAddress}\nREDIS_URL=${s.redisUrl}\nredis cluster_state: ${s.redisClusterState ?? 'no node answers'}\n`);
        if (s.objectStore) process.stdout.write(`object store: ${s.objectStore.endpoint} (path-style), bucket ${s.objectStore.bucket}\n`);
        const w = Math.max(...s.processes.map((p) => p.name.length));
        for (const p of s.processes) {
          const what = p.serving ? 'serving' : p.running ? 'running, not serving' : 'down';
          process.stdout.write(`${p.name.padEnd(w)}  ${String(p.pid).padStart(7)}  ${what.padEnd(20)}  ${p.where}${p.redisRole ? ` ${p.redisRole}` : ''}\n`);
        }
      }
      if (!s.up) process.exitCode = 1;
    });
}
