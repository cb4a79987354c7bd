// Gives the memory a worker process freed back to the system, every second
// (CRAWLER_MALLOC_TRIM_MS), by calling glibc's malloc_trim(0).
//
// Why (issue 27): a worker's native memory (V8's compiler zones on the main
// and workflow threads, the Temporal SDK's core, zlib's compression state)
// is allocated and freed in bursts. glibc keeps what is freed inside its heaps
// and returns only what lies at a heap's top, so a busy worker carried 40 to
// 55 MB of freed memory in its RSS (measured in bench (l): one malloc_trim(0)
// took a worker from 271 to 229 MB and another from 300 to 244 MB mid-crawl).
// MALLOC_ARENA_MAX (scripts/worker-bundle.cjs) bounds the arenas but not what
// each keeps; no malloc setting returns free pages from a heap's middle.
//
// Node has no binding for malloc_trim, so it is called through koffi, an FFI
// library that ships prebuilt binaries (nothing compiled at install). Only on
// Linux with glibc; anywhere else, or if the library cannot be loaded, this is
// a no-op and says so once.
import type { Logger } from '../log/logger';

export interface MallocTrim {
  /** Whether malloc_trim is called at all (Linux with glibc, koffi loaded). */
  readonly active: boolean;
  /** Calls it once now; returns whether glibc released any memory (false when inactive). */
  trimNow(): boolean;
  /** Stops the periodic calls. */
  stop(): void;
}

type TrimFn = (pad: number) => number;

let bound: Promise<TrimFn | null> | undefined;

/** glibc's malloc_trim, bound once per process; null where there is none (not Linux, not glibc: musl has no libc.so.6). */
export function glibcMallocTrim(log?: Pick<Logger, 'info'>): Promise<TrimFn | null> {
  bound ??= bind(log);
  return bound;
}

async function bind(log?: Pick<Logger, 'info'>): Promise<TrimFn | null> {
  if (process.platform !== 'linux') {
    log?.info('malloc_trim: not Linux; freed native memory stays with the allocator');
    return null;
  }
  try {
    // Loaded on first use: a process that never trims (the CLI, most tests) loads no native module for it.
    const koffi = await import('koffi');
    return koffi.load('libc.so.6').func('int malloc_trim(size_t pad)') as TrimFn;
  } catch (err) {
    log?.info('malloc_trim: could not be bound (not glibc?); freed native memory stays with the allocator', { error: err instanceof Error ? err.message : String(err) });
    return null;
  }
}

/** Calls malloc_trim(0) every `intervalMs` (0: never) on a timer that keeps no process alive. */
export async function startMallocTrim(intervalMs: number, log?: Pick<Logger, 'info'>): Promise<MallocTrim> {
  const trim = intervalMs > 0 ? await glibcMallocTrim(log) : null;
  if (!trim) return { active: false, trimNow: () => false, stop: () => undefined };
  const timer = setInterval(() => trim(0), intervalMs);
  timer.unref();
  return { active: true, trimNow: () => trim(0) === 1, stop: () => clearInterval(timer) };
}
