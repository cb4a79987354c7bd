// A DNS server on loopback for tests: answers A and AAAA queries from a table
// (with the TTL the test chose) and counts every query it gets, so a test can
// see how often the crawler really resolved a name. Hand-rolled RFC 1035
// packets, enough for the queries node's resolver (c-ares) sends.
import dgram from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import net from 'node:net';

export interface DnsRecordSet {
  /** IPv4 and IPv6 addresses, as the A and AAAA answers. */
  addresses: string[];
  ttlSeconds: number;
  /** Answer with this response code instead (5 = REFUSED, 2 = SERVFAIL). */
  rcode?: number;
}

export interface TestDnsServer {
  port: number;
  /** Names the server knows (lower-case, no trailing dot); anything else is NXDOMAIN. */
  records: Map<string, DnsRecordSet>;
  /** Every query received, as `name/A` or `name/AAAA`. */
  queries: string[];
  /** Queries for one name, any type. */
  queriesFor(name: string): number;
  /** A node resolver that asks only this server. */
  resolver(): Resolver;
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;

/** The question's name and where the question section ends. */
function readQuestion(msg: Buffer): { name: string; type: number; end: number } | null {
  let off = 12;
  const labels: string[] = [];
  while (off < msg.length) {
    const len = msg[off];
    if (len === 0) {
      off += 1;
      break;
    }
    if (len > 63) return null; // compression pointers never appear in a query's question
    labels.push(msg.subarray(off + 1, off + 1 + len).toString('latin1'));
    off += 1 + len;
  }
  if (off + 4 > msg.length) return null;
  return { name: labels.join('.').toLowerCase(), type: msg.readUInt16BE(off), end: off + 4 };
}

function answerFor(type: number, address: string, ttl: number): Buffer | null {
  const family = net.isIP(address);
  if ((type === TYPE_A && family !== 4) || (type === TYPE_AAAA && family !== 6)) return null;
  const rdata = family === 4 ? Buffer.from(address.split('.').map(Number)) : ipv6Bytes(address);
  const rr = Buffer.alloc(12);
  rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
  rr.writeUInt16BE(type, 2);
  rr.writeUInt16BE(1, 4); // class IN
  rr.writeUInt32BE(ttl, 6);
  rr.writeUInt16BE(rdata.length, 10);
  return Buffer.concat([rr, rdata]);
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.split('::');
  const parts = (s: string | undefined) => (s ? s.split(':') : []);
  const h = parts(head);
  const t = tail === undefined ? [] : parts(tail);
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

export async function startDnsServer(records: Record<string, DnsRecordSet> = {}): Promise<TestDnsServer> {
  const socket = dgram.createSocket('udp4');
  const table = new Map(Object.entries(records));
  const queries: string[] = [];
  socket.on('message', (msg, peer) => {
    if (msg.length < 12) return;
    const q = readQuestion(msg);
    if (!q) return;
    queries.push(`${q.name}/${q.type === TYPE_A ? 'A' : q.type === TYPE_AAAA ? 'AAAA' : q.type}`);
    const set = table.get(q.name);
    const answers = set && !set.rcode ? set.addresses.map((a) => answerFor(q.type, a, set.ttlSeconds)).filter((b): b is Buffer => b !== null) : [];
    const rcode = set ? (set.rcode ?? 0) : 3; // 3 = NXDOMAIN
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0); // id
    // QR, the query's opcode and RD, AA, RA, rcode.
    header.writeUInt16BE(0x8000 | (msg.readUInt16BE(2) & 0x7900) | 0x0400 | 0x0080 | rcode, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    socket.send(Buffer.concat([header, msg.subarray(12, q.end), ...answers]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  return {
    port,
    records: table,
    queries,
    queriesFor: (name) => queries.filter((q) => q.startsWith(`${name}/`)).length,
    resolver: () => {
      const r = new Resolver({ timeout: 1000, tries: 1 });
      r.setServers([`127.0.0.1:${port}`]);
      return r;
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
