// The body of a response, read within its bounds: content codings undone
// (gzip, deflate, br) as it arrives, at most maxBodyBytes decoded and at
// most as many received on the wire, what was read kept when the deadline
// ends it.
import type { Readable, Transform } from 'node:stream';
import * as zlib from 'node:zlib';
import type { FetchDeadline } from './fetch-deadline';
import { FetchError } from './fetch-error';

/** Ends a response body we will not read; its socket goes with it. */
export function discard(body: Readable): void {
  body.on('error', () => undefined);
  body.destroy();
}

export type Coding = 'gzip' | 'deflate' | 'br';

/** Codings in the order they must be undone (reverse of application order). */
export function parseContentCodings(header: string | undefined, body: Readable, url: string): Coding[] {
  if (!header) return [];
  const codings: Coding[] = [];
  for (const raw of header.split(',')) {
    const token = raw.trim().toLowerCase();
    if (token === '' || token === 'identity') continue;
    if (token === 'gzip' || token === 'x-gzip') codings.push('gzip');
    else if (token === 'deflate') codings.push('deflate');
    else if (token === 'br') codings.push('br');
    else {
      // Do not download a body we cannot decode.
      discard(body);
      throw new FetchError('UNSUPPORTED_CONTENT_ENCODING', url, { detail: `Content-Encoding ${JSON.stringify(header)}` });
    }
  }
  return codings.reverse();
}

function createDecoder(coding: Coding, firstChunk: Buffer | null): Transform {
  // Lenient flushing, as browsers do: a stream cut short (missing gzip
  // trailer) yields what was decodable instead of "unexpected end of file".
  switch (coding) {
    case 'gzip':
      return zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH });
    case 'br':
      return zlib.createBrotliDecompress({
        flush: zlib.constants.BROTLI_OPERATION_FLUSH,
        finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH,
      });
    case 'deflate': {
      // "deflate" should be zlib-wrapped (RFC 9110) but some servers send raw
      // DEFLATE; sniff the zlib header (CM=8, header checksum) like browsers.
      const zlibWrapped = firstChunk === null || ((firstChunk[0] & 0x0f) === 8 && (firstChunk.length < 2 || ((firstChunk[0] << 8) | firstChunk[1]) % 31 === 0));
      const options = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
      return zlibWrapped ? zlib.createInflate(options) : zlib.createInflateRaw(options);
    }
  }
}

export interface BodyRead {
  body: Buffer;
  rawBytes: number;
  truncated: 'length' | 'time' | null;
}

/**
 * Reads and decodes `source`, keeping at most `limit` decoded bytes and
 * decoding at most `limit` wire bytes. Hitting either limit destroys the
 * undici body, which aborts the request and closes the socket, so the rest of
 * a huge, zip-bombed, or endlessly padded compressed response is never
 * received. At the wire limit the decoders are ended on the bytes before it,
 * so the body is what those decode to (they flush leniently), truncated='length'.
 * Expiry of the total deadline returns what was read (truncated='time').
 */
export function readBody(source: Readable, codings: Coding[], limit: number, url: string, deadline: FetchDeadline): Promise<BodyRead> {
  return new Promise<BodyRead>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    let rawBytes = 0;
    let settled = false;
    // Set when the wire limit is reached: the rest of the source is ignored
    // (including the abort error destroying it raises) while the decoders flush.
    let wireCut = false;
    // Built on the first raw chunk: empty bodies (204, 304, HEAD-like) never
    // reach zlib, and deflate needs that chunk to sniff its framing.
    let decoders: Transform[] | null = null;

    const stop = (): void => {
      source.destroy();
      for (const decoder of decoders ?? []) decoder.destroy();
    };
    const settle = (truncated: BodyRead['truncated']): void => {
      if (settled) return;
      settled = true;
      deadline.signal.removeEventListener('abort', onAbort);
      if (truncated) stop();
      resolve({ body: Buffer.concat(chunks, kept), rawBytes, truncated });
    };
    const fail = (err: FetchError): void => {
      if (settled) return;
      settled = true;
      deadline.signal.removeEventListener('abort', onAbort);
      stop();
      reject(err);
    };
    const keep = (chunk: Buffer): void => {
      if (settled) return;
      if (kept + chunk.length > limit) {
        chunks.push(chunk.subarray(0, limit - kept));
        kept = limit;
        settle('length');
        return;
      }
      chunks.push(chunk);
      kept += chunk.length;
    };
    // Listening ourselves (not only via undici destroying the body) also
    // covers a deadline that fires while the decoders are still flushing.
    function onAbort(): void {
      if (deadline.timedOut) settle('time');
      else fail(deadline.classify(deadline.signal.reason, url));
    }

    const buildDecoders = (firstChunk: Buffer): Transform[] => {
      const chain = codings.map((coding, i) => createDecoder(coding, i === 0 ? firstChunk : null));
      chain.forEach((decoder, i) => {
        decoder.on('error', (err) => fail(new FetchError('DECOMPRESSION_FAILED', url, { cause: err })));
        if (i + 1 < chain.length) decoder.pipe(chain[i + 1]);
      });
      const first = chain[0];
      const last = chain[chain.length - 1];
      first.on('drain', () => source.resume());
      last.on('data', keep);
      last.on('end', () => settle(wireCut ? 'length' : null));
      return chain;
    };

    if (deadline.signal.aborted) {
      onAbort();
      return;
    }
    deadline.signal.addEventListener('abort', onAbort, { once: true });

    // Stays attached after settling: destroying an unfinished undici body
    // emits RequestAbortedError, which must not go unhandled.
    source.on('error', (err) => {
      if (wireCut) return;
      if (deadline.timedOut) settle('time');
      else fail(deadline.classify(err, url));
    });
    source.on('data', (chunk: Buffer) => {
      if (settled || wireCut) return;
      const before = rawBytes;
      rawBytes += chunk.length;
      if (codings.length === 0) {
        // Wire bytes are the decoded bytes here: keep() enforces the limit.
        keep(chunk);
        return;
      }
      if (rawBytes > limit) {
        wireCut = true;
        const last = chunk.subarray(0, limit - before);
        decoders ??= buildDecoders(last);
        source.destroy();
        decoders[0].end(last);
        return;
      }
      decoders ??= buildDecoders(chunk);
      if (!decoders[0].write(chunk)) source.pause();
    });
    source.on('end', () => {
      if (wireCut) return;
      if (decoders) decoders[0].end();
      else settle(null);
    });
  });
}
