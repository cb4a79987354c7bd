// A WARC/1.1 revisit record (profile identical-payload-digest) written by
// hand, byte for byte as the spec lays it out, so the indexers can be tested
// on revisits independently of the code that will write them in a crawl.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { gzipSync } from 'node:zlib';
import { base32 } from '../../src/storage/warc-writer';

export interface RevisitSpec {
  url: string;
  date: Date;
  refersToUrl: string;
  refersToDate: Date;
  /** The original response's WARC-Payload-Digest. */
  payloadDigest: string;
  status: number;
  headers: [string, string][];
}

/** Appends the revisit as one gzip member; returns its offset and length in the file. */
export function appendRevisit(file: string, r: RevisitSpec): { offset: number; length: number } {
  const http = Buffer.from(`HTTP/1.1 ${r.status} OK\r\n${r.headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`, 'latin1');
  const head =
    'WARC/1.1\r\n' +
    'WARC-Type: revisit\r\n' +
    `WARC-Record-ID: <urn:uuid:${randomUUID()}>\r\n` +
    `WARC-Date: ${r.date.toISOString()}\r\n` +
    `WARC-Target-URI: ${r.url}\r\n` +
    'WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest\r\n' +
    `WARC-Refers-To-Target-URI: ${r.refersToUrl}\r\n` +
    `WARC-Refers-To-Date: ${r.refersToDate.toISOString()}\r\n` +
    `WARC-Payload-Digest: ${r.payloadDigest}\r\n` +
    `WARC-Block-Digest: sha1:${base32(createHash('sha1').update(http).digest())}\r\n` +
    'Content-Type: application/http; msgtype=response\r\n' +
    `Content-Length: ${http.length}\r\n\r\n`;
  const member = gzipSync(Buffer.concat([Buffer.from(head, 'utf8'), http, Buffer.from('\r\n\r\n')]));
  const offset = fs.statSync(file).size;
  fs.appendFileSync(file, member);
  return { offset, length: member.length };
}
