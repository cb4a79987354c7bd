// An ObjectStore over a prefix of an S3-compatible bucket (AWS S3, SeaweedFS,
// MinIO, Garage…), on the AWS SDK v3. Nothing is ever overwritten: every put
// carries `If-None-Match: *`, so the store refuses (412) a key that exists,
// and the put then compares sizes to tell a retried upload from a clash.
// Credentials come from the SDK's default provider chain on this machine
// (environment, shared credentials and config files, profiles, SSO, web
// identity, container or instance roles), never from settings.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { PassThrough, Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { ObjectStore, StoredObject } from './object-store';
import type { S3Location } from './output-location-rules';
import { newS3Client } from './s3-client';
import { StorageError, type StorageErrorCode } from './storage-error';

const MIB = 1024 * 1024;
/** S3's smallest part but the last (lib-storage refuses smaller ones too). */
const MIN_PART_BYTES = 5 * MIB;

/** How the client reaches the store: settings first, then the AWS variables (src/storage/output-location.ts). */
export interface S3Connection {
  /** Unset: AWS S3 itself. */
  endpoint?: string;
  /** Unset: the SDK's own resolution (AWS_REGION, the profile's region). */
  region?: string;
  /** `<endpoint>/<bucket>/<key>` rather than `<bucket>.<host>/<key>`: what most self-hosted stores want. */
  pathStyle?: boolean;
}

/** The store's working limits; the defaults suit a worker uploading its finished files. */
export interface S3Tuning {
  /** Files above this go up in parts (each retried alone); at or below it, one PUT from memory. Default 16 MiB. */
  multipartThresholdBytes?: number;
  /** Size of a part (at least 5 MiB, S3's minimum). Default 16 MiB. */
  partBytes?: number;
  /** Parts of one file in flight at once (each held in memory). Default 2. */
  partsAtOnce?: number;
  /** Keys a listing asks for per request (S3's maximum is 1000). Default 1000. */
  listPageSize?: number;
  /** Attempts of one request, the first included, by the SDK's standard retry strategy (back-off with jitter). Default 3. */
  maxAttempts?: number;
  /** Deadline of a TCP (and TLS) connection. Default 10 s. */
  connectionTimeoutMs?: number;
  /** Deadline from a request's start to its response's headers (a whole part's upload included). Default 120 s. */
  requestTimeoutMs?: number;
  /** Longest silence of a connection while a request or a response body is under way. Default 30 s. */
  socketTimeoutMs?: number;
}

const DEFAULTS: Required<S3Tuning> = {
  multipartThresholdBytes: 16 * MIB,
  partBytes: 16 * MIB,
  partsAtOnce: 2,
  listPageSize: 1000,
  maxAttempts: 3,
  connectionTimeoutMs: 10_000,
  requestTimeoutMs: 120_000,
  socketTimeoutMs: 30_000,
};

/** What the SDK's errors carry: the service's error name, the HTTP status, and Node's code for a network error. */
interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

/** Node and SDK signs that no answer came back: nothing was said by the store, so it is unreachable, not refusing. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ECONNABORTED', 'EPROTO']);
/** The service's names for a refusal of who is asking. */
const DENIED_NAMES = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidToken',
  'ExpiredToken',
  'TokenRefreshRequired',
  'AllAccessDisabled',
  'AccountProblem',
  'CredentialsProviderError',
]);

/**
 * Node's code of a network error. Read from the message too: the SDK's retry
 * layer wraps a thrown value that is not an Error of its own realm (a Node
 * error seen from a vm context, as under jest) in a new Error whose message
 * alone still names the code.
 */
function networkCode(e: SdkError | null): string | null {
  if (e?.code && NETWORK_CODES.has(e.code)) return e.code;
  const m = /\b(E[A-Z]+)\b/.exec(String(e?.message ?? ''));
  if (m && NETWORK_CODES.has(m[1])) return m[1];
  return /socket hang up/i.test(String(e?.message ?? '')) ? 'ECONNRESET' : null;
}

const statusOf = (err: unknown): number | undefined => (err as SdkError | null)?.$metadata?.httpStatusCode;
const nameOf = (err: unknown): string => String((err as SdkError | null)?.name ?? '');
const isNotFound = (err: unknown): boolean => statusOf(err) === 404 && !/NoSuchBucket/.test(nameOf(err));
/** 412: the key exists. 409 (ConditionalRequestConflict): another conditional write of the key is under way. */
const isConflict = (err: unknown): boolean => statusOf(err) === 412 || statusOf(err) === 409 || nameOf(err) === 'PreconditionFailed';

export class S3ObjectStore implements ObjectStore {
  readonly location: string;
  private readonly client: S3Client;
  private readonly tuning: Required<S3Tuning>;
  private readonly endpointName: string;

