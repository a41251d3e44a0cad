import { durableScenario } from '../lib/durable-scenario.js';
import { randomHttpFaults } from '../lib/random-http-faults.js';

/**
 * The suite's fault proxy between the MCP caller and `idem serve`: requests dropped before they are
 * sent on, replies dropped or delayed past the caller's 5 s timeout, requests sent twice, 429/503
 * with Retry-After, 307 redirects. Provider mode none: every duplicate that reached it would show.
 */
export const clientReplies = durableScenario({
  name: 'client-replies',
  description:
    'fault proxy caller -> serve: dropped/delayed/duplicated requests and replies, 429/503 Retry-After, 307; mode none',
  operations: { short: 10, long: 30 },
  spreadMs: { short: 2000, long: 10_000 },
  deadlineMs: 15_000,
  promisesCompletion: true,
  rig: (context) => ({
    mode: 'none',
    clientFaults: randomHttpFaults(context.rng, {
      applies: (request) => request.method === 'POST',
      rate: 0.45,
      maxDelayMs: 6000,
      duplicates: true,
    }),
  }),
  // The proxy is the nemesis here; it counts what it injected.
  nemesis: async () => ({}),
});
