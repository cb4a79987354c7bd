// Stage 3 of a page: the response into the WARC (in full, or as a revisit
// record when its payload was stored before), and the handler's dataset
// items. Plain data in, where it landed out; the writers and the payload
// index come in as `deps`.
import type { FetchResult } from '../../src/http/http-types';
import type { PayloadClaim, PayloadKey } from '../../src/dedup/payload-index';
import type { DatasetLine } from '../../src/storage/dataset-writer';
import type { IndexEntry } from '../../src/storage/index-writer';
import { payloadDigestOf, responseRecordId, type RevisitOf, type WarcExchange, type WarcLocation } from '../../src/storage/warc-writer';
import type { Candidate } from '../discovery';

/** Outlinks listed in a WARC metadata record. */
const MAX_METADATA_OUTLINKS = 1000;

export interface StoreDeps {
  warc: { writeExchange(exchange: WarcExchange): Promise<WarcLocation> };
  /** The campaign's payload index (src/dedup/payload-index.ts); null when dedup is off. */
  payloads: {
    claim(key: PayloadKey, attempt: string, signal?: AbortSignal): Promise<PayloadClaim>;
    awaitStored(key: PayloadKey, attempt: string, signal?: AbortSignal): Promise<PayloadClaim>;
    /** `attemptId`: the attempt that wrote it, whose record ID is responseRecordId's. */
    confirm(key: PayloadKey, stored: RevisitOf, attemptId?: string): Promise<unknown>;
    abandon(key: PayloadKey, attempt: string): Promise<void>;
  } | null;
  dataset(): Promise<{ appendAll(lines: DatasetLine[]): Promise<unknown> }>;
  signal: AbortSignal;
}

export interface StoreInput {
  url: string;
  fp: string;
  attemptId: string;
  campaignId: string;
  label: string | null;
  response: FetchResult;
  /** The page's candidates (outlinks in the metadata record). */
  candidates: Candidate[];
  /** How the URL was reached and from where: the metadata record's `hopsFromSeed` and `via`, as Heritrix writes them. */
  hops: string;
  referrer: string | null;
  duplicateOf?: IndexEntry['duplicateOf'];
  canonical?: string | null;
  /**
   * The content index already settled, atomically, which URL first had these
   * exact bytes (the first look of a first visit's first attempt): that page
   * stores them without a claim of its own, its exact duplicates wait for its
   * copy. Otherwise (a retry, a revisit, no content check) the payload is claimed.
   */
  firstLook: boolean;
  /**
   * A retry of a first visit whose content check found the page unique (its own bytes, not a
   * copy of another URL's): it stores them in full again rather than claim the payload. The
   * copy its earlier attempt may have confirmed can be gone (a worker killed before uploading
   * it, its disk lost), and a revisit of it would point at nothing; a second full copy of a
   * page retried after a fault costs only its bytes.
   */
  ownCopy?: boolean;
  /** Dataset items the handler returned. */
  items: DatasetLine['item'][];
  /** contentHashOf(response.body), when the classify stage computed it: the payload index may keep an HTML page's stored copy with its exact hash. */
  contentHash?: string;
  /** output.warcKeepSecrets: credentials and cookies stay in the WARC (default: redacted by the writer). */
  keepSecrets?: boolean;
}

export interface Stored {
  loc: WarcLocation;
  /** The record a revisit record refers to (the payload was stored before). */
  revisitOf: RevisitOf | null;
  /** The payload digest, when the payload index took part. */
  digest: string;
}

