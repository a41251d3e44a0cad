import { durableScenario, nemesisPause } from '../lib/durable-scenario.js';

/** Points where a restarted server kills itself (IDEM_TEST_FAULTS) on its next pass. */
const POINTS = [
  'after_commit',
  'before_reply',
  'before_dispatch',
  'after_provider_reply',
  'after_receipt',
] as const;

/**
 * kill -9 of `idem serve` (running its own worker) at random times, and at named points on some
 * restarts; the workload retries every key through it. Provider mode key.
 */
export const killServer = durableScenario({
  name: 'kill-server',
  description:
    'kill -9 of idem serve (with its worker) at random times and at named points; provider mode key',
  operations: { short: 8, long: 30 },
  spreadMs: { short: 2500, long: 10_000 },
  deadlineMs: 30_000,
  // A process down (or a disk full) for part of the deadline may rightly end an operation failed
  // without an attempt: here only honesty is promised (no duplicate, no false "nothing was done").
  promisesCompletion: false,
  rig: () => ({ mode: 'key' }),
  async nemesis(rig, context, stopped) {
    const faults = { kill9_server: 0, self_kill_at_point: 0, armed_restarts: 0 };
    await nemesisPause(context, stopped, 200, 700);
    let armed = false;
    while (!stopped() || armed || !rig.server?.running) {
      if (rig.server?.running) {
        await rig.server.kill9();
        faults.kill9_server += 1;
      } else faults.self_kill_at_point += 1;
      await nemesisPause(context, () => false, 50, 500);
      const point = !stopped() && context.rng.chance(0.4) ? context.rng.pick(POINTS) : undefined;
      armed = point !== undefined;
      if (armed) faults.armed_restarts += 1;
      await rig.startServer(point === undefined ? {} : { IDEM_TEST_FAULTS: `${point}=kill` });
      await nemesisPause(context, stopped, 1000, 3000);
      if (stopped() && rig.server?.running && !armed) break;
    }
    return faults;
  },
});
