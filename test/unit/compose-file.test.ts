// docker-compose.yml and Dockerfile checked against what the code reads:
// nothing here can run them (no Docker engine in CI), so this is what keeps
// the deployment files from drifting away from src/config/env.ts, the search
// attributes the workflows set, and package.json.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { PROCESS_SETTINGS, processSettings } from '../../src/config/env';
import { CRAWL_SEARCH_ATTRIBUTES } from '../../src/temporal/search-attributes';
import { OBJECT_STORE_SECRET_VARS } from '../../src/stack/topology';
import { DEFAULT_WORKER_ENV, DEFAULT_WORKER_NODE_ARGS } from '../../scripts/worker-bundle.cjs';

const ROOT = path.join(__dirname, '..', '..');
const read = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8');

type Obj = Record<string, unknown>;
interface Service extends Obj {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, unknown> | string[];
  ports?: (string | number | { target?: number; published?: string | number })[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  volumes?: (string | { type?: string; source?: string; target?: string })[];
  container_name?: string;
  stop_grace_period?: string;
}

const compose = parse(read('docker-compose.yml')) as { services: Record<string, Service>; volumes?: Record<string, unknown> };
const services = compose.services;

// ---- helpers: normalise the several syntaxes compose accepts ----

/** Compose turns `$$` into a literal `$`. */
const unescape = (s: string) => s.replace(/\$\$/g, '$');

function env(s: Service): Record<string, string> {
  const e = s.environment ?? {};
  if (Array.isArray(e)) {
    return Object.fromEntries(
      e.map((kv) => {
        const i = kv.indexOf('=');
        return i < 0 ? [kv, ''] : [kv.slice(0, i), kv.slice(i + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]));
}

function argv(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : v.split(/\s+/)).map((a) => unescape(String(a)));
}

/** Everything a container runs, as one string (for shell snippets in `sh -c`). */
const runText = (s: Service) => [...argv(s.entrypoint), ...argv(s.command)].join(' ');

interface PortMapping {
  published: number | null;
  target: number;
}
function ports(s: Service): PortMapping[] {
  return (s.ports ?? []).map((p) => {
    if (typeof p === 'object') return { published: p.published === undefined ? null : Number(p.published), target: Number(p.target) };
    const parts = String(p)
      .replace(/\/(tcp|udp)$/, '')
      .split(':');
    const target = Number(parts[parts.length - 1]);
    const published = parts.length >= 2 ? Number(parts[parts.length - 2]) : null;
    return { published, target };
  });
}

function dependsOn(s: Service): Record<string, string | undefined> {
  const d = s.depends_on ?? [];
  return Array.isArray(d) ? Object.fromEntries(d.map((n) => [n, undefined])) : Object.fromEntries(Object.entries(d).map(([n, v]) => [n, v?.condition]));
}

function imageTag(image: string): string | null {
  if (image.includes('@sha256:')) return image.split('@')[1];
  const lastSlash = image.lastIndexOf('/');
  const colon = image.indexOf(':', lastSlash + 1);
  return colon < 0 ? null : image.slice(colon + 1);
}

function namedVolumeAt(s: Service, target: string): string | null {
  for (const v of s.volumes ?? []) {
    const [source, tgt] = typeof v === 'string' ? v.split(':') : [v.source, v.target];
    if (tgt === target && source && !/^[./~]/.test(source)) return source;
  }
  return null;
}

/** The one service whose image matches; fails the test if none or several. */
function byImage(re: RegExp, what: string): [string, Service] {
  const found = Object.entries(services).filter(([, s]) => s.image && re.test(s.image));
  if (found.length !== 1) throw new Error(`expected exactly one ${what} service (image ${re}), found ${found.map(([n]) => n).join(', ') || 'none'}`);
  return found[0];
}

const seconds = (d: string) => {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(d.trim());
  if (!m) throw new Error(`unreadable duration ${d}`);
  return Number(m[1]) * { ms: 0.001, s: 1, m: 60 }[m[2] as 'ms' | 's' | 'm'];
};

const [pgName, postgres] = byImage(/^postgres(?=[:@]|$)/, 'PostgreSQL');
const [temporalName, temporal] = byImage(/^temporalio\/(auto-setup|server)(?=[:@]|$)/, 'Temporal server');
const [uiName, ui] = byImage(/^temporalio\/ui(?=[:@]|$)/, 'Temporal Web UI');
const [redisName, redis] = byImage(/^redis(?=[:@]|$)/, 'Redis');
const [storeName, store] = byImage(/^chrislusf\/seaweedfs(?=[:@]|$)/, 'object store');
const worker = services.worker;
const workerEnv = worker ? env(worker) : {};

/** The frontend's port inside the compose network. */
const temporalPort = ports(temporal)[0]?.target ?? 7233;
/** Redis's port inside the compose network: `--port N` or the default. */
const redisArgs = argv(redis.command);
const redisPort = redisArgs.includes('--port') ? Number(redisArgs[redisArgs.indexOf('--port') + 1]) : 6379;

// ---- the compose file ----

describe('docker-compose.yml', () => {
  test('is a plain compose document: known top-level keys, dependencies and volumes that exist', () => {
    for (const k of Object.keys(compose)) expect(['name', 'services', 'volumes', 'networks', 'configs', 'secrets']).toContain(k);
    for (const [name, s] of Object.entries(services)) {
      for (const dep of Object.keys(dependsOn(s))) expect({ service: name, dependsOn: dep, exists: dep in services }).toEqual({ service: name, dependsOn: dep, exists: true });
      for (const v of s.volumes ?? []) {
        const source = typeof v === 'string' ? v.split(':')[0] : v.source;
        if (source && !/^[./~]/.test(source))
          expect({ service: name, volume: source, declared: source in (compose.volumes ?? {}) }).toEqual({ service: name, volume: source, declared: true });
      }
    }
  });

  test('workers mount a handlers folder read-only at /handlers (docs/handlers.md)', () => {
    const mounts = (services.worker?.volumes ?? []).map((v) => (typeof v === 'string' ? v : `${v.source}:${v.target}`));
    expect(mounts).toContain('./handlers:/handlers:ro');
  });

  test('has Temporal on PostgreSQL, the Web UI, Redis and a worker', () => {
    expect(worker).toBeDefined();
    const t = env(temporal);
    expect(t.DB).toMatch(/^postgres/);
    expect(t.POSTGRES_SEEDS).toBe(pgName);
    expect(env(ui).TEMPORAL_ADDRESS).toBe(`${temporalName}:${temporalPort}`);
  });

  test('every image is pinned to an explicit tag, never latest', () => {
    for (const [name, s] of Object.entries(services)) {
      if (!s.image) {
        expect({ service: name, build: s.build !== undefined }).toEqual({ service: name, build: true });
        continue;
      }
      const tag = imageTag(s.image);
      expect({ service: name, image: s.image, pinned: tag !== null && tag !== 'latest' && /\d/.test(tag) }).toEqual({ service: name, image: s.image, pinned: true });
    }
  });

  test('PostgreSQL, Temporal, the Web UI, Redis and the object store have health checks', () => {
    for (const [name, s] of [
      [pgName, postgres],
      [temporalName, temporal],
      [uiName, ui],
      [redisName, redis],
      [storeName, store],
    ] as const) {
      const test = s.healthcheck?.test;
      expect({ service: name, healthcheck: !s.healthcheck?.disable && Array.isArray(test) ? test[0] !== 'NONE' && test.length > 1 : Boolean(test) }).toEqual({
        service: name,
        healthcheck: true,
      });
    }
  });

  test("the Web UI's health check probes its own /healthz, on the port the published mapping targets", () => {
    // The UI server's port inside its container: TEMPORAL_UI_PORT, else 8080.
    const uiPort = Number(env(ui).TEMPORAL_UI_PORT ?? 8080);
    expect(ports(ui).map((p) => p.target)).toContain(uiPort);
    const probe = argv(ui.healthcheck?.test as string[] | string | undefined);
    // Exec form: no shell in between to turn a failed probe into success.
    expect(probe[0]).toBe('CMD');
    expect(probe.join(' ')).toMatch(new RegExp(`^CMD (wget|curl) .*http://(127\\.0\\.0\\.1|localhost):${uiPort}/healthz$`));
  });

  test('Temporal waits for a healthy PostgreSQL; the worker for a healthy Temporal and Redis', () => {
    expect(dependsOn(temporal)[pgName]).toBe('service_healthy');
    expect(dependsOn(worker)[temporalName]).toBe('service_healthy');
    expect(dependsOn(worker)[redisName]).toBe('service_healthy');
  });

  test('Redis keeps an append-only file', () => {
    const args = redisArgs.join(' ');
    expect(args).toMatch(/(^|\s)--appendonly\s+yes(\s|$)/);
  });

  test('PostgreSQL, Redis and object store data live in named volumes', () => {
    expect(namedVolumeAt(postgres, '/var/lib/postgresql/data')).not.toBeNull();
    expect(namedVolumeAt(redis, '/data')).not.toBeNull();
    // The store keeps its data where `-dir` says.
    const dir = argv(store.command)
      .find((a) => a.startsWith('-dir='))
      ?.slice('-dir='.length);
    expect(dir).toBeTruthy();
    expect(namedVolumeAt(store, dir!)).not.toBeNull();
  });

  test("the object store's health check probes its S3 gateway's /healthz on the port it serves S3 on", () => {
    const port = argv(store.command)
      .find((a) => a.startsWith('-s3.port='))
      ?.slice('-s3.port='.length);
    expect(port).toMatch(/^\d+$/);
    const probe = argv(store.healthcheck?.test as string[] | string | undefined);
    expect(probe[0]).toBe('CMD');
    expect(probe.join(' ')).toMatch(new RegExp(`^CMD (wget|curl) .*http://(127\\.0\\.0\\.1|localhost):${port}/healthz$`));
  });

  test('ports are published only where docs/operations.md says, never for PostgreSQL or the worker', () => {
    // The compose section of the operations guide: from its `## Deployment` heading to the next.
    const docs = /^## Deployment[^\n]*\n([\s\S]*?)(?=^## )/m.exec(read('docs/operations.md'))?.[1] ?? '';
    expect(docs).not.toBe('');
    expect(ports(postgres).filter((p) => p.published !== null)).toEqual([]);
    for (const [name, s] of Object.entries(services)) {
      for (const p of ports(s)) {
        if (p.published === null) continue;
        expect({ service: name, port: p.published, documented: new RegExp(`\\b${p.published}\\b`).test(docs) }).toEqual({ service: name, port: p.published, documented: true });
      }
    }
    // The documented entry points really are published.
    expect(ports(temporal).some((p) => p.published !== null && p.target === temporalPort)).toBe(true);
    expect(ports(ui).some((p) => p.published !== null)).toBe(true);
  });

  describe('worker', () => {
    test("is built from this repository's Dockerfile", () => {
      const b = worker.build;
      const context = typeof b === 'string' ? b : b?.context;
      const dockerfile = (typeof b === 'object' && b.dockerfile) || 'Dockerfile';
      expect(context === '.' || context === './').toBe(true);
      expect(fs.existsSync(path.join(ROOT, dockerfile))).toBe(true);
    });

    test('can scale: no container_name, no fixed host port', () => {
      expect(worker.container_name).toBeUndefined();
      expect(ports(worker).filter((p) => p.published !== null)).toEqual([]);
    });

    test("sets only variables src/config/env.ts reads, with values it accepts, and the AWS SDK's credentials from the operator's environment", () => {
      const known = new Set(PROCESS_SETTINGS.map((f) => f.env));
      const credentials: readonly string[] = OBJECT_STORE_SECRET_VARS;
      const settings = Object.fromEntries(Object.entries(workerEnv).filter(([k]) => !credentials.includes(k)));
      for (const k of Object.keys(settings)) expect({ variable: k, readByEnvTs: known.has(k) }).toEqual({ variable: k, readByEnvTs: true });
      for (const v of Object.values(settings)) expect(v).not.toMatch(/\$\{/);
      expect(() => processSettings(settings)).not.toThrow();
      // Credentials are no setting of ours (the SDK reads them) and no value in the file: compose fills them in, or refuses to start.
      for (const k of credentials) expect({ variable: k, value: workerEnv[k] }).toEqual({ variable: k, value: expect.stringMatching(/^\$\{[A-Z0-9_]+:\?[^}]+\}$/) });
    });

    test('keeps no folder shared with other workers: its spool is a volume of its own, and the object store is where output goes', () => {
      // Named volumes are shared by every container that mounts them; an anonymous one is each container's own.
      const named = (worker.volumes ?? [])
        .map((v) => (typeof v === 'string' ? v.split(':') : [v.source ?? '', v.target ?? '']))
        .filter(([src, tgt]) => tgt !== undefined && !/^[./~]/.test(src));
      expect(named).toEqual([]);
      const spool = processSettings(Object.fromEntries(Object.entries(workerEnv).filter(([k]) => k === 'CRAWLER_SPOOL_DIR'))).spoolDir;
      expect(spool).toBeTruthy();
      const mounts = (worker.volumes ?? []).map((v) => (typeof v === 'string' ? v : (v.target ?? '')));
      expect(mounts).toContain(spool);
      const store = processSettings(Object.fromEntries(Object.entries(workerEnv).filter(([k]) => k === 'AWS_ENDPOINT_URL_S3'))).awsEndpointUrlS3;
      expect(new URL(store!).hostname in services).toBe(true);
      expect(dependsOn(worker)[new URL(store!).hostname]).toBe('service_healthy');
    });

    test('points TEMPORAL_ADDRESS and REDIS_URL (loopback defaults) at the compose services', () => {
      for (const name of ['TEMPORAL_ADDRESS', 'REDIS_URL']) {
        const field = PROCESS_SETTINGS.find((f) => f.env === name);
        expect(field?.default).toMatch(/127\.0\.0\.1|localhost/);
        expect(workerEnv[name]).toBeTruthy();
      }
      const cfg = processSettings(workerEnv);
      expect(cfg.temporalAddress).toBe(`${temporalName}:${temporalPort}`);
      const url = new URL(cfg.redisUrl);
      expect(url.protocol).toBe('redis:');
      expect(url.hostname).toBe(redisName);
      expect(Number(url.port || 6379)).toBe(redisPort);
    });

    test("has a stop grace period longer than the worker's own shutdown grace time", () => {
      const m = /shutdownGraceTime:\s*['"](\d+(?:ms|s|m))['"]/.exec(read('src/worker/crawler-worker.ts'));
      expect(m).not.toBeNull();
      expect(worker.stop_grace_period).toBeDefined();
      expect(seconds(worker.stop_grace_period!)).toBeGreaterThan(seconds(m![1]));
    });

    test('has a health check that probes /healthz on the metrics port the worker is told to serve', () => {
      // Without one, `restart: unless-stopped` only sees a worker that exits, never one that hangs.
      expect(worker.healthcheck).toBeDefined();
      expect(worker.healthcheck?.disable).not.toBe(true);
      const probe = argv(worker.healthcheck?.test as string[] | string | undefined);
      expect(['CMD', 'CMD-SHELL']).toContain(probe[0]);
      const port = workerEnv.CRAWLER_METRICS_PORT;
      expect(port).toMatch(/^[1-9]\d*$/);
      expect(probe.join(' ')).toMatch(new RegExp(`//(127\\.0\\.0\\.1|localhost):${port}/healthz\\b`));
      // The metrics server must listen beyond loopback for Prometheus on the compose network,
      // and the settings table must accept what the file sets.
      expect(workerEnv.CRAWLER_METRICS_HOST).toMatch(/^(0\.0\.0\.0|::)$/);
      expect(processSettings(workerEnv).metricsPort).toBe(Number(port));
    });
  });

  describe('search attributes', () => {
    const setup = Object.entries(services).filter(([, s]) => /search-attribute\s+create/.test(runText(s)));

    test('one service registers exactly the attributes of src/temporal/search-attributes.ts', () => {
      expect(setup.map(([n]) => n)).toHaveLength(1);
      const text = runText(setup[0][1]);
      const pairs = [...text.matchAll(/--name[\s=]+"?(\w+)"?\s+--type[\s=]+"?(\w+)"?/g)].map((m) => ({ name: m[1], cliType: m[2] }));
      const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
      expect(pairs.sort(byName)).toEqual(CRAWL_SEARCH_ATTRIBUTES.map(({ name, cliType }) => ({ name, cliType })).sort(byName));
    });

    test("against the Temporal service and the worker's namespace, failing loudly", () => {
      const [, s] = setup[0];
      const text = runText(s);
      const e = env(s);
      const address = /--address[\s=]+(\S+)/.exec(text)?.[1] ?? e.TEMPORAL_ADDRESS;
      const namespace = /(?:--namespace|-n)[\s=]+(\S+)/.exec(text)?.[1] ?? e.TEMPORAL_NAMESPACE ?? 'default';
      expect(address).toBe(`${temporalName}:${temporalPort}`);
      expect(namespace).toBe(processSettings(workerEnv).temporalNamespace);
      expect(text).not.toMatch(/\|\|\s*true/);
      expect(dependsOn(s)[temporalName]).toBe('service_healthy');
    });

    test('finishes before any worker starts', () => {
      expect(dependsOn(worker)[setup[0][0]]).toBe('service_completed_successfully');
    });
  });
});

// ---- the Dockerfile ----

describe('Dockerfile', () => {
  // Instructions with continuation lines joined, comments dropped.
  const instructions = read('Dockerfile')
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const i = l.search(/\s/);
      return { op: l.slice(0, i).toUpperCase(), args: l.slice(i + 1).trim() };
    });
  const all = (op: string) => instructions.filter((i) => i.op === op);
  const pkg = JSON.parse(read('package.json')) as { engines: { node: string } };

  test('starts from node at the major version package.json engines asks for', () => {
    const from = all('FROM');
    const last = from[from.length - 1].args.split(/\s+/)[0];
    const m = /^(?:docker\.io\/)?(?:library\/)?node:(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(last);
    expect(m).not.toBeNull();
    const min = /(\d+)\.(\d+)\.(\d+)/.exec(pkg.engines.node)!.slice(1).map(Number);
    expect(Number(m![1])).toBe(min[0]);
    // A tag that names a minor (and patch) must not be older than the engines minimum.
    if (m![2] !== undefined) {
      const tag = [Number(m![1]), Number(m![2]), Number(m![3] ?? 99)];
      const cmp = tag[0] - min[0] || tag[1] - min[1] || tag[2] - min[2];
      expect(cmp).toBeGreaterThanOrEqual(0);
    }
  });

  test('builds from the repository: locked dependencies and the code the worker runs', () => {
    const copies = all('COPY').map((c) => c.args);
    expect(copies.some((c) => /\bpackage\.json\b/.test(c) && /\bpackage-lock\.json\b/.test(c))).toBe(true);
    expect(all('RUN').some((r) => /\bnpm ci\b/.test(r.args))).toBe(true);
    for (const dir of ['src', 'workflows', 'activities'])
      expect({ dir, copied: copies.some((c) => new RegExp(`(^|\\s)\\.?/?${dir}/?\\s`).test(c)) }).toEqual({ dir, copied: true });
  });

  test('runs the worker bundle it built from the sources it copied, with plain node', () => {
    const run = [...all('ENTRYPOINT'), ...all('CMD')].map((i) => i.args);
    const cmd: string[] = run.flatMap((a) => (a.startsWith('[') ? (JSON.parse(a) as string[]) : a.split(/\s+/)));
    expect(cmd[0]).toBe('node');
    const bundle = cmd.find((a) => a.endsWith('.cjs'));
    expect(bundle).toBeDefined();
    // Built by scripts/worker-bundle.cjs into that very file, after the sources are in the image.
    const ops = instructions.map((i) => `${i.op} ${i.args}`);
    const build = ops.findIndex((o) => /^RUN node scripts\/worker-bundle\.cjs --out (\S+)$/.exec(o)?.[1] === bundle);
    expect(build).toBeGreaterThan(0);
    expect(ops.findIndex((o) => /^COPY .*scripts\/worker-bundle\.cjs/.test(o))).toBeLessThan(build);
    for (const dir of ['src', 'workflows', 'activities']) {
      const copied = ops.findIndex((o) => new RegExp(`^COPY ${dir} `).test(o));
      expect({ dir, before: copied >= 0 && copied < build }).toEqual({ dir, before: true });
    }
    // With the memory defaults the crawler's own worker processes get.
    expect(cmd.slice(1, cmd.indexOf(bundle!))).toEqual(DEFAULT_WORKER_NODE_ARGS.split(' '));
    const envs = all('ENV').map((e) => e.args);
    for (const [k, v] of Object.entries(DEFAULT_WORKER_ENV)) expect(envs).toContain(`${k}=${v}`);
    // The bundle's entry, as the builder names it.
    expect(fs.readFileSync(path.join(ROOT, 'scripts/worker-bundle.cjs'), 'utf8')).toContain("path.join('src', 'worker', 'worker-main.ts')");
    expect(fs.existsSync(path.join(ROOT, 'src/worker/worker-main.ts'))).toBe(true);
  });

  test('runs as a non-root user', () => {
    const users = all('USER');
    expect(users.length).toBeGreaterThan(0);
    const user = users[users.length - 1].args.split(':')[0];
    expect(['root', '0']).not.toContain(user);
    const lastUser = instructions.lastIndexOf(users[users.length - 1]);
    const lastCmd = Math.max(...['CMD', 'ENTRYPOINT'].map((op) => instructions.map((i) => i.op).lastIndexOf(op)));
    expect(lastUser).toBeLessThan(lastCmd);
  });
});
