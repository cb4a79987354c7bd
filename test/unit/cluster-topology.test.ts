// docker-compose.yml and `crawler cluster up` run the same topology from one
// source, src/stack/topology.ts: the cluster code builds its environment from
// that module, and this test holds the compose file to it value by value, so
// an edit to either side alone fails here.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { REDIS_PERSISTENCE_ARGS } from '../../src/stack/redis-server';
import { FAIRNESS_DYNAMIC_CONFIG, LIVENESS_DYNAMIC_CONFIG } from '../../src/stack/temporal-dev-server';
import { SEAWEEDFS_RELEASE } from '../../src/stack/seaweedfs';
import {
  NAMESPACE,
  OBJECT_STORE,
  OBJECT_STORE_SECRET_VARS,
  PORTS,
  POSTGRES,
  TEMPORAL_DYNAMIC_CONFIG_FILE,
  TEMPORAL_INTERNAL_PORTS,
  TEMPORAL_SCHEMA_ENV,
  TEMPORAL_SCHEMA_SCRIPT,
  TEMPORAL_SERVER_ENV,
  TEMPORAL_SERVER_PLACE_VARS,
  TEMPORAL_SERVER_VERSION,
  WORKER_ENV,
  WORKER_PLACE_VARS,
  defaultTemporalPorts,
  temporalServerEnv,
  workerEnv,
} from '../../src/stack/topology';

const ROOT = path.join(__dirname, '..', '..');
const read = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8');

interface Service {
  image?: string;
  environment?: Record<string, unknown>;
  volumes?: string[];
  ports?: string[];
  entrypoint?: string | string[];
  command?: string | string[];
}
const services = (parse(read('docker-compose.yml')) as { services: Record<string, Service> }).services;

const env = (s: Service): Record<string, string> => Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, String(v)]));
const text = (s: Service) => [s.entrypoint, s.command].flat().filter(Boolean).join(' ').replace(/\$\$/g, '$');
const tag = (s: Service) => s.image?.slice(s.image.lastIndexOf(':') + 1);
const byImage = (re: RegExp) => Object.entries(services).filter(([, s]) => s.image && re.test(s.image));
/** The host file mounted at `target`, as an absolute path. */
const mountSource = (s: Service, target: string) => {
  const v = (s.volumes ?? []).map((m) => m.split(':')).find((m) => m[1] === target);
  return v && /^[./]/.test(v[0]) ? path.resolve(ROOT, v[0]) : null;
};

const [[pgName, postgres]] = byImage(/^postgres:/);
const [[, temporal]] = byImage(/^temporalio\/server:/);
const adminTools = byImage(/^temporalio\/admin-tools:/);
const schema = adminTools.find(([, s]) => text(s).includes('temporal-schema.sh'));
const setup = adminTools.find(([, s]) => /search-attribute\s+create/.test(text(s)));

