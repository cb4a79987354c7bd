// The production topology in one place: what docker-compose.yml wires and
// what `crawler cluster up` starts natively read their versions, settings and
// environment from here, so the two cannot drift apart
// (test/unit/cluster-topology.test.ts checks the compose file against this
// module, and the cluster code imports it).
import path from 'node:path';
import { PROJECT_ROOT } from './paths';

/**
 * The Temporal server release both run: the `temporalio/server` and
 * `temporalio/admin-tools` image tags, and the Go module `cluster up` builds.
 * 1.32.2 asks for a newer Go than these machines have; 1.32.1 builds with go1.26.8.
 */
export const TEMPORAL_SERVER_VERSION = '1.32.1';
export const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';

/** History shards: fixed for the life of a cluster's database (changing it needs a new one). */
export const HISTORY_SHARDS = 4;

/** Temporal's persistence: PostgreSQL, two databases created and migrated by deploy/temporal-schema.sh. */
export const POSTGRES = {
  /** The server's and the schema tool's SQL plugin for PostgreSQL 12 and later. */
  plugin: 'postgres12',
  user: 'temporal',
  password: 'temporal',
  port: 5432,
  database: 'temporal',
  visibilityDatabase: 'temporal_visibility',
} as const;

/** Ports a deployment publishes (docs/operations.md). */
export const PORTS = {
  temporalFrontend: 7233,
  temporalUi: 8233,
  /** First client port of the Redis Cluster's nodes (cluster up: consecutive from here). */
  redisFirstNode: 7001,
  /** Each worker's /metrics and /healthz (cluster up: one port per worker from here). */
  workerMetrics: 9464,
  /** The object store's S3 API (SeaweedFS's default S3 port). */
  objectStoreS3: 8333,
} as const;

/**
 * The object store the workers upload their WARCs, index lines and dataset
 * items to (SeaweedFS's S3 gateway): the bucket made at start, which
 * campaigns started on `cluster up` write under (`s3://crawls/<campaign>`),
 * and the region requests are signed for (a self-hosted store takes any; this
 * is the one the AWS SDK assumes).
 */
export const OBJECT_STORE = { bucket: 'crawls', region: 'us-east-1' } as const;

/**
 * The AWS SDK's credential variables a worker gets the store's identity in.
 * Secrets: never in WORKER_ENV, cluster.json or a log; compose reads them from
 * the operator's environment, `cluster up` from the cluster's 0600 file.
 */
export const OBJECT_STORE_SECRET_VARS = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const;

/**
 * Temporal's internal ports besides the frontend: every service of the one
 * server process (history, matching, worker) has a gRPC and a membership
 * port. On several machines each runs where its service runs.
 */
export const TEMPORAL_INTERNAL_PORTS = {
  FRONTEND_HTTP_PORT: 7243,
  FRONTEND_MEMBERSHIP_PORT: 6933,
  HISTORY_GRPC_PORT: 7234,
  HISTORY_MEMBERSHIP_PORT: 6934,
  MATCHING_GRPC_PORT: 7235,
  MATCHING_MEMBERSHIP_PORT: 6935,
  WORKER_GRPC_PORT: 7239,
  WORKER_MEMBERSHIP_PORT: 6939,
} as const;
export type TemporalPortVar = keyof typeof TEMPORAL_INTERNAL_PORTS | 'FRONTEND_GRPC_PORT';

/**
 * The Temporal server's environment that is the same on every machine. The
 * server binary renders its built-in config template from these (the
 * `temporalio/server` image runs the same binary with the same template).
 */
export const TEMPORAL_SERVER_ENV: Readonly<Record<string, string>> = {
  DB: POSTGRES.plugin,
  POSTGRES_USER: POSTGRES.user,
  POSTGRES_PWD: POSTGRES.password,
  DBNAME: POSTGRES.database,
  VISIBILITY_DBNAME: POSTGRES.visibilityDatabase,
  NUM_HISTORY_SHARDS: String(HISTORY_SHARDS),
  LOG_LEVEL: 'warn',
};

/** Variables of TEMPORAL_SERVER_ENV's template that differ per machine (addresses, ports, file paths). */
export const TEMPORAL_SERVER_PLACE_VARS = [
  'POSTGRES_SEEDS',
  'DB_PORT',
  'DYNAMIC_CONFIG_FILE_PATH',
  'BIND_ON_IP',
  'FRONTEND_GRPC_PORT',
  ...Object.keys(TEMPORAL_INTERNAL_PORTS),
] as const;

