import { durableScenario, nemesisPause } from '../lib/durable-scenario.js';

const POINTS = ['before_dispatch', 'after_provider_reply', 'after_receipt'] as const;

/**
 * kill -9 of a separate `idem worker` at random times and at named points (leases then move the
 * operation to its next incarnation). Provider mode reference: recovery by lookup.
 */
export const killWorker = durableScenario({
  name: 'kill-worker',
  description:
    'kill -9 of idem worker (serve --no-worker) at random times and named points; provider mode reference',
  operations: { short: 8, long: 30 },
  spreadMs: { short: 2000, long: 10_000 },
  deadlineMs: 30_000,
  // A process down (or a disk full) for part of the deadline may rightly end an operation failed
  // without an attempt: here only honesty is promised (no duplicate, no false "nothing was done").
  promisesCompletion: false,
  rig: () => ({ mode: 'reference', separateWorker: true }),
  async nemesis(rig, context, stopped) {
    const faults = { kill9_worker: 0, self_kill_at_point: 0, armed_restarts: 0 };
    await nemesisPause(context, stopped, 200, 700);
    let armed = false;
    while (!stopped() || armed || !rig.worker?.running) {
      if (rig.worker?.running) {
        await rig.worker.kill9();
        faults.kill9_worker += 1;
      } else faults.self_kill_at_point += 1;
      await nemesisPause(context, () => false, 50, 500);
      const point = !stopped() && context.rng.chance(0.5) ? context.rng.pick(POINTS) : undefined;
      armed = point !== undefined;
      if (armed) faults.armed_restarts += 1;
      await rig.startWorker(point === undefined ? {} : { IDEM_TEST_FAULTS: `${point}=kill` });
      await nemesisPause(context, stopped, 1000, 3000);
      if (stopped() && rig.worker?.running && !armed) break;
    }
    return faults;
  },
});