describe('docker-compose.yml runs the topology of src/stack/topology.ts', () => {
  test('the Temporal server and admin tools are the release cluster up builds', () => {
    expect(tag(temporal)).toBe(TEMPORAL_SERVER_VERSION);
    expect(adminTools.length).toBeGreaterThanOrEqual(2);
    for (const [name, s] of adminTools) expect({ service: name, tag: tag(s) }).toEqual({ service: name, tag: TEMPORAL_SERVER_VERSION });
  });

  test("the server's environment: the shared values, and only machine-specific keys besides", () => {
    const e = env(temporal);
    for (const [k, v] of Object.entries(TEMPORAL_SERVER_ENV)) expect({ variable: k, value: e[k] }).toEqual({ variable: k, value: v });
    const allowed = new Set<string>([...Object.keys(TEMPORAL_SERVER_ENV), ...TEMPORAL_SERVER_PLACE_VARS]);
    for (const k of Object.keys(e)) expect({ variable: k, known: allowed.has(k) }).toEqual({ variable: k, known: true });
    expect(e.POSTGRES_SEEDS).toBe(pgName);
    expect(Number(e.DB_PORT)).toBe(POSTGRES.port);
  });

  test('the server reads the dynamic config file cluster up gives its server', () => {
    const target = env(temporal).DYNAMIC_CONFIG_FILE_PATH;
    expect(target).toBeTruthy();
    expect(mountSource(temporal, target)).toBe(TEMPORAL_DYNAMIC_CONFIG_FILE);
  });

  test("PostgreSQL's superuser is the one the server and the schema tool log in as", () => {
    expect(env(postgres).POSTGRES_USER).toBe(POSTGRES.user);
    expect(env(postgres).POSTGRES_PASSWORD).toBe(POSTGRES.password);
  });

  test('the schema step runs the script cluster up runs, with the same environment', () => {
    expect(schema).toBeDefined();
    const [, s] = schema!;
    const e = env(s);
    expect(e).toEqual({ ...TEMPORAL_SCHEMA_ENV, SQL_HOST: pgName, SQL_PORT: String(POSTGRES.port) });
    const script = /(\S*temporal-schema\.sh)/.exec(text(s))![1];
    expect(mountSource(s, script)).toBe(TEMPORAL_SCHEMA_SCRIPT);
  });

  test('the setup step registers the namespace cluster up registers, with its retention', () => {
    expect(setup).toBeDefined();
    const t = text(setup![1]);
    expect(t).toMatch(new RegExp(`namespace create --namespace ${NAMESPACE.name} --retention ${NAMESPACE.retentionDays * 24}h\\b`));
  });

  test('workers get the shared worker settings, and per machine only addresses, the metrics endpoint, the spool and the credentials', () => {
    const e = env(services.worker);
    const perMachine: readonly string[] = [...WORKER_PLACE_VARS, ...OBJECT_STORE_SECRET_VARS];
    const shared = Object.fromEntries(Object.entries(e).filter(([k]) => !perMachine.includes(k)));
    expect(shared).toEqual(WORKER_ENV);
    expect(Number(e.CRAWLER_METRICS_PORT)).toBe(PORTS.workerMetrics);
    for (const k of WORKER_PLACE_VARS) expect({ variable: k, set: Boolean(e[k]) }).toEqual({ variable: k, set: true });
  });

  test('the object store is the SeaweedFS release cluster up builds, with its bucket and S3 port', () => {
    const [[name, store], ...others] = byImage(/^chrislusf\/seaweedfs:/);
    expect(others).toEqual([]);
    expect(tag(store)).toBe(SEAWEEDFS_RELEASE);
    const args = text(store).split(/\s+/);
    expect(args[0]).toBe('mini');
    expect(args).toContain(`-bucket=${OBJECT_STORE.bucket}`);
    expect(args).toContain(`-s3.port=${PORTS.objectStoreS3}`);
    expect(store.ports).toContain(`${PORTS.objectStoreS3}:${PORTS.objectStoreS3}`);
    // Workers reach it by its service name, on that port.
    expect(env(services.worker).AWS_ENDPOINT_URL_S3).toBe(`http://${name}:${PORTS.objectStoreS3}`);
  });

  test("the store's identity and the workers' are the same variables of the operator's environment, never a value in the file", () => {
    const [[, store]] = byImage(/^chrislusf\/seaweedfs:/);
    for (const k of OBJECT_STORE_SECRET_VARS) {
      expect(env(store)[k]).toMatch(/^\$\{[A-Z0-9_]+:\?[^}]+\}$/);
      expect(env(services.worker)[k]).toBe(env(store)[k]);
    }
  });

  test('the published ports are the topology ones', () => {
    expect(temporal.ports).toContain(`${PORTS.temporalFrontend}:${defaultTemporalPorts().FRONTEND_GRPC_PORT}`);
    const [[, ui]] = byImage(/^temporalio\/ui:/);
    expect((ui.ports ?? []).some((p) => p.startsWith(`${PORTS.temporalUi}:`))).toBe(true);
  });

  test("the server's health check asks the frontend's HTTP port (the probe test/cluster checks on a live server)", () => {
    const probe = [(temporal as { healthcheck?: { test?: string[] } }).healthcheck?.test].flat().join(' ');
    expect(probe).toContain(`:${TEMPORAL_INTERNAL_PORTS.FRONTEND_HTTP_PORT}/api/v1/system-info`);
  });

  test('Redis persists as the embedded and cluster nodes do', () => {
    const [[, redis]] = byImage(/^redis:/);
    const args = [redis.command].flat().map(String);
    const at = args.indexOf(REDIS_PERSISTENCE_ARGS[0]);
    expect(args.slice(at, at + REDIS_PERSISTENCE_ARGS.length)).toEqual(REDIS_PERSISTENCE_ARGS);
  });
});

describe('the dynamic config file', () => {
  test('sets exactly what the dev server gets on its command line: fairness, keepalive, polls ended at shutdown', () => {
    const file = parse(fs.readFileSync(TEMPORAL_DYNAMIC_CONFIG_FILE, 'utf8')) as Record<string, { value: unknown }[]>;
    const fromFile = Object.entries(file).map(([k, [{ value }]]) => `${k}=${JSON.stringify(value)}`);
    expect(fromFile.sort()).toEqual([...FAIRNESS_DYNAMIC_CONFIG, ...LIVENESS_DYNAMIC_CONFIG].sort());
  });
});

describe('cluster up builds its processes from the same values', () => {
  test("the server's environment is the shared one plus where this machine's PostgreSQL and ports are", () => {
    const ports = defaultTemporalPorts();
    const e = temporalServerEnv({ postgresHost: '127.0.0.1', postgresPort: 5999, bindIp: '127.0.0.1', dynamicConfigFile: TEMPORAL_DYNAMIC_CONFIG_FILE, ports });
    expect(e).toMatchObject(TEMPORAL_SERVER_ENV);
    expect(e).toMatchObject({
      POSTGRES_SEEDS: '127.0.0.1',
      DB_PORT: '5999',
      DYNAMIC_CONFIG_FILE_PATH: TEMPORAL_DYNAMIC_CONFIG_FILE,
      FRONTEND_GRPC_PORT: String(PORTS.temporalFrontend),
    });
    for (const k of Object.keys(e)) expect([...Object.keys(TEMPORAL_SERVER_ENV), ...TEMPORAL_SERVER_PLACE_VARS]).toContain(k);
  });

  test("a worker's environment is WORKER_ENV plus its addresses, metrics endpoint, S3 endpoint and spool, and no credentials", () => {
    const e = workerEnv({
      temporalAddress: 't:1',
      redisUrl: 'redis+cluster://a:1',
      metricsPort: 9,
      metricsHost: '127.0.0.1',
      s3Endpoint: 'http://127.0.0.1:8333',
      spoolDir: '/x/spool',
    });
    expect(e).toMatchObject(WORKER_ENV);
    expect(e).toMatchObject({ AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:8333', CRAWLER_SPOOL_DIR: '/x/spool', AWS_REGION: OBJECT_STORE.region });
    expect(Object.keys(e).sort()).toEqual([...Object.keys(WORKER_ENV), ...WORKER_PLACE_VARS].sort());
    for (const k of OBJECT_STORE_SECRET_VARS) expect(Object.keys(e)).not.toContain(k);
  });
});