  constructor(
    private readonly at: S3Location,
    connection: S3Connection = {},
    tuning: S3Tuning = {},
  ) {
    this.location = at.url;
    this.tuning = { ...DEFAULTS, ...tuning };
    this.tuning.partBytes = Math.max(MIN_PART_BYTES, this.tuning.partBytes);
    this.endpointName = connection.endpoint ?? 'AWS S3';
    this.client = newS3Client({
      ...(connection.endpoint ? { endpoint: connection.endpoint } : {}),
      ...(connection.region ? { region: connection.region } : {}),
      forcePathStyle: connection.pathStyle ?? false,
      // A bucket in another region than the client's answers 301 on AWS: follow it rather than fail.
      followRegionRedirects: true,
      maxAttempts: this.tuning.maxAttempts,
      // NodeHttpHandler's options, which the SDK builds its handler from. throwOnRequestTimeout: without it
      // requestTimeout only logs a warning, and a store that accepts connections but never answers holds the caller.
      requestHandler: {
        connectionTimeout: this.tuning.connectionTimeoutMs,
        requestTimeout: this.tuning.requestTimeoutMs,
        throwOnRequestTimeout: true,
        socketTimeout: this.tuning.socketTimeoutMs,
      },
    });
  }

  /** Closes the client's connections. */
  destroy(): void {
    this.client.destroy();
  }

