// What the rendered pages' index lines say about their renders (scenario v):
// how long a render took (from asking for a rendering turn to the DOM taken:
// docs/rendering.md, "Costs"), how each ended, and how many requests each
// page made besides its document. Read from the sealed index after the crawl
// (a file, or an object of the bucket: bench/output-store.ts opens it).
import readline from 'node:readline';
import type { Readable } from 'node:stream';

export interface RenderFigures {
  /** Index lines with a render. */
  rendered: number;
  /** How the renders ended: quiet, deadline, failed. */
  done: Record<string, number>;
  /** Render time per page, ms: from the turn asked for (its wait included) to the DOM taken. */
  ms: { mean: number; p50: number; p90: number; max: number };
  /** Requests a render answered from the network (the document not included), per page. */
  requestsPerRender: number;
}

export async function renderFigures(sealedIndex: Readable | null): Promise<RenderFigures | null> {
  if (!sealedIndex) return null;
  const ms: number[] = [];
  const done: Record<string, number> = {};
  let requests = 0;
  const lines = readline.createInterface({ input: sealedIndex, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.includes('"render"')) continue;
    const r = (JSON.parse(line) as { render?: { done: string; ms: number; requests: number } }).render;
    if (!r) continue;
    ms.push(r.ms);
    done[r.done] = (done[r.done] ?? 0) + 1;
    requests += r.requests;
  }
  if (ms.length === 0) return null;
  ms.sort((a, b) => a - b);
  const at = (q: number): number => ms[Math.min(ms.length - 1, Math.floor(ms.length * q))];
  return {
    rendered: ms.length,
    done,
    ms: { mean: Math.round(ms.reduce((a, b) => a + b, 0) / ms.length), p50: at(0.5), p90: at(0.9), max: ms[ms.length - 1] },
    requestsPerRender: Number((requests / ms.length).toFixed(2)),
  };
}
