import { durableScenario, nemesisPause } from '../lib/durable-scenario.js';

/**
 * kill -9 of the deployment provider at random times (mid-request included), started again on the
 * same port with its records after up to 1.5 s: well within every deadline. Provider mode key.
 */
export const killProvider = durableScenario({
  name: 'kill-provider',
  description: 'kill -9 of idem provider at random times, back on the same port within 1.5 s; mode key',
  operations: { short: 8, long: 30 },
  spreadMs: { short: 2500, long: 10_000 },
  deadlineMs: 20_000,
  promisesCompletion: true,
  rig: () => ({ mode: 'key' }),
  async nemesis(rig, context, stopped) {
    const faults = { kill9_provider: 0, provider_down_ms: 0 };
    await nemesisPause(context, stopped, 100, 600);
    while (!stopped()) {
      await rig.provider?.kill9();
      faults.kill9_provider += 1;
      const from = Date.now();
      await nemesisPause(context, () => false, 100, 1500);
      await rig.startProvider();
      faults.provider_down_ms += Date.now() - from;
      await nemesisPause(context, stopped, 300, 1500);
    }
    return faults;
  },
});
