// Telemetry options for Runtime.install: Core's logs forwarded to the
// runtime logger (our JSON logger), and the SDK's metrics (worker slots, poll
// and task latencies, activity/workflow counts, sticky cache) served by the
// SDK's own Prometheus exporter on a second port, at /metrics.
//
// Why a second port rather than one endpoint: SDK 1.24 can also buffer its
// metrics for JS to drain (`metrics: { buffer }`), which could feed
// prom-client, but that path is marked experimental, must be drained on the
// JS thread that also runs workflows and activities, drops updates once its
// buffer is full, and only reveals each metric's tags as updates arrive
// (prom-client wants label names up front). The Prometheus exporter runs in
// Core's own thread, with correct histograms, at no cost to the event loop.
import { isIP } from 'node:net';
import type { LogLevel, TelemetryOptions } from '@temporalio/worker';

export interface TemporalTelemetryOptions {
  /** Lowest level of Core's (Rust) log events forwarded to the runtime logger. Default WARN: Core is chatty at INFO. */
  coreLogLevel?: LogLevel;
}

/**
 * `telemetryOptions` for `Runtime.install`. With a bind address
 * ('127.0.0.1:9465', '[::1]:9465', '0.0.0.0:9465') the SDK serves
 * `temporal_*` metrics at http://<bindAddress>/metrics, counters with a
 * `_total` suffix and durations in seconds like ours; with null, no SDK
 * metrics are exported.
 *
 * The runtime is process-wide: one bind address per process, so several
 * workers on one machine need different ports.
 */
export function temporalRuntimeTelemetry(bindAddress: string | null, opts: TemporalTelemetryOptions = {}): TelemetryOptions {
  const level = opts.coreLogLevel ?? 'WARN';
  const telemetry: TelemetryOptions = { logging: { filter: { core: level, other: 'ERROR' }, forward: {} } };
  if (bindAddress !== null) {
    checkSocketAddress(bindAddress);
    telemetry.metrics = { prometheus: { bindAddress, countersTotalSuffix: true, useSecondsForDurations: true } };
  }
  return telemetry;
}

/**
 * Core parses the address as a Rust SocketAddr: an IP literal and a port,
 * no host names. Checked here so a typo fails with a readable message
 * instead of an opaque error from Runtime.install.
 */
function checkSocketAddress(addr: string): void {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(addr);
  const ip = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  const ipOk = ip !== undefined && (m?.[1] !== undefined ? isIP(ip) === 6 : isIP(ip) === 4);
  if (!ipOk || !(port >= 1 && port <= 65535)) {
    throw new Error(`SDK metrics address must be ip:port with a port from 1 to 65535, e.g. 127.0.0.1:9465 or [::1]:9465 (got ${JSON.stringify(addr)})`);
  }
}
