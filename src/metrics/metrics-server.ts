// A tiny HTTP server for Prometheus: GET /metrics and GET /healthz, nothing
// else. Loopback by default; bind 0.0.0.0 (or a pod IP) to let a remote
// Prometheus scrape it. The Temporal SDK's own metrics are served on a
// second port by the SDK itself (see temporal-telemetry.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the server exposes; CrawlMetrics is one. */
export interface MetricsSource {
  readonly contentType: string;
  render(): Promise<string>;
}

export interface MetricsServerOptions {
  /** 0 picks a free port (tests); read the chosen one from the result. */
  port: number;
  host?: string;
  metrics: MetricsSource;
  /** /healthz answers 503 while this returns false (e.g. the worker is not RUNNING). Default: always healthy. */
  healthy?: () => boolean;
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

export async function startMetricsServer({ port, host = '127.0.0.1', metrics, healthy = () => true }: MetricsServerOptions): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics' && path !== '/healthz') return reply(res, 404, 'not found\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return reply(res, 405, 'method not allowed\n');
    }
    if (path === '/healthz') return healthy() ? reply(res, 200, 'ok\n') : reply(res, 503, 'not ready\n');
    metrics.render().then(
      // Node drops the body of a HEAD response and keeps its length.
      (body) => reply(res, 200, body, metrics.contentType),
      (err: unknown) => reply(res, 500, `metrics collection failed: ${err instanceof Error ? err.message : String(err)}\n`),
    );
  });
  // A scraper holds a keep-alive connection; it must not keep the process up.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.unref();
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function reply(res: http.ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}
