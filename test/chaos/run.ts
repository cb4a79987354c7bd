// `npm run chaos -- [--hosts 20] [--pages 50] [--faults kill-worker,kill-redis,restart-temporal,reset-connections]
//                   [--seed 1] [--workers 3] [--duration 120 | --count 12] [--delay 150] [--strict] [--json]
//                   [--restart-after 1000|never] [--freeze 40]`
// The workers' own faults (kill-busiest-worker, freeze-worker, term-worker) are asked for by name in --faults;
// --restart-after: ms from a kill-busiest-worker to its replacement ('never': none); --freeze: seconds of a freeze-worker.
// Runs one chaos campaign on its own stack and prints the report; exits 1 when a check fails.
// --cluster: on `crawler cluster up`'s topology instead (faults kill-worker,kill-redis,restart-temporal; cluster-chaos.ts).
// Faults: --count of them (default three rounds of every kind) at random points of the crawl's
// progress, or with --duration at random 3–8 s intervals during that many seconds.
import { parseArgs } from 'node:util';
import { ALL_FAULT_KINDS, FAULT_KINDS, formatReport, runChaos, type FaultKind } from './chaos';
import { CLUSTER_FAULT_KINDS, runClusterChaos, type ClusterFaultKind } from './cluster-chaos';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      hosts: { type: 'string', default: '20' },
      pages: { type: 'string', default: '50' },
      faults: { type: 'string', default: FAULT_KINDS.join(',') },
      seed: { type: 'string', default: String(Date.now() % 100_000) },
      workers: { type: 'string', default: '3' },
      duration: { type: 'string' },
      count: { type: 'string' },
      delay: { type: 'string', default: '150' },
      'restart-after': { type: 'string', default: '1000' },
      freeze: { type: 'string', default: '40' },
      json: { type: 'boolean', default: false },
      strict: { type: 'boolean', default: false },
      cluster: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      `usage: npm run chaos -- [--cluster] [--hosts N] [--pages N] [--faults ${ALL_FAULT_KINDS.join(',')}] [--seed N] [--workers N] [--duration SECONDS | --count FAULTS] [--delay MS] [--restart-after MS|never] [--freeze SECONDS] [--strict] [--json]\n`,
    );
    return;
  }
  const int = (name: string, v: string | undefined) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number, got ${v}`);
    return n;
  };
  if (values.cluster) {
    const kinds = (values.faults === FAULT_KINDS.join(',') ? CLUSTER_FAULT_KINDS.join(',') : values.faults).split(',').filter(Boolean) as ClusterFaultKind[];
    for (const f of kinds) if (!CLUSTER_FAULT_KINDS.includes(f)) throw new Error(`unknown cluster fault ${f}; known: ${CLUSTER_FAULT_KINDS.join(', ')}`);
    const report = await runClusterChaos({
      hosts: int('hosts', values.hosts),
      pages: int('pages', values.pages),
      workers: int('workers', values.workers),
      faults: kinds,
      count: values.count === undefined ? kinds.length : int('count', values.count),
      seed: int('seed', values.seed),
      delayMs: int('delay', values.delay),
    });
    process.stdout.write(`${formatReport(report)}\n`);
    if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    process.exitCode = report.ok ? 0 : 1;
    return;
  }
  const faults = values.faults
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean) as FaultKind[];
  for (const f of faults) if (!ALL_FAULT_KINDS.includes(f)) throw new Error(`unknown fault ${f}; known: ${ALL_FAULT_KINDS.join(', ')}`);
  const report = await runChaos({
    hosts: int('hosts', values.hosts),
    pages: int('pages', values.pages),
    workers: int('workers', values.workers),
    faults,
    seed: int('seed', values.seed),
    delayMs: int('delay', values.delay),
    strict: values.strict,
    restartAfterMs: values['restart-after'] === 'never' ? null : int('restart-after', values['restart-after']),
    freezeMs: int('freeze', values.freeze) * 1000,
    durationMs: values.duration === undefined ? undefined : int('duration', values.duration) * 1000,
    // Default: three rounds of every kind spread over the crawl by progress;
    // --duration switches to timed intervals (3–8 s) during that many seconds.
    faultCount: values.duration !== undefined ? undefined : values.count === undefined ? 3 * faults.length : int('count', values.count),
    log: (l) => process.stderr.write(`${l}\n`),
  });
  process.stdout.write(`${formatReport(report)}\n`);
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.exitCode = report.ok ? 0 : 1;
}

main().then(
  // Native Temporal handles can keep the loop alive after everything is closed.
  () => setTimeout(() => process.exit(process.exitCode ?? 0), 500).unref(),
  (err) => {
    process.stderr.write(`chaos: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(2);
  },
);
