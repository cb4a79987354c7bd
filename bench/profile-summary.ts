// Where a worker's CPU goes, from the V8 CPU profiles `npm run bench -- --cpu-prof`
// has its workers write:
//   npx tsx bench/profile-summary.ts <folder or .cpuprofile files> [--top 30] [--per 2000]
// Self time by function and by category (SimHash, text encoding, GC, parse5,
// Redis, the Temporal SDK…), per profile (each thread writes its own: the
// worker's main thread, the SDK's workflow thread) and for all of them.
// Frames of the worker bundle are mapped back to their source file (the
// bundle's linked source map, read with node:module's SourceMap), so a
// function of parse5 is named as parse5's, not the bundle's.
// Then our own functions (src/, activities/, workflows/) by inclusive time:
// a sample counts for every one of ours on its stack, so a stage's share
// includes what it called. Only synchronous slices are on a stack (an async
// function's time is what it ran between two awaits). With --per N those
// rows also give ms per one of N (the pages or hosts the run crawled).
// Native work on other threads (zlib's compression in libuv's pool, the SDK's
// Rust core) is in no profile: the process's CPU time (the bench's
// cpuMsPerPage) holds it, a profile's samples do not.
import fs from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Categories by what a frame's source file or function is; the first that matches wins. */
const CATEGORIES: [string, (src: string, fn: string) => boolean][] = [
  ['GC', (_s, fn) => fn === '(garbage collector)'],
  // esbuild's keepNames: a function defined inside another is named (Object.defineProperty) each time the outer one runs.
  ['naming inner functions (the bundle’s __name)', (s, fn) => fn === '__name' || fn === 'set natives'],
  ['idle', (_s, fn) => fn === '(idle)'],
  ['V8/native, unattributed', (_s, fn) => fn === '(program)'],
  ['SimHash', (s) => /simhash/i.test(s)],
  [
    'text encode/decode (TextEncoder, TextDecoder, string_decoder)',
    (s, fn) => /^node:(internal\/encoding|string_decoder)$/.test(s) || /^(encodeUtf8String|encodeInto|decodeUTF8|utf8Slice|latin1Slice)$/.test(fn),
  ],
  ['parse5 (DOM build)', (s) => s.includes('/parse5')],
  ['selector matching (css-select)', (s) => /\/(css-select|css-what|nth-check|boolbase)\//.test(s)],
  ['cheerio', (s) => s.includes('/cheerio')],
  ['htmlparser2 / domhandler / entities', (s) => /\/(htmlparser2|domhandler|domutils|dom-serializer|entities|encoding-sniffer|whatwg-encoding|iconv-lite)\//.test(s)],
  ['zlib (JS side; compression itself is in the thread pool)', (s, fn) => s === 'node:zlib' || /zlib/i.test(fn)],
  ['hashing (node:crypto)', (s) => s === 'node:crypto' || s.startsWith('node:internal/crypto')],
  ['Redis client (ioredis)', (s) => /\/(ioredis|redis-parser|denque|cluster-key-slot|standard-as-callback)\//.test(s)],
  ['Temporal SDK', (s) => s.includes('@temporalio') || s.includes('/workflows-') || /protobufjs|@grpc|long\//.test(s)],
  ['undici (HTTP client)', (s) => s.includes('/undici')],
  ['WARC/CDXJ writing (ours)', (s) => /\/src\/(storage|warc)\//.test(s)],
  ['parsing and links (ours)', (s) => /\/src\/(parse|links|html)\//.test(s)],
  ['URL rules and normalising (ours, WHATWG URL)', (s, fn) => /\/src\/url\//.test(s) || s === 'node:internal/url' || fn === 'URL'],
  ['the rest of ours (src/, activities/)', (s) => /\/(src|activities|handlers)\//.test(s)],
  ['node: streams, net, timers, promises', (s) => s.startsWith('node:')],
  ['other packages', (s) => s.includes('/node_modules/')],
];

const maps = new Map<string, SourceMap | null>();

/** A bundle's source map (linked beside it), or null for files that have none. */
function mapFor(url: string): SourceMap | null {
  if (maps.has(url)) return maps.get(url)!;
  let map: SourceMap | null = null;
  try {
    const file = url.startsWith('file:') ? fileURLToPath(url) : url;
    if (path.isAbsolute(file) && fs.existsSync(`${file}.map`)) {
      const payload = JSON.parse(fs.readFileSync(`${file}.map`, 'utf8')) as { sources: string[] };
      // Sources are relative to the map; made absolute so categories can read package names.
      payload.sources = payload.sources.map((s) => path.resolve(path.dirname(file), s));
      map = new SourceMap(payload as never);
    }
  } catch {
    map = null;
  }
  maps.set(url, map);
  return map;
}

/** The source file of a frame: through the bundle's map where there is one. */
function sourceOf(f: CallFrame): string {
  const map = f.url ? mapFor(f.url) : null;
  if (map && f.lineNumber >= 0) {
    const e = map.findEntry(f.lineNumber, f.columnNumber) as { originalSource?: string };
    if (e.originalSource) return e.originalSource;
  }
  return f.url;
}

const categoryOf = (src: string, fn: string): string => CATEGORIES.find(([, m]) => m(src, fn))?.[0] ?? 'other';

/** Categories that say where a frame's time went but not on whose behalf: such a frame counts for its nearest caller of a package or of ours. */
const GENERIC = new Set(['other', 'node: streams, net, timers, promises', 'V8/native, unattributed']);
const isUserland = (src: string): boolean => /\/(node_modules|src|activities|workflows|handlers)\//.test(src);

/** A source path as people name it: the package's path, or ours from src/, activities/…. */
function shortName(src: string): string {
  if (src.includes('/node_modules/')) return src.replace(/^.*\/node_modules\//, '');
  return src.replace(/^.*?\/(src|activities|workflows|handlers)\//, '$1/');
}

interface Tally {
  totalMs: number;
  byFunction: Map<string, number>;
  byCategory: Map<string, number>;
  /** Our functions, each counted once for every sample it is on the stack of. */
  oursInclusive: Map<string, number>;
}

const newTally = (): Tally => ({ totalMs: 0, byFunction: new Map(), byCategory: new Map(), oursInclusive: new Map() });

/** A frame of ours, named as in the sources (function and file), or null for anything else. */
function oursLabeller(profile: CpuProfile): (id: number) => string | null {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const labels = new Map<number, string | null>();
  return (id) => {
    if (labels.has(id)) return labels.get(id)!;
    const f = nodes.get(id)!.callFrame;
    const src = sourceOf(f);
    const ours = !src.includes('/node_modules/') && /\/(src|activities|workflows|handlers)\//.test(src);
    const label = ours ? `${f.functionName || '(anonymous)'} (${shortName(src)})` : null;
    labels.set(id, label);
    return label;
  };
}

/** What one profile node is: its own function, its nearest package-or-ours caller, and the category both make it. */
function labeller(profile: CpuProfile): (id: number) => { fn: string; cat: string } {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const labels = new Map<number, { fn: string; cat: string }>();
  return (id) => {
    const known = labels.get(id);
    if (known) return known;
    const f = nodes.get(id)!.callFrame;
    const src = sourceOf(f);
    const name = `${f.functionName || '(anonymous)'}${src ? ` (${shortName(src)})` : ''}`;
    let cat = categoryOf(src, f.functionName);
    let fn = name;
    if (!isUserland(src) && !f.functionName.startsWith('(')) {
      // Native and node-internal work (a socket write, a URL parse, TextEncoder) is named with whoever asked for it,
      // and charged to it unless its own category says more.
      for (let p = parent.get(id); p !== undefined; p = parent.get(p)) {
        const pf = nodes.get(p)!.callFrame;
        const psrc = sourceOf(pf);
        if (!isUserland(psrc)) continue;
        if (GENERIC.has(cat)) cat = categoryOf(psrc, pf.functionName);
        fn = `${name} ← ${pf.functionName || '(anonymous)'} (${shortName(psrc)})`;
        break;
      }
    }
    const label = { fn, cat };
    labels.set(id, label);
    return label;
  };
}

function tally(profile: CpuProfile, into: Tally): void {
  const label = labeller(profile);
  const ours = oursLabeller(profile);
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const add = (m: Map<string, number>, k: string, ms: number): void => void m.set(k, (m.get(k) ?? 0) + ms);
  for (let i = 0; i < profile.samples.length; i++) {
    // A sample's time is the gap to the next one (the last sample's is unknown: the one before).
    const ms = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000;
    const { fn, cat } = label(profile.samples[i]);
    into.totalMs += ms;
    add(into.byFunction, fn, ms);
    add(into.byCategory, cat, ms);
    const seen = new Set<string>();
    for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const l = ours(id);
      if (l && !seen.has(l)) {
        seen.add(l);
        add(into.oursInclusive, l, ms);
      }
    }
  }
}

function report(title: string, t: Tally, top: number, per: number | null): string {
  const idle = t.byCategory.get('idle') ?? 0;
  const busy = t.totalMs - idle;
  const pct = (ms: number): string => `${((ms / Math.max(busy, 1e-9)) * 100).toFixed(1)} %`.padStart(7);
  const rows = (m: Map<string, number>, n: number, perOne: number | null = null): string[] =>
    [...m]
      .filter(([k]) => k !== 'idle' && !k.startsWith('(idle)'))
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, ms]) => `${pct(ms)}  ${(ms / 1000).toFixed(1).padStart(7)} s  ${perOne ? `${(ms / perOne).toFixed(3).padStart(7)} ms  ` : ''}${k}`);
  return [
    `${title}: ${(t.totalMs / 1000).toFixed(1)} s profiled, ${(busy / 1000).toFixed(1)} s busy (${((busy / Math.max(t.totalMs, 1e-9)) * 100).toFixed(0)} %); shares are of busy time`,
    'by category:',
    ...rows(t.byCategory, 40),
    `top ${top} functions by self time:`,
    ...rows(t.byFunction, top),
    `top ${top} of our functions by inclusive time${per ? ` (and ms per one of ${per})` : ''}:`,
    ...rows(t.oursInclusive, top, per),
  ].join('\n');
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' }, per: { type: 'string' } } });
  const per = values.per === undefined ? null : Number(values.per);
  if (per !== null && !(per > 0)) throw new Error(`--per takes a count above 0, not ${values.per}`);
  const files = positionals.flatMap((p) =>
    fs.statSync(p).isDirectory()
      ? fs
          .readdirSync(p)
          .filter((f) => f.endsWith('.cpuprofile'))
          .map((f) => path.join(p, f))
      : [p],
  );
  if (files.length === 0) throw new Error('usage: profile-summary.ts <folder of .cpuprofile files | files…> [--top N] [--per N]');
  const all = newTally();
  for (const file of files.sort()) {
    const one = newTally();
    const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
    tally(profile, one);
    tally(profile, all);
    process.stdout.write(`${report(path.basename(file), one, Number(values.top), per)}\n\n`);
  }
  if (files.length > 1) process.stdout.write(`${report(`all ${files.length} profiles`, all, Number(values.top), per)}\n`);
}

main();