/**
 * Server dynamic config: task queue fairness (src/stack/temporal-dev-server.ts
 * gives the dev server the same keys on its command line). Compose mounts
 * this file into the server; `cluster up` points the server at it.
 */
export const TEMPORAL_DYNAMIC_CONFIG_FILE = path.join(PROJECT_ROOT, 'deploy', 'temporal-dynamic-config.yaml');

/**
 * Creates and migrates both databases with temporal-sql-tool; idempotent.
 * Compose runs it in the admin-tools image, `cluster up` with the tool it built.
 */
export const TEMPORAL_SCHEMA_SCRIPT = path.join(PROJECT_ROOT, 'deploy', 'temporal-schema.sh');

/** The schema script's environment besides SQL_HOST / SQL_PORT (where PostgreSQL is). */
export const TEMPORAL_SCHEMA_ENV: Readonly<Record<string, string>> = {
  SQL_PLUGIN: POSTGRES.plugin,
  SQL_USER: POSTGRES.user,
  SQL_PASSWORD: POSTGRES.password,
  DBNAME: POSTGRES.database,
  VISIBILITY_DBNAME: POSTGRES.visibilityDatabase,
};

/** Namespace the workers use, and how long it keeps closed workflows' histories. */
export const NAMESPACE = { name: 'default', retentionDays: 3 } as const;

/**
 * Redis Cluster: masters share the 16384 slots, each has replicas that take
 * over when it fails. A master is declared failed after `nodeTimeoutMs`
 * without an answer, so that bounds how long its slots are unavailable.
 */
export const REDIS_CLUSTER = { masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 5000 } as const;

/**
 * Worker settings (src/config/env.ts) that are the same for every worker of
 * the deployment; TEMPORAL_ADDRESS, REDIS_URL and the metrics port/host are
 * per machine.
 */
export const WORKER_ENV: Readonly<Record<string, string>> = {
  TEMPORAL_NAMESPACE: NAMESPACE.name,
  CRAWLER_TASK_QUEUE: 'crawler',
  CRAWLER_ACTIVITY_SLOTS: '100',
  AWS_REGION: OBJECT_STORE.region,
};

/**
 * Worker variables set per machine (see WORKER_ENV): the addresses, the
 * metrics endpoint, the S3 endpoint, and the spool on the worker's own disk
 * (no folder is shared between workers).
 */
export const WORKER_PLACE_VARS = ['TEMPORAL_ADDRESS', 'REDIS_URL', 'CRAWLER_METRICS_PORT', 'CRAWLER_METRICS_HOST', 'AWS_ENDPOINT_URL_S3', 'CRAWLER_SPOOL_DIR'] as const;

/** Where one machine's Temporal server finds PostgreSQL, binds, and listens. */
export interface TemporalPlace {
  postgresHost: string;
  postgresPort: number;
  bindIp: string;
  dynamicConfigFile: string;
  ports: Record<TemporalPortVar, number>;
}

/** The complete environment of one Temporal server process. */
export function temporalServerEnv(place: TemporalPlace): Record<string, string> {
  return {
    ...TEMPORAL_SERVER_ENV,
    POSTGRES_SEEDS: place.postgresHost,
    DB_PORT: String(place.postgresPort),
    DYNAMIC_CONFIG_FILE_PATH: place.dynamicConfigFile,
    BIND_ON_IP: place.bindIp,
    ...Object.fromEntries(Object.entries(place.ports).map(([k, v]) => [k, String(v)])),
  };
}

/** The default port of each Temporal server port variable. */
export function defaultTemporalPorts(): Record<TemporalPortVar, number> {
  return { FRONTEND_GRPC_PORT: PORTS.temporalFrontend, ...TEMPORAL_INTERNAL_PORTS };
}

/** Where one worker finds the servers, serves its metrics, and spools its output. */
export interface WorkerPlace {
  temporalAddress: string;
  redisUrl: string;
  metricsPort: number;
  metricsHost: string;
  /** The object store's S3 endpoint. */
  s3Endpoint: string;
  /** This worker's own spool folder. */
  spoolDir: string;
}

/** The complete environment of one worker process, the store's credentials aside (OBJECT_STORE_SECRET_VARS). */
export function workerEnv(place: WorkerPlace): Record<string, string> {
  return {
    ...WORKER_ENV,
    TEMPORAL_ADDRESS: place.temporalAddress,
    REDIS_URL: place.redisUrl,
    CRAWLER_METRICS_PORT: String(place.metricsPort),
    CRAWLER_METRICS_HOST: place.metricsHost,
    AWS_ENDPOINT_URL_S3: place.s3Endpoint,
    CRAWLER_SPOOL_DIR: place.spoolDir,
  };
}
