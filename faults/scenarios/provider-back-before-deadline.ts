import { durableScenario, nemesisPause } from '../lib/durable-scenario.js';

/**
 * Issue 38, item 3: the provider refuses connections when the operations are accepted and is back
 * 2.5 s into their 4 s deadline. The docs promise that a provider back within the deadline loses
 * nothing: every operation must succeed, with one deployment.
 */
export const providerBackBeforeDeadline = durableScenario({
  name: 'provider-back-before-deadline',
  description: 'provider down (connections refused) at acceptance, back 2.5 s into a 4 s deadline; mode key',
  issueItem: '3',
  operations: { short: 8, long: 16 },
  spreadMs: { short: 200, long: 200 },
  deadlineMs: 4000,
  promisesCompletion: true,
  // The worker's provider address refuses connections (nothing listens there) until the gate opens.
  rig: () => ({ mode: 'key', providerGate: true }),
  async nemesis(rig, context) {
    const from = Date.now();
    await nemesisPause(context, () => false, 2500, 2500);
    await rig.openProviderGate();
    return { provider_refused_ms: Date.now() - from };
  },
});