  async putFile(key: string, file: string): Promise<void> {
    const objectKey = this.objectKey(key);
    let size: number;
    try {
      size = (await fsp.stat(file)).size;
    } catch (err) {
      throw new StorageError('READ_FAILED', file, `cannot upload ${this.named(key)}: cannot read the local file`, { cause: err });
    }
    if (size <= this.tuning.multipartThresholdBytes) {
      let body: Buffer;
      try {
        // Whole in memory (at most the threshold): a body the SDK can send again when it retries.
        body = await fsp.readFile(file);
      } catch (err) {
        throw new StorageError('READ_FAILED', file, `cannot upload ${this.named(key)}: cannot read the local file`, { cause: err });
      }
      return this.putBody(key, body);
    }
    // A large file already there is not sent again (a retry after a crash): If-None-Match would refuse it only at the end.
    const existing = await this.size(key);
    if (existing !== null) return this.settle(key, existing, size);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.at.bucket, Key: objectKey, Body: fs.createReadStream(file), ContentLength: size, IfNoneMatch: '*' },
      partSize: this.tuning.partBytes,
      queueSize: this.tuning.partsAtOnce,
      // A failed upload's parts are aborted, so they do not linger (and cost) in the bucket.
      leavePartsOnError: false,
    });
    try {
      // CompleteMultipartUpload carries If-None-Match: the object appears whole, and only if the key is free.
      await upload.done();
    } catch (err) {
      if (isConflict(err)) return this.settle(key, await this.size(key), size);
      throw this.failure(err, 'uploading to', key);
    }
  }

  async putBytes(key: string, body: Uint8Array): Promise<void> {
    this.objectKey(key);
    return this.putBody(key, Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  }

  async read(key: string, range?: { start: number; length?: number }): Promise<Readable> {
    const objectKey = this.objectKey(key);
    const start = range?.start ?? 0;
    const length = range?.length;
    if (!Number.isSafeInteger(start) || start < 0 || (length !== undefined && (!Number.isSafeInteger(length) || length < 0))) {
      throw new StorageError('INVALID_INPUT', this.named(key), `a range is a whole start ≥ 0 and an optional whole length ≥ 0 (got ${JSON.stringify(range)})`);
    }
    // HTTP cannot ask for no bytes: an empty range is an existence check.
    if (length === 0) {
      if ((await this.size(key)) === null) throw this.missing(key);
      return Readable.from([]);
    }
    const wanted = start > 0 || length !== undefined ? `bytes=${start}-${length !== undefined ? start + length - 1 : ''}` : undefined;
    let body: Readable;
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.at.bucket, Key: objectKey, Range: wanted }));
      body = res.Body as Readable;
    } catch (err) {
      if (isNotFound(err)) throw this.missing(key);
      // 416: the range starts at or past the end. As a file read there, nothing, if the object exists.
      if (statusOf(err) === 416) {
        if ((await this.size(key)) === null) throw this.missing(key);
        return Readable.from([]);
      }
      throw this.failure(err, 'reading from', key);
    }
    // A body cut off half way (the store gone, a silent connection) fails the reader with the store's error codes too.
    const out = new PassThrough();
    body.on('error', (err) => out.destroy(this.failure(err, 'reading from', key)));
    out.on('close', () => body.destroy());
    return body.pipe(out);
  }

  async size(key: string): Promise<number | null> {
    const objectKey = this.objectKey(key);
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.at.bucket, Key: objectKey }));
      return head.ContentLength ?? 0;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw this.failure(err, 'looking up in', key);
    }
  }

  async remove(key: string): Promise<void> {
    try {
      // S3 answers a delete of a key that is not there with success, as this interface asks.
      await this.client.send(new DeleteObjectCommand({ Bucket: this.at.bucket, Key: this.objectKey(key) }));
    } catch (err) {
      throw this.failure(err, 'deleting from', key);
    }
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    if (prefix !== '') this.objectKey(prefix.replace(/\/$/, ''));
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.at.bucket, Prefix: this.at.prefix + prefix, MaxKeys: this.tuning.listPageSize, ContinuationToken: token }),
        );
      } catch (err) {
        throw this.failure(err, 'listing', prefix);
      }
      for (const o of page.Contents ?? []) {
        // A key ending in '/' is a folder marker some tools write; never an object of this interface.
        if (!o.Key || o.Key.endsWith('/')) continue;
        yield { key: o.Key.slice(this.at.prefix.length), size: o.Size ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** One PUT, whole or not at all, refused by the store if the key exists. */
  private async putBody(key: string, body: Buffer): Promise<void> {
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.at.bucket, Key: this.objectKey(key), Body: body, ContentLength: body.length, IfNoneMatch: '*' }));
    } catch (err) {
      if (isConflict(err)) return this.settle(key, await this.size(key), body.length);
      throw this.failure(err, 'uploading to', key);
    }
  }

  /** The key held an object when this one went up: the same size is this one sent before; another size is a clash. */
  private settle(key: string, existing: number | null, size: number): void {
    if (existing === size) return;
    if (existing === null) {
      throw new StorageError('STORE_FAILED', this.named(key), 'the store refused the upload as a conflict yet holds no object: another upload of this key is under way; try again');
    }
    throw new StorageError('OBJECT_EXISTS', this.named(key), `another object is stored under this key (${existing} bytes, not ${size}); objects are never replaced`);
  }

  /** `key` under the store's prefix, after checking it is a relative key of this interface. */
  private objectKey(key: string): string {
    const segments = key.split('/');
    const odd = [...key].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f || ch === '\\');
    if (key === '' || segments.some((s) => s === '' || s === '.' || s === '..') || odd) {
      throw new StorageError('INVALID_INPUT', this.location, `invalid key ${JSON.stringify(key)}: relative, '/'-separated, no empty, "." or ".." segment, no control character`);
    }
    return this.at.prefix + key;
  }

  private named(key: string): string {
    return `${this.location}${key}`;
  }

  private missing(key: string): StorageError {
    return new StorageError('OBJECT_MISSING', this.named(key), 'no such object');
  }

  /** The SDK's error as one of the store's codes, in words that name the store and the key but never a credential. */
  private failure(err: unknown, doing: string, key: string): StorageError {
    if (err instanceof StorageError) return err;
    const status = statusOf(err);
    const name = nameOf(err);
    const e = err as SdkError | null;
    const seen = status ? `${name || 'an error'}, HTTP ${status}` : name || e?.code || 'an error';
    const fail = (code: StorageErrorCode, message: string) => new StorageError(code, this.named(key), message, { cause: err });
    if (name === 'CredentialsProviderError') {
      return fail(
        'STORE_DENIED',
        `${doing} the object store: no credentials found by the AWS SDK on this machine (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws/credentials, or a role)`,
      );
    }
    if (status === 403 || DENIED_NAMES.has(name)) {
      return fail(
        'STORE_DENIED',
        `${doing} the object store at ${this.endpointName}: refused (${seen}); check the credentials the AWS SDK finds on this machine (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws/credentials) and their permissions on the bucket`,
      );
    }
    if (status === undefined && (name === 'TimeoutError' || networkCode(e) !== null)) {
      return fail('STORE_UNREACHABLE', `${doing} the object store: no answer from ${this.endpointName} (${networkCode(e) ?? name}: ${e?.message ?? ''})`);
    }
    if (/Region is missing/i.test(String(e?.message ?? ''))) {
      return fail('STORE_FAILED', `${doing} the object store: no region; set output.s3.region (--s3-region) or AWS_REGION`);
    }
    if (/NoSuchBucket/.test(name)) return fail('STORE_FAILED', `${doing} the object store at ${this.endpointName}: the bucket ${this.at.bucket} does not exist`);
    return fail('STORE_FAILED', `${doing} the object store at ${this.endpointName} failed (${seen}${status ? '' : `: ${e?.message ?? String(err)}`})`);
  }
}
