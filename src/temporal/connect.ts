import fs from 'node:fs';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import { processSettings, temporalTlsEnabled, type ProcessSettings } from '../config/env';
import { CRAWL_SEARCH_ATTRIBUTES } from './search-attributes';
import { temporal as proto } from '@temporalio/proto';
import { CrawlerError } from '../errors';

/**
 * TLS and credentials of every connection to Temporal, in the form both
 * `Connection.connect` (clients) and `NativeConnection.connect` (workers)
 * take. `tls` is always explicit: the SDK would turn TLS on by itself for an
 * API key, and TEMPORAL_TLS=false must be able to say no.
 */
export interface TemporalConnectionOptions {
  address: string;
  tls: TLSConfig | false;
  apiKey?: string;
}

export function temporalConnectionOptions(
  cfg: ProcessSettings,
  address = cfg.temporalAddress,
  readFile: (path: string) => Buffer = (p) => fs.readFileSync(p),
): TemporalConnectionOptions {
  const pem = (path: string, variable: string) => {
    try {
      return readFile(path);
    } catch (err) {
      throw new Error(`${variable}: cannot read ${path} (${(err as Error).message})`, { cause: err });
    }
  };
  const apiKey = cfg.temporalApiKey ?? undefined;
  if (!temporalTlsEnabled(cfg)) return { address, tls: false, ...(apiKey ? { apiKey } : {}) };
  const tls: TLSConfig = {};
  if (cfg.temporalTlsServerName) tls.serverNameOverride = cfg.temporalTlsServerName;
  if (cfg.temporalTlsCaPath) tls.serverRootCACertificate = pem(cfg.temporalTlsCaPath, 'TEMPORAL_TLS_SERVER_CA_CERT_PATH');
  if (cfg.temporalTlsCertPath && cfg.temporalTlsKeyPath) {
    tls.clientCertPair = { crt: pem(cfg.temporalTlsCertPath, 'TEMPORAL_TLS_CLIENT_CERT_PATH'), key: pem(cfg.temporalTlsKeyPath, 'TEMPORAL_TLS_CLIENT_KEY_PATH') };
  }
  return { address, tls, ...(apiKey ? { apiKey } : {}) };
}

/** No Temporal frontend answered at the address (down, wrong port, TLS mismatch). */
export class TemporalUnavailableError extends CrawlerError<'TEMPORAL_UNAVAILABLE'> {
  constructor(
    readonly address: string,
    cause: unknown,
  ) {
    super('TEMPORAL_UNAVAILABLE', `cannot reach the Temporal server at ${address}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'TemporalUnavailableError';
  }
}

/** A client of `address` with this process's TLS and API key settings (src/config/env.ts). */
export async function connectClient(address: string, namespace = processSettings().temporalNamespace): Promise<Client> {
  const options = temporalConnectionOptions(processSettings(), address);
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...options, connectTimeout: 5_000 });
  } catch (err) {
    throw new TemporalUnavailableError(address, err);
  }
  return new Client({ connection, namespace });
}

/**
 * Registers our search attributes on a server we did not start (the
 * embedded dev server gets them on its command line). Already-registered
 * attributes are fine; a server that refuses (e.g. Temporal Cloud without
 * permissions) gets a clear message instead of failing workflows later.
 * Returns once the server serves the ones it added.
 */
export async function ensureSearchAttributes(client: Client, namespace: string): Promise<void> {
  const svc = client.connection.operatorService;
  const existing = await svc.listSearchAttributes({ namespace });
  const missing = CRAWL_SEARCH_ATTRIBUTES.filter((sa) => !(sa.name in (existing.customAttributes ?? {})));
  if (missing.length === 0) return;
  const types = proto.api.enums.v1.IndexedValueType;
  const INDEXED_TYPE = { Int: types.INDEXED_VALUE_TYPE_INT, Keyword: types.INDEXED_VALUE_TYPE_KEYWORD, Datetime: types.INDEXED_VALUE_TYPE_DATETIME } as const;
  await svc.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map((sa) => [sa.name, INDEXED_TYPE[sa.cliType]])),
  });
  // A campaign may start the moment this returns, and a server serves new
  // attributes only once its caches refresh.
  await awaitSearchAttributesServed(client, namespace);
}

/**
 * Waits until the frontend serves every crawler search attribute: a server
 * that has just registered them (or the namespace) answers from caches that
 * refresh on their own schedule, and a workflow started meanwhile is refused
 * ("Failed to start Workflow"). A visibility query naming each attribute
 * passes only once both caches know them.
 */
export async function awaitSearchAttributesServed(client: Client, namespace: string, timeoutMs = 60_000): Promise<void> {
  const probe = { Keyword: "'probe'", Int: '0', Datetime: "'2000-01-01T00:00:00Z'" } as const;
  const query = CRAWL_SEARCH_ATTRIBUTES.map((sa) => `${sa.name} = ${probe[sa.cliType]}`).join(' OR ');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await client.connection.workflowService.countWorkflowExecutions({ namespace, query });
      return;
    } catch (err) {
      if (Date.now() > deadline) {
        throw new CrawlerError('SEARCH_ATTRIBUTES_NOT_SERVED', `the search attributes are not served on namespace ${namespace} after ${timeoutMs} ms: ${(err as Error).message}`, {
          cause: err,
        });
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
