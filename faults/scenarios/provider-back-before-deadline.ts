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
  operations: { short: 8, long: 24 },
  spreadMs: { short: 200, long: 200 },
  deadlineMs: 4000,
  promisesCompletion: true,
  rig: () => ({ mode: 'key' }),
  // The rig started it (to have its port); it is down before the first submission.
  beforeWorkload: async (rig) => rig.provider?.kill9(),
  async nemesis(rig, context) {
    await nemesisPause(context, () => false, 2500, 2500);
    await rig.startProvider();
    return { provider_down_ms: 2500 };
  },
});
