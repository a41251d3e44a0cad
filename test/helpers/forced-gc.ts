import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// Forced garbage collections for the timing tests of issue 22: on Node 20 a signal that nothing
// holds strongly (a timeout inside AbortSignal.any) is collected and never fires, but only when a
// collection runs during the wait. These helpers make one run every few milliseconds, in this
// process (vitest's worker, no `--expose-gc` needed) or in a child started with `gcPreload`.

/** The engine's `gc()`: the global one under `node --expose-gc`, else exposed at run time. */
export function exposeGc(): () => void {
  const global = (globalThis as { gc?: unknown }).gc;
  if (typeof global === 'function') return global as () => void;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Runs a full collection every `everyMs` until the returned function is called. */
export function collectEvery(everyMs = 20): () => void {
  const gc = exposeGc();
  const timer = setInterval(gc, everyMs);
  return () => clearInterval(timer);
}

/**
 * Runs `body` while a full collection runs every `everyMs`, and returns its result with the wall
 * time it took (ms).
 */
export async function underForcedGc<T>(
  body: () => Promise<T>,
  everyMs = 20,
): Promise<{ value: T; ms: number }> {
  const stop = collectEvery(everyMs);
  const t0 = performance.now();
  try {
    const value = await body();
    return { value, ms: performance.now() - t0 };
  } finally {
    stop();
  }
}

/**
 * The environment for a spawned `node` (e.g. `idem serve`) that collects garbage every 100 ms from
 * its start: `--expose-gc` and test/helpers/gc-pressure.mjs, through NODE_OPTIONS.
 */
export function gcPressureEnv(): Record<string, string> {
  const preload = pathToFileURL(join(import.meta.dirname, 'gc-pressure.mjs')).href;
  return { NODE_OPTIONS: `--expose-gc --import=${preload}` };
}
