// A campaign's output location, opened: `output.dir` parsed (the rules are
// pure, in ./output-location-rules, for the campaign schema) and, for
// `s3://bucket/prefix`, the store that holds it, connected as `output.s3` and
// the machine's AWS variables say. Credentials are never passed here: the
// AWS SDK finds them on the machine that opens the store.
import { explicitSetting } from '../config/env';
import type { ObjectStore } from './object-store';
import { outputLocationOf, type OutputLocation, type S3Location } from './output-location-rules';
import { S3ObjectStore, type S3Connection, type S3Tuning } from './s3-object-store';
import { StorageError } from './storage-error';

export type { OutputLocation, S3Location };

/**
 * `output.dir` as a location: a folder as given (made absolute by whoever
 * reads it), or `s3://bucket/prefix` with the bucket checked against S3's
 * naming rules and the prefix normalised (no leading slash, one trailing
 * slash or none at all). Throws INVALID_INPUT saying what is wrong; a
 * location with an `@` in it is not echoed, in case it holds credentials.
 */
export function parseOutputLocation(dir: string): OutputLocation {
  const r = outputLocationOf(dir);
  if ('problem' in r) throw new StorageError('INVALID_INPUT', null, `output location ${dir.includes('@') ? '' : `${JSON.stringify(dir)} `}${r.problem}`);
  return r.location;
}

/** `output.s3` as the campaign settings hold it (src/config/campaign.ts); every field may be absent. */
export interface S3Settings {
  endpoint?: string | null;
  region?: string | null;
  pathStyle?: boolean | null;
}

/**
 * The connection: each field from the settings if given, else the worker's
 * environment (AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL; AWS_REGION: read
 * through the settings table, src/config/env.ts, which refuses a malformed
 * one). A custom endpoint with no region anywhere signs as us-east-1, which
 * self-hosted stores take; AWS itself with no region is left to the SDK (the
 * profile's region in ~/.aws/config).
 */
export function s3ConnectionFor(settings: S3Settings | null | undefined, env: NodeJS.ProcessEnv = process.env): S3Connection {
  const endpoint = settings?.endpoint || explicitSetting('awsEndpointUrlS3', env) || explicitSetting('awsEndpointUrl', env);
  const region = settings?.region || explicitSetting('awsRegion', env) || (endpoint ? 'us-east-1' : null);
  return { ...(endpoint ? { endpoint } : {}), ...(region ? { region } : {}), pathStyle: settings?.pathStyle ?? false };
}

/** The store holding an s3:// location. */
export function openObjectStore(location: S3Location, settings?: S3Settings | null, opts: { env?: NodeJS.ProcessEnv; tuning?: S3Tuning } = {}): S3ObjectStore {
  return new S3ObjectStore(location, s3ConnectionFor(settings, opts.env), opts.tuning);
}

/**
 * The store behind `output.dir`, or null when it is a folder (written in
 * place, as always): the shape of the factory the workers' spool takes
 * (src/storage/output-registry.ts).
 */
export function objectStoreFor(dir: string, settings?: S3Settings | null): ObjectStore | null {
  const location: OutputLocation = parseOutputLocation(dir);
  return location.kind === 's3' ? openObjectStore(location, settings) : null;
}