export async function storeStage(input: StoreInput, deps: StoreDeps): Promise<Stored> {
  const res = input.response;
  const ok = res.status >= 200 && res.status < 300;
  const fetchedAt = new Date(res.startedAt);
  // A payload the campaign stored before becomes a revisit record referring
  // to that copy; the first one is claimed, written in full and only then
  // offered to revisits. Only complete 2xx payloads take part: an error page
  // or a redirect's body stays in full with its URL.
  const payloads = ok && res.body.length > 0 && !res.truncated ? deps.payloads : null;
  const digest = payloads ? payloadDigestOf(res.body) : '';
  const key: PayloadKey = input.contentHash ? { digest, contentHash: input.contentHash } : digest;
  const claim = await claimPayload(payloads, key, input, deps.signal);
  let loc: WarcLocation;
  try {
    loc = await deps.warc.writeExchange({
      url: input.url,
      fetchedAt,
      ip: res.remoteAddress ?? undefined,
      request: { method: 'GET', headers: res.requestHeaders, path: pathOf(input.url), secretHeaders: res.secretHeaders },
      response: { status: res.status, statusText: res.statusText, headers: res.headers, body: res.body, truncated: res.truncated, ...(digest ? { payloadDigest: digest } : {}) },
      metadata: warcMetadata(res.endedAt - res.startedAt, input),
      keepSecrets: input.keepSecrets === true,
      ...(claim?.kind === 'revisit' ? { revisit: claim.of } : {}),
      // The original's ID follows from its URL, date and attempt: the payload index keeps those, not the ID's 16 bytes.
      ...(claim?.kind === 'original' ? { recordId: responseRecordId(input.url, fetchedAt.toISOString(), input.attemptId) } : {}),
    });
  } catch (err) {
    if (claim?.kind === 'original') await payloads!.abandon(key, input.attemptId).catch(() => undefined);
    throw err;
  }
  if (claim?.kind === 'original') await payloads!.confirm(key, { uri: input.url, date: fetchedAt.toISOString(), recordId: loc.recordId }, input.attemptId);
  if (input.items.length > 0) {
    // Before the index line: an attempt whose index line never lands has its items dropped at sealing.
    const tag = {
      url: input.url,
      fp: input.fp,
      attemptId: input.attemptId,
      campaignId: input.campaignId,
      label: input.label,
      fetchedAt: fetchedAt.toISOString(),
      warc: { file: loc.file, offset: loc.offset },
    };
    await (await deps.dataset()).appendAll(input.items.map((item): DatasetLine => ({ ...tag, item })));
  }
  return { loc, revisitOf: claim?.kind === 'revisit' ? claim.of : null, digest };
}

async function claimPayload(payloads: StoreDeps['payloads'], key: PayloadKey, input: StoreInput, signal: AbortSignal): Promise<PayloadClaim | null> {
  if (!payloads) return null;
  if (input.firstLook && input.duplicateOf?.kind === 'exact') return payloads.awaitStored(key, input.attemptId, signal);
  if ((input.firstLook || input.ownCopy) && !input.duplicateOf) return { kind: 'original' };
  return payloads.claim(key, input.attemptId, signal);
}

/**
 * A 304 to a revisit's conditional request: a revisit record (profile
 * server-not-modified) referring to the capture the request named, no body.
 */
export async function storeNotModified(
  res: FetchResult,
  url: string,
  of: RevisitOf & { payloadDigest?: string },
  warc: StoreDeps['warc'],
  keepSecrets = false,
): Promise<WarcLocation> {
  return warc.writeExchange({
    url,
    fetchedAt: new Date(res.startedAt),
    ip: res.remoteAddress ?? undefined,
    keepSecrets,
    request: { method: 'GET', headers: res.requestHeaders, path: pathOf(url), secretHeaders: res.secretHeaders },
    response: { status: res.status, statusText: res.statusText, headers: res.headers, body: res.body, truncated: res.truncated },
    metadata: { fetchTimeMs: String(res.endedAt - res.startedAt) },
    revisit: { ...of, profile: 'server-not-modified' },
  });
}

/** The WARC metadata record of an exchange: what a replay or analysis tool needs that the response does not say. */
function warcMetadata(fetchMs: number, { candidates, duplicateOf, canonical, hops, referrer }: StoreInput): Record<string, string | string[]> {
  const m: Record<string, string | string[]> = { fetchTimeMs: String(fetchMs), hopsFromSeed: hops };
  if (referrer) m.via = referrer.slice(0, 2048);
  if (candidates.length) m.outlink = candidates.slice(0, MAX_METADATA_OUTLINKS).map((c) => c.url.slice(0, 2048));
  if (canonical) m.canonical = canonical;
  if (duplicateOf) m.duplicateOf = `${duplicateOf.kind} ${duplicateOf.distance} ${duplicateOf.url}`;
  return m;
}

function pathOf(url: string): string {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
}
