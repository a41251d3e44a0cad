import { durableScenario, nemesisPause } from '../lib/durable-scenario.js';

/**
 * kill -9 of the deployment provider at random times (mid-request included), started again on the
 * same port with its records (after up to 1.5 s, plus its start-up): within every deadline. Mode key.
 */
export const killProvider = durableScenario({
  name: 'kill-provider',
  description: 'kill -9 of idem provider at random times, started again on the same port; mode key',
  operations: { short: 8, long: 30 },
  spreadMs: { short: 2500, long: 10_000 },
  deadlineMs: 30_000,
  // The promise holds when the provider was back 3 s before the first operation's deadline (a
  // restart takes seconds on a loaded machine: when it took longer, only honesty is checked).
  promisesCompletion: (faults) => (faults.back_after_ms ?? 0) <= 27_000,
  rig: () => ({ mode: 'key' }),
  async nemesis(rig, context, stopped) {
    const faults = { kill9_provider: 0, provider_down_ms: 0, back_after_ms: 0 };
    const started = Date.now();
    await nemesisPause(context, stopped, 100, 600);
    while (!stopped()) {
      await rig.provider?.kill9();
      faults.kill9_provider += 1;
      const from = Date.now();
      await nemesisPause(context, () => false, 100, 1500);
      await rig.startProvider();
      faults.provider_down_ms += Date.now() - from;
      faults.back_after_ms = Date.now() - started;
      await nemesisPause(context, stopped, 300, 1500);
    }
    return faults;
  },
});
