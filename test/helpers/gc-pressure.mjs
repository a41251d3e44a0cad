// Preloaded into a spawned server for the timing tests of issue 22, with
// NODE_OPTIONS="--expose-gc --import=<file URL of this module>" (see `gcPressureEnv`):
// a full garbage collection every 100 ms (ten during a 1 s timeout), so that a timer or signal held only weakly is collected
// during the wait, as it was under load (an AbortSignal.timeout inside AbortSignal.any on Node 20).
const gc = globalThis.gc;
if (typeof gc !== 'function') throw new Error('gc-pressure.mjs needs --expose-gc');
globalThis.setInterval(() => gc(), 100).unref();
