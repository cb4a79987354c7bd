import { Client, Connection } from '@temporalio/client';
import { readStackState } from '../stack/stack';
import { processSettings } from '../config/env';
import { CRAWL_SEARCH_ATTRIBUTES } from './search-attributes';
import { temporal as proto } from '@temporalio/proto';

/** Where a client command should look for Temporal: env, then a running embedded stack, then the default port. */
export function clientEndpoints(): { temporalAddress: string; redisUrl: string; uiUrl: string | null } {
  const cfg = processSettings();
  const state = readStackState();
  return {
    temporalAddress: process.env.TEMPORAL_ADDRESS ?? state.temporal?.address ?? cfg.temporalAddress,
    redisUrl: process.env.REDIS_URL ?? state.redis?.url ?? cfg.redisUrl,
    uiUrl: process.env.TEMPORAL_ADDRESS ? null : state.temporal?.uiUrl ?? null,
  };
}

export async function connectClient(address: string, namespace = processSettings().temporalNamespace): Promise<Client> {
  const connection = await Connection.connect({ address, connectTimeout: 5_000 });
  return new Client({ connection, namespace });
}

/**
 * Registers our search attributes on a server we did not start (the
 * embedded dev server gets them on its command line). Already-registered
 * attributes are fine; a server that refuses (e.g. Temporal Cloud without
 * permissions) gets a clear message instead of failing workflows later.
 */
export async function ensureSearchAttributes(client: Client, namespace: string): Promise<void> {
  const svc = client.connection.operatorService;
  const existing = await svc.listSearchAttributes({ namespace });
  const missing = CRAWL_SEARCH_ATTRIBUTES.filter((sa) => !(sa.name in (existing.customAttributes ?? {})));
  if (missing.length === 0) return;
  const types = proto.api.enums.v1.IndexedValueType;
  await svc.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((sa) => [sa.name, sa.cliType === 'Int' ? types.INDEXED_VALUE_TYPE_INT : types.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
}
