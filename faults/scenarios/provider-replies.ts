import { durableScenario } from '../lib/durable-scenario.js';
import { randomHttpFaults } from '../lib/random-http-faults.js';

/**
 * The suite's fault proxy between the worker and the provider: POST /deployments dropped before it
 * is sent on, its reply dropped or delayed past the 2 s attempt timeout, sent twice, answered 429/503
 * with Retry-After by the proxy, or redirected (307). Provider mode key.
 */
export const providerReplies = durableScenario({
  name: 'provider-replies',
  description:
    'fault proxy worker -> provider: dropped/delayed/duplicated requests and replies, 429/503 Retry-After, 307; mode key',
  operations: { short: 10, long: 30 },
  spreadMs: { short: 1500, long: 10_000 },
  deadlineMs: 20_000,
  // Three attempts answered 503 (or lost) may rightly end failed or outcome_unknown: only false
  // "nothing was done", duplicates and stuck operations count here.
  promisesCompletion: false,
  rig: (context) => ({
    mode: 'key',
    providerFaults: randomHttpFaults(context.rng, {
      applies: (request) => request.method === 'POST',
      rate: 0.5,
      maxDelayMs: 3000,
      duplicates: true,
    }),
  }),
  nemesis: async () => ({}),
});
